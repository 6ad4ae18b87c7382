#!/usr/bin/env bash
# Set up, build, and run every test suite: the clang-tidy checks (lit +
# FileCheck) and the runtime (GoogleTest through CTest). Ends with one
# summary line: "summary: N passed, N failed".
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
set +e
run_start=$(date +%s)
# The plugin's further LLVM majors, built and tested last (see their leg
# below); their Debian packages are installed with the others, except for
# those Debian 12 lacks (METAGUARD_SID_LLVM_VERSIONS: 23), which come from
# Debian unstable into the cache (tools/llvm-sid.sh).
test_majors="${METAGUARD_TEST_LLVM_VERSIONS-14;16;22;23}"
# Of those, the ones whose driver, SARIF, whole-program and metaguard-clangd
# tests run too (19's run in the main lit run).
tools_majors="${METAGUARD_TEST_TOOLS_LLVM_VERSIONS-22}"
METAGUARD_EXTRA_LLVM_VERSIONS="$test_majors" metaguard_install_packages ||
  { echo "summary: 0 passed, 1 failed"; exit 1; }
# First: the build is configured with the environment's interpreter.
metaguard_python_env || { echo "metaguard: could not install the Python test environment" >&2;
                          echo "summary: 0 passed, 1 failed"; exit 1; }
metaguard_setup || { echo "summary: 0 passed, 1 failed"; exit 1; }
metaguard_install_sarif_validator || { echo "summary: 0 passed, 1 failed"; exit 1; }

LIT=/usr/lib/llvm-19/build/utils/lit/lit.py
logs="$METAGUARD_BUILD_DIR/test-logs"
mkdir -p "$logs"

# The wheel of tools/build-wheel.sh from this build, for the packaging tests
# (test/package/wheel.test installs it into a fresh virtual environment and
# runs the main job with it).
echo "== wheel"
wheel_status=0
if ! METAGUARD_BUILD_DIR="$METAGUARD_BUILD_DIR" METAGUARD_DIST_DIR="$METAGUARD_BUILD_DIR/dist" \
     bash "$METAGUARD_ROOT/tools/build-wheel.sh" >"$logs/wheel.log" 2>&1; then
  wheel_status=1
  echo "wheel: build FAILED (log: $logs/wheel.log)"; tail -n 40 "$logs/wheel.log"
fi

echo "== lit: clang-tidy checks, tools and packaging"
python3 "$LIT" -sv -j "$METAGUARD_JOBS" "$METAGUARD_BUILD_DIR/test/checks" "$METAGUARD_BUILD_DIR/test/tools" \
  "$METAGUARD_BUILD_DIR/test/package" 2>&1 | tee "$logs/lit.log"
lit_status=${PIPESTATUS[0]}

echo "== ctest: runtime"
(cd "$METAGUARD_BUILD_DIR" && ctest --output-on-failure -j "$METAGUARD_JOBS") 2>&1 | tee "$logs/ctest.log"
ctest_status=${PIPESTATUS[0]}

# The shared runtime library against the ABI recorded for its SONAME, and
# the public API programs run against it (tools/abi-check.sh; docs/
# contributing.md, "Versions and compatibility").
echo "== ABI: the shared runtime library"
abi_start=$(date +%s)
bash "$METAGUARD_ROOT/tools/abi-check.sh" 2>&1 | tee "$logs/abi.log"
abi_status=${PIPESTATUS[0]}
echo "abi: took $(( $(date +%s) - abi_start ))s"

# The same runtime, its tests and the interop suite against the second
# LibTorch: 2.x, from the torch wheel of the Python test environment. The
# checks are not built again (their 2.x header runs are part of lit above);
# of the packaging tests, the one that installs the runtime and builds a
# downstream project with it.
echo "== LibTorch 2.x: runtime tests, interop and the installed package"
t2_start=$(date +%s)
t2_ctest_status=0; t2_lit_status=0
rm -f "$logs/ctest-torch2.log" "$logs/lit-torch2.log"
if metaguard_build_torch2 >"$logs/torch2-build.log" 2>&1; then
  (cd "$METAGUARD_TORCH2_BUILD_DIR" && ctest --output-on-failure -j "$METAGUARD_JOBS") 2>&1 | tee "$logs/ctest-torch2.log"
  t2_ctest_status=${PIPESTATUS[0]}
  python3 "$LIT" -sv "$METAGUARD_TORCH2_BUILD_DIR/test/package/install-tree-runtime.test" 2>&1 | tee "$logs/lit-torch2.log"
  t2_lit_status=${PIPESTATUS[0]}
