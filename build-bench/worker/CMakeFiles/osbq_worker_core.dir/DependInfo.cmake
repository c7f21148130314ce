
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/worker/backend.c" "worker/CMakeFiles/osbq_worker_core.dir/backend.c.o" "gcc" "worker/CMakeFiles/osbq_worker_core.dir/backend.c.o.d"
  "/work/main/worker/backend_sim.c" "worker/CMakeFiles/osbq_worker_core.dir/backend_sim.c.o" "gcc" "worker/CMakeFiles/osbq_worker_core.dir/backend_sim.c.o.d"
  "/work/main/worker/bus_link.c" "worker/CMakeFiles/osbq_worker_core.dir/bus_link.c.o" "gcc" "worker/CMakeFiles/osbq_worker_core.dir/bus_link.c.o.d"
  "/work/main/worker/runner.c" "worker/CMakeFiles/osbq_worker_core.dir/runner.c.o" "gcc" "worker/CMakeFiles/osbq_worker_core.dir/runner.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build-bench/common/CMakeFiles/osbq_common.dir/DependInfo.cmake"
  "/work/main/build-bench/proto/CMakeFiles/osbq_proto.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
