#!/usr/bin/env bash
# A highly available PostgreSQL for Tocsin with pg_auto_failover: a monitor and two nodes
# (a primary and its synchronous standby), as docs/operations.md describes, step by step.
#
#   setup.sh monitor    on the monitor's host
#   setup.sh node       on each database host: the first becomes the primary, the second
#                       copies it (its keeper, `pg_autoctl run`, must be running by then)
#
# Run it as the user PostgreSQL runs as (`postgres`); after each step, start the host's
# keeper: `pg_autoctl run --pgdata "$PGDATA"` (under systemd: `pg_autoctl show systemd`).
# Every setting comes from the environment:
#
#   PGDATA             the data directory to make                    (required)
#   PGPORT             the port PostgreSQL listens on                (5432)
#   HOST               this host's name or address, as the others reach it (required)
#   NETWORK            the addresses the nodes and the Tocsin hosts connect from, as one
#                      pg_hba address (10.0.0.0/24)                  (required)
#   MONITOR            the monitor's host:port                       (node; required)
#   NODE_NAME          this node's name (db1, db2)                   (node; required)
#   AUTOCTL_NODE_PASSWORD   the monitor's `autoctl_node` role, which the keepers use
#   REPLICATION_PASSWORD    the nodes' `pgautofailover_replicator` role (node)
#   TOCSIN_PASSWORD         the `tocsin` role, which every Tocsin process uses (node)
#   SSL                pg_autoctl's SSL option                       (--ssl-self-signed)
#   SSL_MODE           sslmode of the keepers' connections           (require)
#   MONITOR_SETTINGS   the monitor's pgautofailover.* settings, `name=value …` (monitor)
#   NODE_SETTINGS      `pg_autoctl config set` keys, `name=value …`  (node)
#   PG_BINDIR          PostgreSQL's binaries               (/usr/lib/postgresql/15/bin)
set -euo pipefail

step=${1:?usage: setup.sh monitor|node}
: "${PGDATA:?}" "${HOST:?}" "${NETWORK:?}" "${AUTOCTL_NODE_PASSWORD:?}"
PGPORT=${PGPORT:-5432}
SSL=${SSL:---ssl-self-signed}
SSL_MODE=${SSL_MODE:-require}
PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
export PATH="$PG_BINDIR:$PATH"
if [ "$SSL" = "--no-ssl" ]; then host=host; else host=hostssl; fi

# PostgreSQL started on its own for the steps below, with no TCP port open and its socket in
# the data directory: pg_autoctl leaves it stopped after `create`, and nothing may reach it
# before its passwords and rules are in place.
quiet_start() {
    pg_ctl --pgdata "$PGDATA" --wait --silent start \
        -o "-c listen_addresses='' -c unix_socket_directories='$PGDATA'" >/dev/null
}
quiet_stop() { pg_ctl --pgdata "$PGDATA" --wait --silent stop --mode fast; }
sql() { psql --no-psqlrc --quiet -v ON_ERROR_STOP=1 -h "$PGDATA" -p "$PGPORT" "$@"; }

# initdb's own rules let any local user in over TCP without a password (`trust` on
# 127.0.0.1 and ::1): on a host that runs Tocsin too, or on one machine as in the tests, they
# would hide a missing password. Only pg_auto_failover's rules and ours stay.
drop_initdb_trust() {
    sed -i -E '/pg_auto_failover/! { /^host(ssl)?[[:space:]].*[[:space:]]trust([[:space:]]|$)/d }' \
        "$PGDATA/pg_hba.conf"
}

remember_password() { # role password → ~/.pgpass, for any host of the cluster
    local file="$HOME/.pgpass"
    touch "$file" && chmod 0600 "$file"
    sed -i "/^\*:\*:\*:$1:/d" "$file"
    printf '*:*:*:%s:%s\n' "$1" "$2" >>"$file"
}

settings() { # name=value… → one per line
    local pair
    for pair in ${1:-}; do printf '%s\n' "$pair"; done
}

