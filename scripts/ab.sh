#!/usr/bin/env bash
# A/B: the same seen command with two binaries, runs interleaved (A B A B ...)
# so machine noise hits both alike; prints the median seconds of each and B/A.
#
#   scripts/ab.sh OLD_SEEN NEW_SEEN RUNS -- ARGS...      (output to /dev/null)
#
# e.g. build the previous commit in a worktree and compare:
#   git worktree add /tmp/old HEAD~1 && (cd /tmp/old && cargo build --release)
#   scripts/ab.sh /tmp/old/target/release/seen target/release/seen 7 -- dedup target/bench/urls-10000000.txt
set -euo pipefail
[ $# -ge 5 ] && [ "$4" = "--" ] || { sed -n '2,9p' "$0" >&2; exit 2; }
a=$1 b=$2 runs=$3; shift 4
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ta=() tb=()
for _ in $(seq "$runs"); do
    for which in a b; do
        bin=$a; [ "$which" = b ] && bin=$b
        s=$(date +%s.%N)
        "$bin" "$@" > /dev/null 2>&1 || true
        e=$(date +%s.%N)
        t=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", e - s }')
        if [ "$which" = a ]; then ta+=("$t"); else tb+=("$t"); fi
    done
done
ma=$(printf '%s\n' "${ta[@]}" | median)
mb=$(printf '%s\n' "${tb[@]}" | median)
awk -v a="$ma" -v b="$mb" -v cmd="$*" 'BEGIN { printf "| %s | %.2f | %.2f | %.2f× |\n", cmd, a, b, b / a }'
