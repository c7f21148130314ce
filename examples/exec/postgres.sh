#!/bin/sh
# osbq exec backend example: a PostgreSQL database per service instance, a login role per
# binding (docs/backends.md, "exec"). The worker runs this once per operation with the job as
# one JSON line on stdin; it answers with "progress <percent> <text>" lines and, for a bind,
# a last line holding the credentials as JSON. Every operation is idempotent: the broker may
# run it twice for one operation id.
#
# Admin connection: the usual libpq variables, from the worker's environment or the plan's
# "env": PGHOST, PGPORT, PGUSER (a role with CREATEDB and CREATEROLE, or a superuser),
# PGPASSWORD, and PGDATABASE (an existing database to connect to; default "postgres").
# Applications get PG_PUBLIC_HOST / PG_PUBLIC_PORT when set (the address they reach the server
# at), else PGHOST / PGPORT.
#
# Names (lowercase letters, digits, '_'; a hash of the full id keeps them unique and within
# PostgreSQL's 63 bytes), from the instance id I and the binding id B:
#   database  i_<I sanitized>_<hash(I)>   owned by the role o_<same>, which cannot log in
#   binding   u_<hash(I)>_<B sanitized>_<hash(B)>, a login role that is a member of the owner
#             role, so every binding of an instance sees the same tables.
# Needs psql and python3 (to read the job's JSON).
set -eu

: "${PGHOST:=127.0.0.1}"
: "${PGPORT:=5432}"
: "${PGUSER:=postgres}"
: "${PGDATABASE:=postgres}"
# Notices ("role is already a member", "does not exist, skipping") are no news on a rerun.
PGOPTIONS="${PGOPTIONS-} -c client_min_messages=warning"
export PGHOST PGPORT PGUSER PGDATABASE PGOPTIONS
# What this script writes on stderr is the failure's description platform users read: psql's
# own messages name the server's host, port or socket path, so they go to the system log (the
# operator's; `logger`, when it works) and the platform gets a sentence of its own.
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
# No ~/.psqlrc surprises, stop at the first error, quiet unaligned output, and errors without
# the statement text (it may hold a password).
psql_admin() {
    status=0
    psql -X -q -A -t -v ON_ERROR_STOP=1 -v VERBOSITY=terse "$@" 2>"$errors" || status=$?
    [ "$status" = 0 ] && return 0
    logger -t osbq-postgres-example -- "$(tr '\n' ' ' <"$errors")" 2>/dev/null || true
    case $status in
    2) echo "The database server cannot be reached or refused the broker's login." >&2 ;;
    3) echo "The database server refused the operation." >&2 ;;
    *) echo "The database client failed; the broker's operator has the details." >&2 ;;
    esac
    return "$status"
}

# The job -> shell variables: kind, db, owner, role (bind/unbind), role_prefix.
eval "$(python3 -c '
import hashlib, json, re, shlex, sys

job = json.load(sys.stdin)

def part(raw, keep):
    """raw made safe as a part of an SQL identifier, plus a hash of all of it."""
    safe = re.sub(r"[^a-z0-9_]", "_", raw.lower())[:keep]
    return safe + "_" + hashlib.sha256(raw.encode()).hexdigest()[:8]

instance = job["instance_id"]
ihash = hashlib.sha256(instance.encode()).hexdigest()[:8]
out = {
    "kind": job["kind"],
    "db": "i_" + part(instance, 40),
    "owner": "o_" + part(instance, 40),
    "role_prefix": "u_" + ihash + "_",
    "role": "u_" + ihash + "_" + part(job["binding_id"], 36) if job.get("binding_id") else "",
}
for k, v in out.items():
    print("%s=%s" % (k, shlex.quote(v)))
')"

# Prints "1" when the query (SQL with psql variables :'db', :'owner', :'role') finds a row.
# psql interpolates variables in what it reads, not in -c, so the query goes on stdin.
exists() {
    [ "$(printf '%s\n' "$1" | psql_admin -v db="$db" -v owner="$owner" -v role="$role")" = 1 ]
}

