#!/usr/bin/env bash
# Dispatch overhead of metaguard's factory redirection outside any scope:
# alternates the overhead benchmark built with and without the library, each
# a fresh process, and prints every result (medians per process). Not for CI.
#
#   bench/run_overhead.sh [build-dir] [processes=5] [rounds=7] [forwards=200]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
processes=${2:-5}
rounds=${3:-7}
forwards=${4:-200}
. "$root/bench/build_bench.sh"
build_bench "$build" metaguard_bench_overhead metaguard_bench_overhead_nolib
for i in $(seq "$processes"); do
  "$build/bench/metaguard_bench_overhead_nolib" "$rounds" "$forwards"
  "$build/bench/metaguard_bench_overhead" "$rounds" "$forwards"
done | awk '/^RESULT/ { v[$2] = v[$2] " " $3; print }
  END { for (k in v) { n = split(v[k], a, " "); asort(a); printf "median of %d processes, %-10s %.2f us (min %.2f, max %.2f)\n", n, k, a[int((n + 1) / 2)], a[1], a[n] } }'
