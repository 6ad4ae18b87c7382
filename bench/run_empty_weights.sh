#!/usr/bin/env bash
# Builds and runs the init_empty_weights memory benchmark: each case in a
# fresh process, under the scope and without it, printing the peak RSS the
# construction added over the largest parameter (the target: <= 1.1 under the
# scope). Not for CI.
#
#   bench/run_empty_weights.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
. "$root/bench/build_bench.sh"
build_bench "$build" metaguard_bench_empty_weights
for c in stock_linear tensor_options_linear block; do
  "$build/bench/metaguard_bench_empty_weights" "$c" scope
  "$build/bench/metaguard_bench_empty_weights" "$c" none
done
