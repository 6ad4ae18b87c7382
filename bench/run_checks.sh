#!/usr/bin/env bash
# Cost of one clang-tidy pass with metaguard's checks, as ratios against the
# same pass with a near-free built-in check (misc-misplaced-const): CPU time
# (user + system) and peak RSS of the clang-tidy process (19, or METAGUARD_BENCH_LLVM), on
# - the examples (examples/*.cpp, real LibTorch and metaguard headers);
# - one TU per LibTorch public header, with and without <metaguard/metaguard.h>;
# - a generated stress file (bench/gen_check_stress.py, mock headers) and its
#   doubled version: the checks' own time (metaguard - baseline) must at most
#   double.
# The plugin is loaded in both runs, so the ratio is the checks' own cost.
# Targets: <= 1.05x CPU and <= 1.05x peak RSS. Not for CI.
#
#   bench/run_checks.sh [build-dir] [stress-N] [runs]
#   METAGUARD_BENCH_HEADERS="torch/nn.h" bench/run_checks.sh   # fewer header TUs
#   METAGUARD_BENCH_EXAMPLES=0 bench/run_checks.sh                # headers and stress only
#   METAGUARD_BENCH_LLVM=14 bench/run_checks.sh  # the plugin for LLVM 14 (build/lib/
#     libmetaguard_tidy-llvm14.so, or a -DMETAGUARD_LLVM_VERSION=14 build's) with clang-tidy-14
#   METAGUARD_BENCH_TORCH=<site-packages>/torch bench/run_checks.sh # another LibTorch's headers
#     (a folder with include/ in it: a PyTorch wheel's torch/, an unpacked libtorch; 2.x: -std=c++20)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
n=${2:-2000}
runs=${3:-1}
llvm=${METAGUARD_BENCH_LLVM:-19}
plugin=$build/lib/libmetaguard_tidy-llvm$llvm.so
[ -f "$plugin" ] || plugin=$build/lib/libmetaguard_tidy.so
[ -f "$plugin" ] || { echo "no plugin at $plugin: build target metaguard_tidy first" >&2; exit 1; }
grep -qa "metaguard-plugin-llvm-major=$llvm" "$plugin" ||
  { echo "$plugin is not built for LLVM $llvm" >&2; exit 1; }
tidy=$(command -v "clang-tidy-$llvm" || echo "/usr/lib/llvm-$llvm/bin/clang-tidy")
echo "LLVM $llvm: $tidy with $plugin"
# The LibTorch whose headers the real inputs parse: Debian's by default.
if [ -n "${METAGUARD_BENCH_TORCH:-}" ]; then
  torch_inc="$METAGUARD_BENCH_TORCH/include:$METAGUARD_BENCH_TORCH/include/torch/csrc/api/include"
  major=$(sed -n 's/^#define TORCH_VERSION_MAJOR \([0-9]*\).*/\1/p' \
    "$METAGUARD_BENCH_TORCH"/include/torch/headeronly/version.h \
    "$METAGUARD_BENCH_TORCH"/include/torch/csrc/api/include/torch/version.h 2>/dev/null | head -n 1)
else
  torch_inc=/usr/include/torch/csrc/api/include
  major=1
fi
torch_std=-std=c++17
[ "${major:-1}" -ge 2 ] && torch_std=-std=c++20
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

python3 - "$tidy" "$plugin" "$root" "$work" "$torch_inc" "$runs" "$torch_std" $headers <<'PY'
import os, re, subprocess, sys
tidy, plugin, root, work, torch_inc, runs, torch_std = sys.argv[1:8]
runs = int(runs)
headers = sys.argv[8:]
real = [torch_std, "-I", os.path.join(root, "runtime/include")]
for d in torch_inc.split(":"):
    real += ["-isystem", d]
print(f"LibTorch headers: {torch_inc} ({torch_std})")
mock = ["-std=c++17", "-I", os.path.join(root, "test/checks/Inputs")]

def run_once(checks, path, flags):
    """CPU seconds and peak RSS (MiB) of one clang-tidy process."""
    cmd = [tidy, "--load=" + plugin, "--checks=-*," + checks, "--config={}",
           "--quiet", path, "--"] + flags
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0

