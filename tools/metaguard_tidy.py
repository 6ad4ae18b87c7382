"""Run metaguard's clang-tidy checks over a project.

Reads a compile database (compile_commands.json), runs a stock clang-tidy
(clang-tidy-N for the plugin's LLVM major N, metaguard_plugins.py) with the
metaguard plugin loaded on every matching source file in
parallel, and prints the findings as text (compiler style, for terminals and
editors' problem matchers), JSON, or SARIF 2.1.0 (for code-scanning UIs).

`--whole-program` first writes each translation unit's function summaries
(cached by command and content), then checks again, with the summaries of
functions defined in other files, the files whose callees' summaries changed,
until they settle (see metaguard_wholeprogram.py and docs/whole-program.md).

`--shard I/N` checks every N-th source file (a CI matrix runs the N shards in
parallel) and `metaguard-tidy merge A B ... -o OUT` joins their JSON or SARIF
reports into the report a single run would have written.

`--fix`, `--fix-notes` and `--export-fixes FILE` are clang-tidy's, passed
through as run-clang-tidy does: each clang-tidy exports its fixes to a file of
its own, the driver merges them (into FILE) and applies them once with
clang-apply-replacements (metaguard_fixes.py).

Before any file is checked, the driver asks the clang-tidy it runs, once,
whether the plugin registers the metaguard-* checks in it (--list-checks);
when it does not (the plugin failed to load), the run stops with status 2.

Exit status: 0 no finding (or --exit-zero), 1 findings, 2 the tool could not
run (bad arguments, missing database, the plugin not loaded, clang-tidy
crashed on a file).
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import metaguard_fixes
import metaguard_plugins
import metaguard_regions
import metaguard_sarif
import metaguard_version
import metaguard_wholeprogram

VERSION = metaguard_version.version()
DEFAULT_CHECKS = "-*,metaguard-*"
SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".c++", ".cu")
DIAG_RE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): "
    r"(?P<level>warning|error|note): (?P<message>.*?)"
    r"(?: \[(?P<check>[\w.,-]+)\])?$"
)


class ToolError(Exception):
    """A problem that stops the run; printed without a traceback."""


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
                        help="path to the plugin (default: $METAGUARD_PLUGIN, else the one "
                             "built for --clang-tidy's LLVM major, beside the driver or in build/lib)")
    parser.add_argument("--clang-tidy", default=None,
                        help="clang-tidy binary (default: clang-tidy-N for the plugin's LLVM major N)")
    parser.add_argument("--extra-arg", action="append", default=[],
                        help="extra compiler argument, passed through to clang-tidy")
    parser.add_argument("--exit-zero", action="store_true",
                        help="exit 0 even when there are findings")
    parser.add_argument("--ignore-unlisted", action="store_true",
                        help="skip the files given that the compile database does not list "
                             "(headers, files outside the build), as a pre-commit hook must; "
                             "none left is a clean run")
    parser.add_argument("--source-root",
                        help="SARIF locations are relative to this folder (default: the git "
                             "top level of the current folder, else the current folder)")
    parser.add_argument("--docs-url", type=parse_docs_url, metavar="URL",
                        help="absolute URL of a folder holding metaguard's check pages "
                             "(<URL><check>.md); SARIF then links each rule to its page")
    parser.add_argument("--shard", type=parse_shard, metavar="I/N",
                        help="check only shard I of N (1 <= I <= N): every N-th file of the "
                             "sorted file list; join the reports with 'metaguard-tidy merge'")
    parser.add_argument("--whole-program", action="store_true",
                        help="summarise every file of the database (cached), then check "
                             "with the summaries of functions defined in other files")
    parser.add_argument("--max-rounds", type=int, default=10, metavar="N",
                        help="--whole-program: at most N rounds of checking with the "
                             "summaries (a chain of calls through k files needs k + 1; "
                             "default: %(default)s)")
    parser.add_argument("--cache-dir",
                        help="--whole-program's cache and merged index (default: "
                             "<build dir>/metaguard-whole-program)")
    parser.add_argument("--fix", action="store_true",
                        help="apply the fixes of the findings (clang-tidy's --fix; see "
                             "docs/ci.md for how parallel runs apply them)")
    parser.add_argument("--fix-notes", action="store_true",
                        help="also apply a fix attached to a finding's only note with one "
                             "(clang-tidy's --fix-notes; implies --fix)")
    parser.add_argument("--export-fixes", metavar="FILE",
                        help="write the fixes of every file into one YAML file for "
                             "clang-apply-replacements (clang-tidy's --export-fixes)")
    parser.add_argument("--version", action="version", version="%(prog)s " + VERSION)
    args = parser.parse_args(argv)
    if args.fix_notes:
        args.fix = True
    return args


def parse_shard(text):
    match = re.fullmatch(r"(\d+)/(\d+)", text)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise argparse.ArgumentTypeError(f"{text!r}: expected I/N with 1 <= I <= N, e.g. 2/4")
    return int(match[1]), int(match[2])


def parse_docs_url(text):
    if not re.match(r"https?://[^/]+", text):
        raise argparse.ArgumentTypeError(f"{text!r}: expected an absolute http(s) URL")
    return text if text.endswith("/") else text + "/"


def parse_merge_args(argv):
    parser = argparse.ArgumentParser(
        prog="metaguard-tidy merge",
        description="Join JSON or SARIF reports of --shard runs into one report, the same "
                    "as a single run over all the files would write.")
    parser.add_argument("reports", nargs="+", help="reports written by metaguard-tidy")
    parser.add_argument("-o", "--output", help="write the report here instead of stdout")
    return parser.parse_args(argv)


def source_root(requested):
    if requested:
        if not os.path.isdir(requested):
            raise ToolError(f"--source-root {requested}: no such folder")
        return os.path.realpath(requested)
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, check=False)
    except OSError:
        top = None
    if top and top.returncode == 0 and top.stdout.strip():
        return os.path.realpath(top.stdout.strip())
    return os.path.realpath(os.getcwd())


def load_database(build_dir):
    return sorted(database_entries(build_dir))


def database_entries(build_dir):
    """{absolute source path: [its compile commands]}."""
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
    files = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or "file" not in entry:
            raise ToolError(f"{path}: entry {index} has no \"file\"")
        name = entry["file"]
        if not os.path.isabs(name):
            name = os.path.join(entry.get("directory", build_dir), name)
        files.setdefault(os.path.normpath(name), []).append(entry)
    return files


def select_files(database_files, paths, ignore_unlisted=False):
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
            if not matches and not ignore_unlisted:
                raise ToolError(f"{raw}: not in the compile database; is it part of the build?")
        selected.extend(matches)
    return sorted(set(selected))


def tidy_command(args, plugin, build_dir, source, extra=()):
    command = [args.clang_tidy, *load_flags(plugin), f"--checks={args.checks}",
               "-p", build_dir, "--quiet"]
    if args.config:
        command.append(f"--config={args.config}")
    if args.config_file:
        command.append(f"--config-file={args.config_file}")
    # clang-tidy before 16 parses C++14 unless told otherwise, while GCC 11+
    # (whose databases often name no -std, CMake leaving the default) and
    # later clang-tidys take C++17; a command's own -std still wins.
    if args.tidy_major and args.tidy_major < 16:
        command.append("--extra-arg-before=-std=gnu++17")
    command += [f"--extra-arg={arg}" for arg in args.extra_arg]
    command += list(extra)
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
            "file": os.path.abspath(match["file"]),
            "line": int(match["line"]),
            "column": int(match["col"]),
            "message": match["message"],
        }
        if match["level"] == "note":
            if findings:
                findings[-1]["notes"].append(diag)
            continue
        # WarningsAsErrors appends ",-warnings-as-errors" to the check name.
        check = (match["check"] or "clang-diagnostic-error").split(",")[0]
        diag.update(level=match["level"], check=check, notes=[])
        findings.append(diag)
    return findings


def run_one(args, plugin, build_dir, source, env=None, extra=()):
    """env: variables to set for this clang-tidy (whole-program mode);
    extra: further clang-tidy arguments (the fix flags, FixPlan.flags)."""
    try:
        proc = subprocess.run(tidy_command(args, plugin, build_dir, source, extra),
                              capture_output=True, text=True, check=False,
                              env=dict(os.environ, **env) if env else None)
    except OSError as err:
        raise ToolError(f"cannot run {args.clang_tidy}: {err}")
    findings = parse_diagnostics(proc.stdout)
    problem = None
    if proc.returncode < 0 or (proc.returncode != 0 and not findings):
        problem = f"{source}: clang-tidy exited with {proc.returncode}: {proc.stderr.strip()[-2000:]}"
    elif "error: " in proc.stderr and "metaguard" in proc.stderr:
        problem = f"{source}: {proc.stderr.strip()}"
    else:
        # The plugin's own remarks (a facts file it cannot read, conflicting
        # summaries) are passed on, once per run.
        for line in proc.stderr.splitlines():
            if line.startswith("metaguard: ") and line not in REMARKS:
                REMARKS.add(line)
                print(line, file=sys.stderr)
    return findings, problem


REMARKS = set()


def resolve_plugin(args, requested):
    """The plugin to load into args.clang_tidy (which it may pick)."""
    try:
        plugin, args.clang_tidy, args.tidy_major = metaguard_plugins.resolve(
            requested, args.clang_tidy)
    except metaguard_plugins.PluginError as err:
        raise ToolError(str(err)) from None
    if not plugin or not os.path.isfile(plugin):
        raise ToolError(f"plugin {plugin or 'libmetaguard_tidy.so'} not found; build metaguard "
                        "or pass --plugin (or install the metaguard wheel, whose "
                        "metaguard-clang-tidy needs none)")
    return plugin


def load_flags(plugin):
    """clang-tidy's flags to load the plugin; none for a clang-tidy with the
    checks built in."""
    return [f"--load={plugin}"] if plugin else []


def require_checks(args, plugin):
    """Stops the run unless the plugin registers metaguard's checks in the
    clang-tidy the driver runs. A plugin that fails to load (a clang-tidy that
    does not export Clang's classes, another LLVM major) leaves clang-tidy
    running without it: every file would come out clean. Asked once per run."""
    command = [args.clang_tidy, *load_flags(plugin), "--checks=-*,metaguard-*", "--list-checks"]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.SubprocessError) as err:
        raise ToolError(f"cannot run {args.clang_tidy}: {err}")
    if proc.returncode == 0 and any(line.strip().startswith("metaguard-")
                                    for line in proc.stdout.splitlines()):
        return
    said = [line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
    loader = [line for line in said if "load request ignored" not in line
              and not line.startswith("No checks enabled")
              and not line.startswith("Enabled checks")]
    path = shutil.which(args.clang_tidy) or args.clang_tidy
    raise ToolError(
        f"the metaguard plugin did not register its checks in {path}, so no metaguard-* "
        f"check would run and every file would look clean.\n"
        f"  plugin:     {plugin or '(none: checks expected built in)'}\n"
        f"  clang-tidy: {path} (asked with --list-checks; it exited with {proc.returncode})\n"
        f"  it said:    {loader[0] if loader else (said[0] if said else '(nothing)')}\n"
        f"{''.join('              ' + line + chr(10) for line in loader[1:4])}"
        f"What to do: run a clang-tidy of the LLVM major the plugin was built for that exports "
        f"Clang's classes to plugins, e.g. Debian's clang-tidy-"
        f"{args.tidy_major or metaguard_plugins.DEFAULT_MAJOR} (--clang-tidy), or rebuild the "
        f"plugin for your clang-tidy (cmake -DMETAGUARD_LLVM_VERSION=N); where clang-tidy "
        f"cannot load plugins, use metaguard-clang-tidy (pip install the metaguard wheel; "
        f"--clang-tidy metaguard-clang-tidy) or metaguard-clangd, which have the checks built in.")


def finding_key(finding):
    return (finding["file"], finding["line"], finding["column"], finding["check"],
            finding["message"])


def unique(findings):
    """Drops repeats (a header included by several sources reports once) and
    sorts, so the report does not depend on which run or shard saw a finding first."""
    seen, result = set(), []
    for finding in findings:
        key = finding_key(finding)
        if key not in seen:
            seen.add(key)
            result.append(finding)
    return sorted(result, key=finding_key)


def locate_all(findings):
    """Widens each point to a region and records its line's text (for fingerprints)."""
    cache = metaguard_regions.SourceCache()
    for finding in findings:
        metaguard_regions.locate(finding, cache)
        for note in finding["notes"]:
            metaguard_regions.locate(note, cache)
    return findings


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


def format_json(findings, files, root):
    return json.dumps({"tool": "metaguard-tidy", "version": VERSION, "sourceRoot": root,
                       "files": files, "findings": findings}, indent=2) + "\n"


def format_sarif(findings, files, root, docs_url=None):
    report = metaguard_sarif.render(findings, files, root, VERSION, docs_url)
    return json.dumps(report, indent=2) + "\n"


def write_report(report, output):
    """To stdout, or atomically to a file (no half-written report for a CI upload)."""
    if not output:
        sys.stdout.write(report)
        return
    temp = output + ".tmp"
    with open(temp, "w", encoding="utf-8") as handle:
        handle.write(report)
    os.replace(temp, output)


def read_report(path):
    """(format, findings, files, root, docs_url) from a report this tool wrote."""
    try:
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
    except OSError as err:
        raise ToolError(f"{path}: cannot read: {err.strerror}")
    except json.JSONDecodeError as err:
        raise ToolError(f"{path}:{err.lineno}: not valid JSON: {err.msg}")
    if isinstance(report, dict) and "runs" in report:
        try:
            return ("sarif",) + metaguard_sarif.parse(report, path)
        except ValueError as err:
            raise ToolError(str(err))
    if isinstance(report, dict) and {"findings", "files", "sourceRoot"} <= report.keys():
        return "json", report["findings"], report["files"], report["sourceRoot"], None
    raise ToolError(f"{path}: not a JSON or SARIF report written by metaguard-tidy")


def merge(argv):
    args = parse_merge_args(argv)
    reports = [read_report(path) for path in args.reports]
    kinds = {report[0] for report in reports}
    roots = {report[3] for report in reports}
    urls = {report[4] for report in reports}
    if len(kinds) > 1:
        raise ToolError("cannot merge JSON with SARIF reports: " + ", ".join(args.reports))
    if len(roots) > 1:
        raise ToolError("the reports have different source roots (" + ", ".join(sorted(roots))
                        + "); run every shard with the same --source-root")
    if len(urls) > 1:
        raise ToolError("the reports were written with different --docs-url values")
    findings = unique([f for report in reports for f in report[1]])
    files = sorted({f for report in reports for f in report[2]})
    root = roots.pop()
    if kinds.pop() == "sarif":
        report = format_sarif(findings, files, root, urls.pop())
    else:
        report = format_json(findings, files, root)
    write_report(report, args.output)
    return 0



class FixPlan:
    """--fix, --fix-notes and --export-fixes (see metaguard_fixes.py).

    With several files and jobs, each clang-tidy only exports its fixes to a
    temporary file; finish() merges them into --export-fixes' file and, for
    --fix, applies them with one clang-apply-replacements run. With one job
    or one file, or when no clang-apply-replacements of clang-tidy's major is
    installed, --fix / --fix-notes are passed to clang-tidy itself and the
    files are checked one at a time (serial), so that no two processes write
    the same header."""

    def __init__(self, args, files):
        self.args = args
        self.active = bool(args.fix or args.export_fixes)
        self.apply_tool = None
        self.serial = False
        self.temp = None
        self.exports = {}
        self.compile_errors = []
        if not self.active:
            return
        if args.fix:
            self.apply_tool = metaguard_fixes.find_apply_replacements(args.clang_tidy,
                                                                      args.tidy_major)
            self.serial = args.jobs == 1 or len(files) == 1 or self.apply_tool is None
            if self.apply_tool is None and len(files) > 1 and args.jobs > 1:
                print(f"metaguard-tidy: no clang-apply-replacements for {args.clang_tidy} "
                      f"found; clang-tidy applies the fixes itself, one file at a time",
                      file=sys.stderr)
        self.temp = tempfile.mkdtemp(prefix="metaguard-fixes-")
        self.exports = {source: os.path.join(self.temp, f"{n:05d}.yaml")
                        for n, source in enumerate(files)}

    def flags(self, source):
        if not self.active:
            return []
        flags = [f"--export-fixes={self.exports[source]}"]
        if self.serial:
            flags.append("--fix-notes" if self.args.fix_notes else "--fix")
        return flags

    def ran(self, source, findings):
        if self.active and any(f["check"] == "clang-diagnostic-error" for f in findings):
            self.compile_errors.append(source)

    def finish(self):
        """Writes --export-fixes' file and applies the fixes; a problem or None."""
        if not self.active:
            return None
        items = metaguard_fixes.read_exports(self.exports.values())
        if self.args.export_fixes:
            try:
                metaguard_fixes.write(items, self.args.export_fixes)
            except OSError as err:
                return f"cannot write {self.args.export_fixes}: {err.strerror}"
        if not self.args.fix or self.serial:
            return None
        # As clang-tidy's --fix without --fix-errors: nothing of a file that
        # does not compile.
        for source in self.compile_errors:
            print(f"metaguard-tidy: {source}: compiler errors; its fixes were not applied",
                  file=sys.stderr)
        skipped = {self.exports[s] for s in self.compile_errors}
        kept = metaguard_fixes.read_exports(p for p in self.exports.values() if p not in skipped)
        kept = [metaguard_fixes.as_clang_tidy_applies(item, self.args.fix_notes)
                for item in kept]
        if not kept:
            return None
        return metaguard_fixes.apply(self.apply_tool, kept, self.temp)

    def cleanup(self):
        if self.temp:
            shutil.rmtree(self.temp, ignore_errors=True)


def main(argv):
    args = parse_args(argv)
    if args.jobs < 1:
        raise ToolError("--jobs must be at least 1")
    if args.max_rounds < 1:
        raise ToolError("--max-rounds must be at least 1")
    requested = args.plugin or os.environ.get("METAGUARD_PLUGIN") or None
    builtin = metaguard_plugins.builtin_clang_tidy(requested, args.clang_tidy)
    if builtin:
        plugin, args.clang_tidy = None, builtin
        args.tidy_major = metaguard_plugins.clang_tidy_major(builtin)
    else:
        plugin = resolve_plugin(args, requested)
    if shutil.which(args.clang_tidy) is None:
        raise ToolError(f"{args.clang_tidy} not found; install it (Debian: apt-get install "
                        f"{os.path.basename(args.clang_tidy)}) or pass --clang-tidy")
    build_dir = os.path.abspath(args.build_dir)
    root = source_root(args.source_root)
    entries = database_entries(build_dir)
    files = select_files(sorted(entries), args.paths, args.ignore_unlisted)
    if not files and args.ignore_unlisted:
        print("metaguard-tidy: none of the files given is in the compile database; "
              "nothing to check", file=sys.stderr)
        return 0
    if not files:
        raise ToolError("no source file to check")
    if args.shard:
        index, count = args.shard
        files = files[index - 1::count]

    require_checks(args, plugin)

    findings, problems = [], []
    plan = FixPlan(args, files)
    try:
        # clang-tidy applying fixes itself: one file at a time.
        jobs = 1 if plan.serial and not args.whole_program else args.jobs
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            if args.whole_program:
                # Round 1 covers the whole database, not just the selected
                # files: a selected file may call into any of them.
                sources = {f: e for f, e in entries.items() if f.endswith(SOURCE_SUFFIXES)}
                whole = metaguard_wholeprogram.WholeProgram(
                    args, plugin, build_dir, sources,
                    lambda source, env: run_one(args, plugin, build_dir, source, env))
                findings, problems = whole.run(files, pool)
                if plan.active:
                    # Cached files were not run, so the fixes come from one
                    # more run of each selected file with the settled index.
                    env = {metaguard_wholeprogram.ENV_SUMMARY: whole.index_path,
                           metaguard_wholeprogram.ENV_EXPORT: ""}
                    with concurrent.futures.ThreadPoolExecutor(
                            max_workers=1 if plan.serial else args.jobs) as fix_pool:
                        for source, (file_findings, problem) in zip(files, fix_pool.map(
                                lambda source: run_one(args, plugin, build_dir, source, env,
                                                       plan.flags(source)), files)):
                            plan.ran(source, file_findings)
                            if problem:
                                problems.append(problem)
            else:
                for source, (file_findings, problem) in zip(files, pool.map(
                        lambda source: run_one(args, plugin, build_dir, source,
                                               extra=plan.flags(source)), files)):
                    findings.extend(file_findings)
                    plan.ran(source, file_findings)
                    if problem:
                        problems.append(problem)
        problem = plan.finish()
        if problem:
            problems.append(problem)
    finally:
        plan.cleanup()
    findings = locate_all(unique(findings))

    if args.format == "json":
        report = format_json(findings, files, root)
    elif args.format == "sarif":
        report = format_sarif(findings, files, root, args.docs_url)
    else:
        report = format_text(findings)
    write_report(report, args.output)
    for problem in problems:
        print(f"metaguard-tidy: {problem}", file=sys.stderr)
    if problems:
        return 2
    return 0 if (args.exit_zero or not findings) else 1


def merge_facts(argv):
    parser = argparse.ArgumentParser(
        prog="metaguard-tidy merge-facts",
        description="Merge facts files written by --whole-program or ExportSummaries (or "
                    "folders of them, or indexes) into one index for the SummaryFile option; "
                    "conflicting summaries are merged conservatively and reported.")
    parser.add_argument("facts", nargs="+", help="facts files, folders of them, or indexes")
    parser.add_argument("-o", "--output", required=True, help="the index to write")
    args = parser.parse_args(argv)
    try:
        metaguard_wholeprogram.merge_files(args.facts, args.output)
    except ValueError as err:
        raise ToolError(str(err))
    return 0


def entry_point():
    try:
        if sys.argv[1:2] == ["merge"]:
            return merge(sys.argv[2:])
        if sys.argv[1:2] == ["merge-facts"]:
            return merge_facts(sys.argv[2:])
        return main(sys.argv[1:])
    except ToolError as err:
        print(f"metaguard-tidy: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(entry_point())
