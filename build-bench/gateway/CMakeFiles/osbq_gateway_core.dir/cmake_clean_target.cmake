file(REMOVE_RECURSE
  "libosbq_gateway_core.a"
)