def profiled(checks, path, flags):
    """User + system seconds clang-tidy's own profile (--enable-check-profile)
    gives the enabled checks: their matchers and callbacks, measured inside
    the process, so a slow spell of the machine during parsing does not
    count. Timing every matcher attempt costs time of its own, more for the
    checks with more matchers: this overstates metaguard's cost, if anything."""
    cmd = [tidy, "--load=" + plugin, "--checks=-*," + checks, "--config={}",
           "--quiet", "--enable-check-profile", path, "--"] + flags
    err = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True).stderr
    totals = re.findall(r"^\s*[\d.]+ \(100\.0%\)\s+[\d.]+ \(100\.0%\)\s+([\d.]+) \(100\.0%\).*Total$",
                        err, re.M)
    return float(totals[-1]) if totals else float("nan")

def measure(path, flags):
    """Least CPU and RSS over `runs` runs of the baseline and of the checks,
    alternated so that a slow spell of the machine hits both alike."""
    best = {}
    for _ in range(runs):
        for checks in ("misc-misplaced-const", "metaguard-*"):
            cpu, rss = run_once(checks, path, flags)
            old_cpu, old_rss = best.get(checks, (cpu, rss))
            best[checks] = (min(old_cpu, cpu), min(old_rss, rss))
    return best["misc-misplaced-const"], best["metaguard-*"]

inputs = []
with_examples = os.environ.get("METAGUARD_BENCH_EXAMPLES", "1") != "0"
for ex in sorted(os.listdir(os.path.join(root, "examples"))) if with_examples else []:
    if ex.endswith(".cpp"):
        inputs.append(("examples/" + ex, os.path.join(root, "examples", ex), real))
for h in headers:
    name = h.replace("/", "_").replace(".", "_")
    inputs.append((h, os.path.join(work, name + ".cpp"), real))
    inputs.append((h + " + metaguard.h", os.path.join(work, name + "_mg.cpp"), real))
inputs.append(("stress (N)", os.path.join(work, "stress.cpp"), mock))
inputs.append(("stress (2N)", os.path.join(work, "stress2x.cpp"), mock))

# "prof x": the base run's CPU plus the difference between the two profiles,
# over the base run's CPU: the same ratio with the parsing left out of the
# difference, so it is steadier than "CPU x" on a shared machine.
print(f"{'input':<36} {'base CPU':>9} {'mg CPU':>9} {'CPU x':>7} {'prof x':>7} "
      f"{'base MiB':>9} {'mg MiB':>9} {'RSS x':>7}")
worst_cpu = worst_prof = worst_rss = 0.0
check_time, profile_time = {}, {}
for label, path, flags in inputs:
    base, mine = measure(path, flags)
    prof_base = profiled("misc-misplaced-const", path, flags)
    prof_mine = profiled("metaguard-*", path, flags)
    cpu_x, rss_x = mine[0] / base[0], mine[1] / base[1]
    prof_x = (base[0] + prof_mine - prof_base) / base[0]
    check_time[label], profile_time[label] = mine[0] - base[0], prof_mine
    if not label.startswith("stress"):
        worst_cpu, worst_rss = max(worst_cpu, cpu_x), max(worst_rss, rss_x)
        worst_prof = max(worst_prof, prof_x)
    print(f"{label:<36} {base[0]:9.2f} {mine[0]:9.2f} {cpu_x:7.3f} {prof_x:7.3f} "
          f"{base[1]:9.0f} {mine[1]:9.0f} {rss_x:7.3f}")
print(f"worst ratio over examples and headers: CPU {worst_cpu:.3f}x, by the profiles "
      f"{worst_prof:.3f}x (target <= 1.05); peak RSS {worst_rss:.3f}x (target <= 1.05)")
for name, times in (("process CPU, metaguard - base", check_time),
                    ("metaguard's profile", profile_time)):
    a, b = times["stress (N)"], times["stress (2N)"]
    print(f"stress, checks' own time ({name}): {a:.2f} s for N, {b:.2f} s for 2N: "
          f"doubling ratio {b / a if a > 0 else float('nan'):.2f} (target <= 2)")
PY
