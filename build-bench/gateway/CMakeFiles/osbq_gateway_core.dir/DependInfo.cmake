
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/gateway/dispatch.c" "gateway/CMakeFiles/osbq_gateway_core.dir/dispatch.c.o" "gcc" "gateway/CMakeFiles/osbq_gateway_core.dir/dispatch.c.o.d"
  "/work/main/gateway/health.c" "gateway/CMakeFiles/osbq_gateway_core.dir/health.c.o" "gcc" "gateway/CMakeFiles/osbq_gateway_core.dir/health.c.o.d"
  "/work/main/gateway/http.c" "gateway/CMakeFiles/osbq_gateway_core.dir/http.c.o" "gcc" "gateway/CMakeFiles/osbq_gateway_core.dir/http.c.o.d"
  "/work/main/gateway/osb_catalog.c" "gateway/CMakeFiles/osbq_gateway_core.dir/osb_catalog.c.o" "gcc" "gateway/CMakeFiles/osbq_gateway_core.dir/osb_catalog.c.o.d"
  "/work/main/gateway/osb_instance.c" "gateway/CMakeFiles/osbq_gateway_core.dir/osb_instance.c.o" "gcc" "gateway/CMakeFiles/osbq_gateway_core.dir/osb_instance.c.o.d"
  "/work/main/gateway/osb_last_op.c" "gateway/CMakeFiles/osbq_gateway_core.dir/osb_last_op.c.o" "gcc" "gateway/CMakeFiles/osbq_gateway_core.dir/osb_last_op.c.o.d"
  "/work/main/gateway/osb_request.c" "gateway/CMakeFiles/osbq_gateway_core.dir/osb_request.c.o" "gcc" "gateway/CMakeFiles/osbq_gateway_core.dir/osb_request.c.o.d"
  "/work/main/gateway/registry.c" "gateway/CMakeFiles/osbq_gateway_core.dir/registry.c.o" "gcc" "gateway/CMakeFiles/osbq_gateway_core.dir/registry.c.o.d"
  "/work/main/gateway/reply.c" "gateway/CMakeFiles/osbq_gateway_core.dir/reply.c.o" "gcc" "gateway/CMakeFiles/osbq_gateway_core.dir/reply.c.o.d"
  "/work/main/gateway/route.c" "gateway/CMakeFiles/osbq_gateway_core.dir/route.c.o" "gcc" "gateway/CMakeFiles/osbq_gateway_core.dir/route.c.o.d"
  "/work/main/gateway/validate.c" "gateway/CMakeFiles/osbq_gateway_core.dir/validate.c.o" "gcc" "gateway/CMakeFiles/osbq_gateway_core.dir/validate.c.o.d"
  "/work/main/gateway/waiter.c" "gateway/CMakeFiles/osbq_gateway_core.dir/waiter.c.o" "gcc" "gateway/CMakeFiles/osbq_gateway_core.dir/waiter.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build-bench/common/CMakeFiles/osbq_common.dir/DependInfo.cmake"
  "/work/main/build-bench/proto/CMakeFiles/osbq_proto.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
