"""Whole-program mode of metaguard-tidy (--whole-program).

Every clang-tidy run of this mode sets METAGUARD_EXPORT_SUMMARIES, so that
the plugin writes the TU's facts file (the summaries of the functions it
defines, which functions it defines and calls (USRs), and every file it
read), and METAGUARD_SUMMARY_FILE to the merged index when there is one, so
that calls into other TUs use their summaries and the TU's own summaries
take them in.

Round 1 runs every TU that changed (all of them the first time), with the
previous index. Then, until nothing changes: the facts files are merged into
the index (conflicting summaries merged conservatively, each conflict
reported once), and a TU is run again when the summaries of the functions it
calls in other TUs differ from those it was run with, if its findings are
wanted (it is selected) or its own summaries are (another TU calls a function
it defines). A chain of calls through k files settles in about k + 1 rounds;
an edit that leaves a file's summaries as they were re-checks nothing else.

Everything is cached in --cache-dir (default <build>/metaguard-whole-program):

  state.json     per TU: its key, the files it read (size, mtime, sha256), its
                 last findings, and the summaries they were computed with (a
                 hash)
  facts/*.json   the facts file of each TU (written by the plugin)
  index.json     the merged index (SummaryFile can name it)

A TU is re-summarised when its key changes (its compile command, the
plugin, the check filter and options, the .clang-tidy files above it) or when
a file it read changed: same size and modification time means unchanged;
otherwise its sha256 decides, so touching a file costs a hash, not a parse.
Headers are covered because the plugin lists every file the preprocessor
entered, like a compiler's .d file. A missing or corrupt cache only costs
time.
"""

import hashlib
import json
import os
import shutil
import sys

STATE_VERSION = 3
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


# --- The merge of checks/utils/summaries/SummaryMerge.cpp, in Python. ---
#
# It knows no fact by name: every facts file carries the rules of its facts
# ("merge_rules": key -> {"merge": "agree" | "all" | "each", ...}), written by
# the plugin from its facets, and the same algorithm reads them here.


def _fact_value(entry, key, rule):
    """An "agree" fact's value (its default when absent); an "all" fact's
    yes or no (anything but true is no)."""
    if rule.get("merge") == "agree":
        return entry.get(key, rule.get("default"))
    return entry.get(key) is True


def _is_default(value, rule):
    return value == (rule.get("default") if rule.get("merge") == "agree" else False)


def _items(entry, key, rule):
    """The items of an "each" list that state some fact, by their number."""
    by, facts = rule.get("by"), rule.get("facts", {})
    result = {}
    items = entry.get(key)
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get(by), int) and \
                not isinstance(item.get(by), bool) and item[by] >= 0 and \
                any(not _is_default(_fact_value(item, k, r), r) for k, r in facts.items()):
            result[item[by]] = item
    return result


def _merge_fact(merged, a, b, key, rule):
    va, vb = _fact_value(a, key, rule), _fact_value(b, key, rule)
    if rule.get("merge") == "agree":
        value = va if va == vb else rule.get("disputed")
    else:
        value = va and vb
    if value != va or _is_default(value, rule):
        for detail in rule.get("details", []):
            merged.pop(detail, None)
    merged[key] = value


def disagreements(a, b, rules):
    keys = []
    for key, rule in rules.items():
        if rule.get("merge") != "each":
            if _fact_value(a, key, rule) != _fact_value(b, key, rule):
                keys.append(key)
            continue
        items_a, items_b = _items(a, key, rule), _items(b, key, rule)
        for number in sorted(set(items_a) | set(items_b)):
            for fact, fact_rule in rule.get("facts", {}).items():
                if _fact_value(items_a.get(number, {}), fact, fact_rule) != \
                        _fact_value(items_b.get(number, {}), fact, fact_rule):
                    keys.append(f"{key}[{number}].{fact}")
    return sorted(keys)


