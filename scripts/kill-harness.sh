#!/usr/bin/env bash
# Kill harness (issue 5): `seen dedup -f` on a multi-million-line input, SIGKILLed
# at random moments (fixed seed), then rerun to completion; counts lines lost
# (must be 0: the false-positive budget at p = 1e-9 is 0) and lines re-emitted.
#
#   scripts/kill-harness.sh [TRIALS] [DISTINCT_LINES]     (default 1000, 1000000)
#
# It runs the suite's test `sigkill_at_random_moments_loses_no_line` (tests/integration/crash.rs)
# in release mode with these sizes and prints its tally line.
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-1000} lines=${2:-1000000}
SEEN_KILL_TRIALS=$trials SEEN_KILL_LINES=$lines \
    cargo test --release --quiet --test integration crash::sigkill_at_random_moments_loses_no_line -- --nocapture 2>&1 |
    grep -E --line-buffered "kill harness|test result|panicked|lines never printed"
