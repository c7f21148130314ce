file(REMOVE_RECURSE
  "CMakeFiles/osbq_common.dir/bus.c.o"
  "CMakeFiles/osbq_common.dir/bus.c.o.d"
  "CMakeFiles/osbq_common.dir/catalog.c.o"
  "CMakeFiles/osbq_common.dir/catalog.c.o.d"
  "CMakeFiles/osbq_common.dir/config.c.o"
  "CMakeFiles/osbq_common.dir/config.c.o.d"
  "CMakeFiles/osbq_common.dir/error.c.o"
  "CMakeFiles/osbq_common.dir/error.c.o.d"
  "CMakeFiles/osbq_common.dir/log.c.o"
  "CMakeFiles/osbq_common.dir/log.c.o.d"
  "CMakeFiles/osbq_common.dir/semver.c.o"
  "CMakeFiles/osbq_common.dir/semver.c.o.d"
  "CMakeFiles/osbq_common.dir/store.c.o"
  "CMakeFiles/osbq_common.dir/store.c.o.d"
  "CMakeFiles/osbq_common.dir/store_scripts.c.o"
  "CMakeFiles/osbq_common.dir/store_scripts.c.o.d"
  "libosbq_common.a"
  "libosbq_common.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/osbq_common.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
