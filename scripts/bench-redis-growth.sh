#!/usr/bin/env bash
# What growth costs a large Redis filter (issue 42: four generations at
# most 1.3x one): LINES lines (default 100M, about 70% distinct) streamed
# from examples/gen-lines.rs through one `seen dedup -f` run each into a
# redis-server of this machine (port 7394, nothing kept on disk), then
# LINES/10 lines of the same stream again (all present), in:
#
#   plain   fixed size, -n the distinct lines: one SADD a line
#   gen1    --growth 2 -n the distinct lines: one generation
#   gen4    --growth 2 -n distinct/15: four generations (1 + 2 + 4 + 8)
#
# Prints Redis CPU (INFO used_cpu_user + used_cpu_sys) per line of each
# pass, the generations each filter ended with, and the ratios. One run
# each (a run of 100M lines takes minutes): rerun it to see the spread.
#
#   scripts/bench-redis-growth.sh [SEEN] [LINES]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q --bin seen --example gen-lines
SEEN=${1:-target/release/seen}; LINES=${2:-100000000}
GEN=target/release/examples/gen-lines
. scripts/bench-lib.sh
redis_start 7394
export SEEN_JOURNAL_DIR=$W/j
distinct=$((LINES * 7 / 10))
again=$((LINES / 10))
declare -A new present gens
for kind in plain gen1 gen4; do
    redis-cli -p $PORT flushall >/dev/null
    loc=redis://127.0.0.1:$PORT/$kind
    case $kind in
        plain) args=(-n "$distinct") ;;
        gen1) args=(--growth 2 -n "$distinct") ;;
        gen4) args=(--growth 2 -n $((distinct / 15))) ;;
    esac
    c0=$(cpu)
    "$GEN" "$LINES" 42 2>/dev/null | "$SEEN" dedup -q "${args[@]}" -f "$loc" >/dev/null
    c1=$(cpu)
    "$GEN" "$again" 42 2>/dev/null | "$SEEN" dedup -q -f "$loc" >/dev/null
    c2=$(cpu)
    new[$kind]=$(echo "($c1 - $c0) / $LINES * 1000000000" | bc -l)
    present[$kind]=$(echo "($c2 - $c1) / $again * 1000000000" | bc -l)
    gens[$kind]=$("$SEEN" stats --json "$loc" 2>/dev/null |
        python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("generations") or []))')
done
echo "$LINES lines (about $distinct distinct), then $again again; Redis CPU ns per line; one run"
printf '%-6s %12s %12s %12s\n' kind first-pass present generations
for k in plain gen1 gen4; do
    printf '%-6s %12.0f %12.0f %12s\n' "$k" "${new[$k]}" "${present[$k]}" "${gens[$k]}"
done
printf 'gen4/gen1: first pass %.2fx, present %.2fx\n' \
    "$(echo "${new[gen4]} / ${new[gen1]}" | bc -l)" "$(echo "${present[gen4]} / ${present[gen1]}" | bc -l)"
printf 'gen1/plain: first pass %.2fx, present %.2fx\n' \
    "$(echo "${new[gen1]} / ${new[plain]}" | bc -l)" "$(echo "${present[gen1]} / ${present[plain]}" | bc -l)"
