#!/usr/bin/env python3
"""Holds everything that names metaguard's checks to the one list of them,
checks/Checks.def: the docs/checks/<name>.md pages (each titled with its
name), the rows of README.md's checks table (each linking its page), the rules
of a SARIF report and the checks a plugin registers (clang-tidy
--list-checks). Each must have every check of the list and nothing else.

Usage: check-list.py SOURCE_ROOT [--sarif REPORT] [--plugin-checks LIST_CHECKS_OUTPUT]

Prints one "error: ..." line per disagreement and exits 1, or prints
"check list: N checks; ... agree" when there is none.
"""
import argparse
import json
import os
import re
import sys

LIST = "checks/Checks.def"
# The same form cmake/MetaguardCheckList.cmake accepts.
ENTRY = re.compile(r'METAGUARD_CHECK\(([A-Za-z_][A-Za-z0-9_]*), "(metaguard-[a-z0-9-]+)"\)')
ROW = re.compile(r"\| \[`([^`]+)`\]\(docs/checks/([^)]*)\.md\) \|")


def read_list(root, errors):
    names = []
    with open(os.path.join(root, LIST), encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line.startswith("METAGUARD_CHECK"):
                continue
            match = ENTRY.fullmatch(line)
            if not match:
                errors.append(f"{LIST}:{number}: not one METAGUARD_CHECK(ClassName, "
                              f"\"metaguard-name\") line: {line}")
            elif match.group(2) in names:
                errors.append(f"{LIST}:{number}: {match.group(2)} is listed twice")
            else:
                names.append(match.group(2))
    if not names:
        errors.append(f"{LIST}: no check found")
    return names


def doc_pages(root, errors):
    folder = os.path.join(root, "docs", "checks")
    names = []
    for page in sorted(os.listdir(folder)):
        if not page.endswith(".md"):
            continue
        name = page[:-len(".md")]
        names.append(name)
        with open(os.path.join(folder, page), encoding="utf-8") as handle:
            title = handle.readline().rstrip("\n")
        if title != f"# {name}":
            errors.append(f"docs/checks/{page}: its first line is '{title}', not '# {name}'")
    return names


def readme_rows(root, errors):
    """The checks named by the table under README.md's "## The checks"."""
    with open(os.path.join(root, "README.md"), encoding="utf-8") as handle:
        text = handle.read()
    section = re.search(r"^## The checks\n(.*?)(?=^#)", text, re.S | re.M)
    if not section:
        errors.append("README.md: no '## The checks' section")
        return []
    rows = [line for line in section.group(1).splitlines() if line.startswith("|")]
    names = []
    for row in rows[2:]:  # the header and its separator
        match = ROW.match(row)
        if not match:
            errors.append(f"README.md: a checks table row that does not start with "
                          f"| [`name`](docs/checks/name.md) |: {row}")
        elif match.group(1) != match.group(2):
            errors.append(f"README.md: the row of {match.group(1)} links "
                          f"docs/checks/{match.group(2)}.md")
        else:
            names.append(match.group(1))
    if not rows:
        errors.append("README.md: no table under '## The checks'")
    return names


def sarif_rules(path, errors):
    with open(path, encoding="utf-8") as handle:
        report = json.load(handle)
    names = []
    for run in report["runs"]:
        for rule in run["tool"]["driver"].get("rules", []):
            names.append(rule["id"])
            if "metaguard" not in rule.get("properties", {}).get("tags", []):
                errors.append(f"SARIF rule {rule['id']}: not described from a docs/checks page")
    return names


def plugin_checks(path):
    with open(path, encoding="utf-8") as handle:
        lines = [line.strip() for line in handle]
    if "Enabled checks:" in lines:
        lines = lines[lines.index("Enabled checks:") + 1:]
    return [line for line in lines if line]


def compare(listed, found, where, errors):
    for name in listed:
        if found.count(name) == 0:
            errors.append(f"{name}: in {LIST} but not in {where}")
        elif found.count(name) > 1:
            errors.append(f"{name}: {found.count(name)} times in {where}")
    for name in sorted(set(found) - set(listed)):
        errors.append(f"{name}: in {where} but not in {LIST}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root")
    parser.add_argument("--sarif")
    parser.add_argument("--plugin-checks")
    args = parser.parse_args()
    errors = []
    listed = read_list(args.root, errors)
    compared = ["docs/checks pages", "README.md's checks table"]
    compare(listed, doc_pages(args.root, errors), "docs/checks", errors)
    compare(listed, readme_rows(args.root, errors), "README.md's checks table", errors)
    if args.sarif:
        compare(listed, sarif_rules(args.sarif, errors), "the SARIF rules", errors)
        compared.append("SARIF rules")
    if args.plugin_checks:
        compare(listed, plugin_checks(args.plugin_checks), "the plugin's checks", errors)
        compared.append("the plugin's checks")
    for error in errors:
        print(f"error: {error}")
    if errors:
        return 1
    print(f"check list: {len(listed)} checks; {', '.join(compared)} agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
