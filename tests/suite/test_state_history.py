"""The state family's machinery (CONF-90..93): sequences, stale outputs, shrinking, storage,
replay and the smoke selection."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conformance.artifacts import ArtifactDir
from conformance.history import History, replay_history, run_sequence, shrink, write_history
from conformance.sequences import FAMILIES, SMOKE_FAMILIES, Step, build_sequence
from interpreter.executor import InterpreterExecutor
from interpreter.graph.core import Graph
from tests.suite.broken_executors import HalfBuiltPlanCache, PooledOutputs, UnzeroedScratchPool
from tests.suite.suite_runner import BROKEN, ROOT, run_suite

REF = InterpreterExecutor()


class TriggeredOffset(InterpreterExecutor):
    """Correct until it has run the graph named ``trigger``; every later result is +1."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[Any]:
        outs = list(super().execute(graph, inputs))
        result = [o + 1 if self.armed and o.dtype.kind == "f" else o for o in outs]
        self.armed = self.armed or graph.name == "state_exp_float16"
        return result


@pytest.mark.spec("CONF-90", "CONF-93")
def test_sequences_are_deterministic_and_reuse_few_structures() -> None:
    for family in FAMILIES:
        a, b = build_sequence(family, 7, 40), build_sequence(family, 7, 40)
        assert [s.key for s in a] == [s.key for s in b], family
        assert all(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
                   for s, t in zip(a, b, strict=True)
                   for x, y in zip(s.inputs, t.inputs, strict=True)), family  # NaN too
        assert len({s.key for s in a}) <= 20, family  # a compiling executor pays per structure
        counts = [sum(s.key == k for s in a) for k in {s.key for s in a}]
        assert max(counts) >= 3, family  # some structure is called again and again
    kinds = {s.kind for s in build_sequence("interleaved", 3, 100)}
    assert kinds == {"value", "bad", "probe"}
    assert set(SMOKE_FAMILIES) <= set(FAMILIES)


@pytest.mark.spec("CONF-90")
def test_reference_passes_every_family_and_earlier_outputs_are_rechecked() -> None:
    for family in FAMILIES:
        assert run_sequence(build_sequence(family, 1, 40), REF, REF, label=family) is None
    f = run_sequence(build_sequence("equal_shapes", 1, 40), PooledOutputs(), REF, label="p")
    assert f is not None and f.kind == "stale" and f.index == 1
    assert "output 0 of call #1" in f.message and "changed during call #2" in f.message
    assert "[EXEC-5]" in f.message


@pytest.mark.spec("CONF-91")
def test_shrink_finds_the_one_call_that_arms_the_bug() -> None:
    steps = build_sequence("equal_shapes", 5, 40)
    history = History()
    failure = run_sequence(steps, TriggeredOffset(), REF, label="t", history=history)
    assert failure is not None and failure.kind == "values"
    trigger = [i for i, s in enumerate(history.steps) if s.graph.name == "state_exp_float16"]
    previous, last = history.steps[:-1], history.steps[-1]
    out = shrink(previous, last, failure.kind, TriggeredOffset, REF, label="t", seconds=30)
    assert out.reproduced and not out.alone and not out.exhausted
    assert out.kept == trigger[:1] or [previous[i].graph.name for i in out.kept] == \
        ["state_exp_float16"]
    assert f"replaying 1 of {len(previous)} previous calls" in out.summary()
    alone = shrink(previous, last, failure.kind, lambda: PooledOutputs(), REF, label="t",
                   seconds=30)
    assert not alone.reproduced  # PooledOutputs gives right values: no "values" failure
    assert f"did not reproduce on a fresh executor, even replaying all {len(previous)}" in \
        alone.summary()


@pytest.mark.spec("CONF-91")
def test_history_budget_drops_the_oldest_calls() -> None:
    h = History(budget=2 * 48)  # the first six calls hold three tanh float32[3, 4] inputs
    for step in build_sequence("same_structure", 2, 12)[:6]:
        h.record(step, "agrees")
    assert h.dropped > 0 and h.numbers[0] == h.dropped + 1 and h.numbers[-1] == 6


