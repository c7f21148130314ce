file(REMOVE_RECURSE
  "CMakeFiles/osbq_worker_core.dir/backend.c.o"
  "CMakeFiles/osbq_worker_core.dir/backend.c.o.d"
  "CMakeFiles/osbq_worker_core.dir/backend_sim.c.o"
  "CMakeFiles/osbq_worker_core.dir/backend_sim.c.o.d"
  "CMakeFiles/osbq_worker_core.dir/bus_link.c.o"
  "CMakeFiles/osbq_worker_core.dir/bus_link.c.o.d"
  "CMakeFiles/osbq_worker_core.dir/runner.c.o"
  "CMakeFiles/osbq_worker_core.dir/runner.c.o.d"
  "libosbq_worker_core.a"
  "libosbq_worker_core.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/osbq_worker_core.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
