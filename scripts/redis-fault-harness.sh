#!/usr/bin/env bash
# Redis fault harness (issue 40): four faults, TRIALS trials each, on a
# redis-server of its own, with a fixed seed for the fault moments; prints
# the tallies.
#
#  1. Connections killed (`CLIENT KILL TYPE normal`) 0-300 ms into a
#     `dedup -f` of 100,000 new lines, while it reads shards or sets.
#  2. The server stopped (SIGSTOP) for 2 s, 0-300 ms into such a run.
#     For both, odd trials use the fingerprint-set layout, even ones the
#     Bloom layout, each filter holding 600,000 lines first. After the
#     faulty run, the same input runs again with no fault.
#  3. The meta key deleted between runs: a filter of 30,000 lines loses
#     its meta key; `verify` and a `dedup -f` of 10,000 new lines run; then
#     the filter's keys are removed as the advice says and the dedup runs
#     again.
#  4. The journal directory on a full file system: a 16 MiB tmpfs (root
#     only; else `ulimit -f`) with 1-12 MiB left free by a filler; `dedup
#     -f` of 300,000 new lines; then the filler goes and the run is
#     repeated.
#
# Counted: lines lost (a line of the input that no run printed; at -p 1e-9
# a false positive is not expected), lines printed twice (no process is
# killed here, so any is a broken promise), journal files left after the
# last run of a trial (orphans: 0), and the exit codes of each run.
#
#   scripts/redis-fault-harness.sh [TRIALS]      (default 30)
#   SEEN=/path/to/seen scripts/redis-fault-harness.sh   (another build)
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-30}
if [ -z "${SEEN:-}" ]; then
    cargo build --release --quiet
