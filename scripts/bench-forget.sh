#!/usr/bin/env bash
# What a forget list costs (issue 41), on the 10M-line generated URL corpus
# and on 10M URLs of real parts (scripts/real-corpus.py; REAL_LINES=N for
# another size). For each corpus: a
# filter of its first half (held-out: the second half is never in it), then,
# medians of RUNS, binaries alternating, each on a fresh copy of the filter:
#
#   old    `dedup -f` of the whole corpus by OLD (before forget lists)
#   empty  the same by NEW, the list empty
#   listed the same by NEW, with 1M keys of the first half forgotten (so
#          1M more lines are printed and recorded again)
#   never  the same by OLD on a filter of the first half without those 1M
#          keys: the same output as `listed`, with keys never recorded
#          instead of forgotten (what `listed` costs beyond its extra work)
#   rest   `dedup -f` of the corpus without those 1M lines, by NEW, the
#          list empty (rest-empty) and with the 1M keys listed (rest-listed):
#          what a list costs lines that are not on it
#   forget `seen forget -f` of those 1M keys, by NEW (keys/s)
#
#   scripts/bench-forget.sh OLD NEW [RUNS]      (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$1; NEW=$2; RUNS=${3:-5}
. scripts/bench-lib.sh
mkdir -p target/bench
W=target/bench/forget
mkdir -p "$W"
lines=${REAL_LINES:-10000000}
real=target/bench/real-$lines.txt
[ -s "$real" ] || python3 scripts/real-corpus.py --lines "$lines" > "$real"
for c in "$(corpus)" "$real"; do
    n=$(wc -l < "$c")
    half=$((n / 2))
    head -n "$half" "$c" > "$W/first.txt"
    awk 'NR % 2 == 0 { print; if (++n == 1000000) exit }' "$W/first.txt" > "$W/gone.txt"
    # Every line but the forgotten ones (repeats of them too).
    awk 'NR == FNR { g[$0] = 1; next } !($0 in g)' "$W/gone.txt" "$c" > "$W/rest.txt"
    rm -f "$W/base.seen" "$W/listed.seen" "$W/never.seen"
    "$NEW" build -q -n "$n" -o "$W/base.seen" "$W/first.txt"
    awk 'NR == FNR { g[$0] = 1; next } !($0 in g)' "$W/gone.txt" "$W/first.txt" |
        "$NEW" build -q -n "$n" -o "$W/never.seen"
    cp "$W/base.seen" "$W/listed.seen"
    "$NEW" forget "$W/listed.seen" -f "$W/gone.txt" || true
    gone=$(wc -l < "$W/gone.txt")
    old=() empty=() listed=() never=() re=() rl=() fg=()
    for ((i = 0; i < RUNS; i++)); do
        cp "$W/base.seen" "$W/a.seen"
        old+=("$(t "$OLD" dedup -f "$W/a.seen" "$c")")
        cp "$W/base.seen" "$W/a.seen"
        empty+=("$(t "$NEW" dedup -f "$W/a.seen" "$c")")
        cp "$W/listed.seen" "$W/a.seen"
        listed+=("$(t "$NEW" dedup -f "$W/a.seen" "$c")")
        cp "$W/never.seen" "$W/a.seen"
        never+=("$(t "$OLD" dedup -f "$W/a.seen" "$c")")
        cp "$W/base.seen" "$W/a.seen"
        re+=("$(t "$NEW" dedup -f "$W/a.seen" "$W/rest.txt")")
        cp "$W/listed.seen" "$W/a.seen"
        rl+=("$(t "$NEW" dedup -f "$W/a.seen" "$W/rest.txt")")
        cp "$W/base.seen" "$W/a.seen"
        fg+=("$(t "$NEW" forget "$W/a.seen" -f "$W/gone.txt")")
    done
    mo=$(median "${old[@]}"); me=$(median "${empty[@]}"); ml=$(median "${listed[@]}"); mf=$(median "${fg[@]}")
    mre=$(median "${re[@]}"); mrl=$(median "${rl[@]}"); mn=$(median "${never[@]}")
    echo "$(basename "$c") ($n lines, $gone forgotten; medians of $RUNS):" \
        "old $mo s, empty list $me s ($(ratio "$me" "$mo")x old)," \
        "1M forgotten $ml s ($(ratio "$ml" "$me")x empty, $(ratio "$ml" "$mo")x old," \
        "$(ratio "$ml" "$mn")x old on a filter that never had them: $mn s);" \
        "without the forgotten lines: empty $mre s, listed $mrl s ($(ratio "$mrl" "$mre")x);" \
        "forget of $gone keys $mf s ($(awk -v n="$gone" -v s="$mf" 'BEGIN { printf "%.1f", n / s / 1e6 }')M keys/s)"
done