else
  t2_ctest_status=1
  echo "torch2: build FAILED (log: $logs/torch2-build.log)"; tail -n 40 "$logs/torch2-build.log"
fi
echo "torch2: took $(( $(date +%s) - t2_start ))s"

# CI (CI=true, set by .ci/run) or METAGUARD_SANITIZED_TESTS=1: the parsers'
# and loaders' tests again, built with AddressSanitizer + UndefinedBehavior-
# Sanitizer in a build directory of their own. A subset, to stay within the
# CI budget: see docs/sanitizers.md for what and why.
san_passed=0; san_failed=0
if [ "${CI:-}" = "true" ] || [ "${METAGUARD_SANITIZED_TESTS:-0}" = "1" ]; then
  echo "== ASan+UBSan: runtime parsers, loaders and threads"
  san_start=$(date +%s)
  san_dir="${METAGUARD_ASAN_BUILD_DIR:-$METAGUARD_BUILD_DIR-asan}"
  # metaguard_reading_test: the runtime's tests of what it reads and of the
  # threads that read it (test/runtime/CMakeLists.txt).
  san_tests=(metaguard_reading_test metaguard_fuzz_replay_safetensors_header
             metaguard_fuzz_replay_safetensors metaguard_fuzz_replay_sharded_index
             metaguard_fuzz_replay_offload_folder metaguard_fuzz_replay_config
             metaguard_fuzz_replay_sizes metaguard_fuzz_replay_load_weights
             metaguard_fuzz_replay_pytorch_bin)
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

