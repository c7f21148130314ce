# Empty compiler generated dependencies file for osbq-gateway.
# This may be replaced when dependencies are built.
