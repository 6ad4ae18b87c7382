#!/usr/bin/env python3
"""Checks that a plugin needs no newer C library or C++ runtime than this
machine has: every symbol version it requires (objdump -p, "Version
References") is defined by this machine's library of that name (found with
ldconfig -p), and no C or C++ runtime symbol is left unversioned (one this
machine's libraries lack: the link leaves it undefined with no version, to be
found at load time, which only a newer runtime would do). The symbols the
plugin takes from clang-tidy (llvm::, clang::) are unversioned and fine.

A plugin built on Debian 12 for a major Debian 12 lacks (23, against Debian
unstable's headers) must still load into that major's clang-tidy on a Debian
12 machine, not only in Debian unstable.

usage: runtime-versions.py PLUGIN
Prints one line per library and "runtime versions ok", or FAIL lines.
"""
import re
import shutil
import subprocess
import sys

plugin = sys.argv[1]


def objdump(*args):
    return subprocess.run(["objdump", *args], capture_output=True, text=True, check=True).stdout


def required_versions(path):
    """{library: {version, ...}} from the plugin's version references."""
    needed, lib = {}, None
    in_refs = False
    for line in objdump("-p", path).splitlines():
        if line.startswith("Version References:"):
            in_refs = True
            continue
        if not in_refs:
            continue
        m = re.match(r"\s+required from (\S+):", line)
        if m:
            lib = m.group(1)
            needed.setdefault(lib, set())
            continue
        m = re.match(r"\s+0x[0-9a-f]+ 0x[0-9a-f]+ \d+ (\S+)", line)
        if m and lib:
            needed[lib].add(m.group(1))
        elif line.strip() and not line.startswith(" "):
            break
    return needed


def defined_versions(path):
    out = objdump("-p", path)
    section = out.split("Version definitions:", 1)
    if len(section) < 2:
        return set()
    names = set()
    for line in section[1].splitlines()[1:]:
        m = re.match(r"\d+ 0x[0-9a-f]+ 0x[0-9a-f]+ (\S+)", line.strip())
        if m:
            names.add(m.group(1))
        elif line and not line.startswith(("\t", " ")):
            break
    return names


def library_path(name):
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    for line in subprocess.run([ldconfig, "-p"], capture_output=True, text=True).stdout.splitlines():
        m = re.match(r"\s+(\S+) \(([^)]*)\) => (\S+)", line)
        if m and m.group(1) == name and "x86-64" in m.group(2):
            return m.group(3)
    return None


def version_key(version):
    return [int(n) for n in re.findall(r"\d+", version)]


failures = []
for lib, versions in sorted(required_versions(plugin).items()):
    path = library_path(lib)
    if not path:
        failures.append(f"FAIL: {lib}: not on this machine")
        continue
    missing = sorted(v for v in versions if v not in defined_versions(path))
    newest = max(versions, key=version_key)
    if missing:
        failures.append(f"FAIL: {lib}: this machine's {path} lacks {', '.join(missing)}")
    else:
        print(f"{lib}: newest needed {newest}: ok")

# Undefined symbols with no version.
RUNTIME = re.compile(r"^(vtable for |typeinfo for |typeinfo name for |VTT for )?"
                     r"(std::|__gnu_cxx::|__cxxabiv1::|operator new|operator delete)")
HOOKS = {"_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable", "__gmon_start__"}
unversioned = []
for line in objdump("-T", plugin).splitlines():
    fields = line.split()
    if "*UND*" in fields and "(" not in line and fields:
        unversioned.append(fields[-1])
mangled = [s for s in unversioned if s.startswith("_Z")]
demangled = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True,
                           text=True, check=True).stdout.splitlines() if mangled else []
for raw, name in zip(mangled, demangled):
    if RUNTIME.match(name):
        failures.append(f"FAIL: unversioned C++ runtime symbol {name} ({raw})")
for raw in unversioned:
    if not raw.startswith("_Z") and raw not in HOOKS and not raw.startswith(("LLVM", "clang_")):
        failures.append(f"FAIL: unversioned C symbol {raw}")

for failure in failures:
    print(failure)
if not failures:
    print("runtime versions ok")
sys.exit(1 if failures else 0)
