# Sourced by up.sh, down.sh and start-node.sh (test/support/throwaway-pg-ha.ts runs them with its own
# PGHA_DIR and ports). Every value can be overridden from the environment.
# Adapted from the prototype in ../shared/pg-ha (NOTES.md there: measured timings and the gotchas
# these settings avoid).
PGHA_DIR=${PGHA_DIR:-/tmp/pgha}                         # everything lives here (data, logs, configs, pids)
PGHA_PG_BIN=${PGHA_PG_BIN:-/usr/lib/postgresql/15/bin}  # Debian's postgresql-15 binaries
PGHA_OS_USER=${PGHA_OS_USER:-postgres}                  # Patroni/PostgreSQL run as this user (PostgreSQL refuses root)
PGHA_SCOPE=${PGHA_SCOPE:-pgha}                          # Patroni cluster name (etcd key prefix /service/$PGHA_SCOPE)

PGHA_ETCD_PORT=${PGHA_ETCD_PORT:-22379}                 # etcd client port
PGHA_ETCD_PEER_PORT=${PGHA_ETCD_PEER_PORT:-22380}
PGHA_API_PORT1=${PGHA_API_PORT1:-18008}                 # Patroni REST API of node1 / node2
PGHA_API_PORT2=${PGHA_API_PORT2:-18009}
PGHA_PG_PORT1=${PGHA_PG_PORT1:-15432}                   # PostgreSQL of node1 / node2
PGHA_PG_PORT2=${PGHA_PG_PORT2:-15433}
PGHA_PORT=${PGHA_PORT:-25432}                           # HAProxy: always the primary
PGHA_STATS_PORT=${PGHA_STATS_PORT:-25480}               # HAProxy stats page (http://127.0.0.1:25480/;csv)
PGHA_HAPROXY_SOCKET=${PGHA_HAPROXY_SOCKET:-$PGHA_DIR/haproxy.sock}  # HAProxy runtime API (admin level: tests set server states)

# Patroni dynamic config (only applied at bootstrap; change later with `patronictl edit-config`).
# Patroni's rule: loop_wait + 2*retry_timeout <= ttl.
PGHA_TTL=${PGHA_TTL:-30}
PGHA_LOOP_WAIT=${PGHA_LOOP_WAIT:-2}
PGHA_RETRY_TIMEOUT=${PGHA_RETRY_TIMEOUT:-10}
# 0 = if the primary's PostgreSQL dies, fail over to the sync standby at once.
# Patroni's default (300) restarts the crashed primary in place instead and does NOT fail over.
PGHA_PRIMARY_START_TIMEOUT=${PGHA_PRIMARY_START_TIMEOUT:-0}
PGHA_SYNC_MODE=${PGHA_SYNC_MODE:-true}
PGHA_SYNC_STRICT=${PGHA_SYNC_STRICT:-false}             # true = refuse writes while no sync standby is up

PGHA_SUPERUSER=${PGHA_SUPERUSER:-postgres}
PGHA_SUPERUSER_PASSWORD=${PGHA_SUPERUSER_PASSWORD:-pgha-super}
PGHA_REPL_USER=${PGHA_REPL_USER:-replicator}
PGHA_REPL_PASSWORD=${PGHA_REPL_PASSWORD:-pgha-repl}
PGHA_SHARED_BUFFERS=${PGHA_SHARED_BUFFERS:-128MB}
# After pg_rewind the old primary replays from the last checkpoint before the divergence, up to
# ~max_wal_size of WAL back; the new primary must still hold it (Patroni's default wal_keep_size is 128MB).
PGHA_WAL_KEEP_SIZE=${PGHA_WAL_KEEP_SIZE:-1GB}
PGHA_MAX_WAL_SIZE=${PGHA_MAX_WAL_SIZE:-512MB}
# The service's processes (pools of 10 each, edge pools, scrape pools) and the test's own clients.
PGHA_MAX_CONNECTIONS=${PGHA_MAX_CONNECTIONS:-300}
# How soon a standby's walreceiver retries after a failed stream (production default 5s). Its first
# stream fails ("replication slot does not exist" until the leader's next loop), so this sets how
# soon a (re)joining node becomes the sync standby: 1s makes up.sh and each rejoin seconds shorter.
PGHA_WAL_RETRIEVE_RETRY_INTERVAL=${PGHA_WAL_RETRIEVE_RETRY_INTERVAL:-1s}

export PGHA_DIR PGHA_PG_BIN PGHA_OS_USER PGHA_SCOPE PGHA_ETCD_PORT PGHA_ETCD_PEER_PORT \
  PGHA_API_PORT1 PGHA_API_PORT2 PGHA_PG_PORT1 PGHA_PG_PORT2 PGHA_PORT PGHA_STATS_PORT PGHA_HAPROXY_SOCKET \
  PGHA_TTL PGHA_LOOP_WAIT PGHA_RETRY_TIMEOUT PGHA_PRIMARY_START_TIMEOUT PGHA_SYNC_MODE PGHA_SYNC_STRICT \
  PGHA_SUPERUSER PGHA_SUPERUSER_PASSWORD PGHA_REPL_USER PGHA_REPL_PASSWORD PGHA_SHARED_BUFFERS PGHA_WAL_KEEP_SIZE PGHA_MAX_WAL_SIZE \
  PGHA_MAX_CONNECTIONS PGHA_WAL_RETRIEVE_RETRY_INTERVAL

# node N -> its ports and directory
pgha_api_port() { if [ "$1" = 1 ]; then echo "$PGHA_API_PORT1"; else echo "$PGHA_API_PORT2"; fi; }
pgha_pg_port()  { if [ "$1" = 1 ]; then echo "$PGHA_PG_PORT1";  else echo "$PGHA_PG_PORT2";  fi; }
pgha_node_dir() { echo "$PGHA_DIR/node$1"; }
