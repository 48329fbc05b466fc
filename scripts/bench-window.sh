#!/usr/bin/env bash
# Benchmark of time windows (issue 23): `dedup -f` of the 10M-line URL corpus
# (7M distinct, output to /dev/null) into a new filter without a window, and
# with `--window 7d` (8 slices), interleaved, medians of RUNS (default 5):
#
#   A  no window, -n 10M                     (the peer)
#   B  --window 7d -n 80M: a slice of 10M    (the run fills one slice, as A's layer)
#   C  --window 7d -n 10M: a slice of 1.25M  (the run's 7M lines overflow it: it grows)
#   D  B's filter in its steady state: 8 earlier slices hold 1M other lines each,
#      so lookups test 9 slices (copied fresh before each run)
#
#   scripts/bench-window.sh [RUNS]
#
# Needs the corpus of scripts/bench.sh (made here if missing) and ~2 GB free.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
runs=${1:-5}
dir=target/bench
corpus=$(corpus)
mkdir -p "$dir/window"
cargo build --release -q
seen=$PWD/target/release/seen
w=$dir/window
day=86400
t0=1796083200
# D's filter: days 0..7 of 1M lines each that are not in the corpus.
if [ ! -e "$w/steady.seen" ]; then
    for d in 0 1 2 3 4 5 6 7; do
        seq -f "https://old.example/$d/%.0f" 1 1000000 |
            "$seen" dedup -q -f "$w/steady.seen" --window 7d -n 80M -p 1e-6 \
                --now "@$((t0 + d * day))" > /dev/null
    done
fi
now="@$((t0 + 8 * day))"
cat "$corpus" > /dev/null
as=() bs=() cs=() ds=()
for _ in $(seq 1 "$runs"); do
    rm -f "$w"/new.seen
    as+=("$(t "$seen" dedup -q -f "$w/new.seen" -n 10M -p 1e-6 "$corpus")")
    rm -f "$w"/new.seen
    bs+=("$(t "$seen" dedup -q -f "$w/new.seen" --window 7d -n 80M -p 1e-6 --now "$now" "$corpus")")
    rm -f "$w"/new.seen
    cs+=("$(t "$seen" dedup -q -f "$w/new.seen" --window 7d -n 10M -p 1e-6 --now "$now" "$corpus")")
    rm -f "$w"/new.seen
    cp "$w/steady.seen" "$w/d.seen"
    ds+=("$(t "$seen" dedup -q -f "$w/d.seen" --now "$now" "$corpus")")
    rm -f "$w/d.seen"
done
a=$(median "${as[@]}") b=$(median "${bs[@]}") c=$(median "${cs[@]}") d=$(median "${ds[@]}")
echo "dedup -f of $corpus, medians of $runs runs"
echo "| run | s | vs A |"
echo "|---|---:|---:|"
printf '| A: no window, -n 10M | %.2f | 1.00x |\n' "$a"
printf '| B: --window 7d -n 80M (slice of 10M) | %.2f | %sx |\n' "$b" "$(ratio "$b" "$a")"
printf '| C: --window 7d -n 10M (slice of 1.25M, grows) | %.2f | %sx |\n' "$c" "$(ratio "$c" "$a")"
printf '| D: B steady state, 9 live slices | %.2f | %sx |\n' "$d" "$(ratio "$d" "$a")"
