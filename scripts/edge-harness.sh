#!/usr/bin/env bash
# Edge harness (issue 19): two experiments repeated TRIALS times each, with a
# fixed seed for the kill moments, and their tallies.
#
#  1. Kill during creation. Odd trials SIGKILL `seen build --force` while it
#     replaces a filter; even trials SIGKILL a `seen dedup -f` that creates a
#     new filter. After each kill, `seen dedup -f` runs to completion on the
#     same input. Counted: lines lost (a distinct line printed by neither run;
#     must be 0 at p = 1e-9), temporary files left after the completing run
#     (must be 0), whether a replaced filter was still whole (the old or the
#     new one, never neither), and the exit codes of the killed runs.
#  2. Growing input. `seen dedup --summary FILE` while another process appends
#     to FILE: FILE holds 1,400 lines when it starts and 2,000,000 distinct
#     ones in the end (other lines each trial). Counted: lines lost (read but
#     not printed) against the sum of `--summary`'s expected false positives
#     (they must agree), lines printed twice (must be 0), trials whose filter
#     grew, exit codes.
#
#   scripts/edge-harness.sh [TRIALS]      (default 100)
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-100}
cargo build --release --quiet
S=$PWD/target/release/seen
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
RANDOM=19

seq 1 2000000 | sed 's|^|https://g.example/|' > src.txt
head -n 1400 src.txt > head.txt
tail -n +1401 src.txt > rest.txt
head -n 300000 src.txt > kill.txt
distinct_kill=300000

temps() { find . -maxdepth 1 -name '.*.tmp' | wc -l; }

declare -A kill_codes=()
lost_kill=0 temps_after_kill=0 temps_left=0 not_whole=0
for ((t = 0; t < trials; t++)); do
    rm -f f.seen k.out c.out
    delay=$(printf '0.%03d' $((RANDOM % 250)))
    if ((t % 2)); then
        "$S" build -p 1e-9 -o f.seen head.txt 2>/dev/null
        "$S" build --force -n 5M -p 1e-9 -o f.seen kill.txt 2>/dev/null &
    else
        "$S" dedup -n 5M -p 1e-9 -f f.seen kill.txt > k.out 2>/dev/null &
    fi
    pid=$!
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null || true
    rc=0
    wait "$pid" 2>/dev/null || rc=$?
    kill_codes[$rc]=$((${kill_codes[$rc]:-0} + 1))
    temps_after_kill=$((temps_after_kill + $(temps)))
    if ((t % 2)); then
        # The old filter (head.txt) or the new one (kill.txt, a superset): whole either way.
        n=$("$S" query -c f.seen -f head.txt)
        [ "$n" = 1400 ] || not_whole=$((not_whole + 1))
        : > k.out
    fi
    "$S" dedup -f f.seen kill.txt > c.out 2>/dev/null
    temps_left=$((temps_left + $(temps)))
    if ((t % 2 == 0)); then
        # A killed run may have printed half a line: drop it.
        if [ -n "$(tail -c 1 k.out)" ]; then
            head -n -1 k.out > k.whole && mv k.whole k.out
        fi
        union=$(cat k.out c.out | sort -u | wc -l)
        lost_kill=$((lost_kill + distinct_kill - union))
    fi
done
codes=""
for c in "${!kill_codes[@]}"; do codes+="$c:${kill_codes[$c]} "; done
echo "kill during creation: $trials trials, lines lost $lost_kill, temporary files" \
    "left by the kills $temps_after_kill, left after the next run $temps_left," \
    "replaced filters not whole $not_whole, exit codes of the killed runs (code:count) $codes"

declare -A grow_codes=()
lost=0 twice=0 expected=0 grew=0 foreign=0 read_total=0
for ((t = 0; t < trials; t++)); do
    # Other lines each trial, so the trials' false positives are independent.
    sed "s|^https://g\.example/|https://g$t.example/|" src.txt > all.txt
    head -n 1400 all.txt > g.txt
    tail -n +1401 all.txt | split -l 100000 - piece.
    # The appender keeps writing while seen reads: 20 pieces, 10 ms apart.
    (for p in piece.*; do cat "$p" >> g.txt; sleep 0.01; done) &
    app=$!
    rc=0
    "$S" dedup --summary --json g.txt > out.txt 2> summary.json || rc=$?
    wait "$app"
    rm -f piece.*
    grow_codes[$rc]=$((${grow_codes[$rc]:-0} + 1))
    # seen read the file up to some point: its first `lines_read` lines.
    r=$(grep -o '"lines_read":[0-9]*' summary.json | cut -d: -f2)
    n=$(wc -l < out.txt)
    u=$(sort -u out.txt | wc -l)
    read_total=$((read_total + r))
    lost=$((lost + r - u))
    twice=$((twice + n - u))
    foreign=$((foreign + $(head -n "$r" all.txt | sort | comm -13 - <(sort out.txt) | wc -l)))
    e=$(grep -o '"expected_false_positives":[0-9.e+-]*' summary.json | cut -d: -f2)
    expected=$(awk -v a="$expected" -v b="$e" 'BEGIN { printf "%.2f", a + b }')
    layers=$(grep -o '"layers":[0-9]*' summary.json | cut -d: -f2)
    ((layers > 1)) && grew=$((grew + 1))
done
codes=""
for c in "${!grow_codes[@]}"; do codes+="$c:${grow_codes[$c]} "; done
echo "growing input: $trials trials, $read_total lines read, lines lost $lost" \
    "(expected by --summary: $expected), printed twice $twice, printed but not read" \
    "$foreign, trials whose filter grew $grew, exit codes (code:count) $codes"
