#!/usr/bin/env bash
# Build a 2-node Patroni/PostgreSQL 15 cluster + 1 etcd + HAProxy from nothing, under $PGHA_DIR
# (test/support/throwaway-pg-ha.ts; adapted from ../shared/pg-ha/up.sh). Run as root. Installs what is
# missing: apt-get install patroni etcd-server haproxy (postgresql-15 must be there already).
# Wipes $PGHA_DIR/{etcd,node1,node2} from any earlier run (refuses while one is still running).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/env.sh"

T0=$EPOCHREALTIME
step() { printf '[up %6.2fs] %s\n' "$(awk "BEGIN{print $EPOCHREALTIME - $T0}")" "$*"; }
die() { echo "up.sh: $*" >&2; exit 1; }
wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
  local limit=$1 what=$2; shift 2
  local end=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || die "timed out after ${limit}s waiting for $what"
    sleep 0.2
  done
}
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

[ "$(id -u)" = 0 ] || die "run as root (it starts processes as $PGHA_OS_USER)"
case "$PGHA_DIR" in /|'') die "refusing PGHA_DIR='$PGHA_DIR'";; esac
[ -x "$PGHA_PG_BIN/postgres" ] || die "no PostgreSQL binaries in $PGHA_PG_BIN (postgresql-15)"
pkgs=""
for pair in patroni:patroni etcd:etcd-server haproxy:haproxy; do
  command -v "${pair%%:*}" >/dev/null || pkgs="$pkgs ${pair#*:}"
done
if [ -n "$pkgs" ]; then  # Debian's packages; where systemd runs they would also start their own services
  mkdir -p "$PGHA_DIR"
  export DEBIAN_FRONTEND=noninteractive
  # Lock::Timeout: wait for another apt/dpkg (a parallel job) to finish; update the lists once if needed.
  apt=(apt-get -q -o DPkg::Lock::Timeout=600)
  "${apt[@]}" install -y $pkgs > "$PGHA_DIR/apt.log" 2>&1 \
    || { "${apt[@]}" update >> "$PGHA_DIR/apt.log" 2>&1 && "${apt[@]}" install -y $pkgs >> "$PGHA_DIR/apt.log" 2>&1; } \
    || die "apt-get install$pkgs failed, see $PGHA_DIR/apt.log"
  step "installed$pkgs"
fi
for b in etcd patroni patronictl haproxy curl psql setpriv; do command -v "$b" >/dev/null || die "missing $b"; done
id "$PGHA_OS_USER" >/dev/null || die "no OS user $PGHA_OS_USER"
for p in "$PGHA_DIR/etcd.pid" "$PGHA_DIR/haproxy.pid" "$PGHA_DIR"/node*/patroni.pid; do
  if alive "$p"; then die "$p is running; run down.sh first"; fi
done

# ---------------------------------------------------------------- directories
mkdir -p "$PGHA_DIR"; chmod 755 "$PGHA_DIR"           # the OS user must be able to traverse it
cd "$PGHA_DIR"                                         # a cwd the OS user can enter (not /root)
rm -rf "$PGHA_DIR/etcd" "$PGHA_DIR/node1" "$PGHA_DIR/node2"
mkdir -m 700 "$PGHA_DIR/etcd"
for n in 1 2; do
  d=$(pgha_node_dir $n)
  mkdir -p "$d/log"; chown -R "$PGHA_OS_USER:$PGHA_OS_USER" "$d"; chmod 700 "$d"
done

# ---------------------------------------------------------------- configs
cat > "$PGHA_DIR/etcd.yml" <<YML
name: pgha-etcd
data-dir: $PGHA_DIR/etcd
listen-client-urls: http://127.0.0.1:$PGHA_ETCD_PORT
advertise-client-urls: http://127.0.0.1:$PGHA_ETCD_PORT
listen-peer-urls: http://127.0.0.1:$PGHA_ETCD_PEER_PORT
initial-advertise-peer-urls: http://127.0.0.1:$PGHA_ETCD_PEER_PORT
initial-cluster: pgha-etcd=http://127.0.0.1:$PGHA_ETCD_PEER_PORT
initial-cluster-state: new
initial-cluster-token: $PGHA_SCOPE
enable-grpc-gateway: true   # Patroni's etcd3 speaks JSON to /v3/*; with --config-file it defaults to OFF
logger: zap
log-outputs: [stderr]
YML

for n in 1 2; do
  d=$(pgha_node_dir $n); api=$(pgha_api_port $n); pg=$(pgha_pg_port $n)
  cat > "$d/patroni.yml" <<YML
scope: $PGHA_SCOPE
name: node$n
restapi:
  listen: 127.0.0.1:$api
  connect_address: 127.0.0.1:$api
etcd3:                      # v3 API; the 'etcd:' key would need etcd started with enable-v2
  hosts: 127.0.0.1:$PGHA_ETCD_PORT
watchdog:
  mode: off
