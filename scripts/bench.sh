#!/usr/bin/env bash
# Whole-command benchmark of `seen` against its peers, as a program you can rerun.
#
#   scripts/bench.sh [--lines N] [--runs R] [--scale] [--quick] [--layers-only] [--keys-only]
#
# 1. Corpus: N URL-like lines (default 10M, ~79 bytes average, 30 % repeats with a
#    skewed repetition, fixed seed), generated once into target/bench/.
# 2. dedup: seen, LC_ALL=C sort -u, awk '!seen[$0]++', and huniq / runiq when
#    installed (`cargo install huniq runiq`); R runs each (default 5), output to
#    /dev/null; medians, M lines/s, peak RSS (/usr/bin/time), lines lost vs the
#    exact answer; seen also with output to a file.
# 3. build and query throughput.
# 4. layers: dedup and query speed with a growing filter of 1, 4 and 8 layers.
# 5. --scale: lines/s and ns/line for 1M, 10M and 100M lines of a synthetic
#    stream (100M lines is ~7 GB in target/bench/; needs the disk and a minute).
# 6. keys: what key options (-k, --trim, -i, --url) cost, against whole lines in
#    the same run (also alone with --keys-only).
# Prints markdown tables (they go into docs/PERFORMANCE.md).
set -euo pipefail
cd "$(dirname "$0")/.."

lines=10000000 runs=5 scale=0 layers_only=0 keys_only=0
while [ $# -gt 0 ]; do
    case $1 in
        --layers-only) layers_only=1; shift ;;
        --keys-only) keys_only=1 layers_only=1; shift ;;
        --lines) lines=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --scale) scale=1; shift ;;
        --quick) lines=2000000 runs=3; shift ;;
        *) echo "usage: $0 [--lines N] [--runs R] [--scale] [--quick] [--layers-only] [--keys-only]" >&2; exit 2 ;;
    esac
done

cargo build --release --quiet
seen=$PWD/target/release/seen
dir=target/bench
mkdir -p "$dir"
corpus=$dir/urls-$lines.txt
if [ ! -s "$corpus" ]; then
    echo "generating $corpus ..." >&2
    python3 scripts/gen-urls.py --lines "$lines" --seed 42 --min-words 3 --max-words 9 > "$corpus.tmp"
    mv "$corpus.tmp" "$corpus"
fi
exact=$dir/exact-$lines.txt
[ -s "$exact" ] || awk '!seen[$0]++' "$corpus" > "$exact"
distinct=$(wc -l < "$exact")
bytes=$(wc -c < "$corpus")
cat "$corpus" > /dev/null # page-cache the input

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# time_cmd NAME OUT CMD...: runs CMD `runs` times with stdout to OUT; sets T (median s) and M (peak KiB).
time_cmd() {
    local name=$1 out=$2; shift 2
    local ts=() m=0 t k
    for _ in $(seq "$runs"); do
        /usr/bin/time -f "%e %M" -o "$dir/time" "$@" > "$out"
        read -r t k < "$dir/time"
        ts+=("$t"); [ "$k" -gt "$m" ] && m=$k
    done
    T=$(printf '%s\n' "${ts[@]}" | median)
    M=$m
}

row() { # name seconds kib lost
    awk -v n="$1" -v t="$2" -v k="$3" -v lost="$4" -v l="$lines" -v base="$5" 'BEGIN {
        printf "| %s | %.2f | %.1f | %.0f | %d | %s | %s |\n", n, t, l / t / 1e6, 1e9 * t / l, k / 1024, lost, (base > 0 ? sprintf("%.1f×", base / t) : "") }'
}

