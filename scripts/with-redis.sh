#!/usr/bin/env bash
# Runs a command (e.g. `cargo test`) with a standalone Redis server and a
# 3-master Redis Cluster on loopback, for the tests of Redis filters; stops
# them by PID afterwards. Installs redis-server from Debian's packages when it
# is missing. The servers keep nothing on disk beyond a temp directory.
#
#   scripts/with-redis.sh cargo test
#
# Exports SEEN_TEST_REDIS (host:port) and SEEN_TEST_REDIS_CLUSTER
# (host:port,host:port,host:port) to the command. Ports: SEEN_REDIS_PORT
# (default: the first free from 6390) and SEEN_CLUSTER_PORT (default: the
# first free from 7101; the Cluster uses the three ports from there, and the
# same plus 10000 for its bus).
set -euo pipefail

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
    echo "== installing redis-server (Debian package)" >&2
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server >&2
fi

in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Ports: as given, else the first free ones from 6390 and 7101 (a leftover
# server on the default ports does not stop the tests).
if [ -n "${SEEN_REDIS_PORT:-}" ]; then
    port=$SEEN_REDIS_PORT
else
    port=6390
    while in_use "$port"; do port=$((port + 1)); done
fi
if [ -n "${SEEN_CLUSTER_PORT:-}" ]; then
    cport=$SEEN_CLUSTER_PORT
else
    cport=7101
    while in_use "$cport" || in_use $((cport + 1)) || in_use $((cport + 2)) ||
        in_use $((cport + 10000)) || in_use $((cport + 10001)) || in_use $((cport + 10002)); do
        cport=$((cport + 3))
    done
fi
for p in "$port" "$cport" $((cport + 1)) $((cport + 2)) $((cport + 10000)) $((cport + 10001)) $((cport + 10002)); do
    if in_use "$p"; then
        echo "port $p is in use on 127.0.0.1: set SEEN_REDIS_PORT / SEEN_CLUSTER_PORT to free ones" >&2
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

wait_ping() {
    for _ in $(seq 1 200); do
        if [ "$(redis-cli -p "$1" ping 2>/dev/null)" = PONG ]; then return 0; fi
        sleep 0.05
    done
    echo "redis-server on port $1 did not start; its log:" >&2
    cat "$dir/$1.log" >&2 || true
    exit 1
}

mkdir -p "$dir/$port"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$dir/$port" --logfile "$dir/$port.log" &
pids+=($!)
nodes=()
for i in 0 1 2; do
    p=$((cport + i))
    mkdir -p "$dir/$p"
    redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
        --cluster-config-file "$dir/$p/nodes.conf" --cluster-node-timeout 2000 \
        --save '' --appendonly no --dir "$dir/$p" --logfile "$dir/$p.log" &
    pids+=($!)
    nodes+=("127.0.0.1:$p")
done
wait_ping "$port"
for n in "${nodes[@]}"; do wait_ping "${n#*:}"; done
redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes </dev/null >"$dir/create.log" 2>&1 || {
    cat "$dir/create.log" >&2
    exit 1
}
for _ in $(seq 1 600); do
    ok=0
    for n in "${nodes[@]}"; do
        if redis-cli -p "${n#*:}" cluster info 2>/dev/null | grep -q 'cluster_state:ok'; then ok=$((ok + 1)); fi
    done
    if [ "$ok" = 3 ]; then break; fi
    sleep 0.05
done
if [ "$ok" != 3 ]; then
    echo "the Redis Cluster did not reach cluster_state:ok" >&2
    exit 1
fi
export SEEN_TEST_REDIS="127.0.0.1:$port"
export SEEN_TEST_REDIS_CLUSTER=$(IFS=,; echo "${nodes[*]}")
echo "== Redis $(redis-server --version | awk '{print $3}') at $SEEN_TEST_REDIS, Cluster at $SEEN_TEST_REDIS_CLUSTER" >&2
"$@"
