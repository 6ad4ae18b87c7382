"""Run metaguard's clang-tidy checks over a project.

Reads a compile database (compile_commands.json), runs Debian's stock
clang-tidy-19 with the metaguard plugin loaded on every matching source file in
parallel, and prints the findings as text (compiler style, for terminals and
editors' problem matchers), JSON, or SARIF 2.1.0 (for code-scanning UIs).

Exit status: 0 no finding (or --exit-zero), 1 findings, 2 the tool could not
run (bad arguments, missing database, clang-tidy crashed on a file).
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys

VERSION = "0.1.0"
DEFAULT_CHECKS = "-*,metaguard-*"
SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".c++", ".cu")
DIAG_RE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): "
    r"(?P<level>warning|error|note): (?P<message>.*?)"
    r"(?: \[(?P<check>[\w.,-]+)\])?$"
)


class ToolError(Exception):
    """A problem that stops the run; printed without a traceback."""


def default_plugin():
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [
        os.environ.get("METAGUARD_PLUGIN", ""),
        os.path.join(here, "..", "build", "lib", "libmetaguard_tidy.so"),
        os.path.join(here, "..", "lib", "libmetaguard_tidy.so"),
    ]
    for path in candidates:
        if path and os.path.isfile(path):
            return os.path.normpath(path)
    return None


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="metaguard-tidy",
        description="Run metaguard's clang-tidy checks over a compile database.",
    )
    parser.add_argument("paths", nargs="*",
                        help="files or folders to check (default: every file in the database)")
    parser.add_argument("-p", "--build-dir", default="build",
                        help="folder holding compile_commands.json (default: build)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                        help="files checked in parallel (default: number of cores)")
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    parser.add_argument("-o", "--output", help="write the report here instead of stdout")
    parser.add_argument("--checks", default=DEFAULT_CHECKS,
                        help="clang-tidy check filter (default: %(default)s)")
    parser.add_argument("--config", help="clang-tidy --config string (options for the checks)")
    parser.add_argument("--config-file", help="clang-tidy --config-file path")
    parser.add_argument("--plugin", default=None,
                        help="path to libmetaguard_tidy.so (default: $METAGUARD_PLUGIN or build/lib)")
    parser.add_argument("--clang-tidy", default="clang-tidy-19",
                        help="clang-tidy binary (default: %(default)s)")
    parser.add_argument("--extra-arg", action="append", default=[],
                        help="extra compiler argument, passed through to clang-tidy")
    parser.add_argument("--exit-zero", action="store_true",
                        help="exit 0 even when there are findings")
    parser.add_argument("--version", action="version", version="%(prog)s " + VERSION)
    return parser.parse_args(argv)


def load_database(build_dir):
    path = os.path.join(build_dir, "compile_commands.json")
    try:
        with open(path, encoding="utf-8") as handle:
            entries = json.load(handle)
    except FileNotFoundError:
        raise ToolError(f"{path}: no compile database; configure with "
                        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON or pass -p <build dir>")
    except json.JSONDecodeError as err:
        raise ToolError(f"{path}:{err.lineno}: not valid JSON: {err.msg}")
    if not isinstance(entries, list):
        raise ToolError(f"{path}: expected a JSON array of compile commands")
    files = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or "file" not in entry:
            raise ToolError(f"{path}: entry {index} has no \"file\"")
        name = entry["file"]
        if not os.path.isabs(name):
            name = os.path.join(entry.get("directory", build_dir), name)
        files.append(os.path.normpath(name))
    return sorted(set(files))


def select_files(database_files, paths):
    if not paths:
        return [f for f in database_files if f.endswith(SOURCE_SUFFIXES)]
    selected = []
    for raw in paths:
        target = os.path.normpath(os.path.abspath(raw))
        if not os.path.exists(target):
            raise ToolError(f"{raw}: no such file or folder")
        if os.path.isdir(target):
            matches = [f for f in database_files if f.startswith(target + os.sep)]
        else:
            matches = [f for f in database_files if f == target]
            if not matches:
                raise ToolError(f"{raw}: not in the compile database; is it part of the build?")
        selected.extend(matches)
    return sorted(set(selected))


def tidy_command(args, plugin, build_dir, source):
    command = [args.clang_tidy, f"--load={plugin}", f"--checks={args.checks}",
               "-p", build_dir, "--quiet"]
    if args.config:
        command.append(f"--config={args.config}")
    if args.config_file:
        command.append(f"--config-file={args.config_file}")
    command += [f"--extra-arg={arg}" for arg in args.extra_arg]
    command.append(source)
    return command


def parse_diagnostics(output):
    """Groups clang-tidy's text output into findings, each with its notes."""
    findings = []
    for line in output.splitlines():
        match = DIAG_RE.match(line)
        if not match:
            continue
        diag = {
            "file": os.path.normpath(match["file"]),
            "line": int(match["line"]),
            "column": int(match["col"]),
            "message": match["message"],
        }
        if match["level"] == "note":
            if findings:
                findings[-1]["notes"].append(diag)
            continue
        diag.update(level=match["level"], check=match["check"] or "clang-diagnostic-error",
                    notes=[])
        findings.append(diag)
    return findings


