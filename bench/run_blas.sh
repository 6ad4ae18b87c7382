#!/usr/bin/env bash
# Which BLAS makes this LibTorch fast: runs bench_blas (a Llama-style decoder's
# in-memory forward and a 1024^2 matmul) once per BLAS, each in fresh
# processes with the loader pointed at that library, and prints the medians
# and each one's speed-up over the reference BLAS. Candidates are the
# libblas.so.3 the alternatives system knows (Debian: reference "blas",
# "openblas-openmp", "openblas-pthread", ...) plus any folder holding a
# libblas.so.3 given in METAGUARD_BLAS_DIRS (colon-separated), e.g. an
# unpacked .deb. Only a LibTorch that links libblas.so.3 (Debian's) is
# affected; the torch wheel's LibTorch carries its own BLAS. Not for CI.
#
#   bench/run_blas.sh [build-dir] [processes=3] [runs=5] [threads=0: LibTorch's default]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
processes=${2:-3}
runs=${3:-5}
threads=${4:-0}
. "$root/bench/build_bench.sh"
build_bench "$build" metaguard_bench_blas
bench="$build/bench/metaguard_bench_blas"

if ! ldd "$bench" | grep -q 'libblas\.so\.3'; then
  echo "run_blas: $bench does not load libblas.so.3: its LibTorch brings its own BLAS, nothing to choose" >&2
  exit 1
fi

dirs=()
while read -r lib; do
  [ -n "$lib" ] && dirs+=("$(dirname "$lib")")
done < <(update-alternatives --list "libblas.so.3-$(uname -m)-linux-gnu" 2>/dev/null || true)
IFS=: read -r -a extra <<<"${METAGUARD_BLAS_DIRS:-}"
for dir in "${extra[@]}"; do
  [ -f "$dir/libblas.so.3" ] && dirs+=("$dir")
done
if [ "${#dirs[@]}" -eq 0 ]; then
  echo "run_blas: no libblas.so.3 found (alternatives or METAGUARD_BLAS_DIRS)" >&2
  exit 1
fi

for round in $(seq "$processes"); do
  for dir in "${dirs[@]}"; do
    LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bench" 1024 8 16 "$runs" "$threads" |
      sed "s|^RESULT |RESULT $dir |"
  done
done | tee /dev/stderr | python3 -c '
import statistics, sys
values = {}
order = []
for line in sys.stdin:
    fields = line.split()
    if len(fields) == 4 and fields[0] == "RESULT":
        key = (fields[1], fields[2])
        if fields[1] not in order:
            order.append(fields[1])
        values.setdefault(key, []).append(float(fields[3]))
reference = next((d for d in order if d.rstrip("/").endswith("/blas")), order[0])
print(f"reference: {reference}")
for what in ("forward", "matmul"):
    base = statistics.median(values[(reference, what)])
    for d in order:
        v = values[(d, what)]
        m = statistics.median(v)
        print(f"{what:<8} {m:9.4f} s  x{base / m:6.1f} vs reference  {d}  (median of {len(v)} processes)")
'
