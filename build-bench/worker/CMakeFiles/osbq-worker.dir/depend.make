# Empty dependencies file for osbq-worker.
# This may be replaced when dependencies are built.
