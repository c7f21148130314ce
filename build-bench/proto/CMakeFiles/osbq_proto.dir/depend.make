# Empty dependencies file for osbq_proto.
# This may be replaced when dependencies are built.
