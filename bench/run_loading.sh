#!/usr/bin/env bash
# Builds and runs the loading benchmark: generates a ~1 GiB sharded checkpoint
# in a temporary folder, then measures in a fresh process (page cache warm,
# median of several runs) and prints figures and ratios against the targets
# of the loading targets (docs/benchmarks.md). Not for CI.
#
#   bench/run_loading.sh [build-dir] [runs] [MiB]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
runs=${2:-5}
mib=${3:-1024}
. "$root/bench/build_bench.sh"
build_bench "$build" metaguard_bench_loading
work=$(mktemp -d "${TMPDIR:-/tmp}/metaguard-bench-loading-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$build/bench/metaguard_bench_loading" generate "$work/checkpoint" "$mib"
"$build/bench/metaguard_bench_loading" measure "$work/checkpoint" "$runs"
