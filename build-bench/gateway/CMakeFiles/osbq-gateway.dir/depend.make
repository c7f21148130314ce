# Empty dependencies file for osbq-gateway.
# This may be replaced when dependencies are built.
