#!/usr/bin/env bash
# What forget lists cost a Redis filter of fingerprint sets (issue 41), on a
# redis-server of this machine (started here, on port 7391, keeping nothing
# on disk). A filter of the distinct lines among the first 1M of CORPUS,
# then, medians of RUNS (each run from an empty server, the filter built
# again):
#
#   none    `dedup -f` of 900k of those lines again (all present, none of
#           them ever forgotten), no key forgotten: one SADD a line
#   few     the same with 1k other keys forgotten (a retry list): an SREM
#           more for a line whose set has a forget list (~20% of the sets)
#   listed  the same with 100k other keys forgotten: an SREM more for
#           nearly every line
#   forget  `seen forget` of those 100k keys (keys/s)
#
# For each: wall time and Redis CPU (INFO used_cpu_user + used_cpu_sys) per
# input line, and Redis memory per forgotten key (used_memory).
#
#   scripts/bench-redis-forget.sh SEEN CORPUS [RUNS]     (default 5)
set -euo pipefail
SEEN=$1; CORPUS=$2; RUNS=${3:-5}
. "$(dirname "$0")/bench-lib.sh"
redis_start 7391
head -n 1000000 "$CORPUS" | awk '!s[$0]++' > "$W/lines.txt"
awk 'NR % 10 == 0' "$W/lines.txt" > "$W/gone.txt"
awk 'NR % 1000 == 0' "$W/lines.txt" > "$W/few.txt"
awk 'NR % 10 != 0' "$W/lines.txt" > "$W/rest.txt"
n=$(wc -l < "$W/rest.txt"); g=$(wc -l < "$W/gone.txt")
mem() { redis-cli -p $PORT info memory | awk -F: '/^used_memory:/ { print $2 + 0 }'; }
# time_cpu ARGS...: runs SEEN ARGS, prints "wall cpu".
time_cpu() {
    local c0 c1 t0 t1
    c0=$(cpu); t0=$(date +%s.%N)
    "$SEEN" "$@" > /dev/null
    t1=$(date +%s.%N); c1=$(cpu)
    echo "$(echo "$t1 - $t0" | bc -l) $(echo "$c1 - $c0" | bc -l)"
}
none=() few=() listed=() forget=() bytes=()
for ((i = 0; i < RUNS; i++)); do
    redis-cli -p $PORT flushall >/dev/null
    loc=redis://127.0.0.1:$PORT/b$i
    "$SEEN" build -q -n 1M -o "$loc" "$W/lines.txt"
    none+=("$(time_cpu dedup -f "$loc" "$W/rest.txt")")
    "$SEEN" forget "$loc" --file "$W/few.txt"
    few+=("$(time_cpu dedup -f "$loc" "$W/rest.txt")")
    m0=$(mem)
    read -r fw _ <<< "$(time_cpu forget "$loc" --file "$W/gone.txt")"
    m1=$(mem)
    forget+=("$fw"); bytes+=("$(( (m1 - m0) / (g - g / 100) ))")
    listed+=("$(time_cpu dedup -f "$loc" "$W/rest.txt")")
done
col() { local k=$1; shift; printf '%s\n' "$@" | awk -v k="$k" '{ print $k }' | median_in; }
nw=$(col 1 "${none[@]}"); nc=$(col 2 "${none[@]}")
lw=$(col 1 "${listed[@]}"); lc=$(col 2 "${listed[@]}")
fw1=$(col 1 "${few[@]}"); fc1=$(col 2 "${few[@]}")
fw=$(printf '%s\n' "${forget[@]}" | median_in)
bm=$(printf '%s\n' "${bytes[@]}" | median_in)
echo "corpus $CORPUS: $n lines looked up, $g forgotten; medians of $RUNS runs"
printf 'none    wall %.3f s  redis cpu %.0f ns/line\n' "$nw" "$(echo "$nc / $n * 1000000000" | bc -l)"
printf 'few     wall %.3f s  redis cpu %.0f ns/line  (%.2fx wall, %.2fx cpu)\n' "$fw1" \
    "$(echo "$fc1 / $n * 1000000000" | bc -l)" "$(echo "$fw1 / $nw" | bc -l)" "$(echo "$fc1 / $nc" | bc -l)"
printf 'listed  wall %.3f s  redis cpu %.0f ns/line  (%.2fx wall, %.2fx cpu)\n' "$lw" \
    "$(echo "$lc / $n * 1000000000" | bc -l)" "$(echo "$lw / $nw" | bc -l)" "$(echo "$lc / $nc" | bc -l)"
printf 'forget  %.3f s: %.0f keys/s; Redis memory %s bytes per forgotten key\n' "$fw" \
    "$(echo "($g - $g / 100) / $fw" | bc -l)" "$bm"
