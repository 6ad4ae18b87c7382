#!/usr/bin/env bash
# Set up, build, and run every test suite: the clang-tidy checks (lit +
# FileCheck) and the runtime (GoogleTest through CTest). Ends with one
# summary line: "summary: N passed, N failed".
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
set +e
# First: the build is configured with the environment's interpreter.
metaguard_python_env || { echo "metaguard: could not install the Python test environment" >&2;
                          echo "summary: 0 passed, 1 failed"; exit 1; }
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

# CI (CI=true, set by .ci/run) or METAGUARD_SANITIZED_TESTS=1: the parsers'
# and loaders' tests again, built with AddressSanitizer + UndefinedBehavior-
# Sanitizer in a build directory of their own. A subset, to stay within the
# CI budget: see docs/sanitizers.md for what and why.
san_passed=0; san_failed=0
if [ "${CI:-}" = "true" ] || [ "${METAGUARD_SANITIZED_TESTS:-0}" = "1" ]; then
  echo "== ASan+UBSan: runtime parsers, loaders and threads"
  san_start=$(date +%s)
  san_dir="${METAGUARD_ASAN_BUILD_DIR:-$METAGUARD_BUILD_DIR-asan}"
  san_tests=(metaguard_safetensors_test metaguard_safetensors_validation_test metaguard_checkpoint_test
             metaguard_offload_folder_test metaguard_loading_test metaguard_concurrency_test
             metaguard_fuzz_replay_safetensors metaguard_fuzz_replay_sharded_index
             metaguard_fuzz_replay_offload_folder metaguard_fuzz_replay_config
             metaguard_fuzz_replay_sizes metaguard_fuzz_replay_load_weights)
  # -O1 -g1: line tables are enough for the reports' stacks, and full debug
  # information would double the build (docs/sanitizers.md).
  if cmake -S "$METAGUARD_ROOT" -B "$san_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1 -DNDEBUG" -DMETAGUARD_BUILD_EXAMPLES=OFF \
       -DMETAGUARD_SANITIZE=address,undefined >/dev/null &&
     cmake --build "$san_dir" -j "$METAGUARD_JOBS" --target "${san_tests[@]}" >"$logs/asan-build.log" 2>&1; then
    # See docs/sanitizers.md: LibTorch is not instrumented.
    export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_init_order=1:halt_on_error=1}"
    export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$METAGUARD_ROOT/tools/lsan.supp:print_suppressions=0}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
    for t in "${san_tests[@]}"; do
      bin=$(find "$san_dir" -name "$t" -type f -perm -u+x | head -n 1)
      if "$bin" --gtest_brief=1 >"$logs/asan-$t.log" 2>&1; then
        n=$(grep -Eo '\[  PASSED  \] [0-9]+' "$logs/asan-$t.log" | grep -Eo '[0-9]+$'); n=${n:-0}
        san_passed=$((san_passed + n)); echo "asan: $t: $n passed"
      else
        san_failed=$((san_failed + 1)); echo "asan: $t: FAILED (log: $logs/asan-$t.log)"
        tail -n 40 "$logs/asan-$t.log"
      fi
    done
  else
    san_failed=$((san_failed + 1)); echo "asan: build FAILED (log: $logs/asan-build.log)"
    tail -n 40 "$logs/asan-build.log"
  fi
  echo "asan: took $(( $(date +%s) - san_start ))s"
fi

count() { grep -Eo "$1" "$2" | grep -Eo '[0-9]+' | tail -n 1; }
lit_passed=$(count '^ *Passed *: *[0-9]+' "$logs/lit.log"); lit_passed=${lit_passed:-0}
lit_xfail=$(count '^ *Expectedly Failed *: *[0-9]+' "$logs/lit.log"); lit_xfail=${lit_xfail:-0}
lit_failed=$(count '^ *(Failed|Unexpectedly Passed|Unresolved) *: *[0-9]+' "$logs/lit.log"); lit_failed=${lit_failed:-0}
ct_total=$(count 'tests failed out of [0-9]+' "$logs/ctest.log"); ct_total=${ct_total:-0}
ct_failed=$(grep -Eo '[0-9]+ tests failed out of' "$logs/ctest.log" | grep -Eo '^[0-9]+'); ct_failed=${ct_failed:-0}

passed=$((lit_passed + lit_xfail + ct_total - ct_failed + san_passed))
failed=$((lit_failed + ct_failed + san_failed))
if [ "$lit_status" -ne 0 ] && [ "$lit_failed" -eq 0 ]; then failed=$((failed + 1)); fi
if [ "$ctest_status" -ne 0 ] && [ "$ct_failed" -eq 0 ]; then failed=$((failed + 1)); fi
if [ "$passed" -eq 0 ]; then echo "no test ran"; failed=$((failed + 1)); fi
echo "summary: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