def merge_conservatively(a, b, rules):
    """What both say; facts they disagree on become unknown or no."""
    merged = dict(a)
    if not merged.get("name"):
        merged["name"] = b.get("name", "")
    for key, rule in rules.items():
        if rule.get("merge") != "each":
            _merge_fact(merged, a, b, key, rule)
            continue
        items_a, items_b = _items(a, key, rule), _items(b, key, rule)
        items = []
        for number in sorted(set(items_a) & set(items_b)):
            item = dict(items_a[number])
            for fact, fact_rule in rule.get("facts", {}).items():
                _merge_fact(item, items_a[number], items_b[number], fact, fact_rule)
            if any(not _is_default(item[f], r) for f, r in rule.get("facts", {}).items()):
                items.append(item)
        merged[key] = items
    return merged


def merge_rules(all_facts):
    """The "merge_rules" of facts files, joined (the first file naming a key
    decides its rule)."""
    rules = {}
    for facts in all_facts:
        for key, rule in facts.get("merge_rules", {}).items():
            if isinstance(rule, dict):
                rules.setdefault(key, rule)
    return rules


def merge_summaries(facts_by_source, rules):
    """[(source name, [summary, ...])] in order, and the facts' merge rules
    -> (merged list by USR, conflicts)."""
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
            keys = disagreements(merged[usr], summary, rules)
            if keys:
                conflict_facts.setdefault(usr, set()).update(keys)
            merged[usr] = merge_conservatively(merged[usr], summary, rules)
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
    if not isinstance(facts.get("overrides", {}), dict) or \
            not isinstance(facts.get("stores", {}), dict) or \
            not isinstance(facts.get("merge_rules", {}), dict):
        return None
    return facts


def merge_overrides(all_facts, key="overrides"):
    """The "overrides" of facts files (method -> the overrides their TUs
    define), joined: a virtual call in one TU may run an override another
    TU defines. With key="stores", the same for the functions TUs store into
    a std::function variable, member or table, which a call through it in
    another TU may run."""
    merged = {}
    for facts in all_facts:
        for base, by in facts.get(key, {}).items():
            if isinstance(by, list):
                merged.setdefault(base, set()).update(u for u in by if isinstance(u, str))
    return {base: sorted(by) for base, by in sorted(merged.items())}


