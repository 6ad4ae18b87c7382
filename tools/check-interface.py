#!/usr/bin/env python3
"""Holds the checks' interface to the last release's: the check names (also
the SARIF rule ids), their options and the options' defaults, which users
write into their .clang-tidy.

  tools/check-interface.py [--root DIR]            check (test/tools/check-interface.test)
  tools/check-interface.py [--root DIR] --record   write compat/checks-X.Y.json for this version

The record of a release, compat/checks-X.Y.json, is what that release's
checks/Checks.def and checks/Options.def declared. Against the newest record,
every check must still be declared (a renamed check keeps its old name for a
release, docs/contributing.md), every option must still be one of its check's,
and a default that changed must be named, with its new value, in CHANGELOG.md
above that release's heading."""
import argparse
import glob
import importlib.util
import json
import os
import re
import sys

import metaguard_version

HERE = os.path.dirname(os.path.abspath(__file__))
# The .def files are read as the option pages' generator reads them.
_spec = importlib.util.spec_from_file_location("gen_option_docs", os.path.join(HERE, "gen-option-docs.py"))
declarations = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(declarations)

RECORD = re.compile(r"checks-(\d+)\.(\d+)\.json$")


def read_interface(root):
    """{check name: {option: default}} as Checks.def and Options.def declare."""
    checks = declarations.read_checks(root)
    interface = {name: {} for name in checks.values()}
    with open(os.path.join(root, "checks", "Options.def")) as f:
        for line in f:
            m = declarations.OPTION_LINE.match(line.strip())
            if m:
                for check in m["checks"].split(" | "):
                    interface[checks[check]][m["name"]] = declarations.unquote(m["default"])
    return interface


def project_version(root):
    version = metaguard_version.from_source_tree(root)
    if not version:
        sys.exit("CMakeLists.txt: no 'project(metaguard VERSION X.Y.Z' to read the version from")
    return tuple(int(part) for part in version.split(".")[:2])


def newest_record(root):
    records = []
    for path in glob.glob(os.path.join(root, "compat", "checks-*.json")):
        m = RECORD.search(path)
        if m:
            records.append(((int(m[1]), int(m[2])), path))
    return max(records) if records else (None, None)


def changelog_since(root, release):
    """CHANGELOG.md's text above the heading of `release` (X.Y)."""
    with open(os.path.join(root, "CHANGELOG.md")) as f:
        text = f.read()
    heading = re.search(r"^## \[?%d\.%d\.\d+\]?" % release, text, re.M)
    return text[: heading.start()] if heading else text


def problems(root):
    release, path = newest_record(root)
    if path is None:
        return ["compat/ holds no checks-X.Y.json: record this release's with --record"]
    with open(path) as f:
        recorded = json.load(f)["checks"]
    current = read_interface(root)
    since = changelog_since(root, release)
    found = []
    name = os.path.relpath(path, root)
    for check, options in sorted(recorded.items()):
        if check not in current:
            found.append(f"{check}, a check of {name}, is no longer declared in checks/Checks.def: "
                         "a renamed check keeps its old name for a release, and a removed one is "
                         "a CHANGELOG.md entry and a new record")
            continue
        for option, default in sorted(options.items()):
            if option not in current[check]:
                found.append(f"{check}.{option}, an option of {name}, is no longer declared for it "
                             "in checks/Options.def: users' .clang-tidy files set it")
            elif current[check][option] != default and not (
                    option in since and f"`{current[check][option]}`" in since):
                found.append(f"{check}.{option}: its default changed from '{default}' to "
                             f"'{current[check][option]}' since {name}, and CHANGELOG.md does not "
                             f"say so: name {option} and its new default `{current[check][option]}` "
                             "under Unreleased")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.dirname(HERE))
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    if args.record:
        major, minor = project_version(args.root)
        path = os.path.join(args.root, "compat", f"checks-{major}.{minor}.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"version": f"{major}.{minor}", "checks": read_interface(args.root)}, f,
                      indent=2, sort_keys=True)
            f.write("\n")
        print(f"check-interface: recorded {os.path.relpath(path, args.root)}")
        return 0
    found = problems(args.root)
    for problem in found:
        print(f"check-interface: {problem}")
    if not found:
        print(f"check-interface: the checks keep {os.path.relpath(newest_record(args.root)[1], args.root)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
