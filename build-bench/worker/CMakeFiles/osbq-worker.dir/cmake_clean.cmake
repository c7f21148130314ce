file(REMOVE_RECURSE
  "../bin/osbq-worker"
  "../bin/osbq-worker.pdb"
  "CMakeFiles/osbq-worker.dir/main.c.o"
  "CMakeFiles/osbq-worker.dir/main.c.o.d"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/osbq-worker.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
