# Empty compiler generated dependencies file for osbq-worker.
# This may be replaced when dependencies are built.
