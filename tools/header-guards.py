#!/usr/bin/env python3
"""Holds the include guards of the C++ headers to their paths.

A header under checks/ or clangd/ is guarded by METAGUARD_<PATH>_H, its path
from the repository's root upper-cased with '/', '-' and '.' as '_'
(checks/empty-model-used/EmptyModelFinder.h:
METAGUARD_CHECKS_EMPTY_MODEL_USED_EMPTYMODELFINDER_H), so that a guard says
where its header is and two headers cannot share one. The runtime's headers
use #pragma once and are not checked.

  tools/header-guards.py [--root DIR] --check   lists every header whose guard
                                                differs, and fails if any does
  tools/header-guards.py [--root DIR]           rewrites those guards
"""
import argparse
import pathlib
import re
import sys

GUARDED = ("checks", "clangd")
IFNDEF = re.compile(r"^#ifndef (\w+)\n#define (\w+)\n", re.M)
ENDIF = re.compile(r"^#endif // (\w+)\s*\Z", re.M)


def wanted(root, header):
    path = header.relative_to(root).with_suffix("").as_posix()
    return "METAGUARD_" + re.sub(r"[/.\-]", "_", path).upper() + "_H"


def headers(root):
    for folder in GUARDED:
        yield from sorted((root / folder).rglob("*.h"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent.parent)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    root = args.root.resolve()
    wrong = 0
    for header in headers(root):
        text = header.read_text()
        guard = IFNDEF.search(text)
        want = wanted(root, header)
        if not guard or guard.group(1) != guard.group(2):
            print(f"error: {header.relative_to(root)}: no #ifndef/#define include guard")
            wrong += 1
            continue
        if guard.group(1) == want:
            continue
        wrong += 1
        if args.check:
            print(f"error: {header.relative_to(root)}: guard {guard.group(1)}, expected {want}")
            continue
        text = re.sub(r"\b%s\b" % guard.group(1), want, text)
        header.write_text(text)
    if args.check:
        count = sum(1 for _ in headers(root))
        if wrong:
            print(f"header guards: {wrong} of {count} headers do not match their paths "
                  f"(tools/header-guards.py rewrites them)")
            return 1
        print(f"header guards: {count} headers match their paths")
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