if [ "$layers_only" = 0 ]; then
echo "## dedup: $lines lines ($((bytes / 1000000)) MB), $distinct distinct, median of $runs runs, output to /dev/null"
echo
echo "| command | seconds | M lines/s | ns/line | peak RSS MiB | lines lost | speed-up vs sort -u |"
echo "|---|---|---|---|---|---|---|"
time_cmd sort /dev/null env LC_ALL=C sort -u "$corpus"
sort_t=$T sort_m=$M
lost() { # file with one run's output -> lines missing from the exact answer
    echo $(( distinct - $(wc -l < "$1") ))
}
"$seen" dedup "$corpus" > "$dir/seen.out"
cmp -s "$dir/seen.out" "$exact" && seen_lost=0 || seen_lost="$(lost "$dir/seen.out") (order/content differs!)"
time_cmd seen /dev/null "$seen" dedup "$corpus"
row "seen dedup (p=1e-6)" "$T" "$M" "$seen_lost" "$sort_t"
time_cmd seen1 /dev/null "$seen" dedup -j 1 "$corpus"
row "seen dedup -j 1" "$T" "$M" "$seen_lost" "$sort_t"
time_cmd seenn /dev/null "$seen" dedup -n "$lines" "$corpus"
row "seen dedup -n $lines (no line count or sample)" "$T" "$M" "$seen_lost" "$sort_t"
# A new persistent filter each run: lines recorded only after they are written.
time_cmd seenf /dev/null sh -c "rm -f '$dir/p.seen'; exec '$seen' dedup -f '$dir/p.seen' '$corpus' 2>/dev/null"
row "seen dedup -f new.seen (persistent)" "$T" "$M" "$seen_lost" "$sort_t"
row "LC_ALL=C sort -u" "$sort_t" "$sort_m" "0 (sorted order)" "$sort_t"
time_cmd awk /dev/null awk '!seen[$0]++' "$corpus"
row "awk '!seen[\$0]++'" "$T" "$M" 0 "$sort_t"
for peer in huniq runiq; do
    if command -v "$peer" > /dev/null; then
        "$peer" < "$corpus" > "$dir/peer.out"
        time_cmd "$peer" /dev/null sh -c "$peer < '$corpus'"
        row "$peer" "$T" "$M" "$(lost "$dir/peer.out")" "$sort_t"
    else
        echo "| $peer | not installed (cargo install $peer) | | | | | |"
    fi
done
time_cmd seenfile "$dir/seen.out" "$seen" dedup "$corpus"
row "seen dedup > file" "$T" "$M" "$seen_lost" "$sort_t"
time_cmd cat "$dir/cat.out" cat "$exact"
row "(cat of the unique lines > file: write cost alone)" "$T" "$M" "" ""

echo
echo "## build and query"
echo
echo "| command | seconds | M lines/s | peak RSS MiB |"
echo "|---|---|---|---|"
time_cmd build /dev/null "$seen" build --force -n "$lines" -o "$dir/b.seen" "$corpus"
awk -v t="$T" -v k="$M" -v l="$lines" 'BEGIN { printf "| seen build -n %d (%d lines) | %.2f | %.1f | %d |\n", l, l, t, l / t / 1e6, k / 1024 }'
head -n 1000000 "$corpus" > "$dir/q1m.txt"
time_cmd query /dev/null "$seen" query -c "$dir/b.seen" --file "$dir/q1m.txt"
awk -v t="$T" -v k="$M" 'BEGIN { printf "| seen query -c of 1M lines against it | %.2f | %.1f | %d |\n", t, 1e6 / t / 1e6, k / 1024 }'
fi

