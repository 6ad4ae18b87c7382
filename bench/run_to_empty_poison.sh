#!/usr/bin/env bash
# Builds and runs the to_empty poison benchmark: to_empty (memory + poison
# fill) against the bare allocation it made before, alone and followed by an
# initialisation, for a model of a few hundred MB. Not for CI.
#
#   bench/run_to_empty_poison.sh [build-dir] [MiB] [rounds]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
. "$root/bench/build_bench.sh"
build_bench "$build" metaguard_bench_to_empty_poison
"$build/bench/metaguard_bench_to_empty_poison" "${2:-384}" "${3:-7}"
