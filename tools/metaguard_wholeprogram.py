"""Whole-program mode of metaguard-tidy (--whole-program).

Pass 1 runs the checks on every translation unit of the compile database with
METAGUARD_EXPORT_SUMMARIES set, so that the plugin writes the TU's facts file:
the summaries of the functions it defines, which functions it defines and
calls (USRs), and every file it read. Those files are merged into one index
(conflicting summaries merged conservatively, each conflict reported once).
Pass 2 runs the checks again, with METAGUARD_SUMMARY_FILE pointing at the
index, on the selected files that call a function defined in another TU; the
others keep their pass-1 findings, which are the same.

An edited file is checked once, not twice, when the plugin's exported
summaries do not take in other TUs' summaries (its facts files say
"folds_external_summaries": false): pass 1 then runs it with the previous
index too, and its findings stand if what it calls did not change meanwhile.

Everything is cached in --cache-dir (default <build>/metaguard-whole-program):

  state.json     per TU: its key, the files it read (size, mtime, sha256),
                 its pass-1 findings, and its pass-2 findings with the key of
                 what they depend on
  facts/*.json   the facts file of each TU (written by the plugin)
  index.json     the merged index (what pass 2 reads; SummaryFile can name it)

A TU is re-summarised when its key changes (its compile command, the
plugin, the check filter and options, the .clang-tidy files above it) or when
a file it read changed: same size and modification time means unchanged;
otherwise its sha256 decides, so touching a file costs a hash, not a parse.
Headers are covered because the plugin lists every file the preprocessor
entered, like a compiler's .d file. A selected TU is re-checked in pass 2
when it changed or when a TU defining a function it calls changed. A missing
or corrupt cache only costs time.
"""

import hashlib
import json
import os
import sys

STATE_VERSION = 1
ENV_EXPORT = "METAGUARD_EXPORT_SUMMARIES"
ENV_SUMMARY = "METAGUARD_SUMMARY_FILE"


def sha256_text(text):
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


class FileHashes:
    """Content hashes of files, each file read at most once per run."""

    def __init__(self):
        self.stats, self.hashes = {}, {}

    def stat(self, path):
        if path not in self.stats:
            try:
                st = os.stat(path)
                self.stats[path] = [st.st_size, st.st_mtime_ns]
            except OSError:
                self.stats[path] = None
        return self.stats[path]

    def sha(self, path):
        if path not in self.hashes:
            try:
                with open(path, "rb") as handle:
                    self.hashes[path] = hashlib.sha256(handle.read()).hexdigest()
            except OSError:
                self.hashes[path] = None
        return self.hashes[path]

    def unchanged(self, path, recorded):
        """recorded: [size, mtime_ns, sha256]; refreshes the stamp when only it moved."""
        now = self.stat(path)
        if now is None:
            return False
        if now == recorded[:2]:
            return True
        if self.sha(path) == recorded[2]:
            recorded[:2] = now
            return True
        return False


# --- The merge rule of checks/utils/SummaryMerge.cpp, in Python. ---

ENUM_FACTS = {"default_device": "unchanged", "returned_device_map": "none"}
BOOL_FACTS = {"loads_weights": ("loads_at", "loader"),
              "opens_meta_scope": ("opens_meta_scope_at",),
              "returns_dispatched_model": ("dispatched_at",)}
ARG_FACTS = ("moves", "mutates_parameters", "removes_hooks")


def _args(summary):
    result = {}
    for arg in summary.get("args", []):
        if isinstance(arg, dict) and isinstance(arg.get("index"), int):
            if any(arg.get(fact) is True for fact in ARG_FACTS):
                result[arg["index"]] = arg
    return result


def disagreements(a, b):
    keys = [k for k, default in ENUM_FACTS.items() if a.get(k, default) != b.get(k, default)]
    keys += [k for k in BOOL_FACTS if bool(a.get(k, False)) != bool(b.get(k, False))]
    args_a, args_b = _args(a), _args(b)
    for index in sorted(set(args_a) | set(args_b)):
        for fact in ARG_FACTS:
            if (args_a.get(index, {}).get(fact, False) is True) != \
                    (args_b.get(index, {}).get(fact, False) is True):
                keys.append(f"args[{index}].{fact}")
    return sorted(keys)


