#!/usr/bin/env python3
"""Runs clang-tidy with the metaguard plugin on one test file and checks its
diagnostics with FileCheck.

Usage (from a lit RUN line, through the %check_clang_tidy substitution):

  %check_clang_tidy [-std=c++20] [-check-suffixes=A,B] [-no-mocks]
                    [-fix | -fix-notes]
                    %s <check-name> [-- <clang-tidy args> [-- <compiler args>]]

- Warnings and errors are matched against `// CHECK-MESSAGES[-SUFFIX]:` lines,
  warnings, errors and notes against `// CHECK-NOTES[-SUFFIX]:` lines. A
  diagnostic no pattern asks for fails the test (implicit-check-not), and a
  file with neither kind of line must produce no warning at all.
- Diagnostics in the test file itself are printed as `:<line>:<col>: ...`,
  others as `<basename>:<line>:<col>: ...`.
- clang-tidy gets `--config={}` unless the RUN line passes `-config=...`
  (so the repository's .clang-tidy never leaks into a test), and
  `--checks=-*,<check-name>`.
- The compiler gets `-std=c++17` unless the RUN line chooses a standard, and
  `-I <mock headers>` (test/checks/Inputs) unless `-no-mocks` is given.
- Fix-its: with `-fix` (clang-tidy --fix: the warnings' own fix-its) or
  `-fix-notes` (--fix-notes: also the fix-its attached to notes), clang-tidy
  runs on a copy of the file whose `// CHECK-...` comments are blanked (so
  they cannot match themselves), and the fixed copy is checked against
  `// CHECK-FIXES[-SUFFIX]:` lines. Without either flag, a file with
  CHECK-FIXES lines fails, so that no fix expectation goes unchecked.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

DIAG = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): "
                  r"(?P<kind>warning|error|note|fatal error): (?P<msg>.*)$")


def fail(message):
    sys.stderr.write("check_clang_tidy.py: " + message + "\n")
    sys.exit(1)


def split_dashes(rest):
    """Splits ['a', '--', 'b', '--', 'c'] into ([a], [b], [c])."""
    groups = [[]]
    for arg in rest:
        if arg == "--" and len(groups) < 3:
            groups.append([])
        else:
            groups[-1].append(arg)
    while len(groups) < 3:
        groups.append([])
    return groups


def run_filecheck(filecheck, source, text, prefix, implicit_not):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        cmd = [filecheck, "-input-file=" + path, source,
               "-check-prefix=" + prefix, "-dump-input=fail",
               "-implicit-check-not={{" + implicit_not + "}}:"]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            sys.stderr.write("FileCheck failed for prefix %s:\n%s%s\n" %
                             (prefix, result.stdout, result.stderr))
            sys.stderr.write("---- diagnostics given to FileCheck ----\n%s\n" % text)
            return False
        return True
    finally:
        os.unlink(path)


def run_fixes_check(filecheck, source, fixed, prefix):
    """Checks the fixed file against the CHECK-FIXES lines of source."""
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(fixed)
        path = f.name
    try:
        cmd = [filecheck, "-input-file=" + path, source, "-check-prefix=" + prefix,
               "-dump-input=fail"]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            sys.stderr.write("FileCheck failed for prefix %s:\n%s%s\n" %
                             (prefix, result.stdout, result.stderr))
            return False
        return True
    finally:
        os.unlink(path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--clang-tidy", required=True)
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--filecheck-dir", required=True)
    parser.add_argument("--mock-include", required=True)
    parser.add_argument("-std", default=None)
    parser.add_argument("-check-suffixes", "-check-suffix", default="")
    parser.add_argument("-no-mocks", action="store_true")
    fix_group = parser.add_mutually_exclusive_group()
    fix_group.add_argument("-fix", action="store_true")
    fix_group.add_argument("-fix-notes", action="store_true")
    parser.add_argument("source")
    parser.add_argument("check")
    argv = sys.argv[1:]
    own = argv[:argv.index("--")] if "--" in argv else argv
    extra = argv[len(own):]
    args = parser.parse_args(own)
    _, tidy_args, compiler_args = split_dashes(extra)

    original = os.path.abspath(args.source)
    with open(original) as f:
        content = f.read()
    source = original
    workdir = None
    fixing = args.fix or args.fix_notes
    if fixing:
        # Same folder name and line numbers as the original; the CHECK
        # comments become empty lines' worth of nothing.
        workdir = tempfile.mkdtemp(prefix="check_clang_tidy.")
        source = os.path.join(workdir, os.path.basename(original))
        with open(source, "w") as f:
            f.write(re.sub(r"//\s*CHECK-[A-Z0-9-]*:.*", "//", content))
    elif re.search(r"\bCHECK-FIXES[A-Z0-9-]*:", content):
        fail("CHECK-FIXES lines need -fix or -fix-notes on the RUN line")

    suffixes = [s.strip() for s in args.check_suffixes.split(",")]
    if not suffixes:
        suffixes = [""]

    if not any(a.startswith("-config") or a.startswith("--config") for a in tidy_args):
        tidy_args = ["--config={}"] + tidy_args
    if not any(a.startswith("-std=") for a in compiler_args):
        compiler_args = ["-std=" + (args.std or "c++17")] + compiler_args
    if not args.no_mocks:
        compiler_args = ["-I", args.mock_include] + compiler_args

    fix_args = ["--fix-notes"] if args.fix_notes else (["--fix"] if args.fix else [])
    cmd = ([args.clang_tidy, "--load=" + args.plugin,
            "--checks=-*," + args.check] + fix_args + tidy_args + [source, "--"] +
           compiler_args)
    result = subprocess.run(cmd, capture_output=True, text=True)
    output = result.stdout + result.stderr

    messages, notes = [], []
    for line in output.splitlines():
        m = DIAG.match(line)
        if not m:
            continue
        path = m.group("file")
        where = "" if os.path.abspath(path) == source else os.path.basename(path)
        text = "%s:%s:%s: %s: %s" % (where, m.group("line"), m.group("col"),
                                     m.group("kind"), m.group("msg"))
        notes.append(text)
        if m.group("kind") != "note":
            messages.append(text)

    if result.returncode != 0 and not messages:
        sys.stderr.write(" ".join(cmd) + "\n" + output)
        fail("clang-tidy exited with %d" % result.returncode)

    filecheck = os.path.join(args.filecheck_dir, "FileCheck")
    ok = True
    any_prefix = False
    for suffix in suffixes:
        tail = "-" + suffix if suffix else ""
        msg_prefix, note_prefix = "CHECK-MESSAGES" + tail, "CHECK-NOTES" + tail
        has_msg = re.search(r"\b" + re.escape(msg_prefix) + r"(-NOT|-NEXT|-SAME|-DAG)?:", content)
        has_note = re.search(r"\b" + re.escape(note_prefix) + r"(-NOT|-NEXT|-SAME|-DAG)?:", content)
        if has_msg:
            any_prefix = True
            ok &= run_filecheck(filecheck, original, "\n".join(messages) + "\n",
                                msg_prefix, "warning|error")
        if has_note:
            any_prefix = True
            ok &= run_filecheck(filecheck, original, "\n".join(notes) + "\n",
                                note_prefix, "warning|error|note")
        if fixing:
            fix_prefix = "CHECK-FIXES" + tail
            if re.search(r"\b" + re.escape(fix_prefix) + r"(-NOT|-NEXT|-SAME|-DAG)?:", content):
                with open(source) as f:
                    fixed = f.read()
                ok &= run_fixes_check(filecheck, original, fixed, fix_prefix)
    if not any_prefix and messages:
        sys.stderr.write("expected no warnings, got:\n%s\n" % "\n".join(messages))
        ok = False
    if workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    if not ok:
        sys.stderr.write("command: %s\n" % " ".join(cmd))
        sys.exit(1)


if __name__ == "__main__":
    main()
