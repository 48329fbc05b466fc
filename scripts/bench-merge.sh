#!/usr/bin/env bash
# Benchmark of `seen merge` (issue 24): two filters of about 1 GiB each
# (fixed, -n 270M at 1e-6, 1M lines in each) merged into a third, against
# reading both (`cat A B > /dev/null`, page-cached) and a durable copy of one
# (`cp A C && sync C`), interleaved, medians of RUNS (default 3).
#
#   scripts/bench-merge.sh [DIR] [RUNS]
#
# DIR (default target/bench-merge) needs about 4.5 GB free.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
dir=${1:-target/bench-merge}
runs=${2:-3}
cargo build --release -q
seen=$PWD/target/release/seen
mkdir -p "$dir"
cd "$dir"
[ -e A.seen ] || seq 1 1000000 | "$seen" build -q --fixed -n 270M -p 1e-6 -o A.seen
[ -e B.seen ] || seq 1000001 2000000 | "$seen" build -q --fixed -n 270M -p 1e-6 -o B.seen
cat A.seen B.seen >/dev/null
cats=() merges=() cps=()
for _ in $(seq 1 "$runs"); do
    cats+=("$(t sh -c 'cat A.seen B.seen > /dev/null')")
    rm -f M.seen
    merges+=("$(t "$seen" merge -q -o M.seen A.seen B.seen)")
    cps+=("$(t sh -c 'cp A.seen C.seen && sync C.seen')")
    rm -f C.seen
done
c=$(median "${cats[@]}") m=$(median "${merges[@]}") p=$(median "${cps[@]}")
echo "two filters of $(du -h A.seen | cut -f1) each, medians of $runs runs"
echo "| what | s | vs cat |"
echo "|---|---:|---:|"
printf '| cat A B > /dev/null | %.2f | 1.0x |\n' "$c"
printf '| seen merge -o M A B | %.2f | %sx |\n' "$m" "$(ratio "$m" "$c")"
printf '| cp A C && sync C | %.2f | %sx |\n' "$p" "$(ratio "$p" "$c")"
rm -f M.seen