bootstrap:
  dcs:                      # written to etcd once, at bootstrap; later: patronictl edit-config
    ttl: $PGHA_TTL
    loop_wait: $PGHA_LOOP_WAIT
    retry_timeout: $PGHA_RETRY_TIMEOUT
    maximum_lag_on_failover: 1048576
    primary_start_timeout: $PGHA_PRIMARY_START_TIMEOUT
    synchronous_mode: $PGHA_SYNC_MODE
    synchronous_mode_strict: $PGHA_SYNC_STRICT
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        shared_buffers: $PGHA_SHARED_BUFFERS
        # after pg_rewind the old primary replays from its last checkpoint BEFORE the divergence;
        # the new primary must still have that WAL, or the rewound node waits forever
        # ("requested WAL segment ... has already been removed"). Keep it well above max_wal_size.
        wal_keep_size: $PGHA_WAL_KEEP_SIZE
        max_wal_size: $PGHA_MAX_WAL_SIZE
        max_connections: $PGHA_MAX_CONNECTIONS
        wal_retrieve_retry_interval: $PGHA_WAL_RETRIEVE_RETRY_INTERVAL
  initdb:
    - encoding: UTF8
    - data-checksums
postgresql:
  listen: 127.0.0.1:$pg
  connect_address: 127.0.0.1:$pg
  data_dir: $d/data
  bin_dir: $PGHA_PG_BIN
  pgpass: $d/pgpass          # default is ~/pgpass, shared by both nodes
  basebackup:                # cloning/reinit: without 'fast' pg_basebackup waits for a spread checkpoint (minutes)
    - checkpoint: fast
  authentication:
    superuser:   {username: $PGHA_SUPERUSER, password: $PGHA_SUPERUSER_PASSWORD}
    replication: {username: $PGHA_REPL_USER, password: $PGHA_REPL_PASSWORD}
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 scram-sha-256
    - host replication $PGHA_REPL_USER 127.0.0.1/32 scram-sha-256
  parameters:
    unix_socket_directories: $d      # not /var/run/postgresql, which the machine's own cluster uses
    logging_collector: 'on'
    log_directory: $d/log
    log_filename: postgresql.log
    log_line_prefix: '%m [%p] %q%u@%d '
YML
  chown "$PGHA_OS_USER:$PGHA_OS_USER" "$d/patroni.yml"; chmod 600 "$d/patroni.yml"
done

cat > "$PGHA_DIR/haproxy.cfg" <<CFG
global
    maxconn 500
    log stdout format iso local0 info   # server UP/DOWN transitions, with timestamps
    stats socket $PGHA_HAPROXY_SOCKET mode 600 level admin   # runtime API: tests hold a server UP or in maintenance
defaults
    mode tcp
    log global
    option dontlognull
    retries 2
    timeout connect 1s
    timeout check 1s
    timeout client 30m
    timeout server 30m
listen pg_primary
    bind 127.0.0.1:$PGHA_PORT
    option httpchk OPTIONS /primary   # GET works too, but HAProxy resets the socket before Patroni has written the body: traceback spam in patroni.log
    http-check expect status 200
    default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
    server node1 127.0.0.1:$PGHA_PG_PORT1 check port $PGHA_API_PORT1
    server node2 127.0.0.1:$PGHA_PG_PORT2 check port $PGHA_API_PORT2
listen stats
    mode http
    bind 127.0.0.1:$PGHA_STATS_PORT
    stats enable
    stats uri /
CFG
haproxy -c -q -f "$PGHA_DIR/haproxy.cfg" || die "haproxy.cfg invalid"
step "configs written to $PGHA_DIR"

# ---------------------------------------------------------------- start
# setsid: each daemon gets its own session, so a harness that kills up.sh's process group (a timeout,
# Ctrl-C) does not take the cluster down with it; only down.sh stops them. setsid execs, so $! is the
# daemon's own pid.
setsid etcd --config-file "$PGHA_DIR/etcd.yml" > "$PGHA_DIR/etcd.log" 2>&1 < /dev/null &
echo $! > "$PGHA_DIR/etcd.pid"
wait_for 30 "etcd health" curl -fsS "http://127.0.0.1:$PGHA_ETCD_PORT/health"
step "etcd up (pid $(cat "$PGHA_DIR/etcd.pid"))"

start_node() { "$HERE/start-node.sh" "$1"; }
start_node 1
wait_for 120 "node1 to become primary" curl -fsS "http://127.0.0.1:$PGHA_API_PORT1/primary"
step "node1 primary (patroni pid $(cat "$PGHA_DIR/node1/patroni.pid"))"
start_node 2
wait_for 120 "node2 to become the sync standby" curl -fsS "http://127.0.0.1:$PGHA_API_PORT2/sync"
step "node2 streaming, synchronous standby (patroni pid $(cat "$PGHA_DIR/node2/patroni.pid"))"

setsid haproxy -db -f "$PGHA_DIR/haproxy.cfg" > "$PGHA_DIR/haproxy.log" 2>&1 < /dev/null &
echo $! > "$PGHA_DIR/haproxy.pid"
export PGPASSWORD=$PGHA_SUPERUSER_PASSWORD
wait_for 30 "a writable primary behind HAProxy" \
  psql -h 127.0.0.1 -p "$PGHA_PORT" -U "$PGHA_SUPERUSER" -d postgres -XAtqc "select 1/(not pg_is_in_recovery())::int"
step "haproxy up on 127.0.0.1:$PGHA_PORT (pid $(cat "$PGHA_DIR/haproxy.pid"))"
patronictl -c "$PGHA_DIR/node1/patroni.yml" list
