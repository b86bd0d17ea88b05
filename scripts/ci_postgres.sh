#!/usr/bin/env bash
# A PostgreSQL server on 127.0.0.1 for the scenario store's tests (Debian's `postgresql`).
#
#   scripts/ci_postgres.sh [start]   install if missing (as root), start or reuse the server,
#                                    print its URL (also written to $EXPLORER_PG_DIR/url)
#   scripts/ci_postgres.sh stop      stop it
#
# The cluster is private to these tests: its own data directory, a free port bound to 127.0.0.1
# only, a Unix socket in a private folder, and a role `explorer_test` with a random password that
# may create databases (each test makes and drops its own). `make test` exports the URL as
# EXPLORER_TEST_DATABASE_URL; with CI=true the PostgreSQL tests fail when it is missing.
set -euo pipefail

ROOT_DIR=${EXPLORER_PG_DIR:-/tmp/specdec-explorer-pg}
DATA=$ROOT_DIR/data
RUN=$ROOT_DIR/run
ROLE=explorer_test
DB=explorer_test
log() { echo "ci_postgres: $*" >&2; }

bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

BIN=$(bindir)
if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ]; then
    if [ "$(id -u)" != 0 ]; then
        log "PostgreSQL is not installed; as root: apt-get install -y postgresql"
        exit 1
    fi
    log "installing Debian's postgresql"
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >&2
    BIN=$(bindir)
    [ -n "$BIN" ] || { log "postgresql did not install"; exit 1; }
fi

mkdir -p "$ROOT_DIR"
chmod 755 "$ROOT_DIR"
exec 9>"$ROOT_DIR/lock"
flock -w 120 9 || { log "another run holds $ROOT_DIR/lock"; exit 1; }

running() {
    [ -f "$DATA/PG_VERSION" ] && as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

if [ "${1:-start}" = stop ]; then
    if running; then as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >&2 9>&-; fi
    exit 0
fi

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

if [ ! -f "$DATA/PG_VERSION" ]; then
    rm -rf "$DATA" "$RUN"
    mkdir -p "$DATA" "$RUN"
    if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$DATA" "$RUN"; fi
    chmod 700 "$DATA" "$RUN"
    log "initdb in $DATA"
    as_pg "$BIN/initdb" -D "$DATA" -U postgres -E UTF8 --no-locale --auth-local=trust \
        --auth-host=scram-sha-256 >/dev/null
fi
if [ ! -s "$ROOT_DIR/password" ]; then
    (umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$ROOT_DIR/password")
fi
PASSWORD=$(cat "$ROOT_DIR/password")

PORT=$(cat "$ROOT_DIR/port" 2>/dev/null || true)
if ! running; then
    for attempt in 1 2 3; do
        if [ -z "$PORT" ] || [ "$attempt" -gt 1 ]; then PORT=$(free_port); fi
        log "starting PostgreSQL on 127.0.0.1:$PORT"
        if as_pg "$BIN/pg_ctl" -D "$DATA" -l "$RUN/server.log" -w -t 60 -o \
            "-c listen_addresses=127.0.0.1 -p $PORT -c unix_socket_directories=$RUN -c max_connections=200 -c fsync=off" \
            start >&2 9>&-; then  # the server must not inherit the lock
            echo "$PORT" >"$ROOT_DIR/port"
            break
        fi
        tail -n 5 "$RUN/server.log" >&2 || true
        [ "$attempt" = 3 ] && { log "the server did not start"; exit 1; }
    done
fi

psql_su() { as_pg "$BIN/psql" -X -q -h "$RUN" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
psql_su -c "DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$ROLE') THEN
    CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD';
  ELSE
    ALTER ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD';
  END IF;
END \$\$;" >&2
if [ "$(psql_su -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]; then
    psql_su -c "CREATE DATABASE $DB OWNER $ROLE" >&2
fi

URL="postgresql://$ROLE:$PASSWORD@127.0.0.1:$PORT/$DB"
(umask 077; echo "$URL" >"$ROOT_DIR/url")
echo "$URL"
