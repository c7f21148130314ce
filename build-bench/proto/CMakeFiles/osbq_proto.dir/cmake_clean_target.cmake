file(REMOVE_RECURSE
  "libosbq_proto.a"
)
