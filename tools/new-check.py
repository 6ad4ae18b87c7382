#!/usr/bin/env python3
"""Creates a new metaguard check from templates, in the shape of the others:

  tools/new-check.py NAME [--root DIR] [--summary TEXT]

NAME is the check's name, with or without `metaguard-` (`my-rule` gives
metaguard-my-rule and the class MyRuleCheck). It writes

  checks/<name>/<Class>.h, .cpp   the check, a MetaguardCheck with an empty check()
  checks/Checks.def               its line (CMake compiles every .cpp of the folder)
  docs/checks/metaguard-<name>.md its page, with an empty option table
  README.md                       its row in the checks table
  test/checks/metaguard-<name>.cpp a lit case that expects no finding

and prints what to do next. It changes nothing when any of those files exists
or the name is already listed."""
import argparse
import os
import re
import sys

HEADER = """//===--- {cls}.h - metaguard-tidy {pad}*- C++ -*-===//
//
// metaguard-{name}: {summary}
//
// The check decides which functions to look at; the analysis belongs in a
// finder and every message in a reporter beside it (docs/contributing.md).
//
//===----------------------------------------------------------------------===//

#ifndef {guard}
#define {guard}

#include "utils/MetaguardCheck.h"

namespace clang::tidy::metaguard {{

/// For the user-facing documentation see docs/checks/metaguard-{name}.md.
class {cls} : public MetaguardCheck<check_bit::{cls}> {{
public:
  {cls}(llvm::StringRef Name, ClangTidyContext *Context);
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void endTranslationUnit() override;
}};

}} // namespace clang::tidy::metaguard

#endif // {guard}
"""

SOURCE = """//===--- {cls}.cpp - metaguard-tidy {pad}*- C++ -*-===//

#include "{cls}.h"

#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::metaguard {{

{cls}::{cls}(llvm::StringRef Name, ClangTidyContext *Context)
    : MetaguardCheck(Name, Context) {{}}

// Receives the user's calls, constructions and variables that every metaguard
// check shares (UserCodeMatchers::call, ::construct, ...).
void {cls}::check(const MatchFinder::MatchResult &Result) {{}}

void {cls}::endTranslationUnit() {{}}

}} // namespace clang::tidy::metaguard
"""

PAGE = """# metaguard-{name}

{summary}

## Why it is a bug

## What is flagged

## Examples

## Options

| Option | Default | Meaning |
|---|---|---|

## Known limits
"""

TEST = """// RUN: %check_clang_tidy %s metaguard-{name} %t

// metaguard-{name}: a case with no finding. Add the cases the check flags,
// each with its // CHECK-MESSAGES: line, and those it must leave alone.

void nothing_to_flag() {{}}
"""


def title_pad(cls, ext):
    used = len("//===--- {}.{} - metaguard-tidy ".format(cls, ext)) + len("*- C++ -*-===//")
    return "-" * max(1, 79 - used)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name")
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--summary", default="TODO: what the check flags, in one line.")
    args = parser.parse_args()
    name = args.name[len("metaguard-"):] if args.name.startswith("metaguard-") else args.name
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name):
        sys.exit(f"new-check: '{args.name}': use lower-case words joined by '-', e.g. my-rule")
    cls = "".join(word.capitalize() for word in name.split("-")) + "Check"
    root = os.path.abspath(args.root)
    folder = os.path.join(root, "checks", name)
    guard = "METAGUARD_CHECKS_{}_{}_H".format(name.upper().replace("-", "_"), cls.upper())
    checks_def = os.path.join(root, "checks", "Checks.def")
    readme = os.path.join(root, "README.md")
    files = {
        os.path.join(folder, cls + ".h"): HEADER.format(
            cls=cls, name=name, guard=guard, summary=args.summary, pad=title_pad(cls, "h")),
        os.path.join(folder, cls + ".cpp"): SOURCE.format(cls=cls, pad=title_pad(cls, "cpp")),
        os.path.join(root, "docs", "checks", f"metaguard-{name}.md"): PAGE.format(
            name=name, summary=args.summary),
        os.path.join(root, "test", "checks", f"metaguard-{name}.cpp"): TEST.format(name=name),
    }
    for path in files:
        if os.path.exists(path):
            sys.exit(f"new-check: {os.path.relpath(path, root)} exists already; nothing changed")
    with open(checks_def) as f:
        checks = f.read()
    if f'"metaguard-{name}"' in checks or f"METAGUARD_CHECK({cls}," in checks:
        sys.exit(f"new-check: metaguard-{name} is in checks/Checks.def already; nothing changed")
    entry = f'METAGUARD_CHECK({cls}, "metaguard-{name}")\n'
    if "// clang-format on\n" not in checks:
        sys.exit("new-check: checks/Checks.def has no '// clang-format on' line to add before")
    with open(readme) as f:
        lines = f.read().split("\n")
    rows = [i for i, line in enumerate(lines) if line.startswith("| [`metaguard-")]
    if not rows:
        sys.exit("new-check: README.md has no checks table")

    os.makedirs(folder, exist_ok=True)
    for path, text in files.items():
        with open(path, "w") as f:
            f.write(text)
    with open(checks_def, "w") as f:
        f.write(checks.replace("// clang-format on\n", entry + "// clang-format on\n", 1))
    lines.insert(rows[-1] + 1, f"| [`metaguard-{name}`](docs/checks/metaguard-{name}.md) | "
                 f"{args.summary} |")
    with open(readme, "w") as f:
        f.write("\n".join(lines))
    for path in list(files) + [checks_def, readme]:
        print("wrote", os.path.relpath(path, root))
    print(f"""next: build the plugin (target metaguard_tidy) and run
  lit test/checks/metaguard-{name}.cpp and test/tools/check-list.test;
  write the page's first paragraph (its SARIF description) and the summary in
  README.md; declare the check's options in checks/Options.def with `| {cls}`
  and run tools/gen-option-docs.py.""")


if __name__ == "__main__":
    main()
