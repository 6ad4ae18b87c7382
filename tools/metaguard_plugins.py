"""Pairs the metaguard plugin with a clang-tidy of the same LLVM major.

A plugin registers its checks only in the clang-tidy of the major it was
built for, so running any other pair gives a run with no metaguard check at
all. Every plugin carries its major as a marker string
(`metaguard-plugin-llvm-major=N`, checks/MetaguardTidyModule.cpp); builds and
installs hold `libmetaguard_tidy.so` (the default major) and
`libmetaguard_tidy-llvm<N>.so` (further majors) side by side.

metaguard-clang-tidy has the checks compiled in and needs no plugin: the
driver runs it instead when asked for, or when it is the one at hand
(builtin_clang_tidy).
"""

import glob
import os
import re
import shutil
import subprocess

DEFAULT_MAJOR = 19
MARKER = re.compile(rb"metaguard-plugin-llvm-major=(\d+)\0")
VERSION = re.compile(r"LLVM version (\d+)\.")
# What metaguard-clang-tidy adds to --version (clang-tidy/MetaguardClangTidy.cpp).
BUILTIN = re.compile(r"^metaguard \S+ \(metaguard-\* checks built into clang-tidy", re.M)


class PluginError(Exception):
    """No plugin fits the clang-tidy asked for, or the pair asked for differs."""


def plugin_major(path):
    """The LLVM major the plugin at path was built for; None if it carries no marker."""
    try:
        with open(path, "rb") as handle:
            match = MARKER.search(handle.read())
    except OSError:
        return None
    return int(match.group(1)) if match else None


def clang_tidy_major(binary):
    """The LLVM major of a clang-tidy, from --version; None if it does not say."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             timeout=60, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = VERSION.search(out)
    return int(match.group(1)) if match else None


def has_builtin_checks(binary):
    """Whether a clang-tidy has metaguard's checks compiled in
    (metaguard-clang-tidy, which says so in --version)."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             timeout=60, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return BUILTIN.search(out) is not None


def builtin_clang_tidy(plugin, clang_tidy):
    """The clang-tidy with the checks built in to run instead of a plugin, or
    None. A plugin asked for wins; then a --clang-tidy that has the checks;
    then the one the wheel bundles ($METAGUARD_BUILTIN_CLANG_TIDY, set by its
    metaguard-tidy); then, where no plugin is found, metaguard-clang-tidy on
    PATH."""
    if plugin:
        return None
    if clang_tidy:
        return clang_tidy if has_builtin_checks(clang_tidy) else None
    bundled = os.environ.get("METAGUARD_BUILTIN_CLANG_TIDY")
    if bundled and os.access(bundled, os.X_OK):
        return bundled
    if not available_plugins():
        return shutil.which("metaguard-clang-tidy")
    return None


def plugin_dirs():
    """Where plugins are looked for: beside an installed driver, then a build tree."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [here,  # installed: <prefix>/lib/metaguard/
            os.path.join(here, "..", "build", "lib"),
            os.path.join(here, "..", "lib")]


def available_plugins():
    """(path, major) of every plugin in plugin_dirs(), the default name first."""
    found, seen = [], set()
    for folder in plugin_dirs():
        names = [os.path.join(folder, "libmetaguard_tidy.so")]
        names += sorted(glob.glob(os.path.join(folder, "libmetaguard_tidy-llvm*.so")))
        for path in names:
            path = os.path.normpath(path)
            if path not in seen and os.path.isfile(path):
                seen.add(path)
                found.append((path, plugin_major(path)))
    return found


def find_clang_tidy(major):
    """The clang-tidy of an LLVM major: clang-tidy-N on PATH, else Debian's folder."""
    name = f"clang-tidy-{major}"
    if shutil.which(name):
        return name
    debian = f"/usr/lib/llvm-{major}/bin/clang-tidy"
    return debian if os.access(debian, os.X_OK) else name


def build_hint(major):
    return (f"build it with 'cmake -DMETAGUARD_LLVM_VERSION={major}' (or add "
            f"-DMETAGUARD_EXTRA_LLVM_VERSIONS={major} to a build for another major), "
            f"or pass --plugin")


def describe(plugins):
    if not plugins:
        return "no plugin was found"
    return "found: " + ", ".join(
        f"{path} (LLVM {major if major else '?'})" for path, major in plugins)


def resolve(plugin, clang_tidy):
    """(plugin, clang_tidy, major) to run, major being the plugin's LLVM major
    (None when it carries no marker); plugin and clang_tidy may be None (not
    asked for)."""
    if plugin:
        major = plugin_major(plugin)
        if clang_tidy is None:
            return plugin, find_clang_tidy(major or DEFAULT_MAJOR), major
        host = clang_tidy_major(clang_tidy) if major else None
        if host and host != major:
            raise PluginError(
                f"{plugin} is built for LLVM {major} but {clang_tidy} is LLVM {host}, which "
                f"would run no metaguard check; pass the plugin built for LLVM {host} "
                f"(libmetaguard_tidy-llvm{host}.so) or --clang-tidy clang-tidy-{major}")
        return plugin, clang_tidy, major
    plugins = available_plugins()
    if clang_tidy is None:
        if not plugins:
            return None, find_clang_tidy(DEFAULT_MAJOR), None
        path, major = plugins[0]
        return path, find_clang_tidy(major or DEFAULT_MAJOR), major
    host = clang_tidy_major(clang_tidy)
    if host is None:
        if not plugins:
            return None, clang_tidy, None
        path, major = plugins[0]
        return path, clang_tidy, major
    for path, major in plugins:
        if major == host:
            return path, clang_tidy, major
    raise PluginError(f"no metaguard plugin for LLVM {host} (the major of {clang_tidy}); "
                      f"{describe(plugins)}; {build_hint(host)}")
