#!/usr/bin/env python3
"""compare-parity.py LAYOUT SINGLE.json SPLIT.json [--ignore-note REGEX]...

Puts the findings of the two layouts written by make-parity-project.py side
by side: every location (finding and notes) becomes case/part:line:column
(the line counted in the part), so the same code gives the same text in
either layout. Prints the normalized findings of the split layout, one line
per finding followed by its notes, and exits 1 with a diff when the layouts
differ. --ignore-note drops the notes whose message matches REGEX from both
layouts first (a known limit of whole-program mode, named in the test).
"""
import difflib
import argparse
import json
import re
import sys


def normalizer(layout):
    def where(path, line, column):
        entry = layout.get(path)
        if entry is None:
            return f"{path}:{line}:{column}"  # a header: the same in both layouts
        part, start = None, 0
        for name, first in entry["parts"]:
            if first <= line:
                part, start = name, first
        return f"{entry['case']}/{part}:{line - start + 1}:{column}"
    return where


def normalized(report_path, where, ignored):
    with open(report_path, encoding="utf-8") as handle:
        findings = json.load(handle)["findings"]
    lines = []
    for finding in findings:
        block = [f"{where(finding['file'], finding['line'], finding['column'])}: "
                 f"{finding['message']} [{finding['check']}]"]
        block += [f"  {where(n['file'], n['line'], n['column'])}: note: {n['message']}"
                  for n in finding["notes"]
                  if not any(re.search(regex, n["message"]) for regex in ignored)]
        lines.append(block)
    return [line for block in sorted(lines) for line in block]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("layout")
    parser.add_argument("single")
    parser.add_argument("split")
    parser.add_argument("--ignore-note", action="append", default=[])
    args = parser.parse_args()
    with open(args.layout, encoding="utf-8") as handle:
        where = normalizer(json.load(handle))
    single, split = (normalized(path, where, args.ignore_note)
                     for path in (args.single, args.split))
    print("\n".join(split))
    if single != split:
        sys.stdout.writelines(difflib.unified_diff(
            [line + "\n" for line in single], [line + "\n" for line in split],
            "single file", "split across files"))
        return 1
    print(f"parity: {sum(not line.startswith('  ') for line in split)} findings, the same in both layouts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
