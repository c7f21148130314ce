# Empty compiler generated dependencies file for osbq_worker_core.
# This may be replaced when dependencies are built.
