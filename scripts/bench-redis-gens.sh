#!/usr/bin/env bash
# What growth and windows cost a Redis filter of fingerprint sets (issue 42),
# on a redis-server of this machine (started here, on port 7392, keeping
# nothing on disk). The first LINES lines of CORPUS (default 1M) go through
# `dedup -f` in 9 parts, then all of them again (every line present), into
# a new filter each run; medians of RUNS (default 5) of Redis CPU (INFO
# used_cpu_user + used_cpu_sys) per input line, and Redis memory per
# distinct line (used_memory after the first pass); ratios as the ratio of
# the medians and as the median of each run's ratio:
#
#   plain    fixed size (-n the distinct lines): one SADD a line
#   window   --window 7d --slices 8, each part a slice later (--now): the
#            last parts check the 8 slices before theirs
#   gen1     --growth 2 sized for all lines and a tenth more: one
#            generation
#   gen4     --growth 2 -n distinct*1.1/15: four generations (1 + 2 + 4 + 8)
#
# (Both with a tenth to spare, so that the newest generation is not full
# when the present pass comes: a full one would be sealed at its first
# batch and looked up in a copy, and its present lines would cost next to
# nothing, however many generations there are.)
#
# "last-part" is the first pass's last part alone (per line of it): with a
# window, the part that looks in all 9 live slices, as every part of a
# long-running windowed filter does. "long-new" is a third run, of the
# LINES lines again each with a prefix (all new, as many distinct), in one
# run at the last part's time: a long-running writer's new lines, which
# look sealed generations up in its copies once it has made them.
# "short-new" is the LINES lines again with another prefix, in 9 runs 10
# minutes apart in the last part's slice: a cron job's runs between two
# slice boundaries.
#
# N=lines sizes the filters for N lines instead of the distinct lines (gen1
# and gen4 a tenth more, as above; gen4 then has fewer generations): a
# filter sized far beyond the lines put through it has sparse sets (most get
# one line of a chunk), as a large filter has; its bytes per line are then
# mostly empty keys.
#
#   scripts/bench-redis-gens.sh SEEN CORPUS [RUNS] [LINES]
set -euo pipefail
SEEN=$1; CORPUS=$2; RUNS=${3:-5}; LINES=${4:-1000000}
. "$(dirname "$0")/bench-lib.sh"
redis_start 7392
head -n "$LINES" "$CORPUS" > "$W/in.txt"
split -n l/9 -d -a 1 "$W/in.txt" "$W/part"
n=$(wc -l < "$W/in.txt"); distinct=$(awk '!s[$0]++' "$W/in.txt" | wc -l)
size=${N:-$distinct}
n8=$(wc -l < "$W/part8")
sed 's/^/fresh-/' "$W/in.txt" > "$W/fresh.txt"
sed 's/^/hourly-/' "$W/in.txt" > "$W/hourly.txt"
split -n l/9 -d -a 1 "$W/hourly.txt" "$W/hourly"
export SEEN_JOURNAL_DIR=$W/j
mem() { redis-cli -p $PORT info memory | awk -F: '/^used_memory:/ { print $2 + 0 }'; }
T0=1796634000 # a slice boundary of a 7-day window in 8 slices
# one KIND RUN: prints "new_cpu present_cpu bytes_per_line last_part_cpu
# long_new_cpu short_new_cpu".
one() {
    local kind=$1 i=$2 loc=redis://127.0.0.1:$PORT/$1$2 c0 c1 c2 c8 m0 m1 p t
    redis-cli -p $PORT flushall >/dev/null
    m0=$(mem); c0=$(cpu)
    for p in 0 1 2 3 4 5 6 7 8; do
        [ $p = 8 ] && c8=$(cpu)
        t=$((T0 + p * 75600))
        case $kind in
            plain) "$SEEN" dedup -q -n "$size" -f "$loc" "$W/part$p" >/dev/null ;;
            window) "$SEEN" dedup -q --window 7d --slices 8 -n "$size" --now "@$t" -f "$loc" "$W/part$p" >/dev/null ;;
            gen1) "$SEEN" dedup -q --growth 2 -n $((size * 11 / 10)) -f "$loc" "$W/part$p" >/dev/null ;;
            gen4) "$SEEN" dedup -q --growth 2 -n $((size * 11 / 150)) -f "$loc" "$W/part$p" >/dev/null ;;
        esac
    done
    c1=$(cpu); m1=$(mem)
    case $kind in
        window) "$SEEN" dedup -q --now "@$((T0 + 8 * 75600))" -f "$loc" "$W/in.txt" >/dev/null ;;
        *) "$SEEN" dedup -q -f "$loc" "$W/in.txt" >/dev/null ;;
    esac
    c2=$(cpu)
    case $kind in
        window) "$SEEN" dedup -q --now "@$((T0 + 8 * 75600))" -f "$loc" "$W/fresh.txt" >/dev/null ;;
        *) "$SEEN" dedup -q -f "$loc" "$W/fresh.txt" >/dev/null ;;
    esac
    c3=$(cpu)
    for p in 0 1 2 3 4 5 6 7 8; do
        case $kind in
            window) "$SEEN" dedup -q --now "@$((T0 + 8 * 75600 + 600 * (p + 1)))" -f "$loc" "$W/hourly$p" >/dev/null ;;
            *) "$SEEN" dedup -q -f "$loc" "$W/hourly$p" >/dev/null ;;
        esac
    done
    c4=$(cpu)
    echo "$(echo "($c1 - $c0) / $n * 1000000000" | bc -l) $(echo "($c2 - $c1) / $n * 1000000000" | bc -l) $(echo "($m1 - $m0) / $distinct" | bc -l) $(echo "($c1 - $c8) / $n8 * 1000000000" | bc -l) $(echo "($c3 - $c2) / $n * 1000000000" | bc -l) $(echo "($c4 - $c3) / $n * 1000000000" | bc -l)"
}
declare -A res
for ((i = 0; i < RUNS; i++)); do
    for k in plain window gen1 gen4; do res[$k]+="$(one $k $i)"$'\n'; done
