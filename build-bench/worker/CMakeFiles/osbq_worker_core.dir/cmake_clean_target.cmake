file(REMOVE_RECURSE
  "libosbq_worker_core.a"
)
