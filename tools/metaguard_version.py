"""metaguard's version, declared once: `project(metaguard VERSION ...)` in the
top-level CMakeLists.txt.

Installed copies of the driver (`cmake --install`, the wheel, the .deb) have
no CMakeLists.txt beside them; the install and the wheel build write the
version into a file named VERSION_FILE next to this module instead.
"""

import os
import re

VERSION_FILE = "metaguard-version.txt"
_PROJECT_RE = re.compile(r"^\s*project\(\s*metaguard\s+VERSION\s+([0-9][0-9.]*)", re.M)
_HERE = os.path.dirname(os.path.abspath(__file__))


def _stamped():
    try:
        with open(os.path.join(_HERE, VERSION_FILE), encoding="utf-8") as stamp:
            return stamp.read().strip() or None
    except OSError:
        return None


def from_source_tree(root=os.path.join(_HERE, os.pardir)):
    """The version a source tree's CMakeLists.txt declares, or None."""
    try:
        with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as lists:
            match = _PROJECT_RE.search(lists.read())
    except OSError:
        return None
    return match.group(1) if match else None


def version():
    """The version of the metaguard this driver belongs to."""
    return _stamped() or from_source_tree() or "unknown"
