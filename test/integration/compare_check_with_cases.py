#!/usr/bin/env python3
"""Checks that a clang-tidy check flags exactly the Rejected cases of a case
file (see test/integration/meta_scope_cases.h).

usage: compare_check_with_cases.py CASES_FILE < clang-tidy-output

Each `inline void NAME(...)` function is a case; the table's
`{"NAME", NAME, Expect::Rejected|Accepted}` rows give its expectation; a
Rejected case has exactly one line marked `// rejected here`. The check's
warnings in CASES_FILE must fall on exactly those marked lines. Prints one
line per case and exits 1 on any disagreement.
"""
import os
import re
import sys

cases_file = os.path.realpath(sys.argv[1])
lines = open(cases_file, encoding="utf-8").read().splitlines()

functions = []  # (first line, name), 1-based
for number, line in enumerate(lines, start=1):
    match = re.match(r"inline void (\w+)\(", line)
    if match:
        functions.append((number, match.group(1)))
expect = dict(re.findall(r'\{"(\w+)", \w+,\s*Expect::(\w+)\}', "\n".join(lines)))


def case_at(number):
    owner = None
    for first, name in functions:
        if first <= number:
            owner = name
    return owner


marked = {n for n, line in enumerate(lines, start=1) if "// rejected here" in line}
warned = set()
for line in sys.stdin:
    match = re.match(r"^(.*?):(\d+):\d+: warning: .*\[(metaguard-[\w-]+)\]$", line.rstrip())
    if match and os.path.realpath(match.group(1)) == cases_file:
        warned.add(int(match.group(2)))

problems = []
for first, name in functions:
    if name not in expect:
        continue
    mine = {n for n in marked if case_at(n) == name}
    flags = {n for n in warned if case_at(n) == name}
    if expect[name] == "Rejected" and len(mine) != 1:
        problems.append(f"{name}: a Rejected case needs exactly one '// rejected here' line")
    if expect[name] == "Accepted" and mine:
        problems.append(f"{name}: an Accepted case has a '// rejected here' line")
    verdict = "flagged" if flags else "not flagged"
    print(f"{name}: expected {expect[name]}, {verdict} at lines {sorted(flags)}")
    if flags != mine:
        problems.append(f"{name}: flagged at {sorted(flags)}, expected {sorted(mine)}")
stray = {n for n in warned if case_at(n) is None or case_at(n) not in expect}
if stray:
    problems.append(f"warnings outside the cases at lines {sorted(stray)}")
untabled = {name for _, name in functions} - set(expect)
if untabled:
    problems.append(f"case functions missing from the table: {sorted(untabled)}")
for problem in problems:
    print("MISMATCH: " + problem)
sys.exit(1 if problems else 0)