if [ "$keys_only" = 0 ]; then
echo
echo "## layers: a growing filter with 1, 4 and 8 layers (same input; -n chosen so $distinct distinct lines fill that many layers), median of $runs"
echo
echo "| layers | filter MiB | dedup s | dedup M lines/s | query 1M present s | query 1M absent s | M lookups/s (absent) |"
echo "|---|---|---|---|---|---|---|"
[ -s "$dir/q1m.txt" ] || head -n 1000000 "$corpus" > "$dir/q1m.txt"
sed 's/^/absent-/' "$dir/q1m.txt" > "$dir/q1m-absent.txt"
for layers in 1 4 8; do
    c=$(( (distinct + (1 << layers) - 2) / ((1 << layers) - 1) ))
    time_cmd layersd /dev/null "$seen" dedup -n "$c" "$corpus"
    dt=$T
    "$seen" build --force -n "$c" -o "$dir/l.seen" "$corpus"
    got=$("$seen" stats --json "$dir/l.seen" | python3 -c 'import json,sys; s=json.load(sys.stdin); print(len(s["layers"]), s["bytes"])')
    time_cmd layersqp /dev/null "$seen" query -c "$dir/l.seen" --file "$dir/q1m.txt"
    qp=$T
    # -v: count the absent ones (all of them), so the status is 0.
    time_cmd layersqa /dev/null "$seen" query -c -v "$dir/l.seen" --file "$dir/q1m-absent.txt"
    awk -v got="$got" -v dt="$dt" -v qp="$qp" -v qa="$T" -v l="$lines" 'BEGIN { split(got, g, " ");
        printf "| %d | %.0f | %.2f | %.1f | %.2f | %.2f | %.1f |\n", g[1], g[2] / 1048576, dt, l / dt / 1e6, qp, qa, 1 / qa }'
done

fi

if [ "$keys_only" = 1 ] || [ "$layers_only" = 0 ]; then
    echo
    echo "## keys: seen dedup of the same $lines lines with key options, median of $runs, output to /dev/null"
    echo
    echo "| key options | seconds | M lines/s | ns/line | vs whole lines | distinct keys |"
    echo "|---|---|---|---|---|---|"
    base=
    for flags in "" "-k 3 -t /" "--trim" "-i" "--url" "--url --url-sort-query" "-k 3 -t / --trim -i"; do
        # shellcheck disable=SC2086 # $flags is a list of flags
        time_cmd keys /dev/null "$seen" dedup $flags "$corpus"
        [ -n "$base" ] || base=$T
        # shellcheck disable=SC2086
        n=$("$seen" dedup $flags "$corpus" | wc -l)
        awk -v f="${flags:-(whole lines)}" -v t="$T" -v l="$lines" -v b="$base" -v n="$n" 'BEGIN {
            printf "| %s | %.2f | %.1f | %.0f | %.2f× | %d |\n", f, t, l / t / 1e6, 1e9 * t / l, t / b, n }'
    done
fi

if [ "$scale" = 1 ]; then
    echo
    echo "## scaling: synthetic stream (~70 bytes/line, 30 % repeats), filter sized -n lines at p=1e-6, median of $runs"
    echo
    echo "| lines | filter MiB | seconds | M lines/s | ns/line | peak RSS MiB |"
    echo "|---|---|---|---|---|---|"
    for n in 1000000 10000000 100000000; do
        f=$dir/scale-$n.txt
        if [ ! -s "$f" ]; then
            awk -v n="$n" 'BEGIN { srand(7); for (i = 0; i < n; i++) {
                j = (rand() < 0.3 && i > 0) ? int(rand() * i) : i;
                printf "https://www.example-%d.com/articles/%d/comments?page=%d&ref=feed\n", j % 997, j, j % 13 } }' > "$f.tmp"
            mv "$f.tmp" "$f"
        fi
        cat "$f" > /dev/null
        time_cmd scale /dev/null "$seen" dedup -n "$n" "$f"
        mib=$("$seen" build --force -n "$n" -o "$dir/s.seen" /dev/null && "$seen" stats --json "$dir/s.seen" | sed 's/.*"bytes":\([0-9]*\).*/\1/')
        awk -v n="$n" -v t="$T" -v k="$M" -v b="$mib" 'BEGIN { printf "| %d | %.0f | %.2f | %.1f | %.0f | %d |\n", n, b / 1048576, t, n / t / 1e6, 1e9 * t / n, k / 1024 }'
    done
fi
