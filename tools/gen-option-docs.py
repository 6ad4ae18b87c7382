#!/usr/bin/env python3
"""Writes the option table of each docs/checks/<name>.md page from
checks/Options.def, the one declaration of the checks' options.

  tools/gen-option-docs.py [--root DIR]          rewrite the tables in place
  tools/gen-option-docs.py [--root DIR] --check  exit 1, with a diff, when a
                                                 page's table differs

A page's table is the Markdown table right under its `## Options` heading
(prose may come between); its rows follow Options.def's order."""
import argparse
import difflib
import os
import re
import sys

CHECK_LINE = re.compile(r'^METAGUARD_CHECK\(([A-Za-z_]\w*), "(metaguard-[a-z0-9-]+)"\)$')
STRING = r'"(?:[^"\\]|\\.)*"'
OPTION_LINE = re.compile(
    r'^METAGUARD_OPTION\((?P<name>[A-Za-z_]\w*), (?P<type>StringList|Unsigned|Bool), '
    r'(?P<default>' + STRING + r'|\d+|true|false), (?P<help>' + STRING + r'), '
    r'(?P<checks>[A-Za-z_]\w*(?: \| [A-Za-z_]\w*)*)\)$')
HEADER = ["| Option | Default | Meaning |", "|---|---|---|"]


def unquote(literal):
    if literal.startswith('"'):
        return re.sub(r"\\(.)", r"\1", literal[1:-1])
    return literal


def read_checks(root):
    checks = {}
    with open(os.path.join(root, "checks", "Checks.def")) as f:
        for line in f:
            line = line.strip()
            if line.startswith("METAGUARD_CHECK("):
                m = CHECK_LINE.match(line)
                if not m:
                    sys.exit(f"checks/Checks.def: cannot read '{line}'")
                checks[m.group(1)] = m.group(2)
    return checks


def read_options(root, checks):
    """{check name: [table row]} in the declaration's order."""
    rows = {name: [] for name in checks.values()}
    with open(os.path.join(root, "checks", "Options.def")) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line.startswith("METAGUARD_OPTION("):
                continue
            m = OPTION_LINE.match(line)
            if not m:
                sys.exit(f"checks/Options.def:{number}: cannot read the option; write it on one "
                         "line as METAGUARD_OPTION(Name, Type, Default, \"Help\", Check | ...)")
            row = f"| `{m['name']}` | `{unquote(m['default'])}` | {unquote(m['help'])} |"
            for check in m["checks"].split(" | "):
                if check not in checks:
                    sys.exit(f"checks/Options.def:{number}: {m['name']} names {check}, "
                             "which checks/Checks.def does not list")
                rows[checks[check]].append(row)
    return rows


def with_table(page, name, rows):
    """The page's text with its option table replaced by rows."""
    lines = page.split("\n")
    try:
        start = lines.index("## Options")
    except ValueError:
        sys.exit(f"docs/checks/{name}.md: no '## Options' section")
    i = start + 1
    while i < len(lines) and not lines[i].startswith("|"):
        if lines[i].startswith("## "):
            sys.exit(f"docs/checks/{name}.md: no table under '## Options'")
        i += 1
    end = i
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[:i] + HEADER + rows + lines[end:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--check", action="store_true",
                        help="compare only; exit 1 when a page differs")
    args = parser.parse_args()
    checks = read_checks(args.root)
    status = 0
    for name, rows in read_options(args.root, checks).items():
        path = os.path.join(args.root, "docs", "checks", name + ".md")
        with open(path) as f:
            page = f.read()
        wanted = with_table(page, name, rows)
        if wanted == page:
            continue
        if args.check:
            status = 1
            print(f"error: docs/checks/{name}.md: its option table differs from checks/Options.def "
                  "(run tools/gen-option-docs.py):")
            sys.stdout.writelines(difflib.unified_diff(
                page.splitlines(True), wanted.splitlines(True),
                f"docs/checks/{name}.md", "from checks/Options.def"))
        else:
            with open(path, "w") as f:
                f.write(wanted)
            print(f"wrote the option table of docs/checks/{name}.md")
    if args.check and status == 0:
        print(f"option docs: {len(checks)} pages agree with checks/Options.def")
    return status


if __name__ == "__main__":
    sys.exit(main())
