# Empty dependencies file for osbq_gateway_core.
# This may be replaced when dependencies are built.