done
col() { printf '%s' "${res[$1]}" | awk -v k="$2" 'NF { print $k }' | median_in; }
echo "corpus $CORPUS: $n lines, $distinct distinct, filters sized for $size; medians of $RUNS runs; Redis CPU ns per input line"
printf '%-7s %10s %10s %12s %10s %10s %10s\n' kind new present bytes/line last-part long-new short-new
for k in plain window gen1 gen4; do
    printf '%-7s %10.0f %10.0f %12.1f %10.0f %10.0f %10.0f\n' "$k" "$(col $k 1)" "$(col $k 2)" "$(col $k 3)" "$(col $k 4)" "$(col $k 5)" "$(col $k 6)"
done
r() { echo "$(col "$1" "$3") / $(col "$2" "$3")" | bc -l; }
# The median of the runs' own ratios: each pairs two kinds measured minutes
# apart at most, so it moves less with the machine than the ratio of medians.
pr() {
    paste <(printf '%s' "${res[$1]}" | awk -v k="$3" 'NF { print $k }') \
        <(printf '%s' "${res[$2]}" | awk -v k="$3" 'NF { print $k }') |
        awk '{ print $1 / $2 }' | median_in
}
printf 'ratio of medians (median of the runs'"'"' ratios):\n'
printf 'window/plain: new %.2fx (%.2fx), present %.2fx (%.2fx), memory %.2fx\n' \
    "$(r window plain 1)" "$(pr window plain 1)" "$(r window plain 2)" "$(pr window plain 2)" "$(r window plain 3)"
printf 'window/plain, last part (9 live slices): %.2fx (%.2fx)\n' "$(r window plain 4)" "$(pr window plain 4)"
printf 'window/plain, long-new (one long run): %.2fx (%.2fx)\n' "$(r window plain 5)" "$(pr window plain 5)"
printf 'window/plain, short-new (9 runs in one slice): %.2fx (%.2fx)\n' "$(r window plain 6)" "$(pr window plain 6)"
printf 'gen4/gen1, long-new: %.2fx (%.2fx)\n' "$(r gen4 gen1 5)" "$(pr gen4 gen1 5)"
printf 'window/gen1:  new %.2fx (%.2fx), present %.2fx (%.2fx)\n' \
    "$(r window gen1 1)" "$(pr window gen1 1)" "$(r window gen1 2)" "$(pr window gen1 2)"
printf 'gen4/gen1:    new %.2fx (%.2fx), present %.2fx (%.2fx), memory %.2fx\n' \
    "$(r gen4 gen1 1)" "$(pr gen4 gen1 1)" "$(r gen4 gen1 2)" "$(pr gen4 gen1 2)" "$(r gen4 gen1 3)"