def merge_conservatively(a, b):
    """What both say; facts they disagree on become unknown or false."""
    merged = dict(a)
    if not merged.get("name"):
        merged["name"] = b.get("name", "")
    for key, default in ENUM_FACTS.items():
        if a.get(key, default) != b.get(key, default):
            merged[key] = "unknown"
            if key == "default_device":
                merged.pop("default_device_at", None)
    for key, extras in BOOL_FACTS.items():
        merged[key] = bool(a.get(key, False)) and bool(b.get(key, False))
        if not merged[key]:
            for extra in extras:
                merged.pop(extra, None)
    args_a, args_b = _args(a), _args(b)
    args = []
    for index in sorted(set(args_a) & set(args_b)):
        arg = dict(args_a[index])
        for fact in ARG_FACTS:
            arg[fact] = args_a[index].get(fact) is True and args_b[index].get(fact) is True
        if any(arg[fact] for fact in ARG_FACTS):
            args.append(arg)
    merged["args"] = args
    return merged


def merge_summaries(facts_by_source):
    """[(source name, [summary, ...])] in order -> (merged list by USR, conflicts)."""
    merged, sources, conflict_facts = {}, {}, {}
    for source, functions in facts_by_source:
        for summary in functions:
            usr = summary.get("usr")
            if not isinstance(usr, str) or not usr:
                continue
            sources.setdefault(usr, []).append(source)
            if usr not in merged:
                merged[usr] = summary
                continue
            keys = disagreements(merged[usr], summary)
            if keys:
                conflict_facts.setdefault(usr, set()).update(keys)
            merged[usr] = merge_conservatively(merged[usr], summary)
    conflicts = []
    for usr in sorted(conflict_facts):
        names = []
        for source in sources[usr]:
            if source not in names:
                names.append(source)
        conflicts.append({"usr": usr, "name": merged[usr].get("name", ""),
                          "sources": names, "facts": sorted(conflict_facts[usr])})
    return [merged[usr] for usr in sorted(merged)], conflicts


def conflict_message(conflict):
    return (f"conflicting summaries of '{conflict['name']}' ({conflict['usr']}) in "
            f"{', '.join(conflict['sources'])} disagree on {', '.join(conflict['facts'])}; "
            "using only the facts they agree on")


# --- Files. ---

def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temp = f"{path}.tmp-{os.getpid()}"
    with open(temp, "w", encoding="utf-8") as handle:
        json.dump(value, handle, indent=1, sort_keys=True)
        handle.write("\n")
    os.replace(temp, path)


def read_facts(path, index_too=False):
    """The facts file the plugin wrote (or, index_too, a merged index), or
    None when missing or not usable."""
    try:
        with open(path, encoding="utf-8") as handle:
            facts = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(facts, dict):
        return None
    if facts.get("metaguard_facts") != 1 and not (
            index_too and facts.get("metaguard_facts_index") == 1):
        return None
    for key in ("functions", "defines", "uses", "inputs"):
        if not isinstance(facts.get(key, []), list):
            return None
    return facts


def clang_tidy_files_above(source):
    """The .clang-tidy files clang-tidy may read for source, nearest first."""
    found, folder = [], os.path.dirname(source)
    while True:
        candidate = os.path.join(folder, ".clang-tidy")
        if os.path.isfile(candidate):
            found.append(candidate)
        parent = os.path.dirname(folder)
        if parent == folder:
            return found
        folder = parent


def display(path):
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