@pytest.mark.spec("CONF-92")
def test_history_is_stored_and_replayed(tmp_path: Path) -> None:
    steps = build_sequence("buffers", 1, 12)[:2]
    assert run_sequence(steps, UnzeroedScratchPool(), REF, label="u") is not None
    art = ArtifactDir(tmp_path, "t::u", f"{BROKEN}:UnzeroedScratchPool", ROOT)
    d = write_history(art, steps, [1, 2], "summary")
    meta = json.loads((d / "history.json").read_text())
    assert [c["call"] for c in meta["calls"]] == [1, 2]
    sink: list[str] = []

    class Out:
        def write(self, s: str) -> None:
            sink.append(s)

        def flush(self) -> None:
            pass
    assert replay_history(d, f"{BROKEN}:UnzeroedScratchPool", out=Out()) == 1
    assert "FAIL: call 2 of 2" in "".join(sink)
    assert replay_history(d, "interpreter.executor:InterpreterExecutor", out=Out()) == 0
    p = subprocess.run([sys.executable, str(art.path / "repro.py")], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "FAIL:" in p.stdout, p.stdout + p.stderr
    (d / "000" / "graph.txt").write_text("not a graph")
    assert replay_history(d, "interpreter.executor:InterpreterExecutor", out=Out()) == 3


@pytest.mark.spec("CONF-90", "CONF-18")
def test_each_state_bug_needs_its_history() -> None:
    """Each broken executor of the family fails only after earlier calls: the failing call
    alone agrees on a fresh instance (so a per-call repro would say "agrees")."""
    for cls, family in ((PooledOutputs, "equal_shapes"), (UnzeroedScratchPool, "buffers"),
                        (HalfBuiltPlanCache, "failures_between")):
        steps = build_sequence(family, _seed(family), 40)
        history = History()
        f = run_sequence(steps, cls(), REF, label=family, history=history)
        assert f is not None, cls
        assert run_sequence(history.steps[-1:], cls(), REF, label=family) is None, cls


def _seed(family: str) -> int:
    import zlib

    return zlib.crc32(family.encode())


@pytest.mark.spec("CONF-93", "CONF-35")
def test_smoke_keeps_two_state_tests(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "interpreter.executor:InterpreterExecutor", ["test_state.py"],
                    None, "--conformance-smoke")
    assert sorted(run.selected) == [f"conformance/test_state.py::test_state_sequence[{f}]"
                                    for f in sorted(SMOKE_FAMILIES)], run.selected
    assert run.code == pytest.ExitCode.OK
    assert all(m["calls"] <= 24 for m in run.meta.values()), run.meta


def test_probe_step_kinds_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown step kind"):
        Step("weird", build_sequence("buffers", 1, 12)[0].graph, [])


class _JitHalfway:
    """The JIT with every pending compile finished after call ``at``: the sequence is served
    interpreted first and compiled afterwards, whatever the background thread's timing."""

    def __init__(self, at: int) -> None:
        from reference_executors.jit import JitExecutor

        self.jit = JitExecutor()
        self.at = at
        self.states: list[str] = []

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> Sequence[Any]:
        if len(self.states) == self.at:
            self.jit.wait_compiled()
        self.states.append(self.jit.state(graph))
        return self.jit.execute(graph, inputs)


@pytest.mark.spec("CONF-90")
def test_jit_switches_to_compiled_code_mid_sequence_and_agrees() -> None:
    for family in ("same_structure", "interleaved"):
        ex = _JitHalfway(20)
        assert run_sequence(build_sequence(family, _seed(family), 40), ex, REF,
                            label=family) is None
        assert ex.states[0] == "absent"  # the first call is interpreted
        assert "compiled" in ex.states[20:], ex.states  # later calls run compiled plans


class OffFromThirdCall(InterpreterExecutor):
    """From its third call on, numeric outputs are 1 too large: any single call agrees on a
    fresh instance, so only the history reproduces a failure."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[Any]:
        self.calls += 1
        outs = list(super().execute(graph, inputs))
        return [o + o.dtype.type(1) if self.calls >= 3 and o.dtype.kind in "iuf" else o
                for o in outs]


@pytest.mark.spec("CONF-91", "CONF-92")
def test_other_families_report_the_history_a_failure_needs(tmp_path: Path) -> None:
    """A per-cell failure whose stored case agrees on a fresh executor says so, with the
    shrunk history of the cell's calls and a repro.py replaying it."""
    run = run_suite(tmp_path, "tests.suite.test_state_history:OffFromThirdCall", ["test_ops.py"],
                    "test_op and [add-int32-general")
    assert run.failed(), run.outcomes
    text = run.text()
    assert "the failing call alone agrees on a fresh executor" in text, text
    assert "the failure needs the earlier calls: replaying 2 of" in text, text
    scripts = sorted(run.artifacts.rglob("history/repro.py")) if run.artifacts else []
    assert scripts, text
    p = subprocess.run([sys.executable, str(scripts[0])], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 1 and "FAIL: call 3 of 3" in p.stdout, p.stdout + p.stderr
