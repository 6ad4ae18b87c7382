#!/usr/bin/env python3
"""Stands in for clang-tidy-19 so the driver's own logic is tested alone.

For every line of the checked file that contains BUG it prints a warning at
that line, with a note at line 1; a file containing CRASH makes it die with a
signal, like a crashing clang-tidy. It records its arguments in
$FAKE_TIDY_LOG when set. --version says it is LLVM $FAKE_TIDY_MAJOR (19).
--list-checks lists metaguard's checks (not logged), or, with
$FAKE_TIDY_NO_CHECKS set, says what clang-tidy says when the plugin did not
load.
"""
import os
import signal
import sys

if sys.argv[1:] == ["--version"]:
    print(f"Debian LLVM version {os.environ.get('FAKE_TIDY_MAJOR', '19')}.1.0\n  Optimized build.")
    sys.exit(0)

if "--list-checks" in sys.argv:
    if os.environ.get("FAKE_TIDY_NO_CHECKS"):
        plugin = next(a[len("--load="):] for a in sys.argv if a.startswith("--load="))
        sys.stderr.write(f"Error opening '{plugin}': {plugin}: undefined symbol: "
                         "_ZTIN5clang4tidy15ClangTidyModuleE\n  -load request ignored.\n"
                         "No checks enabled.\n")
        sys.exit(1)
    print("Enabled checks:\n    metaguard-empty-model-used\n"
          "    metaguard-from-pretrained-in-meta-scope\n    metaguard-offloaded-parameter-move\n")
    sys.exit(0)

source = sys.argv[-1]
if os.environ.get("FAKE_TIDY_LOG"):
    with open(os.environ["FAKE_TIDY_LOG"], "a", encoding="utf-8") as log:
        log.write(" ".join(sys.argv[1:]) + "\n")
with open(source, encoding="utf-8") as handle:
    lines = handle.read().splitlines()
if any("CRASH" in line for line in lines):
    sys.stderr.write("Stack dump:\n")
    os.kill(os.getpid(), signal.SIGSEGV)
found = 0
for number, line in enumerate(lines, start=1):
    column = line.find("BUG")
    if column >= 0:
        found += 1
        print(f"{source}:{number}:{column + 1}: warning: loads weights under meta "
              f"[metaguard-from-pretrained-in-meta-scope]")
        print(line)
        print(" " * column + "^")
        print(f"{source}:1:1: note: meta scope starts here")
if found:
    print(f"{found} warnings generated.", file=sys.stderr)