monitor() {
    # --listen: pg_autoctl has PostgreSQL listen on every address (*) otherwise.
    pg_autoctl create monitor --pgdata "$PGDATA" --pgport "$PGPORT" \
        --hostname "$HOST" --listen "$HOST" --auth scram-sha-256 "$SSL" \
        --pgctl "$PG_BINDIR/pg_ctl"
    drop_initdb_trust
    quiet_start
    # pg_autoctl sets no password: the keepers' connections would be refused.
    sql -d pg_auto_failover -c "ALTER ROLE autoctl_node PASSWORD '$AUTOCTL_NODE_PASSWORD'"
    local name value
    while IFS='=' read -r name value; do
        sql -d pg_auto_failover -c "ALTER SYSTEM SET $name = '$value'"
    done < <(settings "${MONITOR_SETTINGS:-}")
    quiet_stop
}

node() {
    : "${MONITOR:?}" "${NODE_NAME:?}" "${REPLICATION_PASSWORD:?}" "${TOCSIN_PASSWORD:?}"
    local monitor_uri="postgres://autoctl_node:$AUTOCTL_NODE_PASSWORD@$MONITOR/pg_auto_failover?sslmode=$SSL_MODE"
    # The second node copies the primary with pg_basebackup as pgautofailover_replicator
    # during `create`, before its own configuration can hold the password.
    PGPASSWORD=$REPLICATION_PASSWORD pg_autoctl create postgres --pgdata "$PGDATA" \
        --pgport "$PGPORT" --hostname "$HOST" --listen "$HOST" --name "$NODE_NAME" \
        --dbname tocsin --monitor "$monitor_uri" --auth scram-sha-256 "$SSL" \
        --pgctl "$PG_BINDIR/pg_ctl"
    # What this node's standby copies with and streams by, and what it uses itself once it
    # is demoted and follows the other: the keeper's own connections to the other node (its
    # checks, pg_rewind, a new base backup) take the password from ~/.pgpass alone.
    # `--`: pg_autoctl reads any later word that starts with `-` as an option, and a
    # password may (token_urlsafe's do one time in 64).
    pg_autoctl config set --pgdata "$PGDATA" -- replication.password "$REPLICATION_PASSWORD" >/dev/null
    remember_password pgautofailover_replicator "$REPLICATION_PASSWORD"
    local name value
    while IFS='=' read -r name value; do
        pg_autoctl config set --pgdata "$PGDATA" -- "$name" "$value" >/dev/null
    done < <(settings "${NODE_SETTINGS:-}")
    drop_initdb_trust
    # Tocsin's rule, on each node (pg_hba.conf is not replicated): the primary is wherever
    # the last failover put it.
    printf '%s\ttocsin\ttocsin\t%s\tscram-sha-256\n' "$host" "$NETWORK" >>"$PGDATA/pg_hba.conf"
    # A demoted primary rewinds itself from the new one with pg_rewind, which connects to
    # the `postgres` database: pg_autoctl's rules name only `replication` and `tocsin`.
    printf '%s\tpostgres\tpgautofailover_replicator\t%s\tscram-sha-256\n' "$host" "$NETWORK" \
        >>"$PGDATA/pg_hba.conf"
    quiet_start
    if [ "$(sql -d tocsin -Atc 'SELECT pg_is_in_recovery()')" = f ]; then
        # On the primary; the roles and the database's owner reach the standby by
        # replication. `--dbname tocsin` made the database: it only changes hands.
        sql -d tocsin -c "ALTER ROLE pgautofailover_replicator PASSWORD '$REPLICATION_PASSWORD'"
        sql -d tocsin -c "CREATE ROLE tocsin LOGIN PASSWORD '$TOCSIN_PASSWORD'"
        sql -d tocsin -c "ALTER DATABASE tocsin OWNER TO tocsin"
        sql -d tocsin -c "ALTER SCHEMA public OWNER TO tocsin"
    fi
    quiet_stop
}

case "$step" in
    monitor) monitor ;;
    node) node ;;
    *) echo "setup.sh: unknown step $step (monitor or node)" >&2; exit 2 ;;
esac
