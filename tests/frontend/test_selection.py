"""Executor selection and result validation (SEL-1..8, REAL-35)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import tomllib
import warnings
from importlib.metadata import EntryPoint, EntryPoints, entry_points
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import interpreter.selection as selection
from interpreter.dtype import DType
from interpreter.errors import ExecutorResultError, ExecutorUnavailableError
from interpreter.executor import Executor, InterpreterExecutor
from interpreter.experimental.realization_context import EagerRealizationContext
from interpreter.experimental.tensor import Tensor, realization_context
from interpreter.graph import Graph
from interpreter.selection import (
    MissingExecutor,
    PreferInterpreterExecutor,
    build_executor,
    default_executor,
    set_default_executor,
)
from tests.frontend.helpers import Counting, Tampering, f32

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIPPED = ["compile", "composite", "default", "gpu", "interpreter", "jit"]


def registering(monkeypatch: pytest.MonkeyPatch, **targets: str) -> None:
    """Make ``targets`` (name -> ``module:attr``) the only registered executors (SEL-8)."""
    eps = EntryPoints(EntryPoint(name, value, selection.GROUP)
                      for name, value in targets.items())
    monkeypatch.setattr(selection, "entry_points", lambda group: eps)


def install_distribution(root: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                         entries: dict[str, str], modules: dict[str, str]) -> None:
    """An installed distribution ``name`` under ``root`` (put on ``sys.path``): its
    ``*.dist-info`` with ``entries`` in the executors group, and the modules' sources."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{selection.GROUP}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()))
    for module, source in modules.items():
        (root / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(root))


VENDOR_SOURCE = """
from interpreter.executor import InterpreterExecutor

class VendorExecutor:
    built = 0

    def __init__(self):
        VendorExecutor.built += 1
        self.calls = 0

    def execute(self, graph, inputs):
        self.calls += 1
        return InterpreterExecutor().execute(graph, inputs)
"""


@pytest.mark.spec("SEL-1")
def test_constructor_binds_the_default_at_construction() -> None:
    e1, e2 = Counting(), Counting()
    with set_default_executor(e1) as bound:
        assert bound is e1 and default_executor() is e1
        ctx = EagerRealizationContext()
        with set_default_executor(e2):
            assert ctx.executor is e1
            assert EagerRealizationContext().executor is e2
        assert default_executor() is e1
        given = Counting()
        assert EagerRealizationContext(given).executor is given
    assert default_executor() is not e1


@pytest.mark.spec("SEL-1")
def test_discarded_handle_persists_and_default_is_shared_across_threads() -> None:
    before = default_executor()
    e = Counting()
    set_default_executor(e)
    try:
        seen: list[Any] = []
        th = threading.Thread(target=lambda: seen.append(default_executor()))
        th.start()
        th.join()
        assert default_executor() is e and seen == [e]
    finally:
        set_default_executor(before)


@pytest.mark.spec("SEL-2")
def test_use_interpreter_shim_warns_and_selects() -> None:
    with pytest.warns(DeprecationWarning, match="use_interpreter"):
        ctx = EagerRealizationContext(use_interpreter=True)
    assert isinstance(ctx.executor, PreferInterpreterExecutor)
    assert ctx.executor.interpreter.max_ops is None
    with pytest.warns(DeprecationWarning):
        ctx = EagerRealizationContext(use_interpreter=False)
    assert type(ctx.executor).__name__ in ("CompilingExecutor", "MissingExecutor")
    given = Counting()
    with pytest.warns(DeprecationWarning):
        assert EagerRealizationContext(given, use_interpreter=True).executor is given
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        EagerRealizationContext()


@pytest.mark.spec("SEL-2")
def test_use_interpreter_true_falls_back_to_compiling_only_on_refusal() -> None:
    ex = PreferInterpreterExecutor()
    ex.compiling = Counting()
    ctx = EagerRealizationContext(ex)
    with ctx, realization_context(ctx):
        y = Tensor.from_dlpack(f32(1)) + 1
    assert ex.compiling.calls == 0 and y.item() == 2.0
    ex.interpreter.compilation_required = frozenset({"add"})
    ctx = EagerRealizationContext(ex)
    with ctx, realization_context(ctx):
        z = Tensor.from_dlpack(f32(1)) + 2
    assert ex.compiling.calls == 1 and z.item() == 3.0


