# Empty dependencies file for osbq_common.
# This may be replaced when dependencies are built.
