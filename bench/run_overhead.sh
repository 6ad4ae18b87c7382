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
done | tee /dev/stderr | python3 -c '
import statistics, sys
values = {}
for line in sys.stdin:
    fields = line.split()
    if fields and fields[0] == "RESULT":
        values.setdefault(fields[1], []).append(float(fields[2]))
for name, v in sorted(values.items()):
    print(f"median of {len(v)} processes, {name:<10} {statistics.median(v):.2f} us (min {min(v):.2f}, max {max(v):.2f})")
'
