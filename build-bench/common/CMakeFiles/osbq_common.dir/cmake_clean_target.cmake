file(REMOVE_RECURSE
  "libosbq_common.a"
)
