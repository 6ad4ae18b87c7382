#!/usr/bin/env bash
# Loading a pytorch_model.bin: metaguard against torch.load in Python, on a
# ~1 GiB state dict written by torch.save (a transformer's shapes: 4 KiB to
# 16 MiB tensors). Each load runs in a fresh process, page cache warm; prints
# the median of the runs and the ratios. Needs the Python environment of
# tools/setup.sh (torch). Not for CI.
#
#   bench/run_bin_loading.sh [build-dir] [runs] [MiB]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
runs=${2:-7}
mib=${3:-1024}
python=${METAGUARD_PYTHON:-$HOME/.cache/metaguard/python/bin/python}
. "$root/bench/build_bench.sh"
build_bench "$build" metaguard_bench_bin_loading
work=$(mktemp -d "${TMPDIR:-/tmp}/metaguard-bench-bin-XXXXXX")
trap 'rm -rf "$work"' EXIT
file="$work/pytorch_model.bin"
"$python" - "$file" "$mib" <<'PY'
import sys, torch
path, mib = sys.argv[1], int(sys.argv[2])
d = 1024
torch.manual_seed(0)
state, total, layer = {}, 0, 0
while total < mib << 20:
    for name, shape in (("q", (d, d)), ("k", (d, d)), ("v", (d, d)), ("o", (d, d)),
                        ("up", (4 * d, d)), ("down", (d, 4 * d)), ("norm", (d,)), ("bias", (4 * d,))):
        t = torch.randn(shape)
        state[f"layers.{layer}.{name}"] = t
        total += t.numel() * 4
    layer += 1
torch.save(state, path)
print(f"state dict: {len(state)} tensors, {total / 2**20:.0f} MiB")
PY
cat "$file" > /dev/null

python_load() {
  "$python" - "$file" "$1" <<'PY'
import resource, sys, time, torch
torch.set_num_threads(1)
def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))
open("/proc/self/clear_refs", "w").write("5")
before = rss()
start = time.perf_counter()
state = torch.load(sys.argv[1], weights_only=True, mmap=sys.argv[2] == "mmap")
if sys.argv[2] == "bf16":
    state = {k: v.to(torch.bfloat16) for k, v in state.items()}
seconds = time.perf_counter() - start
with open("/proc/self/status") as f:
    peak = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))
print(f"{seconds:.4f} {peak - before}")
PY
}

median() { sort -n | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}'; }
measure() {  # label, command...; prints "seconds peak" medians
  local label=$1; shift
  local t=() r=()
  for _ in $(seq "$runs"); do
    read -r s p < <("$@")
    t+=("$s"); r+=("$p")
  done
  local ms mr
  ms=$(printf '%s\n' "${t[@]}" | median); mr=$(printf '%s\n' "${r[@]}" | median)
  printf '  %-40s %8.3f s  peak +%6.0f MiB\n' "$label" "$ms" "$(echo "$mr / 1048576" | bc -l)" >&2
  echo "$ms $mr"
}
echo "medians of $runs fresh processes each:"
read -r tl rl < <(measure "torch.load(weights_only=True)" python_load plain)
read -r tm rm < <(measure "torch.load(weights_only=True, mmap=True)" python_load mmap)
read -r tb rb < <(measure "torch.load + .to(bfloat16)" python_load bf16)
read -r mz rz < <(measure "metaguard zero-copy" "$build/bench/metaguard_bench_bin_loading" "$file" zero-copy)
read -r mb rbb < <(measure "metaguard converting to bf16" "$build/bench/metaguard_bench_bin_loading" "$file" bf16)
ratio() { echo "scale=2; $1 / $2" | bc -l; }
echo "ratios (metaguard / torch):"
echo "  zero-copy time vs torch.load:         $(ratio "$mz" "$tl")"
echo "  zero-copy time vs torch.load(mmap):   $(ratio "$mz" "$tm")"
echo "  zero-copy peak RSS vs torch.load:     $(ratio "$rz" "$rl")"
echo "  bf16 time vs torch.load + .to:        $(ratio "$mb" "$tb")"
echo "  bf16 peak RSS vs torch.load + .to:    $(ratio "$rbb" "$rb")"
