file(REMOVE_RECURSE
  "CMakeFiles/osbq_gateway_core.dir/dispatch.c.o"
  "CMakeFiles/osbq_gateway_core.dir/dispatch.c.o.d"
  "CMakeFiles/osbq_gateway_core.dir/health.c.o"
  "CMakeFiles/osbq_gateway_core.dir/health.c.o.d"
  "CMakeFiles/osbq_gateway_core.dir/http.c.o"
  "CMakeFiles/osbq_gateway_core.dir/http.c.o.d"
  "CMakeFiles/osbq_gateway_core.dir/osb_catalog.c.o"
  "CMakeFiles/osbq_gateway_core.dir/osb_catalog.c.o.d"
  "CMakeFiles/osbq_gateway_core.dir/osb_instance.c.o"
  "CMakeFiles/osbq_gateway_core.dir/osb_instance.c.o.d"
  "CMakeFiles/osbq_gateway_core.dir/osb_last_op.c.o"
  "CMakeFiles/osbq_gateway_core.dir/osb_last_op.c.o.d"
  "CMakeFiles/osbq_gateway_core.dir/osb_request.c.o"
  "CMakeFiles/osbq_gateway_core.dir/osb_request.c.o.d"
  "CMakeFiles/osbq_gateway_core.dir/registry.c.o"
  "CMakeFiles/osbq_gateway_core.dir/registry.c.o.d"
  "CMakeFiles/osbq_gateway_core.dir/reply.c.o"
  "CMakeFiles/osbq_gateway_core.dir/reply.c.o.d"
  "CMakeFiles/osbq_gateway_core.dir/route.c.o"
  "CMakeFiles/osbq_gateway_core.dir/route.c.o.d"
  "CMakeFiles/osbq_gateway_core.dir/validate.c.o"
  "CMakeFiles/osbq_gateway_core.dir/validate.c.o.d"
  "CMakeFiles/osbq_gateway_core.dir/waiter.c.o"
  "CMakeFiles/osbq_gateway_core.dir/waiter.c.o.d"
  "libosbq_gateway_core.a"
  "libosbq_gateway_core.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/osbq_gateway_core.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
