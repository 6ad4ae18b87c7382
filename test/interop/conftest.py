"""Shared fixtures of the interop suite: where the C++ programs are, and a
runner that reports their stderr when they fail."""
import os
import pathlib
import subprocess

import pytest


@pytest.fixture(scope="session")
def interop_bin() -> pathlib.Path:
    path = os.environ.get("METAGUARD_INTEROP_BIN")
    if not path:
        pytest.fail("METAGUARD_INTEROP_BIN is not set: run the interop tests through ctest")
    return pathlib.Path(path)


@pytest.fixture(scope="session")
def run_program(interop_bin):
    """Runs one of the C++ interop programs; returns its CompletedProcess.
    With check=True (the default) a non-zero exit fails the test with the
    program's output."""

    def run(name, *args, check=True, timeout=600):
        exe = interop_bin / name
        proc = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True,
                              timeout=timeout)
        if check and proc.returncode != 0:
            pytest.fail(f"{name} {' '.join(map(str, args))} exited {proc.returncode}\n"
                        f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        return proc

    return run
