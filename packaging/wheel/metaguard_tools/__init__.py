"""Entry points of the metaguard wheel.

metaguard-clang-tidy and metaguard-clangd are native binaries in bin/ of this
package (Clang's builtin headers beside them, in lib/clang/N/include, where
they look); the console scripts replace themselves with them. metaguard-tidy
is the driver, whose modules are in driver/; installed from the wheel it runs
the bundled metaguard-clang-tidy unless told otherwise.
"""
import os
import sys

__version__ = "0.0.0"  # replaced by tools/build-wheel.sh with the project's version

HERE = os.path.dirname(os.path.abspath(__file__))


def binary(name):
    """The path of a bundled binary."""
    return os.path.join(HERE, "bin", name)


def _exec(name):
    path = binary(name)
    if not os.access(path, os.X_OK):
        sys.exit(f"metaguard: {path} is missing or not executable; "
                 "reinstall the metaguard wheel")
    os.execv(path, [name] + sys.argv[1:])


def clang_tidy_main():
    _exec("metaguard-clang-tidy")


def clangd_main():
    _exec("metaguard-clangd")


def tidy_main():
    # The driver runs a clang-tidy with the checks built in when it is given
    # one; the user's own choice (--clang-tidy, --plugin, the variables) wins.
    os.environ.setdefault("METAGUARD_BUILTIN_CLANG_TIDY", binary("metaguard-clang-tidy"))
    sys.path.insert(0, os.path.join(HERE, "driver"))
    import metaguard_tidy  # noqa: E402 (found through the path set just above)
    return metaguard_tidy.entry_point()
