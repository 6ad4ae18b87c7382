"""--fix, --fix-notes and --export-fixes of metaguard-tidy.

As run-clang-tidy does it: every clang-tidy process exports the fixes of its
translation unit to a YAML file of its own (--export-fixes=<temp>/<n>.yaml),
never writing a source file, so that parallel runs cannot corrupt a header
two of them fix. The driver then merges the files into one YAML document in
clang-apply-replacements' format (one MainSourceFile, the Diagnostics of
every file concatenated, identical diagnostics kept once) for --export-fixes
FILE, and for --fix applies them once with clang-apply-replacements of the
same LLVM major, which de-duplicates identical replacements and refuses
conflicting ones. Without clang-apply-replacements (or with one job, or one
file) the driver instead passes --fix / --fix-notes through to clang-tidy
and runs it on one file at a time (metaguard_tidy.py decides).

The YAML is read and written as text, not with a YAML library: the driver
runs on whatever python3 a CI image has, with the standard library alone
(PyYAML is not part of it, nor installed by tools/setup.sh), and a
round trip through a parser would re-quote clang's strings anyway. LLVM's
YAML writer emits a fixed layout: "Diagnostics:" at column 0, each
diagnostic a "  - " item at column 2, its keys at column 4 ("Notes:" among
them, its items at column 6 and their "Replacements:" at column 8). Scalars
are quoted when needed, and a quoted scalar may span lines (older majors
write line breaks inside single quotes), so the text is first cut into
logical lines, joining a quoted scalar's continuation lines to the line
that opened it; only then is indentation looked at.
"""

import glob
import os
import re
import shutil
import subprocess

KEY_VALUE = re.compile(r"^(\s*(?:- )?)([A-Za-z]+):(?:\s+(.*))?$")


def _scalar_open(value):
    """Whether the scalar starting value is a quoted one left open at the end of it."""
    if not value or value[0] not in "'\"":
        return False
    return _still_open(value[0], value[1:])


def _still_open(quote, text):
    """Whether a scalar quoted with quote, continued by text, is not yet closed."""
    i = 0
    while i < len(text):
        char = text[i]
        if quote == '"' and char == "\\":
            i += 2
            continue
        if char == quote:
            if quote == "'" and text[i + 1:i + 2] == "'":  # '' is an escaped '
                i += 2
                continue
            return False
        i += 1
    return True


def logical_lines(text):
    """The lines of a YAML document, a multi-line quoted scalar joined into
    the line that opened it (with its line breaks kept)."""
    result, quote = [], None
    for line in text.splitlines():
        if quote:
            result[-1] += "\n" + line
            if not _still_open(quote, line):
                quote = None
            continue
        result.append(line)
        match = KEY_VALUE.match(line)
        if match and match.group(3) and _scalar_open(match.group(3)):
            quote = match.group(3)[0]
    return result


def indent(line):
    return len(line) - len(line.lstrip(" "))


def diagnostics(text):
    """The diagnostics of one exported YAML file, each as its logical lines."""
    items, inside = [], False
    for line in logical_lines(text):
        if not inside:
            if re.match(r"^Diagnostics:\s*$", line):
                inside = True
            continue
        if line.startswith("...") or (line and indent(line) == 0 and not line.startswith("-")):
            break
        if line.startswith("  - "):
            items.append([line])
        elif items and line.strip():
            items[-1].append(line)
    return items


def read_exports(paths):
    """Every diagnostic of the files at paths, in order, each kept once."""
    seen, result = set(), []
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as handle:
                text = handle.read()
        except FileNotFoundError:  # clang-tidy writes nothing for a clean file
            continue
        for item in diagnostics(text):
            key = "\n".join(item)
            if key not in seen:
                seen.add(key)
                result.append(item)
    return result


def render(items):
    """One document in clang-apply-replacements' format."""
    lines = ["---", "MainSourceFile:  ''"]
    if items:
        lines.append("Diagnostics:")
        for item in items:
            lines.extend(item)
    else:
        lines.append("Diagnostics:     []")
    lines.append("...")
    return "\n".join(lines) + "\n"


