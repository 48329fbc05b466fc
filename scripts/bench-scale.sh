#!/usr/bin/env bash
# How cost grows with the work (issue 25): `seen dedup -f` of 10M, 100M and
# 1,000M lines streamed from a generator (examples/gen-lines.rs: URL-like lines,
# 30 % repeats of recent ones; no file holds a billion lines), into a new filter
# sized for 10M lines at 1e-6 that grows past them. For each scale: wall
# seconds, lines/s and its ratio to the first scale's, peak RSS (of seen)
# against the filter's size, layers, and the false-positive rate measured at
# the end by looking up 1M lines of another stream (none of them were added).
#
#   scripts/bench-scale.sh [--growth G] [LINES...]
#                                (default: growth 2; 10000000 100000000 1000000000)
#
# --growth G makes the filter grow G times per layer (fewer layers, more
# memory just after each growth; see `seen plan --growth G`).
#
# The billion-line run takes minutes and needs the filter's size free in DIR
# (default target/bench/scale; about 3 GB; override with SCALE_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
growth=()
if [ "${1:-}" = --growth ]; then growth=(--growth "$2"); shift 2; fi
scales=("$@")
[ ${#scales[@]} -gt 0 ] || scales=(10000000 100000000 1000000000)
# One build of both (a build of the example alone unifies other features and
# would rebuild the binary).
cargo build --release -q --bin seen --example gen-lines
seen=$PWD/target/release/seen
gen=$PWD/target/release/examples/gen-lines
dir=${SCALE_DIR:-target/bench/scale}
mkdir -p "$dir"
absent=$dir/absent-1m.txt
[ -s "$absent" ] || "$gen" 1000000 7 0 absent:// > "$absent" 2> /dev/null
echo "| lines | distinct | s | M lines/s | vs first | filter MiB | peak RSS MiB | RSS - filter MiB | layers | measured fpp | target |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
first=
for n in "${scales[@]}"; do
    rm -f "$dir/f.seen"
    "$gen" "$n" 42 2> "$dir/gen.err" |
        /usr/bin/time -f "%e %M" -o "$dir/time" "$seen" dedup -q -f "$dir/f.seen" -n 10M -p 1e-6 "${growth[@]}" > /dev/null
    distinct=$(sed 's/.* \([0-9]*\) distinct/\1/' "$dir/gen.err")
    read -r secs kib < "$dir/time"
    stats=$("$seen" stats --json "$dir/f.seen" | python3 -c '
import json, sys
s = json.load(sys.stdin)
print(s["bytes"], len(s["layers"]), s["target_fpp"])')
    read -r bytes layers target <<< "$stats"
    found=$("$seen" query -c "$dir/f.seen" --file "$absent" || true)
    rate=$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.2f", n / s / 1e6 }')
    [ -n "$first" ] || first=$rate
    awk -v n="$n" -v d="$distinct" -v s="$secs" -v r="$rate" -v f="$first" -v b="$bytes" -v k="$kib" \
        -v l="$layers" -v fp="$found" -v t="$target" 'BEGIN {
        printf "| %d | %d | %.1f | %.2f | %.2fx | %.0f | %.0f | %+.0f | %d | %.1e (%d in 1M) | %g |\n",
            n, d, s, r, r / f, b / 1048576, k / 1024, k / 1024 - b / 1048576, l, fp / 1e6, fp, t }'
done
rm -f "$dir/f.seen"