def expand_uses(uses, overrides, stores=None):
    """The USRs a TU calls: those it lists, the functions stored into the
    std::function slots among them, and the overrides (at any depth) of the
    methods among those, which its virtual calls may run."""
    result = {u for u in uses if isinstance(u, str)}
    for slot in list(result):
        result.update((stores or {}).get(slot, []))
    work = list(result)
    while work:
        for override in overrides.get(work.pop(), []):
            if override not in result:
                result.add(override)
                work.append(override)
    return result


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
        self.parsed = {}
        # Method -> overrides, of the index the current round checks with.
        self.overrides = {}
        # std::function slot -> the functions stored there, likewise.
        self.stores = {}

    def facts_of(self, path):
        """The facts file at path (read_facts), parsed once per run: the
        rounds merge every TU's facts each time, and only re-run TUs change."""
        if path not in self.parsed:
            self.parsed[path] = read_facts(path)
        return self.parsed[path]

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
        # The checks' code: the plugin, or the clang-tidy they are built into.
        checks = self.plugin or shutil.which(args.clang_tidy) or args.clang_tidy
        plugin_stat = self.hashes.stat(checks)
        return sha256_text(json.dumps(
            [self.entries[source], os.path.realpath(checks), plugin_stat,
             args.clang_tidy, args.checks, args.config, configs, args.extra_arg],
            sort_keys=True))

    def facts_path(self, source):
        name = os.path.basename(source)
        return os.path.join(self.cache_dir, "facts",
                            f"{name}-{sha256_text(source)[:16]}.json")

    def still_valid(self, record, key):
        if not record or record.get("key") != key or "findings" not in record \
                or "dep" not in record:
            return False
        if self.facts_of(record.get("facts", "")) is None:
            return False
        return all(isinstance(stamp, list) and len(stamp) == 3 and
                   self.hashes.unchanged(path, stamp)
                   for path, stamp in record.get("inputs", {}).items())

    def summarise(self, source, key, index, functions):
        """Runs clang-tidy on one TU, exporting its facts and checking with
        index (the path of the index `functions` came from, or None): its
        new record, or None; and a problem, or None."""
        before = self.hashes.stat(source)
        facts_path = self.facts_path(source)
        try:
            os.remove(facts_path)
        except OSError:
            pass
        findings, problem = self.run_one(
            source, {ENV_EXPORT: facts_path, ENV_SUMMARY: index or ""})
        facts = self.parsed[facts_path] = read_facts(facts_path)
        if facts is None:
            return None, problem or f"{source}: the plugin wrote no facts file ({facts_path})"
        inputs = {}
        for path in sorted(set(facts.get("inputs", [])) | {source}):
            if not isinstance(path, str):
                continue
            stamp, digest = self.hashes.stat(path), self.hashes.sha(path)
            if stamp is not None and digest is not None:
                inputs[path] = stamp + [digest]
        record = {"key": key, "facts": facts_path, "inputs": inputs, "findings": findings,
                  "dep": used_summaries(facts, functions, self.overrides,
                                                self.stores)}
        # Edited while clang-tidy read it: these facts may be of the old text.
        self.hashes.stats.pop(source, None)
        # A TU that clang-tidy could not check cleanly is tried again next run.
        if self.hashes.stat(source) != before or problem:
            record["key"] = "stale"
        return record, problem

    def write_index(self, records):
        """Merges the facts of every TU into index.json: (summaries by USR,
        conflicts)."""
        facts = {s: self.facts_of(records[s]["facts"]) or {} for s in sorted(records)}
        rules = merge_rules(facts.values())
        functions, conflicts = merge_summaries(
            [(display(s), facts[s].get("functions", [])) for s in sorted(facts)], rules)
        self.overrides = merge_overrides(facts.values())
        self.stores = merge_overrides(facts.values(), "stores")
        write_json(self.index_path, {"metaguard_facts_index": 1, "functions": functions,
                                     "merge_rules": rules, "overrides": self.overrides,
                                     "stores": self.stores,
                                     "conflicts": conflicts})
        self.hashes.hashes.pop(self.index_path, None)
        return {f["usr"]: f for f in functions}, conflicts, facts

    def previous_index(self, state):
        """The summaries of the index the state describes, or None."""
        if not state.get("index_sha") or self.hashes.sha(self.index_path) != state["index_sha"]:
            return None
        index = read_facts(self.index_path, index_too=True)
        if index is None:
            return None
        self.overrides = merge_overrides([index])
        self.stores = merge_overrides([index], "stores")
        return {f["usr"]: f for f in index.get("functions", [])
                if isinstance(f, dict) and isinstance(f.get("usr"), str)}

    def run_all(self, todo, keys, records, index, functions, pool, problems):
        for source, (record, problem) in zip(todo, pool.map(
                lambda s: self.summarise(s, keys[s], index, functions), todo)):
            if problem:
                problems.append(problem)
            if record:
                records[source] = record
            else:
                records.pop(source, None)

    def run(self, selected, pool):
        """Returns (findings of the selected files, problems).

        Round 1 runs the TUs whose contents or key changed, checking them
        with the previous index at the same time. Each later round merges the
        facts into the index and re-runs the TUs whose findings or summaries
        may change: those whose callees in other TUs now have different
        summaries than the index they were run with, if they are selected or
        define a function another TU calls. Every run exports facts, and a
        run with the index folds the callees' summaries into the TU's own,
        so a chain of calls through k files settles after about k + 1
        rounds."""
        state = self.load_state()
        records = state["tus"]
        universe = sorted(self.entries)
        keys = {source: self.tu_key(source) for source in universe}
        stale = [s for s in universe if not self.still_valid(records.get(s), keys[s])]
        previous = self.previous_index(state)
        problems = []
        self.run_all(stale, keys, records, self.index_path if previous is not None else None,
                     previous or {}, pool, problems)
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

        wanted = set(selected)
        rechecked, rounds = {}, 1  # an ordered set
        while True:
            functions, conflicts, facts = self.write_index(records)
            called_elsewhere = {}
            for source, tu_facts in facts.items():
                for usr in expand_uses(tu_facts.get("uses", []), self.overrides,
                                       self.stores):
                    called_elsewhere.setdefault(usr, set()).add(source)
            todo = [s for s in sorted(records)
                    if records[s].get("dep") != used_summaries(facts[s], functions,
                                                               self.overrides, self.stores)
                    and (s in wanted or any(called_elsewhere.get(usr, set()) - {s}
                                            for usr in facts[s].get("defines", [])))]
            if not todo:
                break
            if rounds >= self.args.max_rounds:
                shown = ", ".join(display(s) for s in todo[:20])
                self.say(f"summaries still changed after {rounds} rounds (--max-rounds): "
                         f"{len(todo)} files keep the findings and summaries of the last "
                         f"round: {shown}")
                break
            rounds += 1
            self.run_all(todo, keys, records, self.index_path, functions, pool, problems)
            rechecked.update(dict.fromkeys(todo))
        for conflict in conflicts:
            self.say(conflict_message(conflict))
        state["index_sha"] = self.hashes.sha(self.index_path)

        findings, single = [], []
        for source in selected:
            if source in records:
                findings.extend(records[source]["findings"])
            elif source not in self.entries:
                # Selected but not a source round 1 covers (a .c file named on
                # the command line): checked once, with the index.
                single.append(source)
        for file_findings, problem in pool.map(lambda s: self.run_one(
                s, {ENV_SUMMARY: self.index_path, ENV_EXPORT: ""}), single):
            findings.extend(file_findings)
            if problem:
                problems.append(problem)
        checked = list(rechecked) + single
        names = "".join(f"{', ' if i else ': '}{display(s)}" for i, s in enumerate(checked[:20]))
        more = f" and {len(checked) - 20} more" if len(checked) > 20 else ""
        hops = f", {rounds - 1} rounds" if rounds > 2 else ""
        self.say(f"checked {len(checked)} file{'s' if len(checked) != 1 else ''} with the "
                 f"summaries of other translation units{names}{more} (index: "
                 f"{display(self.index_path)}{hops})")
        try:
            write_json(self.state_path, state)
        except OSError as err:
            self.say(f"cannot write {self.state_path}: {err.strerror}; the next run starts over")
        return findings, problems


