#!/usr/bin/env bash
# Holds the shared runtime library (METAGUARD_SHARED) to the ABI its version
# promises: libmetaguard.so.<soversion> keeps the ABI recorded for that
# soversion in compat/ (abidw's XML, xz-compressed), so a change that breaks it
# without a version bump fails here. Also builds and runs the public API
# programs (test/api/) against the shared library, which proves that it
# exports what applications need.
#
#   tools/abi-check.sh            check (what tools/run-tests.sh runs)
#   tools/abi-check.sh --record   write the baseline for this version, after a
#                                 version bump (docs/contributing.md)
#
# The ABI is that of this machine's toolchain and LibTorch (Debian 12's g++ and
# libtorch-dev 1.13), which is what the baseline was recorded with. Ends with
# "abi-check: N passed, N failed".
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
set +e # setup.sh stops at the first failure; here abidiff's status is an answer
metaguard_install_packages || exit 1

mode=check
[ "${1:-}" = "--record" ] && mode=record
build="${METAGUARD_ABI_BUILD_DIR:-$METAGUARD_BUILD_DIR-abi}"
abi_cache="$METAGUARD_CACHE_DIR/abi"
# abidiff's exit status is a bit field: 1 and 2 an error, 4 some change, 8 a
# change it knows breaks applications (a removed symbol). It counts a class
# that grew or moved its members as a change only, which breaks them as well:
# so any change but an addition fails.
abidiff_error=3
abidiff_incompatible=8
passed=0; failed=0
pass() { passed=$((passed + 1)); echo "abi-check: ok: $*"; }
fail() { failed=$((failed + 1)); echo "abi-check: FAILED: $*"; }
finish() { echo "abi-check: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

# Debug information is what abidw reads the types from.
mkdir -p "$build"
if ! cmake -S "$METAGUARD_ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
       -DMETAGUARD_SHARED=ON -DMETAGUARD_BUILD_CHECKS=OFF -DMETAGUARD_BUILD_TESTS=ON \
       -DMETAGUARD_BUILD_EXAMPLES=OFF -DMETAGUARD_BUILD_BENCH=OFF -DMETAGUARD_INSTALL=OFF \
       >"$build/abi-configure.log" 2>&1 ||
   ! cmake --build "$build" -j "$METAGUARD_JOBS" --target metaguard metaguard_public_api \
       metaguard_first_release_api >"$build/abi-build.log" 2>&1; then
  fail "building the shared library (logs: $build/abi-configure.log, $build/abi-build.log)"
  tail -n 40 "$build/abi-build.log" 2>/dev/null
  finish
fi

library=$(readlink -f "$build/runtime/libmetaguard.so")
soname=$(readelf -d "$library" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
baseline="$METAGUARD_ROOT/compat/$soname.abi.xz"

for program in metaguard_public_api metaguard_first_release_api; do
  if out=$("$build/test/api/$program" 2>&1); then
    pass "$program runs against $soname: ${out##*$'\n'}"
  else
    fail "$program against $soname:"; echo "$out" | tail -n 20
  fi
done

# abidw takes minutes; its output depends only on the library's bytes, so it
# is cached by their hash outside the clone. Paths of the clone and the build
# are written as placeholders: CI builds in another folder than the baseline's.
mkdir -p "$abi_cache"
current="$abi_cache/$(sha256sum "$library" | cut -d' ' -f1).abi"
if [ ! -s "$current" ]; then
  if ! abidw --headers-dir "$METAGUARD_ROOT/runtime/include/metaguard" --drop-private-types \
         --no-show-locs --no-comp-dir-path --no-corpus-path --out-file "$current.tmp" "$library"; then
    fail "abidw could not read $library"; finish
  fi
  sed -e "s|$build|@BUILD@|g" -e "s|$METAGUARD_ROOT|@SOURCE@|g" "$current.tmp" >"$current" && rm -f "$current.tmp"
fi

if [ "$mode" = record ]; then
  mkdir -p "$(dirname "$baseline")"
  xz -9 -c "$current" >"$baseline.tmp" && mv "$baseline.tmp" "$baseline"
  echo "abi-check: recorded the ABI of $soname in ${baseline#"$METAGUARD_ROOT"/}; commit it with the version bump"
  finish
fi

if [ ! -f "$baseline" ]; then
  fail "no recorded ABI for $soname (${baseline#"$METAGUARD_ROOT"/}): a version bump records" \
       "the new release's ABI with tools/abi-check.sh --record (docs/contributing.md)"
  finish
fi
recorded="$build/recorded.abi"
xz -dc "$baseline" >"$recorded"
abidiff "$recorded" "$current" >"$build/abidiff.txt" 2>&1
status=$?
# Its summaries count what was removed and changed ("N Removed, N Changed").
breaking=$(grep -E '^(Functions|Variables|Function symbols|Variable symbols) changes summary:' "$build/abidiff.txt" |
           grep -cE '(^|[^0-9])[1-9][0-9]* (Removed|Changed)')
if [ $((status & abidiff_error)) -ne 0 ]; then
  fail "abidiff could not compare $soname with ${baseline#"$METAGUARD_ROOT"/}:"
  head -n 20 "$build/abidiff.txt"
elif [ $((status & abidiff_incompatible)) -ne 0 ] || [ "$breaking" -ne 0 ] ||
     grep -q '^ELF SONAME changed' "$build/abidiff.txt"; then
  fail "$soname breaks the ABI recorded for it: applications linked against it would" \
       "misbehave. Keep the old ABI, or bump the minor version in CMakeLists.txt (the" \
       "soversion follows), say so in CHANGELOG.md and record the new ABI with" \
       "tools/abi-check.sh --record. abidiff says ($build/abidiff.txt):"
  head -n 60 "$build/abidiff.txt"
elif [ "$status" -ne 0 ]; then
  pass "$soname keeps its recorded ABI and adds to it (abidiff: $build/abidiff.txt)"
else
  pass "$soname keeps its recorded ABI"
fi
finish
