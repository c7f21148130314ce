
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/gateway/main.c" "gateway/CMakeFiles/osbq-gateway.dir/main.c.o" "gcc" "gateway/CMakeFiles/osbq-gateway.dir/main.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build-bench/gateway/CMakeFiles/osbq_gateway_core.dir/DependInfo.cmake"
  "/work/main/build-bench/common/CMakeFiles/osbq_common.dir/DependInfo.cmake"
  "/work/main/build-bench/proto/CMakeFiles/osbq_proto.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
