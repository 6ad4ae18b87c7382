#!/usr/bin/env python3
"""Checks an installed metaguard (a prefix, or an unpacked .deb's usr/) for
the plugins of further LLVM majors: each is installed under its own name and
built for its major; the CMake package names it (from a downstream project's
configure log); and the installed driver, given only --clang-tidy
clang-tidy-N, pairs it with that clang-tidy and finds the downstream app's
bug. A major with no clang-tidy-N on this machine (one taken from Debian
unstable, whose clang-tidy runs in a chroot without LibTorch's headers:
tools/llvm-sid.sh) is checked without the driver run; its plugin's own lit
cases load it into that clang-tidy. Prints one line per major and a last line
"N majors ok" when all are.

usage: check-majors.py PREFIX "14;16;22" BUILD_DIR SOURCE [CONFIGURE_LOG]
"""
import os
import re
import shutil
import subprocess
import sys

prefix, majors, build, source = sys.argv[1], sys.argv[2].split(";"), sys.argv[3], sys.argv[4]
log = open(sys.argv[5]).read() if len(sys.argv) > 5 else None
majors = [m for m in majors if m]
env = dict(os.environ)
env.pop("METAGUARD_PLUGIN", None)
ok = 0
for major in majors:
    plugin = os.path.join(prefix, "lib", "metaguard", f"libmetaguard_tidy-llvm{major}.so")
    problems = []
    if not os.path.isfile(plugin):
        problems.append(f"{plugin} missing")
    elif f"metaguard-plugin-llvm-major={major}\0".encode() not in open(plugin, "rb").read():
        problems.append(f"{plugin} is not built for LLVM {major}")
    if log is not None and not re.search(
            rf"downstream: LLVM {major}: .*libmetaguard_tidy-llvm{major}\.so", log):
        problems.append(f"the CMake package does not name the plugin for LLVM {major}")
    if not shutil.which(f"clang-tidy-{major}", path=env.get("PATH")):
        if problems:
            print(f"LLVM {major}: FAIL: " + "; ".join(problems))
        else:
            ok += 1
            print(f"LLVM {major}: ok, installed (no clang-tidy-{major} here to run it with)")
        continue
    run = subprocess.run([os.path.join(prefix, "bin", "metaguard-tidy"), "-p", build,
                          "--clang-tidy", f"clang-tidy-{major}", "--exit-zero", source],
                         capture_output=True, text=True, env=env)
    findings = re.search(r"metaguard-tidy: (\d+) finding", run.stdout + run.stderr)
    if run.returncode != 0 or not findings or findings.group(1) == "0":
        problems.append(f"driver with clang-tidy-{major}: exit {run.returncode}: "
                        f"{(run.stdout + run.stderr).strip()[-500:]}")
    if problems:
        print(f"LLVM {major}: FAIL: " + "; ".join(problems))
    else:
        ok += 1
        print(f"LLVM {major}: ok, {findings.group(1)} finding(s)")
print(f"{ok} majors ok" if ok == len(majors) else f"FAIL: {ok} of {len(majors)} majors ok")
