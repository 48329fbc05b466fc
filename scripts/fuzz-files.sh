#!/usr/bin/env bash
# Corruption fuzzer (issue 5): mutates a valid filter file (bit flips, resealed
# random header fields, truncations, extensions) and runs stats / query /
# dedup -f / build --add on each; every run must exit 0, 1 or 2 without a
# panic or a signal.
#
#   scripts/fuzz-files.sh [CASES]      (default 100000)
#
# It runs the suite's test `corrupted_files_never_crash` (tests/integration/crash.rs) in
# release mode with CASES files and prints its tally line.
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-100000}
SEEN_FUZZ_CASES=$cases \
    cargo test --release --quiet --test integration crash::corrupted_files_never_crash -- --nocapture 2>&1 |
    grep -E "corruption fuzzer|test result|panicked|killed by a signal"
