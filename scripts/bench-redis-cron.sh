#!/usr/bin/env bash
# What a windowed Redis filter costs a cron job (issue 42): many short runs
# in every slice, each slice taking its share of the filter's lines, on a
# redis-server of this machine (started here, on port 7393, keeping nothing
# on disk). The CORPUS's lines go, RUN lines a run and PER runs a slice (a
# minute apart), through 9 slices of `--window 7d --slices 8 -n N`
# ("window"), and the same runs through a fixed filter of N lines
# ("plain"), a new filter each time. Medians of RUNS (default 3) of Redis
# CPU (INFO used_cpu_user + used_cpu_sys) per input line of:
#
#   all      every run
#   last     the last slice's runs, which look in all 9 live slices
#   first    the last slice's first run alone: the slice before it was
#            sealed just now
#
# N (default 7000000) sizes both filters; PER defaults to N / 8 / RUN, a
# slice's share of the window; RUN defaults to 20000. The corpus needs 9 x
# PER x RUN lines (7.7M by default).
#
#   scripts/bench-redis-cron.sh SEEN CORPUS [RUNS]
set -euo pipefail
SEEN=$1; CORPUS=$2; RUNS=${3:-3}
N=${N:-7000000}; RUN=${RUN:-20000}; PER=${PER:-$((N / 8 / RUN))}
. "$(dirname "$0")/bench-lib.sh"
redis_start 7393
total=$((9 * PER * RUN))
head -n "$total" "$CORPUS" > "$W/in.txt"
n=$(wc -l < "$W/in.txt")
[ "$n" -eq "$total" ] || { echo "the corpus has $n lines, $total needed" >&2; exit 2; }
split -l "$RUN" -d -a 5 "$W/in.txt" "$W/c"
last_n=$((PER * RUN))
T0=1796634000 # a slice boundary of a 7-day window in 8 slices
# one KIND I: prints "all last first" (ns of Redis CPU per line).
one() {
    local kind=$1 loc=redis://127.0.0.1:$PORT/$1$2 c0 c8 c9 c1 s r f
    redis-cli -p $PORT flushall >/dev/null
    export SEEN_JOURNAL_DIR=$W/j-$kind-$2
    c0=$(cpu)
    for s in 0 1 2 3 4 5 6 7 8; do
        for ((r = 0; r < PER; r++)); do
            [ "$s$r" = 80 ] && c8=$(cpu)
            f=$(printf '%s/c%05d' "$W" $((s * PER + r)))
            case $kind in
                plain) "$SEEN" dedup -q -n "$N" -f "$loc" "$f" >/dev/null ;;
                window) "$SEEN" dedup -q --window 7d --slices 8 -n "$N" \
                    --now "@$((T0 + s * 75600 + r * 60))" -f "$loc" "$f" >/dev/null ;;
            esac
            [ "$s$r" = 80 ] && c9=$(cpu)
        done
    done
    c1=$(cpu)
    echo "$(echo "($c1 - $c0) / $n * 1000000000" | bc -l) $(echo "($c1 - $c8) / $last_n * 1000000000" | bc -l) $(echo "($c9 - $c8) / $RUN * 1000000000" | bc -l)"
}
declare -A res
for ((i = 0; i < RUNS; i++)); do
    for k in plain window; do res[$k]+="$(one $k $i)"$'\n'; done
done
col() { printf '%s' "${res[$1]}" | awk -v k="$2" 'NF { print $k }' | median_in; }
pr() {
    paste <(printf '%s' "${res[window]}" | awk -v k="$1" 'NF { print $k }') \
        <(printf '%s' "${res[plain]}" | awk -v k="$1" 'NF { print $k }') |
        awk '{ print $1 / $2 }' | median_in
}
echo "corpus $CORPUS: $n lines in runs of $RUN, $PER runs a slice, filters sized for $N; medians of $RUNS; Redis CPU ns per input line"
printf '%-7s %10s %10s %10s\n' kind all last first
for k in plain window; do
    printf '%-7s %10.0f %10.0f %10.0f\n' "$k" "$(col $k 1)" "$(col $k 2)" "$(col $k 3)"
done
printf 'window/plain (median of the runs'"'"' ratios): all %.2fx, last slice %.2fx, its first run %.2fx\n' \
    "$(pr 1)" "$(pr 2)" "$(pr 3)"
