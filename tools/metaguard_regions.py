"""Where a finding is in its source file: a region with an end, and the text
that identifies it across edits.

clang-tidy reports a point (line and byte column). Code-scanning UIs want a
range, so the point is widened from the source text to the expression that
starts there: a (qualified) name, its template arguments, its call
parentheses, and member calls chained on it (`model->to(torch::kCUDA)`,
`metaguard::from_pretrained<M>(dir)`). A point that does not start a name
covers one character. Columns go out as SARIF's default unit, UTF-16 code
units, 1-based, end exclusive; the driver's JSON also keeps clang's byte
columns.
"""

import re

NAME_RE = re.compile(rb"~?[A-Za-z_][A-Za-z0-9_]*(?:\s*::\s*~?[A-Za-z_][A-Za-z0-9_]*)*")
MEMBER_RE = re.compile(rb"\s*(?:\.|->)\s*(?=[A-Za-z_~])")
# A call's parentheses may span lines; past this many, the region stops at the name.
MAX_CALL_LINES = 40
CLOSERS = {ord("("): ord(")"), ord("<"): ord(">")}


class SourceCache:
    """Reads each source file once, as lines of bytes (None when unreadable)."""

    def __init__(self):
        self._files = {}

    def lines(self, path):
        if path not in self._files:
            try:
                with open(path, "rb") as handle:
                    self._files[path] = handle.read().split(b"\n")
            except OSError:
                self._files[path] = None
        return self._files[path]


def _skip_spaces(line, index):
    while index < len(line) and line[index] in b" \t\r":
        index += 1
    return index


def _balanced_end(lines, row, index, max_rows):
    """End (row, index past the closer) of the bracket at lines[row][index], or None.

    Skips string and character literals so a ")" inside "..." does not count;
    angle brackets must close on the same line (a "<" is also "less than").
    """
    opener = lines[row][index]
    closer = CLOSERS[opener]
    depth, quote, last_row = 0, None, min(len(lines) - 1, row + max_rows)
    while row <= last_row:
        line = lines[row]
        while index < len(line):
            char = line[index]
            if quote:
                if char == ord("\\"):
                    index += 1
                elif char == quote:
                    quote = None
            elif char in (ord('"'), ord("'")):
                quote = char
            elif char == opener:
                depth += 1
            elif char == closer:
                depth -= 1
                if depth == 0:
                    return row, index + 1
            elif opener == ord("<") and char in b";{}":
                return None
            index += 1
        if opener == ord("<"):
            return None
        row, index, quote = row + 1, 0, None
    return None


def expression_end(lines, line, column):
    """End of the expression starting at (line, byte column), both 1-based.

    Returns (end_line, end_byte_column) with the end exclusive.
    """
    row, index = line - 1, column - 1
    if not lines or row >= len(lines) or index >= len(lines[row]):
        return line, column
    match = NAME_RE.match(lines[row], index)
    if not match:
        return line, column + 1
    end = (row, match.end())
    while True:
        text = lines[end[0]]
        after = _skip_spaces(text, end[1])
        if after < len(text) and text[after] == ord("<"):
            closed = _balanced_end(lines, end[0], after, 0)
            if closed:
                end = closed
                text = lines[end[0]]
                after = _skip_spaces(text, end[1])
        if after < len(text) and text[after] == ord("("):
            closed = _balanced_end(lines, end[0], after, MAX_CALL_LINES)
            if not closed:
                break
            end = closed
            text = lines[end[0]]
        member = MEMBER_RE.match(text, end[1])
        if not member:
            break
        name = NAME_RE.match(text, member.end())
        if not name:
            break
        end = (end[0], name.end())
    return end[0] + 1, end[1] + 1


def utf16_column(line_bytes, byte_column):
    """SARIF's default column unit: UTF-16 code units before the byte column, plus 1."""
    prefix = line_bytes[:byte_column - 1].decode("utf-8", errors="replace")
    return len(prefix.encode("utf-16-le")) // 2 + 1


def normalised_line(lines, line):
    """The flagged line with whitespace collapsed: stable under re-indentation."""
    if not lines or line - 1 >= len(lines):
        return ""
    text = lines[line - 1].decode("utf-8", errors="replace")
    return " ".join(text.split())


def locate(diag, cache):
    """Adds end_line/end_column (bytes), a SARIF region and the line's text to diag."""
    lines = cache.lines(diag["file"])
    end_line, end_column = expression_end(lines, diag["line"], diag["column"])
    diag["end_line"], diag["end_column"] = end_line, end_column
    if lines and diag["line"] - 1 < len(lines) and end_line - 1 < len(lines):
        start = utf16_column(lines[diag["line"] - 1], diag["column"])
        end = utf16_column(lines[end_line - 1], end_column)
    else:
        start, end = diag["column"], end_column
    diag["region"] = {"startLine": diag["line"], "startColumn": start,
                      "endLine": end_line, "endColumn": max(end, start) if end_line == diag["line"]
                      else end}
    diag["line_text"] = normalised_line(lines, diag["line"])
    return diag