class WholeProgram:
    def __init__(self, args, plugin, build_dir, entries, run_one, log=sys.stderr):
        """entries: {source: [compile command entries]} of the whole database;
        run_one(source, env) -> (findings, problem) runs clang-tidy once."""
        self.args, self.plugin, self.build_dir = args, plugin, build_dir
        self.entries, self.run_one, self.log = entries, run_one, log
        self.cache_dir = os.path.abspath(
            args.cache_dir or os.path.join(build_dir, "metaguard-whole-program"))
        self.state_path = os.path.join(self.cache_dir, "state.json")
        self.index_path = os.path.join(self.cache_dir, "index.json")
        self.hashes = FileHashes()

    def say(self, message):
        print(f"metaguard-tidy: whole-program: {message}", file=self.log)

    def load_state(self):
        try:
            with open(self.state_path, encoding="utf-8") as handle:
                state = json.load(handle)
            if state.get("version") == STATE_VERSION and isinstance(state.get("tus"), dict) \
                    and all(isinstance(r, dict) for r in state["tus"].values()):
                return state
            self.say(f"{self.state_path}: from another version; re-summarising everything")
        except FileNotFoundError:
            pass
        except (OSError, ValueError, AttributeError) as err:
            self.say(f"{self.state_path}: unreadable ({err}); re-summarising everything")
        return {"version": STATE_VERSION, "tus": {}}

    def tu_key(self, source):
        """Everything besides file contents that decides a TU's facts and findings."""
        args = self.args
        config_files = [args.config_file] if args.config_file else \
            ([] if args.config else clang_tidy_files_above(source))
        configs = []
        for path in config_files:
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    configs.append([path, handle.read()])
            except OSError:
                configs.append([path, None])
        plugin_stat = self.hashes.stat(self.plugin)
        return sha256_text(json.dumps(
            [self.entries[source], os.path.realpath(self.plugin), plugin_stat,
             args.clang_tidy, args.checks, args.config, configs, args.extra_arg],
            sort_keys=True))

    def facts_path(self, source):
        name = os.path.basename(source)
        return os.path.join(self.cache_dir, "facts",
                            f"{name}-{sha256_text(source)[:16]}.json")

    def still_valid(self, record, key):
        if not record or record.get("key") != key or "findings1" not in record:
            return False
        if read_facts(record.get("facts", "")) is None:
            return False
        return all(isinstance(stamp, list) and len(stamp) == 3 and
                   self.hashes.unchanged(path, stamp)
                   for path, stamp in record.get("inputs", {}).items())

    def summarise(self, source, key, old_index):
        """Pass 1 on one TU: its findings and facts; (record, problem).
        old_index: the previous run's index to check with at the same time."""
        before = self.hashes.stat(source)
        facts_path = self.facts_path(source)
        try:
            os.remove(facts_path)
        except OSError:
            pass
        findings, problem = self.run_one(
            source, {ENV_EXPORT: facts_path, ENV_SUMMARY: old_index or ""})
        facts = read_facts(facts_path)
        if facts is None:
            return None, problem or f"{source}: the plugin wrote no facts file ({facts_path})"
        inputs = {}
        for path in sorted(set(facts.get("inputs", [])) | {source}):
            if not isinstance(path, str):
                continue
            stamp, digest = self.hashes.stat(path), self.hashes.sha(path)
            if stamp is not None and digest is not None:
                inputs[path] = stamp + [digest]
        record = {"key": key, "facts": facts_path, "inputs": inputs, "findings1": findings,
                  "with_index": bool(old_index)}
        # Edited while clang-tidy read it: these facts may be of the old text.
        self.hashes.stats.pop(source, None)
        # A TU that clang-tidy could not check cleanly is tried again next run.
        if self.hashes.stat(source) != before or problem:
            record["key"] = "stale"
        return record, problem

    @staticmethod
    def external(source, uses, definers, versions):
        """The functions source calls that other TUs define, with those TUs'
        versions: what its pass-2 findings depend on besides itself."""
        return sorted(
            (usr, [(d, versions.get(d)) for d in definers[usr] if d != source])
            for usr in set(uses) if any(d != source for d in definers.get(usr, [])))

    @staticmethod
    def definers(facts):
        result = {}
        for source in sorted(facts):
            for usr in facts[source].get("defines", []):
                result.setdefault(usr, []).append(source)
        return result

    @staticmethod
    def version(record):
        """Identifies the contents a TU's facts came from."""
        return sha256_text(json.dumps([record.get("key"), sorted(
            (path, stamp[2]) for path, stamp in record.get("inputs", {}).items())]))

    def run(self, selected, pool):
        """Returns (findings of the selected files, problems)."""
        state = self.load_state()
        records = state["tus"]
        universe = sorted(self.entries)
        keys = {source: self.tu_key(source) for source in universe}
        stale = [s for s in universe if not self.still_valid(records.get(s), keys[s])]
        # Check the edited files with the previous index while summarising
        # them, when that index is the one this state describes and the
        # plugin's summaries do not depend on it.
        old_index = None
        if state.get("folds") is False and state.get("index_sha") and \
                self.hashes.sha(self.index_path) == state["index_sha"]:
            old_index = self.index_path
        old_facts = {s: read_facts(r.get("facts", "")) or {} for s, r in records.items()}
        old_definers = self.definers(old_facts)
        old_versions = {s: self.version(r) for s, r in records.items()}
        problems = []
        for source, (record, problem) in zip(
                stale, pool.map(lambda s: self.summarise(s, keys[s], old_index), stale)):
            if problem:
                problems.append(problem)
            if record and record["with_index"]:
                uses = (read_facts(record["facts"]) or {}).get("uses", [])
                record["combined_dep"] = sha256_text(json.dumps([self.version(record), self.external(
                    source, uses, old_definers, old_versions)]))
            if record:
                records[source] = record
            else:
                records.pop(source, None)
        for source in list(records):
            if source not in self.entries:
                del records[source]
        if stale:
            shown = ", ".join(display(s) for s in stale[:20])
            more = f" and {len(stale) - 20} more" if len(stale) > 20 else ""
            self.say(f"re-summarised {len(stale)} of {len(universe)} translation units: "
                     f"{shown}{more}")
        else:
            self.say(f"re-summarised 0 of {len(universe)} translation units (all cached)")

        facts = {s: read_facts(records[s]["facts"]) or {} for s in sorted(records)}
        functions, conflicts = merge_summaries(
            [(display(s), facts[s].get("functions", [])) for s in sorted(facts)])
        for conflict in conflicts:
            self.say(conflict_message(conflict))
        write_json(self.index_path, {"metaguard_facts_index": 1, "functions": functions,
                                     "conflicts": conflicts})
        self.hashes.hashes.pop(self.index_path, None)
        state["index_sha"] = self.hashes.sha(self.index_path)
        state["folds"] = any(f.get("folds_external_summaries", True) is not False
                             for f in facts.values())
        definers = self.definers(facts)
        versions = {s: self.version(r) for s, r in records.items()}
        for source, record in records.items():
            # Checked with the previous index in pass 1: final if what it
            # calls is defined by the same, unchanged TUs as then.
            combined = record.pop("combined_dep", None)
            external = self.external(source, facts[source].get("uses", []), definers, versions)
            if combined and external and combined == sha256_text(
                    json.dumps([versions[source], external])):
                record["pass2"] = {"dep": combined, "findings": record["findings1"]}

        todo, findings = [], []
        for source in selected:
            record = records.get(source)
            if source not in self.entries:
                # Selected but not a source pass 1 covers (a .c file named on
                # the command line): checked once, with the index.
                todo.append((source, None))
                continue
            if not record:
                continue  # pass 1 failed on it, and said so
            external = self.external(source, facts[source].get("uses", []), definers, versions)
            if not external:
                record.pop("pass2", None)
                findings.extend(record["findings1"])
                continue
            dep = sha256_text(json.dumps([versions[source], external]))
            cached = record.get("pass2")
            if isinstance(cached, dict) and cached.get("dep") == dep:
                findings.extend(cached.get("findings", []))
            else:
                todo.append((source, dep))
        for (source, dep), (file_findings, problem) in zip(
                todo, pool.map(lambda item: self.run_one(
                    item[0], {ENV_SUMMARY: self.index_path, ENV_EXPORT: ""}), todo)):
            findings.extend(file_findings)
            if problem:
                problems.append(problem)
            elif dep:
                records[source]["pass2"] = {"dep": dep, "findings": file_findings}
        names = "".join(f"{', ' if i else ': '}{display(s)}" for i, (s, _) in enumerate(todo[:20]))
        more = f" and {len(todo) - 20} more" if len(todo) > 20 else ""
        self.say(f"checked {len(todo)} file{'s' if len(todo) != 1 else ''} with the summaries "
                 f"of other translation units{names}{more} (index: {display(self.index_path)})")
        try:
            write_json(self.state_path, state)
        except OSError as err:
            self.say(f"cannot write {self.state_path}: {err.strerror}; the next run starts over")
        return findings, problems


def merge_files(paths, output, log=sys.stderr):
    """`metaguard-tidy merge-facts`: facts files (or folders of them, or
    indexes) -> one index, e.g. the facts of CI shards. Returns the number of
    conflicts; raises ValueError naming a file that is not a facts file."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            files += sorted(os.path.join(path, name) for name in os.listdir(path)
                            if name.endswith(".json"))
        else:
            files.append(path)
    sources = []
    for path in files:
        facts = read_facts(path, index_too=True)
        if facts is None:
            raise ValueError(f"{path}: not a metaguard facts file or index")
        functions = [f for f in facts.get("functions", []) if isinstance(f, dict)]
        sources.append((os.path.basename(path), functions))
    functions, conflicts = merge_summaries(sources)
    for conflict in conflicts:
        print(f"metaguard-tidy: {conflict_message(conflict)}", file=log)
    write_json(os.path.abspath(output), {"metaguard_facts_index": 1, "functions": functions,
                                         "conflicts": conflicts})
    return len(conflicts)
