#!/usr/bin/env bash
# Runs a command (e.g. `cargo test`) with Redis servers on loopback for the
# tests of Redis filters, and stops them by PID afterwards: a standalone
# server, another with one replica, a 3-master Cluster, and the same over TLS (a
# standalone server and a 3-master Cluster, with a test CA made here).
# Installs redis-server and openssl from Debian's packages when missing. The
# servers keep nothing on disk beyond a temp directory.
#
#   scripts/with-redis.sh cargo test
#
# Exports to the command (host:port, or three, comma-separated, for a
# Cluster): SEEN_TEST_REDIS, SEEN_TEST_REDIS_REPLICATED (a server with a
# replica) and SEEN_TEST_REDIS_REPLICA (that replica), SEEN_TEST_REDIS_CLUSTER, SEEN_TEST_REDIS_TLS, SEEN_TEST_REDIS_TLS_CLUSTER,
# and SEEN_TEST_REDIS_TLS_DIR (ca.crt, client.crt, client.key). Ports: the
# first three free from 6390 (standalone, replicated, replica), 7101 (Cluster; its bus on
# the same plus 10000), then the next free ones for TLS; or set
# SEEN_REDIS_PORT, SEEN_CLUSTER_PORT, SEEN_TLS_PORT, SEEN_TLS_CLUSTER_PORT.
set -euo pipefail

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1 ||
    ! command -v openssl >/dev/null 2>&1; then
    echo "== installing redis-server and openssl (Debian packages)" >&2
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server openssl >&2
fi

in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# free FROM N [BUS]: the first of N consecutive free ports from FROM (with
# BUS, their Cluster bus ports, +10000, free too).
free() {
    local p=$1 i ok
    while :; do
        ok=1
        for ((i = 0; i < $2; i++)); do
            if in_use $((p + i)) || { [ -n "${3:-}" ] && in_use $((p + i + 10000)); }; then ok=0; fi
        done
        if [ "$ok" = 1 ]; then echo "$p"; return; fi
        p=$((p + $2))
    done
}
# Ports: as given, else the first free ones from 6390 and 7101 (a leftover
# server on the default ports does not stop the tests).
port=${SEEN_REDIS_PORT:-$(free 6390 3)}
cport=${SEEN_CLUSTER_PORT:-$(free 7101 3 bus)}
tport=${SEEN_TLS_PORT:-$(free $((port + 3)) 1)}
tcport=${SEEN_TLS_CLUSTER_PORT:-$(free $((cport + 3)) 3 bus)}
for p in "$port" $((port + 1)) $((port + 2)) "$tport" "$cport" $((cport + 1)) $((cport + 2)) "$tcport" \
    $((tcport + 1)) $((tcport + 2)) $((cport + 10000)) $((cport + 10001)) $((cport + 10002)) \
    $((tcport + 10000)) $((tcport + 10001)) $((tcport + 10002)); do
    if in_use "$p"; then
        echo "port $p is in use on 127.0.0.1: set SEEN_REDIS_PORT, SEEN_CLUSTER_PORT, SEEN_TLS_PORT and SEEN_TLS_CLUSTER_PORT to free ones" >&2
        exit 1
    fi
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/seen-redis.XXXXXX")
pids=()
stop() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap stop EXIT

# The TLS servers' certificates: a test CA, a server certificate for
# 127.0.0.1 and localhost, and a client certificate (Redis asks clients for
# one by default).
tls="$dir/tls"
mkdir -p "$tls"
(
    cd "$tls"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 \
        -subj "/CN=seen test CA" 2>/dev/null
    for who in server client; do
        openssl req -newkey rsa:2048 -nodes -keyout "$who.key" -out "$who.csr" \
            -subj "/CN=seen test $who" 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$who.ext"
        openssl x509 -req -in "$who.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
            -days 2 -sha256 -extfile "$who.ext" -out "$who.crt" 2>/dev/null
    done
)
tls_server=(--tls-cert-file "$tls/server.crt" --tls-key-file "$tls/server.key"
    --tls-ca-cert-file "$tls/ca.crt" --tls-replication yes)
tls_cli=(--tls --cacert "$tls/ca.crt" --cert "$tls/client.crt" --key "$tls/client.key")

# cli PORT ARGS...: redis-cli on a plain or a TLS port.
cli() {
    local p=$1
    shift
    case " $tport $tcport $((tcport + 1)) $((tcport + 2)) " in
    *" $p "*) redis-cli "${tls_cli[@]}" -p "$p" "$@" ;;
    *) redis-cli -p "$p" "$@" ;;
    esac
}