@pytest.mark.spec("SEL-3", "SEL-8")
def test_env_executor_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAX_EAGER_EXECUTOR", raising=False)
    assert selection.env_executor() == "default"
    monkeypatch.setenv("MAX_EAGER_EXECUTOR", "  ")
    assert selection.env_executor() == "default"
    for raw, name in [(" JIT ", "jit"), ("interpreter", "interpreter"), ("Compile", "compile"),
                      ("composite", "composite"), ("GPU", "gpu"), ("default", "default")]:
        monkeypatch.setenv("MAX_EAGER_EXECUTOR", raw)
        assert selection.env_executor() == name
    monkeypatch.setenv("MAX_EAGER_EXECUTOR", "bogus")
    with pytest.raises(ValueError, match=r"MAX_EAGER_EXECUTOR='bogus'.*'compile', 'composite', "
                       r"'default', 'gpu', 'interpreter', 'jit'.*eager_conformance\.executors"):
        selection.env_executor()
    assert isinstance(build_executor("interpreter"), InterpreterExecutor)
    assert build_executor("interpreter").max_ops is None
    with pytest.raises(ValueError, match=r"unknown executor name 'bogus': expected one of "
                       r"\['compile', 'composite', 'default', 'gpu', 'interpreter', 'jit'\]"):
        build_executor("bogus")


