#!/usr/bin/env bash
# What a private load of warm bytes costs by how the page cache holds the
# file (4 KiB pages or 2 MiB folios): a copy against a populated private
# mapping, a few fresh processes in a row. Not for CI.
#
#   bench/run_mapping_folios.sh [build-dir] [processes=3] [scratch file]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
processes=${2:-3}
scratch=${3:-/tmp/metaguard-bench-mapping-folios}
. "$root/bench/build_bench.sh"
build_bench "$build" metaguard_bench_mapping_folios
for i in $(seq "$processes"); do
  "$build/bench/metaguard_bench_mapping_folios" "$scratch"
done
