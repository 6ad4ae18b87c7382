#!/usr/bin/env python3
"""Prints clang-tidy --dump-config output with CheckOptions in one shape.

clang-tidy 14 dumps CheckOptions as a list of `- key: K` / `value: V` pairs;
15 and later as a map (`K: V`). The tests check the map's lines, so the list
is rewritten into them; everything else passes through unchanged.
"""
import re
import sys

KEY = re.compile(r"^(\s*)- key:\s+(.*?)\s*$")
VALUE = re.compile(r"^\s*value:\s+(.*?)\s*$")

pending = None
for line in sys.stdin:
    line = line.rstrip("\n")
    key = KEY.match(line)
    if key:
        pending = key
        continue
    value = VALUE.match(line)
    if pending and value:
        print(f"{pending.group(1)}{pending.group(2)}: {value.group(1)}")
        pending = None
        continue
    print(line)
