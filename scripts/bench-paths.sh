#!/usr/bin/env bash
# The paths a crawler lives on (issue 25), against in-memory `dedup` of the
# same input in the same run: the 10M-line URL corpus of scripts/bench.sh
# (7M distinct, output to /dev/null), rows interleaved, medians of RUNS.
#
#   mem    seen dedup IN                               (the peer of the -f rows)
#   new    seen dedup -f new.seen IN                   (a crawler's first run)
#   old    seen dedup -f old.seen IN, old.seen holding 10 % of IN's distinct
#          lines, so 90 % are new (copied fresh before each run, not timed)
#   dup    seen dedup -f full.seen IN, every line already in it
#   l1/l8  cat IN | seen dedup -n 10M / -n 30k         (1 layer / 8 layers)
#   q1/q8  seen query -c F IN for l1's and l8's filters
#   wc     cat IN | wc -l                              (the peer of l1)
#
#   scripts/bench-paths.sh [--base OLD_SEEN] [RUNS]
#
# With --base, every row also runs OLD_SEEN (interleaved: old, new, old, ...)
# and the table gives both medians and new/old. Needs ~1 GB free.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
base=
if [ "${1:-}" = --base ]; then base=$2; shift 2; fi
runs=${1:-5}
in=$(corpus)
cargo build --release -q
seen=$PWD/target/release/seen
d=target/bench/paths
mkdir -p "$d"
exact=target/bench/exact-10000000.txt
[ -s "$exact" ] || awk '!seen[$0]++' "$in" > "$exact"
# The filters the rows read, made by this build (the format is the same for both).
awk 'NR % 10 == 1' "$exact" | "$seen" build -q --force -n 10M -o "$d/old.seen"
"$seen" build -q --force -n 10M -o "$d/full.seen" "$in"
"$seen" build -q --force -n 10M -o "$d/l1.seen" "$in"
"$seen" build -q --force -n 30k -o "$d/l8.seen" "$in"
layers=$("$seen" stats --json "$d/l8.seen" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["layers"]))')
cat "$in" > /dev/null

# run.seen fresh (a copy of $d/$1.seen, or none), and nothing left dirty
# before the timed run: else what the run before wrote is written back during
# it (with one binary as both old and new, `dup` measured 1.25x for the second).
fresh() { rm -f "$d/run.seen"; [ -z "$1" ] || cp "$d/$1.seen" "$d/run.seen"; sync; }

# One run of row $1 with binary $2, printing its seconds (set-up not timed).
row() {
    local s=$2
    case $1 in
        mem) t "$s" dedup "$in" ;;
        new) fresh ""; t "$s" dedup -q -f "$d/run.seen" "$in" ;;
        old) fresh old; t "$s" dedup -q -f "$d/run.seen" "$in" ;;
        dup) fresh full; t "$s" dedup -q -f "$d/run.seen" "$in" ;;
        l1) t sh -c "cat '$in' | '$s' dedup -n 10M" ;;
        l8) t sh -c "cat '$in' | '$s' dedup -n 30k" ;;
        q1) t "$s" query -c "$d/l1.seen" --file "$in" ;;
        q8) t "$s" query -c "$d/l8.seen" --file "$in" ;;
        wc) t sh -c "cat '$in' | wc -l" ;;
    esac
}
rows=(mem new old dup l1 l8 q1 q8 wc)
bins=("$seen")
[ -n "$base" ] && bins=("$base" "$seen")
declare -A times
for _ in $(seq 1 "$runs"); do
    for r in "${rows[@]}"; do
        for i in "${!bins[@]}"; do
            times[$r.$i]+="$(row "$r" "${bins[$i]}") "
        done
    done
done
rm -f "$d/run.seen"
m() { # median of row $1, binary index $2
    # shellcheck disable=SC2086 # a list of numbers
    median ${times[$1.$2]}
}
last=$(( ${#bins[@]} - 1 ))
peer() { case $1 in new|old|dup|l1) echo mem ;; l8) echo l1 ;; q8) echo q1 ;; *) echo - ;; esac; }
label() {
    case $1 in
        mem) echo "dedup IN (in memory)" ;;
        new) echo "dedup -f new.seen IN" ;;
        old) echo "dedup -f old.seen IN, 90 % new" ;;
        dup) echo "dedup -f full.seen IN, all duplicates" ;;
        l1) echo "cat IN | dedup -n 10M (1 layer)" ;;
        l8) echo "cat IN | dedup -n 30k ($layers layers)" ;;
        q1) echo "query -c l1.seen IN (1 layer)" ;;
        q8) echo "query -c l8.seen IN ($layers layers)" ;;
        wc) echo "cat IN | wc -l" ;;
    esac
}
echo "10M URL lines (7M distinct), output to /dev/null, medians of $runs runs"
echo
if [ -n "$base" ]; then
    echo "| run | old s | new s | new/old | new vs peer |"
    echo "|---|---:|---:|---:|---:|"
else
    echo "| run | s | vs peer |"
    echo "|---|---:|---:|"
fi
for r in "${rows[@]}"; do
    p=$(peer "$r") vs=
    [ "$p" != - ] && vs="$(ratio "$(m "$r" "$last")" "$(m "$p" "$last")")x vs $p"
    [ "$r" = l1 ] && vs="$vs, $(ratio "$(m l1 "$last")" "$(m wc "$last")")x vs wc"
    if [ -n "$base" ]; then
        printf '| %s: %s | %.2f | %.2f | %sx | %s |\n' "$r" "$(label "$r")" "$(m "$r" 0)" "$(m "$r" 1)" \
            "$(ratio "$(m "$r" 1)" "$(m "$r" 0)")" "$vs"
    else
        printf '| %s: %s | %.2f | %s |\n' "$r" "$(label "$r")" "$(m "$r" 0)" "$vs"
    fi
done
