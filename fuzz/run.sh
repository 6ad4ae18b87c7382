#!/usr/bin/env bash
# Runs libFuzzer targets for a given time each, one after the other:
#
#   fuzz/run.sh SECONDS [TARGET...]     (targets: safetensors_header safetensors
#                                        sharded_index offload_folder config sizes
#                                        load_weights pytorch_bin;
#                                        default: all of them)
#
# Builds them first in $METAGUARD_FUZZ_BUILD_DIR (default build-fuzz/, a
# clang-19 -DMETAGUARD_FUZZ=ON configuration of its own). Each run starts from
# the seed corpus (fuzz/corpus/<target>/) plus what earlier runs found
# (<build>/corpus/<target>/, not committed). A crash, leak, timeout or OOM is
# minimised into fuzz/regressions/<target>/, which the normal test suite
# replays (metaguard_fuzz_replay_<target>); the script then exits non-zero.
# Per-target figures go to <build>/fuzz-logs/<target>.log; the last status
# line of each is printed at the end.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${METAGUARD_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
ALL=(safetensors_header safetensors sharded_index offload_folder config sizes load_weights pytorch_bin)

[ "$#" -ge 1 ] || { sed -n '2,17p' "$0"; exit 2; }
seconds="$1"; shift
targets=("$@"); [ "${#targets[@]}" -gt 0 ] || targets=("${ALL[@]}")

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++-19 -DMETAGUARD_FUZZ=ON >/dev/null || exit 1
fi
cmake --build "$BUILD" -j "${METAGUARD_JOBS:-2}" --target "${targets[@]/#/fuzz_}" || exit 1

# detect_leaks: LibTorch keeps allocator caches and thread pools alive to the
# end, which LeakSanitizer would report once per process, not per input;
# libFuzzer still checks each input for leaks (-detect_leaks=1 below).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_odr_violation=0:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

status=0
# Wall-clock seconds one input may take. A niced fuzzer on a shared, loaded
# machine can be starved for tens of seconds (seen: 35 s for an input that
# takes 0.1 s alone), so the default is generous; a real hang still trips it.
timeout="${METAGUARD_FUZZ_TIMEOUT:-120}"
mkdir -p "$BUILD/fuzz-logs"
for target in "${targets[@]}"; do
  corpus="$BUILD/corpus/$target"
  artifacts="$BUILD/artifacts/$target"
  regressions="$ROOT/fuzz/regressions/$target"
  mkdir -p "$corpus" "$artifacts"
  log="$BUILD/fuzz-logs/$target.log"
  echo "== fuzz_$target for ${seconds}s (log: $log)"
  # -close_fd_mask=1: the targets' own stdout is noise; sanitizer and
  # libFuzzer reports still reach the log.
  "$BUILD/fuzz/fuzz_$target" "$corpus" "$ROOT/fuzz/corpus/$target" \
    -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2560 -max_len=16384 \
    -detect_leaks=1 -print_final_stats=1 -close_fd_mask=1 \
    -artifact_prefix="$artifacts/" >"$log" 2>&1
  rc=$?
  grep -E '^#[0-9]+' "$log" | tail -n 1
  grep -E '^stat::' "$log"
  if [ "$rc" -ne 0 ]; then
    echo "fuzz_$target FOUND A PROBLEM (exit $rc); minimising into $regressions"
    mkdir -p "$regressions"
    for crash in "$artifacts"/*; do
      [ -f "$crash" ] || continue
      case "$crash" in *.reported|*.unreproducible) continue ;; esac
      name="$(basename "$crash")"
      # A timeout on a loaded machine may be the machine, not the input:
      # only what fails again on its own is a finding.
      if "$BUILD/fuzz/fuzz_$target" "$crash" -timeout="$timeout" -rss_limit_mb=2560 >>"$log.recheck" 2>&1; then
        echo "  $name did not fail again on its own (a slow machine?); kept as $crash.unreproducible"
        mv "$crash" "$crash.unreproducible"
        continue
      fi
      "$BUILD/fuzz/fuzz_$target" "$crash" -minimize_crash=1 -max_total_time=60 -timeout="$timeout" \
        -exact_artifact_path="$regressions/$name" >>"$log.minimize" 2>&1
      [ -f "$regressions/$name" ] || cp "$crash" "$regressions/$name"
      echo "  $regressions/$name"
      status=1
      mv "$crash" "$crash.reported"
    done
  fi
done
exit "$status"
