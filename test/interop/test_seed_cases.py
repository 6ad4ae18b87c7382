"""The two seed scenarios on both sides from one case table: every case of
test/integration/meta_scope_cases.h and offload_cases.h (listed by the C++
program interop_seed_cases, so the table is the C++ one) runs in C++ with
metaguard and in Python with transformers/accelerate (seed_cases_python.py),
and both must agree: metaguard raises its typed error <=> the Python stack
raises or silently leaves meta parameters in a model that should be loaded;
fine <=> fine. The few cases where metaguard deliberately differs are listed
in DIVERGENCES with the reason; they are strict xfails, so one that starts
agreeing fails the suite and must leave the list."""
import os
import pathlib
import subprocess

import pytest

import seed_cases_python  # noqa: E402 (next to this file)

# Case -> why metaguard's outcome differs from transformers 5.23 / accelerate 1.15.
DIVERGENCES = {
    "load_with_explicit_device_map_in_scope":
        "transformers keeps init_empty_weights' meta parameters even with device_map='cpu' "
        "(a silently empty model); metaguard takes the explicit map as where the weights go",
    "load_weights_into_module_in_scope":
        "accelerate's load_checkpoint_in_model writes into an existing real model under a meta "
        "device context; metaguard's rule refuses every load while meta is ambient",
    "back_in_memory_then_move":
        "accelerate's dispatch_model does not bring offloaded (meta) parameters back into memory, "
        "so the move is refused; metaguard's dispatch_model loads them from the weights map",
    "dtype_only_to":
        "accelerate refuses any .to() while a parameter is on meta; metaguard allows a dtype-only "
        "conversion (offloaded values are converted when their hook loads them)",
}


def cpp_cases():
    exe = pathlib.Path(os.environ["METAGUARD_INTEROP_BIN"]) / "metaguard_interop_seed_cases"
    out = subprocess.run([str(exe), "list"], capture_output=True, text=True, check=True).stdout
    return [tuple(line.split()) for line in out.splitlines() if line.strip()]


CASES = cpp_cases() if os.environ.get("METAGUARD_INTEROP_BIN") else []


def params():
    for table, name, expect in CASES:
        marks = []
        if name in DIVERGENCES:
            marks.append(pytest.mark.xfail(strict=True, reason=DIVERGENCES[name]))
        yield pytest.param(table, name, expect, id=f"{table}.{name}", marks=marks)


def test_the_table_is_listed():
    assert len(CASES) >= 20, "interop_seed_cases list gave too few cases"
    assert set(DIVERGENCES) <= {name for _, name, _ in CASES}


def test_every_case_has_a_python_counterpart():
    missing = [name for _, name, _ in CASES if name not in seed_cases_python.CASES]
    assert not missing, f"cases without a Python counterpart in seed_cases_python.py: {missing}"


@pytest.mark.parametrize("table,name,expect", params())
def test_both_sides_agree(table, name, expect, run_program, tmp_path):
    cpp = run_program("metaguard_interop_seed_cases", "run", table, name, tmp_path / "cpp").stdout.strip()
    cpp_raises = cpp.startswith("raises")
    assert cpp_raises == (expect == "rejected"), f"metaguard disagrees with its own table: {cpp}"
    python, detail = seed_cases_python.outcome(name, tmp_path / "python")
    python_rejects = python in ("raises", "empty")
    assert python_rejects == cpp_raises, (
        f"{name}: metaguard {'raises' if cpp_raises else 'is fine'} ({cpp}), "
        f"transformers/accelerate: {python} {detail}")
