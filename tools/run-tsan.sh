#!/usr/bin/env bash
# Builds the runtime and its concurrency tests with ThreadSanitizer (GCC,
# -DMETAGUARD_SANITIZE=thread, in $METAGUARD_TSAN_BUILD_DIR, default
# build-tsan/) and runs the test; exits non-zero on any race report or test
# failure. LibTorch is not instrumented: tools/tsan.supp silences reports
# whose frames are all inside LibTorch's own libraries (see
# docs/sanitizers.md). Extra arguments go to the test binary (a later
# --gtest_filter replaces the default one), e.g.
# --gtest_filter=ConcurrencyTest.ThreadsRunForwardsOfOneSharedOffloadedModel
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${METAGUARD_TSAN_BUILD_DIR:-$ROOT/build-tsan}"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1 -DNDEBUG" \
  -DMETAGUARD_SANITIZE=thread -DMETAGUARD_BUILD_CHECKS=OFF -DMETAGUARD_BUILD_BENCH=OFF >/dev/null || exit 1
cmake --build "$BUILD" -j "${METAGUARD_JOBS:-2}" --target metaguard_reading_test || exit 1

# halt_on_error: the first report fails the run. history_size: keep enough
# history for both stacks of a report on a test this size.
export TSAN_OPTIONS="suppressions=$ROOT/tools/tsan.supp halt_on_error=1 second_deadlock_stack=1 history_size=4 ${TSAN_OPTIONS:-}"
# One thread per operator: LibTorch's OpenMP pool is not instrumented, and
# its barriers would look like races (the test sets this too).
export OMP_NUM_THREADS=1
# The concurrency tests live in the program of the reading tests.
"$BUILD/test/runtime/metaguard_reading_test" --gtest_filter='ConcurrencyTest.*' "$@"
status=$?
if [ "$status" -eq 0 ]; then
  echo "run-tsan: clean (no data race reported, every test passed)"
else
  echo "run-tsan: FAILED (exit $status)"
fi
exit "$status"
