#!/bin/sh
# Never finishes in time: a test's timeout_ms stops it.
echo "progress 10 Sleeping"
sleep 30