# Further LLVM majors: the same build with METAGUARD_EXTRA_LLVM_VERSIONS (one
# sub-build per major, build/llvm<N>/, through the compiler cache), each
# major's own lit run of the checks' cases with its own clang-tidy, the tools'
# suite for $tools_majors, and the packaging tests that install every plugin.
# The cases on LibTorch's real headers stay on 19 (above) and on the majors in
# $tools_majors, unless METAGUARD_MAJORS_REAL_HEADERS=1. A major from Debian
# unstable (23) is built here against its headers from the cache and its cases
# run with the clang-tidy of a cached Debian unstable chroot (its first run
# downloads them: see tools/llvm-sid.sh); that chroot has no LibTorch, so its
# real-header cases never run. Last, and skipped
# (saying so) when the run has already taken METAGUARD_MAJORS_BUDGET_MINUTES
# (default 50): on a machine with no caches at all the rest takes most of
# CI's 90 minutes, and a run with warm caches takes a few minutes for it.
majors_status=0 sid_failed=0
rm -f "$logs/lit-majors.log" "$logs/majors-sid.log"
# Makes ready the majors of $test_majors that come from Debian unstable (their
# headers, the chroot with their clang-tidy, from the cache after the first
# run) and leaves out of $test_majors those that could not be.
prepare_sid_majors() {
  local major ready="" sid_start
  for major in ${test_majors//;/ }; do
    if metaguard_is_sid_major "$major"; then
      sid_start=$(date +%s)
      if [ "$(id -u)" -ne 0 ]; then
        echo "majors: LLVM $major SKIPPED: its clang-tidy runs in a Debian unstable chroot, which needs root"
        continue
      elif ! metaguard_sid_prepare "$major" >>"$logs/majors-sid.log" 2>&1; then
        sid_failed=$((sid_failed + 1))
        echo "majors: LLVM $major from Debian unstable: set-up FAILED (log: $logs/majors-sid.log)"
        tail -n 40 "$logs/majors-sid.log"
        continue
      fi
      echo "majors: LLVM $major from Debian unstable ready in $(( $(date +%s) - sid_start ))s" \
           "($(tail -n 1 "$logs/majors-sid.log"))"
    fi
    ready="${ready:+$ready;}$major"
  done
  test_majors=$ready
}
if [ -n "$test_majors" ]; then
  echo "== LLVM ${test_majors//;/, }: the plugin built and tested with each major's clang-tidy"
  majors_start=$(date +%s)
  elapsed=$(( (majors_start - run_start) / 60 ))
  if [ "$elapsed" -ge "${METAGUARD_MAJORS_BUDGET_MINUTES:-50}" ]; then
    echo "majors: SKIPPED: this run has taken $elapsed minutes already (budget" \
         "${METAGUARD_MAJORS_BUDGET_MINUTES:-50}); a run with warm caches tests them"
  elif prepare_sid_majors && [ -z "$test_majors" ]; then
    echo "majors: none left to build"
  elif METAGUARD_EXTRA_LLVM_VERSIONS="$test_majors" metaguard_build >"$logs/majors-build.log" 2>&1; then
    quick=() full=("$METAGUARD_BUILD_DIR/test/package/install-tree-majors.test"
                   "$METAGUARD_BUILD_DIR/test/package/deb.test")
    for major in ${test_majors//;/ }; do
      if metaguard_is_sid_major "$major"; then
        quick+=("$METAGUARD_BUILD_DIR/llvm$major/test/checks")
      elif [[ ";$tools_majors;" == *";$major;"* ]]; then
        full+=("$METAGUARD_BUILD_DIR/llvm$major/test/checks" "$METAGUARD_BUILD_DIR/llvm$major/test/tools")
      elif [ "${METAGUARD_MAJORS_REAL_HEADERS:-0}" = "1" ]; then
        full+=("$METAGUARD_BUILD_DIR/llvm$major/test/checks")
      else
        quick+=("$METAGUARD_BUILD_DIR/llvm$major/test/checks")
      fi
    done
    {
      python3 "$LIT" -sv -j "$METAGUARD_JOBS" "${full[@]}"; s1=$?
      s2=0
      [ "${#quick[@]}" -gt 0 ] && { python3 "$LIT" -sv -j "$METAGUARD_JOBS" -D real_headers=0 "${quick[@]}"; s2=$?; }
      exit $(( s1 | s2 ))
    } 2>&1 | tee "$logs/lit-majors.log"
    majors_status=${PIPESTATUS[0]}
  else
    majors_status=1
    echo "majors: build FAILED (log: $logs/majors-build.log)"; tail -n 40 "$logs/majors-build.log"
  fi
  echo "majors: took $(( $(date +%s) - majors_start ))s"
fi

count() { grep -Eo "$1" "$2" 2>/dev/null | grep -Eo '[0-9]+' | tail -n 1; }
sum_counts() { grep -Eo "$1" "$2" 2>/dev/null | grep -Eo '[0-9]+$' | awk '{ s += $1 } END { print s + 0 }'; }
passed=$san_passed; failed=$san_failed
# Adds one lit log's counts (summed, so a log of several lit runs one after
# another counts them all); a failing exit with no failure counted is one.
add_lit() {
  local p x f
  p=$(sum_counts '^ *Passed *: *[0-9]+' "$1"); x=$(sum_counts '^ *Expectedly Failed *: *[0-9]+' "$1")
  f=$(sum_counts '^ *(Failed|Unexpectedly Passed|Unresolved) *: *[0-9]+' "$1")
  passed=$((passed + p + x)); failed=$((failed + f))
  if [ "$2" -ne 0 ] && [ "$f" -eq 0 ]; then failed=$((failed + 1)); fi
}
# Likewise for one ctest log.
add_ctest() {
  local total f
  total=$(count 'tests failed out of [0-9]+' "$1"); f=$(grep -Eo '[0-9]+ tests failed out of' "$1" 2>/dev/null | grep -Eo '^[0-9]+')
  passed=$((passed + ${total:-0} - ${f:-0})); failed=$((failed + ${f:-0}))
  if [ "$2" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then failed=$((failed + 1)); fi
}
add_lit "$logs/lit.log" "$lit_status"
add_ctest "$logs/ctest.log" "$ctest_status"
add_ctest "$logs/ctest-torch2.log" "$t2_ctest_status"
add_lit "$logs/lit-torch2.log" "$t2_lit_status"
add_lit "$logs/lit-majors.log" "$majors_status"
abi_passed=$(sed -n 's/^abi-check: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$logs/abi.log")
abi_failed=$(sed -n 's/^abi-check: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$logs/abi.log")
passed=$((passed + ${abi_passed:-0})); failed=$((failed + ${abi_failed:-0}))
if [ "$abi_status" -ne 0 ] && [ "${abi_failed:-0}" -eq 0 ]; then failed=$((failed + 1)); fi
failed=$((failed + wheel_status + sid_failed))
if [ "$passed" -eq 0 ]; then echo "no test ran"; failed=$((failed + 1)); fi
echo "summary: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
