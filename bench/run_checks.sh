#!/usr/bin/env bash
# Cost of one clang-tidy pass with metaguard's checks, as ratios against the
# same pass with a near-free built-in check (misc-misplaced-const): CPU time
# (user + system) and peak RSS of the clang-tidy-19 process, on
# - the examples (examples/*.cpp, real LibTorch and metaguard headers);
# - one TU per LibTorch public header, with and without <metaguard/metaguard.h>;
# - a generated stress file (bench/gen_check_stress.py, mock headers) and its
#   doubled version: the checks' own time (metaguard - baseline) must at most
#   double.
# The plugin is loaded in both runs, so the ratio is the checks' own cost.
# Targets (issue 10): <= 1.05x CPU and <= 1.05x peak RSS. Not for CI.
#
#   bench/run_checks.sh [build-dir] [stress-N] [runs]
#   METAGUARD_BENCH_HEADERS="torch/nn.h" bench/run_checks.sh   # fewer header TUs
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
n=${2:-2000}
runs=${3:-1}
plugin=$build/lib/libmetaguard_tidy.so
[ -f "$plugin" ] || { echo "no plugin at $plugin: build target metaguard_tidy first" >&2; exit 1; }
tidy=$(command -v clang-tidy-19 || echo /usr/lib/llvm-19/bin/clang-tidy)
torch_inc=/usr/include/torch/csrc/api/include
work=$(mktemp -d "${TMPDIR:-/tmp}/metaguard-bench-checks-XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 "$root/bench/gen_check_stress.py" "$work/stress.cpp" "$n"
python3 "$root/bench/gen_check_stress.py" "$work/stress2x.cpp" $((2 * n))
headers=${METAGUARD_BENCH_HEADERS:-"torch/nn.h torch/optim.h torch/data.h torch/serialize.h"}
for h in $headers; do
  name=$(echo "$h" | tr '/.' '__')
  printf '#include <%s>\n' "$h" > "$work/$name.cpp"
  printf '#include <%s>\n#include <metaguard/metaguard.h>\n' "$h" > "$work/${name}_mg.cpp"
done

python3 - "$tidy" "$plugin" "$root" "$work" "$torch_inc" "$runs" $headers <<'PY'
import os, subprocess, sys
tidy, plugin, root, work, torch_inc, runs = sys.argv[1:7]
runs = int(runs)
headers = sys.argv[7:]
real = ["-std=c++17", "-I", os.path.join(root, "runtime/include"), "-isystem", torch_inc]
mock = ["-std=c++17", "-I", os.path.join(root, "test/checks/Inputs")]

def measure(checks, path, flags):
    """Least CPU seconds and peak RSS (MiB) over `runs` runs."""
    best = None
    for _ in range(runs):
        cmd = [tidy, "--load=" + plugin, "--checks=-*," + checks, "--config={}",
               "--quiet", path, "--"] + flags
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, usage = os.wait4(proc.pid, 0)
        cpu = usage.ru_utime + usage.ru_stime
        rss = usage.ru_maxrss / 1024.0
        best = (cpu, rss) if best is None else (min(best[0], cpu), min(best[1], rss))
    return best

inputs = []
for ex in sorted(os.listdir(os.path.join(root, "examples"))):
    if ex.endswith(".cpp"):
        inputs.append(("examples/" + ex, os.path.join(root, "examples", ex), real))
for h in headers:
    name = h.replace("/", "_").replace(".", "_")
    inputs.append((h, os.path.join(work, name + ".cpp"), real))
    inputs.append((h + " + metaguard.h", os.path.join(work, name + "_mg.cpp"), real))
inputs.append(("stress (N)", os.path.join(work, "stress.cpp"), mock))
inputs.append(("stress (2N)", os.path.join(work, "stress2x.cpp"), mock))

print(f"{'input':<36} {'base CPU':>9} {'mg CPU':>9} {'CPU x':>7} {'base MiB':>9} {'mg MiB':>9} {'RSS x':>7}")
worst_cpu = worst_rss = 0.0
check_time = {}
for label, path, flags in inputs:
    base = measure("misc-misplaced-const", path, flags)
    mine = measure("metaguard-*", path, flags)
    cpu_x, rss_x = mine[0] / base[0], mine[1] / base[1]
    check_time[label] = mine[0] - base[0]
    if not label.startswith("stress"):
        worst_cpu, worst_rss = max(worst_cpu, cpu_x), max(worst_rss, rss_x)
    print(f"{label:<36} {base[0]:9.2f} {mine[0]:9.2f} {cpu_x:7.3f} {base[1]:9.0f} {mine[1]:9.0f} {rss_x:7.3f}")
print(f"worst ratio over examples and headers: CPU {worst_cpu:.3f}x (target <= 1.05), "
      f"peak RSS {worst_rss:.3f}x (target <= 1.05)")
a, b = check_time["stress (N)"], check_time["stress (2N)"]
print(f"stress: checks' own CPU {a:.2f} s for N, {b:.2f} s for 2N: "
      f"doubling ratio {b / a if a > 0 else float('nan'):.2f} (target <= 2)")
PY
