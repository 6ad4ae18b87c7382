#!/usr/bin/env bash
# Holds metaguard's own C++ code to its .clang-tidy baseline (checks/, clangd/,
# runtime/src/) and to clang-format's LLVM style. Needs a configured build
# (compile_commands.json) in $METAGUARD_BUILD_DIR (default: build/).
# Exits non-zero on any finding.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${METAGUARD_BUILD_DIR:-$root/build}"
jobs="${METAGUARD_JOBS:-$(nproc)}"
[ -f "$build/compile_commands.json" ] || {
  echo "lint: $build/compile_commands.json not found; run tools/run-tests.sh or configure first" >&2
  exit 2
}
cd "$root"
status=0
# The build force-includes a GCC precompiled header of all of LibTorch; clang
# cannot use it, and parsing it for every file would make this take an hour.
lintdb="$build/lint-db"
mkdir -p "$lintdb"
python3 - "$build/compile_commands.json" "$lintdb/compile_commands.json" <<'PY'
import json, re, shlex, sys
entries = json.load(open(sys.argv[1]))
for entry in entries:
    args = shlex.split(entry.pop("command")) if "command" in entry else entry["arguments"]
    kept = []
    for arg in args:
        if kept and kept[-1] == "-include" and "cmake_pch" in arg:
            kept.pop()
            continue
        if arg == "-Winvalid-pch":
            continue
        kept.append(arg)
    entry["arguments"] = kept
# A unity build (METAGUARD_UNITY_BUILD) compiles batch files that include
# the checks' and the runtime's sources: lint each source with its batch's arguments.
def sources(entry):
    if not re.search(r"/Unity/unity_[0-9]+_cxx\.cxx$", entry["file"]):
        return [entry]
    included = re.findall(r'^#include "([^"]+)"', open(entry["file"]).read(), re.M)
    return [dict(entry, file=path, arguments=[path if a == entry["file"] else a for a in entry["arguments"]])
            for path in included]
entries = [one for entry in entries for one in sources(entry)]
json.dump(entries, open(sys.argv[2], "w"), indent=1)
PY
echo "== clang-tidy baseline (.clang-tidy) over checks/, clangd/ and runtime/src/"
run-clang-tidy-19 -quiet -j "$jobs" -p "$lintdb" -warnings-as-errors='*' \
  "^$root/(checks|clangd|runtime/src)/.*\\.cpp$" > "$build/lint-tidy.log" 2>&1 || status=1
grep -E "(warning|error): " "$build/lint-tidy.log" | sort -u || true
echo "== clang-format (checks/, clangd/)"
if ! clang-format-19 --dry-run --Werror checks/*.cpp checks/*.h checks/*/*.cpp checks/*/*.h checks/utils/*/*.cpp checks/utils/*/*.h clangd/*.cpp; then
  status=1
fi
[ "$status" -eq 0 ] && echo "lint: clean"
exit "$status"
