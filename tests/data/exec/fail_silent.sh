#!/bin/sh
# Fails without a word on stderr, but says the instance is gone.
cat >/dev/null
echo '{"instance_usable": false}'
exit 7
