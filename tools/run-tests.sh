#!/usr/bin/env bash
# Set up, build, and run every test suite: the clang-tidy checks (lit +
# FileCheck) and the runtime (GoogleTest through CTest). Ends with one
# summary line: "summary: N passed, N failed".
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
set +e
metaguard_setup || { echo "summary: 0 passed, 1 failed"; exit 1; }
metaguard_install_sarif_validator || { echo "summary: 0 passed, 1 failed"; exit 1; }

LIT=/usr/lib/llvm-19/build/utils/lit/lit.py
logs="$METAGUARD_BUILD_DIR/test-logs"
mkdir -p "$logs"

echo "== lit: clang-tidy checks, tools and packaging"
python3 "$LIT" -sv -j "$METAGUARD_JOBS" "$METAGUARD_BUILD_DIR/test/checks" "$METAGUARD_BUILD_DIR/test/tools" \
  "$METAGUARD_BUILD_DIR/test/package" 2>&1 | tee "$logs/lit.log"
lit_status=${PIPESTATUS[0]}

echo "== ctest: runtime"
(cd "$METAGUARD_BUILD_DIR" && ctest --output-on-failure -j "$METAGUARD_JOBS") 2>&1 | tee "$logs/ctest.log"
ctest_status=${PIPESTATUS[0]}

count() { grep -Eo "$1" "$2" | grep -Eo '[0-9]+' | tail -n 1; }
lit_passed=$(count '^ *Passed *: *[0-9]+' "$logs/lit.log"); lit_passed=${lit_passed:-0}
lit_xfail=$(count '^ *Expectedly Failed *: *[0-9]+' "$logs/lit.log"); lit_xfail=${lit_xfail:-0}
lit_failed=$(count '^ *(Failed|Unexpectedly Passed|Unresolved) *: *[0-9]+' "$logs/lit.log"); lit_failed=${lit_failed:-0}
ct_total=$(count 'tests failed out of [0-9]+' "$logs/ctest.log"); ct_total=${ct_total:-0}
ct_failed=$(grep -Eo '[0-9]+ tests failed out of' "$logs/ctest.log" | grep -Eo '^[0-9]+'); ct_failed=${ct_failed:-0}

passed=$((lit_passed + lit_xfail + ct_total - ct_failed))
failed=$((lit_failed + ct_failed))
if [ "$lit_status" -ne 0 ] && [ "$lit_failed" -eq 0 ]; then failed=$((failed + 1)); fi
if [ "$ctest_status" -ne 0 ] && [ "$ct_failed" -eq 0 ]; then failed=$((failed + 1)); fi
if [ "$passed" -eq 0 ]; then echo "no test ran"; failed=$((failed + 1)); fi
echo "summary: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