def used_summaries(facts, functions, overrides, stores=None):
    """What a TU's findings and summaries depend on besides its own files: the
    summaries (from the index it is checked with) of the functions it calls
    and has no body for, of the functions stored where its calls through a
    std::function look, and of the overrides its virtual calls may run, as a
    hash."""
    used = sorted((usr, functions.get(usr))
                  for usr in expand_uses(facts.get("uses", []), overrides, stores))
    return sha256_text(json.dumps(used, sort_keys=True))


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
    sources, all_facts = [], []
    for path in files:
        facts = read_facts(path, index_too=True)
        if facts is None:
            raise ValueError(f"{path}: not a metaguard facts file or index")
        functions = [f for f in facts.get("functions", []) if isinstance(f, dict)]
        if functions and not facts.get("merge_rules"):
            raise ValueError(f"{path}: has no \"merge_rules\": written by an older metaguard; "
                             "re-create it (metaguard-tidy --whole-program re-summarises "
                             "its own cache)")
        sources.append((os.path.basename(path), functions))
        all_facts.append(facts)
    rules = merge_rules(all_facts)
    functions, conflicts = merge_summaries(sources, rules)
    for conflict in conflicts:
        print(f"metaguard-tidy: {conflict_message(conflict)}", file=log)
    write_json(os.path.abspath(output), {"metaguard_facts_index": 1, "functions": functions,
                                         "merge_rules": rules,
                                         "overrides": merge_overrides(all_facts),
                                         "stores": merge_overrides(all_facts, "stores"),
                                         "conflicts": conflicts})
    return len(conflicts)