def run_one(args, plugin, build_dir, source):
    try:
        proc = subprocess.run(tidy_command(args, plugin, build_dir, source),
                              capture_output=True, text=True, check=False)
    except OSError as err:
        raise ToolError(f"cannot run {args.clang_tidy}: {err}")
    findings = parse_diagnostics(proc.stdout)
    problem = None
    if proc.returncode < 0 or (proc.returncode != 0 and not findings):
        problem = f"{source}: clang-tidy exited with {proc.returncode}: {proc.stderr.strip()[-2000:]}"
    elif "error: " in proc.stderr and "metaguard" in proc.stderr:
        problem = f"{source}: {proc.stderr.strip()}"
    return findings, problem


def unique(findings):
    """Drops repeats: a header included by several sources reports once."""
    seen, result = set(), []
    for finding in findings:
        key = (finding["file"], finding["line"], finding["column"], finding["check"],
               finding["message"])
        if key not in seen:
            seen.add(key)
            result.append(finding)
    return sorted(result, key=lambda f: (f["file"], f["line"], f["column"]))


def format_text(findings):
    lines = []
    for f in findings:
        lines.append(f"{f['file']}:{f['line']}:{f['column']}: {f['level']}: "
                     f"{f['message']} [{f['check']}]")
        for note in f["notes"]:
            lines.append(f"{note['file']}:{note['line']}:{note['column']}: note: "
                         f"{note['message']}")
    count = len(findings)
    lines.append(f"metaguard-tidy: {count} finding{'s' if count != 1 else ''}")
    return "\n".join(lines) + "\n"


def format_json(findings, files):
    return json.dumps({"tool": "metaguard-tidy", "version": VERSION, "files": files,
                       "findings": findings}, indent=2) + "\n"


def sarif_location(diag, root):
    path = os.path.relpath(diag["file"], root) if diag["file"].startswith(root) else diag["file"]
    return {"physicalLocation": {
        "artifactLocation": {"uri": path.replace(os.sep, "/"),
                             **({"uriBaseId": "SRCROOT"} if not os.path.isabs(path) else {})},
        "region": {"startLine": diag["line"], "startColumn": diag["column"]}}}


def format_sarif(findings, root):
    rules = sorted({f["check"] for f in findings})
    results = []
    for f in findings:
        result = {"ruleId": f["check"], "ruleIndex": rules.index(f["check"]),
                  "level": "error" if f["level"] == "error" else "warning",
                  "message": {"text": f["message"]},
                  "locations": [sarif_location(f, root)]}
        if f["notes"]:
            result["relatedLocations"] = [
                {"id": i, "message": {"text": n["message"]}, **sarif_location(n, root)}
                for i, n in enumerate(f["notes"])]
        results.append(result)
    driver = {"name": "metaguard", "version": VERSION,
              "informationUri": "docs/checks/",
              "rules": [{"id": r, "helpUri": f"docs/checks/{r}.md"} for r in rules]}
    report = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
              "runs": [{"tool": {"driver": driver},
                        "originalUriBaseIds": {"SRCROOT": {"uri": "file://" + root + "/"}},
                        "results": results}]}
    return json.dumps(report, indent=2) + "\n"


def main(argv):
    args = parse_args(argv)
    if args.jobs < 1:
        raise ToolError("--jobs must be at least 1")
    plugin = args.plugin or default_plugin()
    if not plugin or not os.path.isfile(plugin):
        raise ToolError(f"plugin {plugin or 'libmetaguard_tidy.so'} not found; build metaguard "
                        "or pass --plugin")
    if shutil.which(args.clang_tidy) is None:
        raise ToolError(f"{args.clang_tidy} not found; install clang-tidy-19 (apt-get install "
                        "clang-tidy-19) or pass --clang-tidy")
    build_dir = os.path.abspath(args.build_dir)
    files = select_files(load_database(build_dir), args.paths)
    if not files:
        raise ToolError("no source file to check")

    findings, problems = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for file_findings, problem in pool.map(
                lambda source: run_one(args, plugin, build_dir, source), files):
            findings.extend(file_findings)
            if problem:
                problems.append(problem)
    findings = unique(findings)

    root = os.getcwd()
    if args.format == "json":
        report = format_json(findings, files)
    elif args.format == "sarif":
        report = format_sarif(findings, root)
    else:
        report = format_text(findings)
    if args.output:
        temp = args.output + ".tmp"
        with open(temp, "w", encoding="utf-8") as handle:
            handle.write(report)
        os.replace(temp, args.output)
    else:
        sys.stdout.write(report)
    for problem in problems:
        print(f"metaguard-tidy: {problem}", file=sys.stderr)
    if problems:
        return 2
    return 0 if (args.exit_zero or not findings) else 1


def entry_point():
    try:
        return main(sys.argv[1:])
    except ToolError as err:
        print(f"metaguard-tidy: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(entry_point())
