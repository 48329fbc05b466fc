# Shared by the bench scripts (sourced, not run): timing, medians, ratios and
# the 10M-line URL corpus of scripts/bench.sh.

# t CMD...: wall seconds of one run of CMD, its output discarded; a failing
# CMD stops the benchmark (its error shown).
t() {
    local s e
    s=$(date +%s.%N)
    "$@" > /dev/null 2> target/bench/t.err || { echo "failed: $*" >&2; cat target/bench/t.err >&2; return 1; }
    e=$(date +%s.%N)
    awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", e - s }'
}

# median X...: the median of the numbers given (the lower middle of an even count).
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# ratio X Y: X / Y to two decimals.
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / y }'; }

# corpus: prints the path of the 10M-line corpus, generating it first if missing.
corpus() {
    local c=target/bench/urls-10000000.txt
    mkdir -p target/bench
    if [ ! -s "$c" ]; then
        python3 scripts/gen-urls.py --lines 10000000 --seed 42 --min-words 3 --max-words 9 > "$c.tmp"
        mv "$c.tmp" "$c"
    fi
    echo "$c"
}