provision() {
    echo "progress 10 Creating the owner role"
    psql_admin -v owner="$owner" <<'SQL'
SELECT NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'owner') AS missing \gset
\if :missing
CREATE ROLE :"owner" NOLOGIN;
\endif
SQL
    echo "progress 40 Creating the database"
    # CREATE DATABASE cannot run inside a transaction or a DO block: check, then create, and
    # accept losing a race against a second run of this operation.
    if ! exists "SELECT 1 FROM pg_database WHERE datname = :'db'"; then
        if ! echo 'CREATE DATABASE :"db" OWNER :"owner";' |
            psql_admin -v db="$db" -v owner="$owner"; then
            exists "SELECT 1 FROM pg_database WHERE datname = :'db'"
        fi
    fi
    echo "progress 70 Restricting access"
    psql_admin -v db="$db" -v owner="$owner" <<'SQL'
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT ALL ON DATABASE :"db" TO :"owner";
SQL
    # Since PostgreSQL 15 PUBLIC may not create in schema public: the owner role gets it.
    psql_admin -d "$db" -v owner="$owner" <<'SQL'
ALTER SCHEMA public OWNER TO :"owner";
SQL
    echo "progress 100 Database created"
}

deprovision() {
    # Every statement tolerates what is missing: a provision this delete halted (its job names
    # it, halted_operation_id) may have made the owner role and not the database, or neither.
    echo "progress 20 Dropping the database"
    psql_admin -v db="$db" <<'SQL'
DROP DATABASE IF EXISTS :"db" WITH (FORCE);
SQL
    echo "progress 70 Dropping its roles"
    # Bindings never unbound: their names start with the instance's prefix (safe characters
    # only, so the unquoted expansion below splits them correctly).
    for r in $(printf '%s\n' "SELECT rolname FROM pg_roles WHERE starts_with(rolname, :'prefix')" |
        psql_admin -v prefix="$role_prefix"); do
        psql_admin -v role="$r" <<'SQL'
SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = :'role' \g /dev/null
DROP ROLE IF EXISTS :"role";
SQL
    done
    psql_admin -v owner="$owner" <<'SQL'
DROP ROLE IF EXISTS :"owner";
SQL
    echo "progress 100 Database dropped"
}

bind() {
    if ! exists "SELECT 1 FROM pg_database WHERE datname = :'db'"; then
        echo "The instance's database does not exist." >&2
        exit 1
    fi
    echo "progress 30 Creating the login role"
    # 24 random bytes, base64url: 32 characters, nothing to quote in SQL or in a URI.
    password=$(head -c 24 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
    # Set on every run: only the last run's password works, and it is the one recorded. The
    # password travels on psql's stdin, never on a command line.
    psql_admin -v role="$role" -v owner="$owner" <<SQL
\\set password '$password'
SELECT NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role') AS missing \\gset
\\if :missing
CREATE ROLE :"role" LOGIN PASSWORD :'password' IN ROLE :"owner";
\\else
ALTER ROLE :"role" WITH LOGIN PASSWORD :'password';
GRANT :"owner" TO :"role";
\\endif
SQL
    echo "progress 100 Role created"
    PASSWORD="$password" DB="$db" ROLE="$role" HOST="${PG_PUBLIC_HOST:-$PGHOST}" \
        PORT="${PG_PUBLIC_PORT:-$PGPORT}" python3 -c '
import json, os
from urllib.parse import quote
e = os.environ
uri = "postgresql://%s:%s@%s:%s/%s" % (e["ROLE"], e["PASSWORD"], quote(e["HOST"], safe=":[]"),
                                       e["PORT"], e["DB"])
print(json.dumps({
    "credentials": {"host": e["HOST"], "port": int(e["PORT"]), "database": e["DB"],
                    "username": e["ROLE"], "password": e["PASSWORD"], "uri": uri},
    "endpoints": [{"host": e["HOST"], "ports": [e["PORT"]], "protocol": "tcp"}],
}))
'
}

unbind() {
    echo "progress 20 Closing the binding's sessions"
    psql_admin -v role="$role" <<'SQL'
SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = :'role' \g /dev/null
SQL
    if exists "SELECT 1 FROM pg_roles WHERE rolname = :'role'"; then
        echo "progress 50 Handing its objects to the instance"
        # What the binding created stays with the instance (other bindings keep using it).
        if exists "SELECT 1 FROM pg_database WHERE datname = :'db'"; then
            psql_admin -d "$db" -v role="$role" -v owner="$owner" <<'SQL'
REASSIGN OWNED BY :"role" TO :"owner";
DROP OWNED BY :"role";
SQL
        fi
        psql_admin -v role="$role" <<'SQL'
DROP ROLE IF EXISTS :"role";
SQL
    fi
    echo "progress 100 Role dropped"
}

case "$kind" in
provision) provision ;;
update) echo "progress 100 Nothing to change" ;;
deprovision) deprovision ;;
bind) bind ;;
unbind) unbind ;;
*)
    echo "Unknown operation kind." >&2
    exit 1
    ;;
esac
