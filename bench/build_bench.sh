# Sourced by the bench/run_*.sh scripts: builds the named benchmark targets
# in a Release build of their own (no plugin, no tests), configured once.
#
#   build_bench BUILD_DIR TARGET...
build_bench() {
  local build=$1; shift
  local root; root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  if [ ! -f "$build/build.ninja" ] || [ ! -d "$build/bench" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DMETAGUARD_BUILD_CHECKS=OFF -DMETAGUARD_BUILD_TESTS=OFF -DMETAGUARD_BUILD_BENCH=ON >/dev/null
  fi
  ninja -C "$build" -j"${METAGUARD_JOBS:-2}" "$@"
}