@pytest.mark.spec("SEL-3", "REAL-30")
def test_env_is_read_when_the_default_is_first_needed_in_a_fresh_process() -> None:
    code = ("import os\n"
            "import interpreter.selection as s\n"
            "os.environ['MAX_EAGER_EXECUTOR'] = 'interpreter'\n"
            "first = s.default_executor()\n"
            "os.environ['MAX_EAGER_EXECUTOR'] = 'compile'\n"
            "print(type(first).__name__, s.default_executor() is first)\n"
            "from interpreter.experimental import random\n"
            "print(random.seed().item())\n")
    env = {**os.environ, "MAX_EAGER_EXECUTOR": "bogus"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["InterpreterExecutor", "True", "0"]


@pytest.mark.spec("SEL-3")
def test_bogus_env_breaks_no_import_only_the_default() -> None:
    """A bad ``MAX_EAGER_EXECUTOR`` must not break importing the executor modules (or any
    conformance run against an explicit executor); the default executor names the fault."""
    env = {**os.environ, "MAX_EAGER_EXECUTOR": "bogus"}
    ok = subprocess.run([sys.executable, "-c", "import interpreter.executor, "
                         "interpreter.selection, interpreter.experimental.realization_context"],
                        env=env, cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    code = ("from interpreter.experimental.realization_context import EagerRealizationContext\n"
            "EagerRealizationContext()\n")
    bad = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True)
    assert bad.returncode != 0
    last = bad.stderr.strip().splitlines()[-1]
    assert last == ("ValueError: MAX_EAGER_EXECUTOR='bogus': expected one of ['compile', "
                    "'composite', 'default', 'gpu', 'interpreter', 'jit'] (entry point group "
                    "'eager_conformance.executors') [SEL-3]"), bad.stderr


@pytest.mark.spec("SEL-3")
def test_bogus_env_does_not_break_a_conformance_run() -> None:
    env = {**os.environ, "MAX_EAGER_EXECUTOR": "bogus"}
    run = subprocess.run([sys.executable, "-m", "pytest", "conformance/test_ops.py", "-p",
                          "no:xdist", "-q", "-x", "--hypothesis-profile=ci", "-k", "[add-float32",
                          "--executor=interpreter.executor:InterpreterExecutor"],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert " passed" in run.stdout


@pytest.mark.spec("SEL-4")
def test_max_ops_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAX_INTERPRETER_MAX_OPS", raising=False)
    assert selection.env_max_ops() == 1024
    monkeypatch.setenv("MAX_INTERPRETER_MAX_OPS", "abc")
    assert selection.env_max_ops() == 1024
    monkeypatch.setenv("MAX_INTERPRETER_MAX_OPS", " 7 ")
    assert selection.env_max_ops() == 7


@pytest.mark.spec("SEL-4")
def test_default_without_jit_is_an_unlimited_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAX_EAGER_EXECUTOR", raising=False)
    registering(monkeypatch, jit="reference_executors.jit:JitExecutor")  # no `default`
    e = selection._initial_default()
    assert isinstance(e, InterpreterExecutor) and e.max_ops is None
    registering(monkeypatch, default="reference_executors.absent:X")  # cannot be imported
    e = selection._initial_default()
    assert isinstance(e, InterpreterExecutor) and e.max_ops is None
    monkeypatch.setenv("MAX_EAGER_EXECUTOR", "default")  # named: no fallback (SEL-5)
    assert isinstance(selection._initial_default(), MissingExecutor)


@pytest.mark.spec("SEL-5")
def test_missing_executor_raises_naming_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    registering(monkeypatch, compile="reference_executors.absent:CompilingExecutor")
    e = build_executor("compile")
    assert isinstance(e, MissingExecutor)
    x = Tensor.from_dlpack(f32(1))
    ctx = EagerRealizationContext(e)
    with pytest.raises(ExecutorUnavailableError,
                       match=r"'compile'.*reference_executors\.absent:CompilingExecutor "
                       r"cannot be imported \(ModuleNotFoundError"), \
            ctx, realization_context(ctx):
        y = x + 1
    assert not y.real


def unavailable() -> Any:
    raise ExecutorUnavailableError("no device of that kind here")


@pytest.mark.spec("SEL-5")
def test_an_executor_that_cannot_run_here_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    registering(monkeypatch, there=f"{__name__}:unavailable")
    e = build_executor("there")
    assert isinstance(e, MissingExecutor)
    with pytest.raises(ExecutorUnavailableError, match=r"'there' is not available: "
                       r"tests\.frontend\.test_selection:unavailable cannot run here \(no "
                       r"device of that kind here\) \[SEL-5\]"):
        e.execute(Graph("g"), [])


@pytest.mark.spec("SEL-8")
def test_a_vendor_distribution_registers_its_own_executor_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package installed with an entry point in the group is selectable by that name:
    ``MAX_EAGER_EXECUTOR``, ``build_executor`` and the suite's ``--executor=name``."""
    from conformance.executors import resolve

    install_distribution(tmp_path, monkeypatch, "vendor_exec",
                         {"VendorX": "vendor_exec_impl:VendorExecutor"},
                         {"vendor_exec_impl": VENDOR_SOURCE})
    assert selection.executor_names()["vendorx"] == "vendor_exec_impl:VendorExecutor"
    monkeypatch.setenv("MAX_EAGER_EXECUTOR", " VENDORX ")
    e = selection._initial_default()
    assert type(e).__name__ == "VendorExecutor" and type(e).built == 1
    ctx = EagerRealizationContext(e)
    with ctx, realization_context(ctx):
        y = Tensor.from_dlpack(f32(1, 2)) * 3
    assert y.to_numpy().tolist() == [3.0, 6.0] and e.calls == 1
    resolved = resolve("vendorx")
    assert type(resolved.executor).__name__ == "VendorExecutor" and type(e).built == 2
    assert resolved.spec == "vendor_exec_impl:VendorExecutor"


@pytest.mark.spec("SEL-8")
def test_a_name_registered_twice_with_different_targets_is_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_distribution(tmp_path / "a", monkeypatch, "vendor_a",
                         {"same": "vendor_a_impl:VendorExecutor"}, {})
    install_distribution(tmp_path / "b", monkeypatch, "vendor_b",
                         {"same": "vendor_b_impl:VendorExecutor"}, {})
    with pytest.raises(ValueError, match=r"executor name 'same' is registered twice, as "
                       r"vendor_\w_impl:VendorExecutor and as vendor_\w_impl:VendorExecutor"):
        build_executor("same")


@pytest.mark.spec("SEL-8")
def test_the_installed_metadata_registers_what_pyproject_declares() -> None:
    """The shipped names come from this project's installed metadata: after changing the
    entry points in ``pyproject.toml``, reinstall (``pip install -e .``)."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        declared = tomllib.load(f)["project"]["entry-points"][selection.GROUP]
    installed = {ep.name: ep.value for ep in entry_points(group=selection.GROUP)}
    assert installed == declared, "stale install: run `pip install -e .`"
    assert sorted(selection.executor_names()) == SHIPPED


@pytest.mark.spec("SEL-6")
def test_duck_typed_executor() -> None:
    class Duck:
        def execute(self, graph: Any, inputs: Any) -> Any:
            return InterpreterExecutor().execute(graph, inputs)

    assert isinstance(Duck(), Executor)
    ctx = EagerRealizationContext(Duck())
    with ctx, realization_context(ctx):
        y = Tensor.from_dlpack(f32(2)) * 2
    assert y.item() == 4.0


@pytest.mark.spec("REAL-35")
@pytest.mark.parametrize(("tamper", "pattern"), [
    (lambda out: out[:-1], r"Tampering\.execute returned 1 outputs.*declares 2"),
    (lambda out: [out[0], out[1].astype(np.float64)], r"Tampering\.execute: output 1 has dtype"),
    (lambda out: [out[0], out[1].reshape(1, 2)], r"output 1 has dtype float32 and shape \[1, 2\]"),
    (lambda out: [out[0], out[1].tolist()], r"output 1 is a list"),
])
def test_result_validation(tamper: Any, pattern: str) -> None:
    from interpreter.experimental import random

    random.set_seed(3)
    ctx = EagerRealizationContext(Tampering(tamper))
    x = Tensor.from_dlpack(f32(1, 2))
    with pytest.raises(ExecutorResultError, match=pattern), ctx, realization_context(ctx):
        y = x + 1
        r = random.uniform([2])
        del r
    assert not y.real and random.seed().item() == 3
    assert y.dtype is DType.float32


@pytest.mark.spec("SEL-2")
def test_use_interpreter_true_checks_the_graph_once(monkeypatch: pytest.MonkeyPatch) -> None:
    ex = PreferInterpreterExecutor()
    calls: list[str] = []
    real = ex.interpreter.refusal
    monkeypatch.setattr(ex.interpreter, "refusal", lambda g: calls.append(g.name) or real(g))
    ctx = EagerRealizationContext(ex)
    with ctx, realization_context(ctx):
        y = Tensor.from_dlpack(f32(1)) + 1
    assert y.item() == 2.0 and calls == ["main"]
