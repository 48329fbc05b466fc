#!/usr/bin/env bash
# Compare `seen dedup` with awk '!seen[$0]++' and `LC_ALL=C sort -u` on generated
# URL lines: wall time (median of RUNS), peak RSS, and whether seen's output is
# byte-identical to awk's.   Usage: scripts/compare-awk.sh [LINES] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-5000000}
runs=${2:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release --quiet
seen=target/release/seen
python3 scripts/gen-urls.py --lines "$lines" --seed 7 > "$work/in.txt"
cat "$work/in.txt" > /dev/null # page-cache it

measure() { # name, then command; prints "name median_s peak_kb"
    local name=$1; shift
    local times=() rss=0
    for _ in $(seq "$runs"); do
        /usr/bin/time -f "%e %M" -o "$work/t" "$@" > "$work/$name.out"
        read -r t m < "$work/t"
        times+=("$t"); [ "$m" -gt "$rss" ] && rss=$m
    done
    local med
    med=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf '| %s | %s | %.2f | %d |\n' "$name" "$med" "$(awk -v l="$lines" -v t="$med" 'BEGIN {print l / t / 1e6}')" "$((rss / 1024))"
}

echo "$lines lines, $(sort -u "$work/in.txt" | wc -l) distinct, median of $runs runs"
echo
echo "| tool | seconds | M lines/s | peak RSS MiB |"
echo "|---|---|---|---|"
measure seen "$seen" dedup "$work/in.txt"
measure awk awk '!seen[$0]++' "$work/in.txt"
measure sort-u env LC_ALL=C sort -u "$work/in.txt"
echo
if cmp -s "$work/seen.out" "$work/awk.out"; then
    echo "seen output: byte-identical to awk"
else
    echo "seen output: $(wc -l < "$work/seen.out") lines, awk: $(wc -l < "$work/awk.out") lines (difference = false positives)"
fi
