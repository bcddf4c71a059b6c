"""Vendor-facing options and messages: the vendor's traceback on an import error
(CONF-129), the exact op selector (CONF-130), ``--conformance-max-examples`` (CONF-131),
``--conformance-list`` (CONF-132) and the input-rejection check citing EXEC-17."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conformance.executors import ExecutorSpecError, resolve
from interpreter.executor import InterpreterExecutor
from interpreter.registry import REGISTRY
from tests.suite.suite_runner import ROOT, run_suite

_VENDOR = '''\
import json


def _load_plugin():
    return json.loads("{not json")


PLUGIN = _load_plugin()
'''


@pytest.mark.spec("CONF-129", "CONF-1")
def test_import_error_shows_the_vendors_traceback(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "vendor_broken_import.py").write_text(_VENDOR)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ExecutorSpecError) as info:
        resolve("vendor_broken_import:Executor")
    first, *rest = str(info.value).splitlines()
    assert "cannot import module 'vendor_broken_import': JSONDecodeError" in first
    path = tmp_path / "vendor_broken_import.py"
    assert f'File "{path}", line 8, in <module>' in rest[1]  # PLUGIN = _load_plugin()
    assert f'File "{path}", line 5, in _load_plugin' in "\n".join(rest)
    assert rest[-1].startswith("json.decoder.JSONDecodeError: Expecting property name")
    assert not any("importlib" in line or "conformance/executors.py" in line for line in rest)


@pytest.mark.spec("CONF-129")
def test_missing_dependency_of_the_vendor_module_shows_where(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module the vendor's code imports is missing: the traceback names the line; the
    named module itself missing stays one line."""
    (tmp_path / "vendor_missing_dep.py").write_text("import numpy\nimport not_installed_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ExecutorSpecError) as info:
        resolve("vendor_missing_dep:Executor")
    assert 'vendor_missing_dep.py", line 2, in <module>' in str(info.value)
    with pytest.raises(ExecutorSpecError) as missing:
        resolve("vendor_not_there_xyz:Executor")
    assert "\n" not in str(missing.value)


@pytest.mark.spec("CONF-129")
def test_usage_error_prints_the_traceback(tmp_path: Path) -> None:
    (tmp_path / "vendor_broken_import.py").write_text(_VENDOR)
    proc = subprocess.run([sys.executable, "-m", "pytest", "conformance/",
                           "--executor=vendor_broken_import:Executor", "-p", "no:cacheprovider"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**_env(), "PYTHONPATH": f"{tmp_path}:{ROOT}"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out
    assert f'{tmp_path / "vendor_broken_import.py"}", line 5, in _load_plugin' in out


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


# -- selection --------------------------------------------------------------------------------
@pytest.mark.spec("CONF-130")
def test_ops_selects_exact_names(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "interpreter.executor:InterpreterExecutor",
                    ["test_ops.py", "test_graphs.py", "test_protocol.py"], None,
                    "--conformance-ops=max,min", "--collect-only")
    assert run.selected
    ops = {_param_op(t) for t in run.selected}
    assert ops == {"max", "min"}, sorted(ops)
    # every test_op cell of max and min is there (the registry decides which exist)
    cells = [t for t in run.selected if "::test_op[" in t]
    assert {t.split("[")[1].split("-")[0] for t in cells} == {"max", "min"}
    assert not any("reduce_max" in t or "argmax" in t or "test_graph" in t
                   for t in run.selected)


def _param_op(test_id: str) -> str:
    return test_id.split("[", 1)[1].split("-", 1)[0].rstrip("]")


@pytest.mark.spec("CONF-130")
def test_unknown_op_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", "conformance/test_ops.py",
                           "--conformance-ops=max,maxx", "-p", "no:cacheprovider"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4
    assert "not registry ops: maxx" in out and "did you mean max" in out and "[CONF-130]" in out


@pytest.mark.spec("CONF-131", "CONF-30")
def test_max_examples_sets_the_example_count(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "interpreter.executor:InterpreterExecutor", ["test_ops.py"],
                    None, "--conformance-ops=max", "-k", "float32-general",
                    "--conformance-max-examples=9")
    (meta,) = run.meta.values()
    assert run.code == 0
    assert meta["examples"] == 3 and meta["value_checks"] == 12  # ceil(9 / 4) graphs x 4 sets


@pytest.mark.spec("CONF-132")
def test_list_prints_counts_and_runs_nothing() -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", "conformance/test_ops.py",
                           "conformance/test_protocol.py", "--conformance-ops=max,abs",
                           "--conformance-list", "-n", "2", "-p", "no:cacheprovider"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    n_max = sum(1 for c in _test_op_cells() if c == "max")
    n_abs = sum(1 for c in _test_op_cells() if c == "abs")
    # per op: its test_op cells and its one protocol test
    assert f"  max: {n_max + 1} (test_op {n_max}, " in out
    assert f"  abs: {n_abs + 1} (test_op {n_abs}, " in out
    families = sorted({REGISTRY["max"].category, REGISTRY["abs"].category})
    for fam in families:
        assert f"  {fam}: 1 ops, " in out
    assert f"{n_max + n_abs + 2} tests, 2 ops, {len(families)} op families" in out
    assert " passed" not in out and " failed" not in out


def _test_op_cells() -> list[str]:
    from conformance.test_ops import _cells

    return [p.values[0] for p in _cells()]


@pytest.mark.spec("EXEC-15", "GRAPH-23")
def test_lowered_is_public_in_interpreter_graph() -> None:
    import interpreter.graph as graph_api
    from interpreter.graph.lowering import lowered

    assert "lowered" in graph_api.__all__ and graph_api.lowered is lowered


class _MeanOfEmpty(InterpreterExecutor):
    def execute(self, graph: Any, inputs: Any) -> Any:
        np.mean(np.zeros((2, 0)), axis=-1)  # the executor's own numpy warning
        return super().execute(graph, inputs)


@pytest.mark.spec("CONF-24")
def test_numpys_own_warnings_of_the_suite_stay_inside() -> None:
    """'Mean of empty slice' (a warnings.warn of numpy, not governed by np.errstate) of the
    suite's code is not seen; the executor's own is."""
    from conformance.calls import quiet
    from conformance.pipeline import ExecutorUnderTest
    from interpreter.testing import build

    x = np.arange(3, dtype=np.float32)
    graph = build(lambda x: x + 1.0, x)
    ex = ExecutorUnderTest(_MeanOfEmpty())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet():
            np.mean(np.zeros((2, 0)), axis=-1)  # the suite's
            np.nanmax(np.full(2, np.nan))
        assert not seen, [str(w.message) for w in seen]
        with quiet():
            ex.execute(graph, [x])
    assert "Mean of empty slice" in [str(w.message) for w in seen]  # the executor's
