#!/usr/bin/env python3
"""Runs metaguard_fixes' merge on the YAML files given (argv[2:]; argv[1] is
the tools folder) and prints the merged document, then the diagnostics as
--fix and as --fix-notes would apply them."""
import sys

sys.path.insert(0, sys.argv[1])
import metaguard_fixes  # noqa: E402

items = metaguard_fixes.read_exports(sys.argv[2:])
print(f"== {len(items)} diagnostics")
print(metaguard_fixes.render(items), end="")
for fix_notes in (False, True):
    print(f"== applied with fix_notes={fix_notes}")
    print(metaguard_fixes.render(
        [metaguard_fixes.as_clang_tidy_applies(i, fix_notes) for i in items]), end="")
