#!/bin/bash
# What the checks of a clean file's checksums cost a writer (docs/HOW-IT-WORKS.md,
# "Checksums"): medians (wall, user, sys; ms) of `echo LINE | seen dedup -f` on a
# 1 GiB filter and of `seen dedup -f` of 1M new lines into a fresh copy of it,
# two binaries alternating. Usage: scripts/bench-checks.sh OLD NEW [RUNS] [DIR]
set -euo pipefail
OLD=$1; NEW=$2; RUNS=${3:-7}; DIR=${4:-${TMPDIR:-/tmp}/seen-bench-checks}
mkdir -p "$DIR"; cd "$DIR"
if [ ! -f big.seen ]; then
  seq 1 20000000 | sed 's|^|https://base.example/p|' > base.txt
  "$OLD" build -q --fixed -n 270M -o big.seen base.txt
  for r in 1 2 3 4 5 6; do seq 1 1000000 | sed "s|^|https://new$r.example/q|" > m$r.txt; done
fi
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
TIMEFORMAT='%R %U %S'
rm -f one.old one.new many.old many.new; cp big.seen one.seen
for i in $(seq 1 "$RUNS"); do
  for b in old new; do
    S=$OLD; [ $b = new ] && S=$NEW
    { time (echo "x-$b-$i" | "$S" dedup -f one.seen > /dev/null); } 2>> one.$b
    cp big.seen work.seen; sync -f work.seen
    { time "$S" dedup -f work.seen m$(( (i - 1) % 6 + 1 )).txt > /dev/null; } 2>> many.$b
  done
done
for f in one.old one.new many.old many.new; do
  echo "$f: medians: wall $(awk '{print int($1*1000)}' $f | median) ms," \
    "user $(awk '{print int($2*1000)}' $f | median) ms, sys $(awk '{print int($3*1000)}' $f | median) ms"
done
