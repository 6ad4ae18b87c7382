#!/bin/sh
# Builds and runs the offload benchmark. Usage:
#   bench/run_offload.sh [build_dir] [work_dir] [hidden] [blocks] [runs] [tokens]
# The work dir holds the ~1 GiB offload folder; put it on the disk you want to
# measure (the default is under /tmp). Results go to stdout.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
if [ ! -f "$build/build.ninja" ] || [ ! -d "$build/bench" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMETAGUARD_BUILD_CHECKS=OFF
fi
ninja -C "$build" -j2 metaguard_bench_offload
shift $(( $# > 0 ? 1 : 0 ))
exec "$build/bench/metaguard_bench_offload" "$@"
