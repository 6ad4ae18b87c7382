"""SARIF 2.1.0 for code-scanning UIs (GitHub code scanning in particular).

Every metaguard rule is described from its page in docs/checks/ and listed
whether or not it fired; there is one page per check of checks/Checks.def
(test/tools/check-list.test holds them to it). Locations are relative to the
source root (uriBaseId %SRCROOT%) so the report does not depend on where the
tool ran; files outside the root get file:// URIs. Each result carries a
fingerprint that survives unrelated edits, its notes as related locations that
the message links to, and the clang-tidy diagnostic it came from (in its
property bag) so that shard reports can be merged back into one.
"""

import glob
import hashlib
import os
import re
import urllib.parse

SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "metaguardFinding/v1"
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
RULE_TAGS = ["correctness", "metaguard", "libtorch"]


def docs_dir():
    """docs/checks in the source tree, or share/metaguard/checks when installed."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("METAGUARD_DOCS_DIR", ""),
                  os.path.join(here, "..", "docs", "checks"),
                  os.path.join(here, "..", "..", "share", "metaguard", "checks")]
    for path in candidates:
        if path and os.path.isdir(path):
            return os.path.normpath(path)
    return None


def _plain(markdown):
    """Markdown to plain text, enough for descriptions: no emphasis or code marks."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    return re.sub(r"\*\*|`", "", text)


def _intro(markdown):
    """The page's text between its title and its first section."""
    body = markdown.split("\n", 1)[1] if "\n" in markdown else ""
    return body.split("\n## ", 1)[0].strip()


def _first_clause(text):
    paragraph = " ".join(text.split("\n\n", 1)[0].split())
    match = re.match(r"(.+?)[:.](\s|$)", paragraph)
    return match.group(1) if match else paragraph


def rule_name(rule_id):
    """A readable name distinct from the id (SARIF wants them to differ)."""
    words = rule_id.removeprefix("metaguard-").replace(".", "-").split("-")
    return "".join(word[:1].upper() + word[1:] for word in words if word)


def rule_from_page(path, docs_url):
    with open(path, encoding="utf-8") as handle:
        markdown = handle.read()
    rule_id = os.path.splitext(os.path.basename(path))[0]
    intro = _plain(_intro(markdown))
    rule = {
        "id": rule_id,
        "name": rule_name(rule_id),
        "shortDescription": {"text": _first_clause(intro)},
        "fullDescription": {"text": " ".join(intro.split())},
        "help": {"text": _plain(markdown), "markdown": markdown},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": RULE_TAGS},
    }
    if docs_url:
        rule["helpUri"] = docs_url + rule_id + ".md"
    return rule


def foreign_rule(rule_id):
    """A rule that fired but is not metaguard's (a compiler error, another check)."""
    if rule_id.startswith("clang-diagnostic-"):
        what = "a compiler diagnostic (the file did not compile as the database says)"
    elif rule_id.startswith("metaguard-"):
        what = ("a metaguard check whose page was not found (set METAGUARD_DOCS_DIR to "
                "metaguard's docs/checks folder)")
    else:
        what = "a clang-tidy check that is not part of metaguard"
    text = f"{rule_id}: {what}."
    return {
        "id": rule_id,
        "name": rule_name(rule_id),
        "shortDescription": {"text": f"{rule_id} (reported by clang-tidy)"},
        "fullDescription": {"text": text},
        "help": {"text": text, "markdown": f"`{rule_id}`: {what}."},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": ["clang-tidy"]},
    }


def tool_rules(fired, docs_url):
    """Every documented metaguard rule, plus any other rule that fired; sorted by id."""
    rules = {}
    folder = docs_dir()
    if folder:
        for page in sorted(glob.glob(os.path.join(folder, "metaguard-*.md"))):
            rule = rule_from_page(page, docs_url)
            rules[rule["id"]] = rule
    for rule_id in fired:
        rules.setdefault(rule_id, foreign_rule(rule_id))
    return [rules[key] for key in sorted(rules)]


def inside(root, path):
    """True when path is root or below it (not merely sharing a name prefix)."""
    return os.path.commonpath([root, path]) == root


def file_uri(path):
    return "file://" + urllib.parse.quote(path, safe="/")


def artifact_location(path, root):
    path = os.path.realpath(path)
    if inside(root, path):
        relative = os.path.relpath(path, root).replace(os.sep, "/")
        return {"uri": urllib.parse.quote(relative, safe="/"), "uriBaseId": SRCROOT}
    return {"uri": file_uri(path)}


def relative_key(path, root):
    path = os.path.realpath(path)
    return os.path.relpath(path, root) if inside(root, path) else path


def _escape(text):
    """SARIF message text: literal brackets are escaped so they are not links."""
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _location(diag, root):
    return {"physicalLocation": {"artifactLocation": artifact_location(diag["file"], root),
                                 "region": dict(diag["region"])}}


def fingerprints(findings, root):
    """rule + relative path + the flagged line's text + which repeat of it this is.

    Line numbers are left out on purpose: a line inserted above a finding must
    not make it look new.
    """
    seen, prints = {}, []
    for finding in findings:
        key = (finding["check"], relative_key(finding["file"], root), finding["line_text"])
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        digest = hashlib.sha256("\0".join(map(str, key + (occurrence,))).encode()).hexdigest()
        prints.append(digest[:32])
    return prints


def _result(finding, rule_index, fingerprint, root):
    message = _escape(finding["message"])
    if finding["notes"]:
        links = "; ".join(f"[{_escape(note['message'])}]({number})"
                          for number, note in enumerate(finding["notes"], start=1))
        message += f" (see {links})"
    result = {"ruleId": finding["check"], "ruleIndex": rule_index,
              "level": "error" if finding["level"] == "error" else "warning",
              "message": {"text": message},
              "locations": [_location(finding, root)],
              "partialFingerprints": {FINGERPRINT_KEY: fingerprint}}
    if finding["notes"]:
        result["relatedLocations"] = [
            {"id": number, "message": {"text": note["message"]}, **_location(note, root)}
            for number, note in enumerate(finding["notes"], start=1)]
    result["properties"] = {"metaguard": {"diagnostic": finding}}
    return result


def render(findings, files, root, version, docs_url=None):
    """The SARIF log as a dict. findings are sorted and unique. docs_url, when
    given, is the absolute URL of a folder holding docs/checks/ (helpUri)."""
    rules = tool_rules({f["check"] for f in findings}, docs_url)
    index = {rule["id"]: number for number, rule in enumerate(rules)}
    prints = fingerprints(findings, root)
    results = [_result(f, index[f["check"]], p, root) for f, p in zip(findings, prints)]
    driver = {"name": "metaguard", "fullName": "metaguard clang-tidy checks",
              "version": version, "semanticVersion": version, "rules": rules}
    if docs_url:
        driver["informationUri"] = docs_url
    # The checked files go in the property bag, not in run.artifacts: GitHub
    # limits array sizes, and a large project checks many thousands of files.
    run = {"tool": {"driver": driver},
           "originalUriBaseIds": {SRCROOT: {"uri": file_uri(root.rstrip("/") + "/")}},
           "columnKind": "utf16CodeUnits",
           "results": results,
           "properties": {"metaguard": {"sourceRoot": root, "files": files,
                                        "docsUrl": docs_url}}}
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def parse(report, name):
    """(findings, files, root, docs_url) back from a SARIF log this tool wrote."""
    try:
        run = report["runs"][0]
        saved = run["properties"]["metaguard"]
        findings = [r["properties"]["metaguard"]["diagnostic"] for r in run["results"]]
        return findings, saved["files"], saved["sourceRoot"], saved.get("docsUrl")
    except (KeyError, IndexError, TypeError) as err:
        raise ValueError(f"{name}: not a SARIF report written by metaguard-tidy "
                         f"(missing {err})") from None