fi
S=${SEEN:-$PWD/target/release/seen}
command -v redis-server >/dev/null || { echo "needs redis-server (apt-get install redis-server)" >&2; exit 1; }
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mnt=""
cleanup() {
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
    if [ -n "$mnt" ]; then umount "$mnt" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
RANDOM=40
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile "$work/redis.pid" --dir "$work" >/dev/null
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
R() { redis-cli -p "$port" "$@"; }
export SEEN_JOURNAL_DIR=$work/journal

# lost INPUT OUT...: input lines no output holds. twice OUT...: lines
# printed more than once over the outputs.
lost() { local i=$1; shift; sort -u "$@" | comm -23 <(sort -u "$i") - | wc -l; }
twice() { sort "$@" | uniq -d | wc -l; }
journal_files() { find "$SEEN_JOURNAL_DIR" -type f -name 'log-*' -o -type f -name 'run-*' 2>/dev/null | wc -l; }
declare -A codes=()
code() { codes[$1]="${codes[$1]:-} $2"; }
summary() {
    # exit codes as "code×count"
    tr ' ' '\n' <<<"${codes[$1]:-}" | sed '/^$/d' | sort | uniq -c | awk '{printf "%s%s×%s", sep, $2, $1; sep=", "}'
}

# --- 1 and 2: faults during reads ------------------------------------------
seq 1 600000 | sed 's|^|https://old.example/|' > old.txt
for layout in sets bloom; do
    "$S" dedup -q --redis-layout "$layout" -n 4M -p 1e-9 -f "redis://127.0.0.1:$port/f-$layout" old.txt > /dev/null
done
for fault in kill stop; do
    lost_n=0 twice_n=0 orphans=0
    for ((t = 0; t < trials; t++)); do
        layout=$([ $((t % 2)) = 1 ] && echo sets || echo bloom)
        loc=redis://127.0.0.1:$port/f-$layout
        seq 1 100000 | sed "s|^|https://new.example/$fault/$t/|" > in.txt
        delay=$(printf '0.%03d' $((RANDOM % 300)))
        rc=0
        "$S" dedup --redis-timeout 1s -f "$loc" in.txt > 1.out 2> 1.err &
        w=$!
        sleep "$delay"
        if [ "$fault" = kill ]; then
            R client kill type normal > /dev/null
        else
            kill -STOP "$(cat redis.pid)"; sleep 2; kill -CONT "$(cat redis.pid)"
        fi
        wait "$w" || rc=$?
        code "$fault-1" "$rc"
        rc=0
        "$S" dedup -f "$loc" in.txt > 2.out 2> 2.err || rc=$?
        code "$fault-2" "$rc"
        lost_n=$((lost_n + $(lost in.txt 1.out 2.out)))
        twice_n=$((twice_n + $(twice 1.out 2.out)))
        orphans=$((orphans + $(journal_files)))
    done
    echo "$fault during reads ($trials trials): lost $lost_n, printed twice $twice_n," \
        "journal files left $orphans; exit codes: faulty run $(summary "$fault-1")," \
        "next run $(summary "$fault-2")"
done

# --- 3: meta key deleted between runs ---------------------------------------
lost_n=0 twice_n=0 orphans=0 printed_refused=0
for ((t = 0; t < trials; t++)); do
    layout=$([ $((t % 2)) = 1 ] && echo sets || echo bloom)
    name=meta-$t
    loc=redis://127.0.0.1:$port/$name
    seq 1 30000 | sed "s|^|https://a.example/$t/|" > a.txt
    seq 1 10000 | sed "s|^|https://b.example/$t/|" > b.txt
    "$S" dedup -q --redis-layout "$layout" -n 50k -p 1e-9 -f "$loc" a.txt > /dev/null
    R del "seen:{$name}:meta" > /dev/null
    rc=0
    "$S" verify "$loc" > /dev/null 2>&1 || rc=$?
    code meta-verify "$rc"
    rc=0
    "$S" dedup --redis-layout "$layout" -n 50k -p 1e-9 -f "$loc" b.txt > 1.out 2> 1.err || rc=$?
    code meta-1 "$rc"
    if [ "$rc" = 2 ] && [ -s 1.out ]; then printed_refused=$((printed_refused + 1)); fi
    # What the refusal says to do: remove the filter's keys, make it again.
    if [ "$rc" != 0 ]; then
        R --scan --pattern "seen:{$name*" | xargs -r redis-cli -p "$port" del > /dev/null
    fi
    rc=0
    "$S" dedup --redis-layout "$layout" -n 50k -p 1e-9 -f "$loc" b.txt > 2.out 2> 2.err || rc=$?
    code meta-2 "$rc"
    lost_n=$((lost_n + $(lost b.txt 1.out 2.out)))
    twice_n=$((twice_n + $(twice 1.out 2.out)))
    orphans=$((orphans + $(journal_files)))
done
echo "meta key deleted between runs ($trials trials): lost $lost_n, printed twice $twice_n," \
    "refused runs that printed $printed_refused, journal files left $orphans; exit codes:" \
    "verify $(summary meta-verify), dedup $(summary meta-1), after removing the keys $(summary meta-2)"

# --- 4: journal directory on a full file system ------------------------------
lost_n=0 twice_n=0 orphans=0
if [ "$(id -u)" = 0 ] && mkdir -p "$work/small" && mount -t tmpfs -o size=16m tmpfs "$work/small"; then
    mnt=$work/small
    how="a 16 MiB tmpfs with 1-12 MiB free"
else
    how="ulimit -f of 1-12 MiB (not root: no tmpfs)"
fi
for ((t = 0; t < trials; t++)); do
    loc=redis://127.0.0.1:$port/full-$t
    seq 1 300000 | sed "s|^|https://full.example/$t/|" > in.txt
    room=$((RANDOM % 12))
    rc=0
    if [ -n "$mnt" ]; then
        rm -rf "${mnt:?}"/*
        head -c $(((15 - room) * 1024 * 1024 - RANDOM * 16)) /dev/zero > "$mnt/filler"
        SEEN_JOURNAL_DIR=$mnt/journal "$S" dedup -n 1M -p 1e-9 -f "$loc" in.txt > 1.out 2> 1.err || rc=$?
        code full-1 "$rc"
        rm -f "$mnt/filler"
        rc=0
        SEEN_JOURNAL_DIR=$mnt/journal "$S" dedup -f "$loc" in.txt > 2.out 2> 2.err || rc=$?
        left=$(find "$mnt/journal" -type f -name 'log-*' 2>/dev/null | wc -l)
    else
        (ulimit -f $(((room + 1) * 1024)) && exec "$S" dedup -n 1M -p 1e-9 -f "$loc" in.txt) > 1.out 2> 1.err || rc=$?
        code full-1 "$rc"
        rc=0
        "$S" dedup -f "$loc" in.txt > 2.out 2> 2.err || rc=$?
        left=$(journal_files)
    fi
    code full-2 "$rc"
    lost_n=$((lost_n + $(lost in.txt 1.out 2.out)))
    twice_n=$((twice_n + $(twice 1.out 2.out)))
    orphans=$((orphans + left))
done
echo "journal on a full file system, $how ($trials trials): lost $lost_n, printed twice" \
    "$twice_n, journal files left $orphans; exit codes: full $(summary full-1), after $(summary full-2)"
