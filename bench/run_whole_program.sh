#!/usr/bin/env bash
# Cost of metaguard-tidy --whole-program, as two ratios of CPU time (user +
# system of the driver and every clang-tidy it runs), on a generated project
# (bench/gen_whole_program.py: N TUs on the mock headers):
#   1. both passes from a cold cache / one ordinary single pass over the same
#      compile database (target <= 2.1);
#   2. the re-run after editing one leaf file (a helper other files call) /
#      one single pass over that file and the files that call into it
#      (target <= 1.2).
# Also printed, for information: the re-run after editing a file that calls
# into others, against a single pass over that file alone.
# CPU time rather than wall time: the machine may be shared. Not for CI.
#
#   bench/run_whole_program.sh [build-dir] [N TUs] [jobs]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
n=${2:-240}
jobs=${3:-2}
plugin=$build/lib/libmetaguard_tidy.so
[ -f "$plugin" ] || { echo "no plugin at $plugin: build target metaguard_tidy first" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/metaguard-bench-wp-XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 "$root/bench/gen_whole_program.py" "$work" "$n" "$root/test/checks/Inputs" > "$work/plan.txt"

python3 - "$root" "$plugin" "$work" "$jobs" <<'PY'
import os, resource, subprocess, sys, time
root, plugin, work, jobs = sys.argv[1:5]
plan = dict(line.split(": ", 1) for line in open(os.path.join(work, "plan.txt")).read().splitlines())
leaf, callers, user = plan["leaf"], plan["callers"].split(), plan["user"]
driver = [sys.executable, os.path.join(root, "tools", "metaguard-tidy"), "-p",
          os.path.join(work, "build"), "--plugin", plugin, "-j", jobs, "--exit-zero"]

def cpu(extra, label):
    """CPU seconds of the driver and its clang-tidy processes."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(driver + extra, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"  {label}: {spent:.1f} s CPU, {time.monotonic() - start:.1f} s wall")
    for line in proc.stderr.splitlines():
        if "whole-program:" in line:
            print("    " + (line if len(line) < 160 else line[:157] + "..."))
    return spent

def edit(path):
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("int bench_edit_%d = 0;\n" % time.monotonic_ns())

src = os.path.join(work, "src")
files = [f for f in os.listdir(src) if f.endswith(".cpp")]
print(f"project: {len(files)} translation units; edited leaf {os.path.basename(leaf)} "
      f"has {len(callers)} callers")
single = cpu([src], "single pass, every file")
cold = cpu(["--whole-program", src], "--whole-program, cold cache")
edit(leaf)
incremental = cpu(["--whole-program", src], "--whole-program after editing the leaf")
baseline = cpu([leaf] + callers, "single pass, the leaf and its callers")
edit(user)
user_inc = cpu(["--whole-program", src], "--whole-program after editing a user file")
user_base = cpu([user], "single pass, that user file")
print(f"ratio both passes / single pass:                  {cold / single:.2f}x (target <= 2.1)")
print(f"ratio incremental (leaf edited) / leaf + callers: {incremental / baseline:.2f}x (target <= 1.2)")
print(f"ratio incremental (user edited) / that file:      {user_inc / user_base:.2f}x (information)")
PY