def write(items, path):
    temp = path + ".tmp"
    with open(temp, "w", encoding="utf-8", errors="surrogateescape") as handle:
        handle.write(render(items))
    os.replace(temp, path)


def _notes_span(item):
    """(start, end) of the lines of the diagnostic's "Notes:" list, or None."""
    for i, line in enumerate(item):
        if indent(line) == 4 and line.strip().startswith("Notes:"):
            end = i + 1
            while end < len(item) and indent(item[end]) > 4:
                end += 1
            return i + 1, end
    return None


def _has_main_fix(item):
    """Whether the diagnostic's own message (not a note) carries replacements."""
    notes = _notes_span(item)
    for i, line in enumerate(item):
        if notes and notes[0] <= i < notes[1]:
            continue
        if indent(line) == 6 and line.strip().startswith("Replacements:"):
            return not line.strip().endswith("[]")
    return False


def _note_groups(item, span):
    """The notes of the list at span, each as (first line, end)."""
    starts = [i for i in range(*span) if indent(item[i]) == 6 and item[i].lstrip().startswith("- ")]
    return [(s, (starts[k + 1] if k + 1 < len(starts) else span[1])) for k, s in enumerate(starts)]


def _note_fix_lines(item, start, end):
    """(line of "Replacements:", end of its list) inside one note, or None
    when the note has none or an empty one."""
    for i in range(start, end):
        stripped = item[i].strip()
        if indent(item[i]) in (6, 8) and re.match(r"^(- )?Replacements:", stripped):
            if stripped.endswith("[]"):
                return None
            level = indent(item[i]) + (2 if stripped.startswith("- ") else 0)
            j = i + 1
            while j < end and indent(item[j]) > level:
                j += 1
            return i, j
    return None


def as_clang_tidy_applies(item, fix_notes):
    """The diagnostic with only the fix clang-tidy's --fix would apply:
    its own, else (with --fix-notes) the fix of its only note that has one.
    clang-apply-replacements would take the first note's fix even without
    --fix-notes, so the replacements of every other note are emptied."""
    span = _notes_span(item)
    if not span:
        return item
    fixes = [f for f in (_note_fix_lines(item, s, e) for s, e in _note_groups(item, span)) if f]
    keep = None
    if not _has_main_fix(item) and fix_notes and len(fixes) == 1:
        keep = fixes[0]
    result, i = [], 0
    drop = {f[0]: f[1] for f in fixes if f != keep}
    while i < len(item):
        if i in drop:
            line = item[i]
            result.append(line[:line.index("Replacements:")] + "Replacements:    []")
            i = drop[i]
            continue
        result.append(item[i])
        i += 1
    return result


def find_apply_replacements(clang_tidy, major):
    """clang-apply-replacements of the clang-tidy's LLVM major, or None."""
    candidates = []
    resolved = shutil.which(clang_tidy)
    if resolved:
        folder = os.path.dirname(os.path.realpath(resolved))
        candidates.append(os.path.join(folder, "clang-apply-replacements"))
    if major:
        candidates += [f"clang-apply-replacements-{major}",
                       f"/usr/lib/llvm-{major}/bin/clang-apply-replacements"]
    for candidate in candidates:
        found = shutil.which(candidate)
        if found:
            return found
    return None


def apply(apply_replacements, items, temp_dir):
    """Applies the diagnostics' fixes with clang-apply-replacements; a problem or None."""
    folder = os.path.join(temp_dir, "apply")
    os.makedirs(folder, exist_ok=True)
    for path in glob.glob(os.path.join(folder, "*.yaml")):
        os.remove(path)
    write(items, os.path.join(folder, "fixes.yaml"))
    try:
        proc = subprocess.run([apply_replacements, folder], capture_output=True, text=True,
                              check=False)
    except OSError as err:
        return f"cannot run {apply_replacements}: {err}"
    if proc.returncode != 0:
        return (f"{apply_replacements} could not apply the fixes (exit {proc.returncode}): "
                f"{(proc.stdout + proc.stderr).strip()[-2000:]}")
    return None
