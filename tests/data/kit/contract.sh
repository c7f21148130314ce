#!/bin/sh
# A test program for osbq-exec-kit (tests/integration/test_exec_kit.py): well-behaved, or
# breaking the exec contract in the one way its plan's BEHAVIOUR names. State (a marker per
# instance) lives under STATE_DIR.
#   good                every kind succeeds; a bind gives credentials
#   invalid-result      provision exits 0 with a result line that is not JSON
#   big-resume          provision answers in progress with a resume over 4096 bytes
#   slow                provision sleeps past its timeout (its pid in $STATE_DIR/slow.pid)
#   string-credentials  bind gives credentials that are a string
#   not-idempotent      provision fails when the instance exists (a rerun fails)
#   orphan              deprovision fails when the instance does not exist
set -eu
read -r job
instance=${job#*\"instance_id\":\"}
instance=${instance%%\"*}
kind=${job#*\"kind\":\"}
kind=${kind%%\"*}
marker="$STATE_DIR/$instance"

case "$BEHAVIOUR:$kind" in
invalid-result:provision)
    echo '{"dashboard_url": "https://example.com/'
    ;;
big-resume:provision)
    printf '{"state": "in progress", "poll_after_s": 1, "resume": {"pad": "%s"}}\n' \
        "$(printf '%05000d' 0)"
    ;;
slow:provision)
    echo "progress 10 Sleeping"
    echo $$ >"$STATE_DIR/slow.pid"
    exec sleep 60
    ;;
string-credentials:bind)
    echo '{"credentials": "secret"}'
    ;;
not-idempotent:provision)
    if [ -e "$marker" ]; then
        echo "The instance already exists." >&2
        exit 1
    fi
    : >"$marker"
    ;;
orphan:deprovision)
    if [ ! -e "$marker" ]; then
        echo "No such instance." >&2
        exit 1
    fi
    rm -f "$marker"
    ;;
*:provision)
    echo "progress 50 Creating"
    : >"$marker"
    echo "progress 100 Created"
    ;;
*:bind)
    printf '{"credentials": {"user": "u", "password": "p"}, "job": %s}\n' "$job"
    ;;
*:deprovision)
    rm -f "$marker"
    ;;
esac
