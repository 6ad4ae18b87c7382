#!/usr/bin/env python3
"""Pairs the results of two SARIF reports in order and says, for each, whether
its fingerprint stayed: "<old line> -> <new line> same|new fingerprint"."""
import json
import sys


def results(path):
    with open(path, encoding="utf-8") as handle:
        run = json.load(handle)["runs"][0]
    return [(r["locations"][0]["physicalLocation"]["region"]["startLine"],
             r["partialFingerprints"]) for r in run["results"]]


before, after = results(sys.argv[1]), results(sys.argv[2])
if len(before) != len(after):
    sys.exit(f"{len(before)} results before, {len(after)} after")
for (old_line, old), (new_line, new) in zip(before, after):
    print(f"{old_line} -> {new_line} {'same' if old == new else 'new'} fingerprint")
