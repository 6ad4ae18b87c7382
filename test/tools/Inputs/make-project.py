#!/usr/bin/env python3
"""Writes a tiny project with a compile database into the folder argv[1].

a.cpp has two BUG lines, b.cpp none, header.h one (not in the database);
crash.cpp makes the fake clang-tidy crash (only written with --crash).
"""
import json
import os
import sys

root = os.path.abspath(sys.argv[1])
os.makedirs(os.path.join(root, "src"), exist_ok=True)
os.makedirs(os.path.join(root, "build"), exist_ok=True)
files = {
    "src/a.cpp": "// scope\nint x = 1; // BUG\nint y = 2;\nint z = 3; // BUG\n",
    "src/b.cpp": "int clean = 0;\n",
    "src/header.h": "// BUG in a header\n",
}
if "--crash" in sys.argv:
    files["src/crash.cpp"] = "// CRASH\n"
for name, text in files.items():
    with open(os.path.join(root, name), "w", encoding="utf-8") as handle:
        handle.write(text)
database = [{"directory": os.path.join(root, "build"), "file": os.path.join(root, name),
             "command": f"c++ -c {os.path.join(root, name)}"}
            for name in files if name.endswith(".cpp")]
with open(os.path.join(root, "build", "compile_commands.json"), "w", encoding="utf-8") as handle:
    json.dump(database, handle)
