
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/common/bus.c" "common/CMakeFiles/osbq_common.dir/bus.c.o" "gcc" "common/CMakeFiles/osbq_common.dir/bus.c.o.d"
  "/work/main/common/catalog.c" "common/CMakeFiles/osbq_common.dir/catalog.c.o" "gcc" "common/CMakeFiles/osbq_common.dir/catalog.c.o.d"
  "/work/main/common/config.c" "common/CMakeFiles/osbq_common.dir/config.c.o" "gcc" "common/CMakeFiles/osbq_common.dir/config.c.o.d"
  "/work/main/common/error.c" "common/CMakeFiles/osbq_common.dir/error.c.o" "gcc" "common/CMakeFiles/osbq_common.dir/error.c.o.d"
  "/work/main/common/log.c" "common/CMakeFiles/osbq_common.dir/log.c.o" "gcc" "common/CMakeFiles/osbq_common.dir/log.c.o.d"
  "/work/main/common/semver.c" "common/CMakeFiles/osbq_common.dir/semver.c.o" "gcc" "common/CMakeFiles/osbq_common.dir/semver.c.o.d"
  "/work/main/common/store.c" "common/CMakeFiles/osbq_common.dir/store.c.o" "gcc" "common/CMakeFiles/osbq_common.dir/store.c.o.d"
  "/work/main/build-bench/common/store_scripts.c" "common/CMakeFiles/osbq_common.dir/store_scripts.c.o" "gcc" "common/CMakeFiles/osbq_common.dir/store_scripts.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
