# Shared by the bench scripts (sourced, not run): timing, medians, ratios,
# the 10M-line URL corpus of scripts/bench.sh, and a private redis-server
# and its CPU.

# t CMD...: wall seconds of one run of CMD, its output discarded; a failing
# CMD stops the benchmark (its error shown).
t() {
    local s e
    s=$(date +%s.%N)
    "$@" > /dev/null 2> target/bench/t.err || { echo "failed: $*" >&2; cat target/bench/t.err >&2; return 1; }
    e=$(date +%s.%N)
    awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", e - s }'
}

# median X...: the median of the numbers given (the lower middle of an even count).
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# ratio X Y: X / Y to two decimals.
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'; }

# corpus: prints the path of the 10M-line corpus, generating it first if missing.
corpus() {
    local c=target/bench/urls-10000000.txt
    mkdir -p target/bench
    if [ ! -s "$c" ]; then
        python3 scripts/gen-urls.py --lines 10000000 --seed 42 --min-words 3 --max-words 9 > "$c.tmp"
        mv "$c.tmp" "$c"
    fi
    echo "$c"
}

# For the Redis benches (scripts/bench-redis-*.sh):
#
# redis_start PORT: starts a redis-server of its own on PORT, keeping nothing
# on disk, in a new temporary directory W (set here), both gone on exit.
redis_start() {
    PORT=$1
    # A server already there (another bench on the port) would take both
    # benches' commands, and each would flush the other's filters.
    if redis-cli -p "$PORT" ping >/dev/null 2>&1; then
        echo "a redis-server already answers on port $PORT (another bench running?)" >&2
        exit 2
    fi
    W=$(mktemp -d)
    trap 'redis-cli -p $PORT shutdown nosave >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
    redis-server --port "$PORT" --save '' --appendonly no --dir "$W" --daemonize yes \
        --logfile "$W/log" >/dev/null
    for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
}

# cpu: the Redis CPU seconds so far of the server on $PORT (INFO
# used_cpu_user + used_cpu_sys).
cpu() { redis-cli -p "$PORT" info cpu | awk -F: '/used_cpu_(user|sys):/ { s += $2 } END { printf "%.6f", s }'; }

# median_in: the median of the numbers on standard input, one a line (the
# mean of the middle two of an even count).
median_in() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
