#!/usr/bin/env bash
# Builds and runs the offload benchmark. Usage:
#   bench/run_offload.sh [cold] [build_dir] [work_dir] [hidden] [blocks] [runs] [tokens]
# The work dir holds the ~1 GiB offload folder; put it on the disk you want to
# measure (the default is under /tmp). Results go to stdout. "cold" drops the
# page cache before every run of the read-ahead measurements: all of it
# (echo 1 > /proc/sys/vm/drop_caches) when run as root, else the offload
# files' pages (posix_fadvise DONTNEED); the output says which ran.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
mode=()
if [ "${1:-}" = cold ]; then
  mode=(--cold)
  shift
fi
build=${1:-$root/build-bench}
. "$root/bench/build_bench.sh"
build_bench "$build" metaguard_bench_offload
shift $(( $# > 0 ? 1 : 0 ))
exec "$build/bench/metaguard_bench_offload" ${mode[@]+"${mode[@]}"} "$@"