wait_ping() {
    for _ in $(seq 1 200); do
        if [ "$(cli "$1" ping 2>/dev/null)" = PONG ]; then return 0; fi
        sleep 0.05
    done
    echo "redis-server on port $1 did not start; its log:" >&2
    cat "$dir/$1.log" >&2 || true
    exit 1
}

# serve PORT ARGS...: a redis-server keeping nothing on disk.
serve() {
    local p=$1
    shift
    mkdir -p "$dir/$p"
    redis-server --bind 127.0.0.1 --save '' --appendonly no --dir "$dir/$p" \
        --logfile "$dir/$p.log" "$@" &
    pids+=($!)
}

# cluster FIRST PORT-FLAG ARGS...: three masters on FIRST.. FIRST+2 (their
# port given with PORT-FLAG), made a Cluster; its nodes go to $nodes.
cluster() {
    local first=$1 flag=$2 i p n ok
    shift 2
    nodes=()
    for i in 0 1 2; do
        p=$((first + i))
        serve "$p" "$flag" "$p" "$@" --cluster-enabled yes --cluster-config-file "$dir/$p/nodes.conf" \
            --cluster-node-timeout 2000
        nodes+=("127.0.0.1:$p")
    done
    for n in "${nodes[@]}"; do wait_ping "${n#*:}"; done
    cli "$first" --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes \
        </dev/null >"$dir/create-$first.log" 2>&1 || {
        cat "$dir/create-$first.log" >&2
        exit 1
    }
    for _ in $(seq 1 600); do
        ok=0
        for n in "${nodes[@]}"; do
            if cli "${n#*:}" cluster info 2>/dev/null | grep -q 'cluster_state:ok'; then ok=$((ok + 1)); fi
        done
        if [ "$ok" = 3 ]; then break; fi
        sleep 0.05
    done
    if [ "$ok" != 3 ]; then
        echo "the Redis Cluster on $first did not reach cluster_state:ok" >&2
        exit 1
    fi
}

# A standalone server; another with a replica (for --redis-wait); a TLS
# server; a Cluster; a TLS Cluster.
serve "$port" --port "$port"
serve $((port + 1)) --port $((port + 1))
serve $((port + 2)) --port $((port + 2)) --replicaof 127.0.0.1 $((port + 1))
serve "$tport" --port 0 --tls-port "$tport" "${tls_server[@]}"
for p in "$port" $((port + 1)) $((port + 2)) "$tport"; do wait_ping "$p"; done
cluster "$cport" --port
SEEN_TEST_REDIS_CLUSTER=$(IFS=,; echo "${nodes[*]}")
cluster "$tcport" --tls-port --port 0 "${tls_server[@]}" --tls-cluster yes
SEEN_TEST_REDIS_TLS_CLUSTER=$(IFS=,; echo "${nodes[*]}")
synced=0
for _ in $(seq 1 400); do
    if cli $((port + 2)) info replication | grep -q 'master_link_status:up'; then
        synced=1
        break
    fi
    sleep 0.05
done
if [ "$synced" != 1 ]; then
    echo "the replica on port $((port + 2)) did not sync with $((port + 1)); its log:" >&2
    cat "$dir/$((port + 2)).log" >&2 || true
    exit 1
fi
export SEEN_TEST_REDIS="127.0.0.1:$port"
export SEEN_TEST_REDIS_REPLICATED="127.0.0.1:$((port + 1))"
export SEEN_TEST_REDIS_REPLICA="127.0.0.1:$((port + 2))"
export SEEN_TEST_REDIS_TLS="127.0.0.1:$tport"
export SEEN_TEST_REDIS_CLUSTER SEEN_TEST_REDIS_TLS_CLUSTER
export SEEN_TEST_REDIS_TLS_DIR="$tls"
echo "== Redis $(redis-server --version | awk '{print $3}') at $SEEN_TEST_REDIS, at" \
    "$SEEN_TEST_REDIS_REPLICATED with a replica at $SEEN_TEST_REDIS_REPLICA," \
    "Cluster at $SEEN_TEST_REDIS_CLUSTER; TLS at $SEEN_TEST_REDIS_TLS, TLS Cluster at" \
    "$SEEN_TEST_REDIS_TLS_CLUSTER (certificates in $tls)" >&2
"$@"
