#!/bin/sh
# Never reads its stdin (yet keeps it open until it exits): a large job must not block the
# broker.
sleep 0.2
echo '{}'
