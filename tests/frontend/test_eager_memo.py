"""The eager-op memo: a repeated eager op replays the graph it staged (REAL-49)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

import interpreter.experimental.functional as F
from interpreter.errors import ExecutorResultError
from interpreter.experimental import fastpaths
from interpreter.experimental.random import uniform
from interpreter.experimental.realization_context import (
    EagerRealizationContext,
    LazyRealizationContext,
    set_default_realization_context,
)
from interpreter.experimental.tensor import Tensor, realization_context
from interpreter.graph import Graph
from interpreter.selection import set_default_executor
from interpreter.testing import assert_same
from tests.frontend.helpers import Counting, Failing, Tampering, f32


def real(a: np.ndarray) -> Tensor:
    return Tensor.from_dlpack(a)


@pytest.fixture
def ex() -> Iterator[Counting]:
    fastpaths.clear()
    counting = Counting()
    with set_default_executor(counting):
        yield counting
    fastpaths.clear()


@pytest.mark.spec("REAL-49", "REAL-17")
def test_a_repeated_op_hands_the_kept_graph_to_the_executor(ex: Counting) -> None:
    data = [f32(1, 2), f32(-3, 4), f32(0.5, 8)]
    results = []
    for a in data:
        t = real(a)
        results.append(t * t)  # one call site, one signature
    assert ex.calls == 3 and fastpaths.memo_size() == 1
    assert ex.graphs[1] is ex.graphs[0] and ex.graphs[2] is ex.graphs[0]
    for a, y, inputs in zip(data, results, ex.inputs, strict=True):
        assert y.real
        assert_same(y.to_numpy(), a * a)
        assert inputs[1] is a  # the new tensor's array, not a copy
    assert inputs[0].dtype == np.uint64  # the seed, first as always (REAL-31)


@pytest.mark.spec("REAL-49")
def test_the_kept_graph_is_what_staging_again_gives(ex: Counting) -> None:
    x = real(f32(1, 2))
    texts = []
    for _ in range(2):
        fastpaths.clear()
        for _ in range(2):
            x + 1.5  # first staged, then replayed
        texts.append(ex.graphs[-1].to_text())
    assert ex.graphs[-1] is ex.graphs[-2] and ex.graphs[-2] is not ex.graphs[0]
    assert texts[0] == texts[1]
    loc = ex.graphs[-1].nodes[-1].location
    assert loc is not None and loc[0] == __file__  # the call site, not the memo's


@pytest.mark.spec("REAL-49")
def test_signatures_keep_apart_what_stages_differently(ex: Counting) -> None:
    x, y = real(f32(1, 2)), real(f32(3, 4))
    for a, b in ((x, x), (x, y), (x, x), (x, y)):
        a + b
    assert len(ex.graphs[0].inputs) == 2 and len(ex.graphs[1].inputs) == 3  # seed + 1 / 2
    assert ex.graphs[2] is ex.graphs[0] and ex.graphs[3] is ex.graphs[1]
    z = real(f32(-0.0))
    for c in (0.0, -0.0, 0.0):  # equal floats, different bits: different graphs
        out = z + c
        assert_same(out.to_numpy(), np.array([c], np.float32) + np.float32(-0.0))
    assert np.signbit((z + -0.0).to_numpy()[0]) and not np.signbit((z + 0.0).to_numpy()[0])
    d = real(np.array([1, 2], np.float64))
    assert_same((d * d).to_numpy(), np.array([1.0, 4.0]))
    assert_same((x * x).to_numpy(), f32(1, 4))  # another line: another signature
    assert ex.graphs[-1].inputs[1].type.dtype.value == "float32"


@pytest.mark.spec("REAL-49")
def test_calls_that_must_stage_every_time_are_not_kept(ex: Counting) -> None:
    x = real(f32(1, 2))

    @F.functional
    def user(a: Tensor) -> Tensor:
        return a * 2  # a user body may read anything: never kept

    user(x)
    uniform((2,))  # draws random numbers (REAL-31)
    b = real(f32(0, 0))
    b[0:1] = x[0:1]  # mutates a source (REAL-6)
    with (ctx := EagerRealizationContext()), realization_context(ctx):
        x + x  # inside a context
    lazy = LazyRealizationContext()
    with lazy, realization_context(lazy):
        u = x + 1
    u + x  # an unrealized operand realizes its context first (REAL-13)
    with Graph("g", []):
        x + x  # a graph context (REAL-14)
    with set_default_realization_context(lambda: EagerRealizationContext()):
        x + x  # another factory installed
    kept = fastpaths.memo_size()
    assert kept == 1, kept  # only x[0:1] (an op of interpreter.graph.ops) was kept
    assert_same(b.to_numpy(), f32(1, 0))


@pytest.mark.spec("REAL-49", "REAL-39", "REAL-35")
def test_a_failing_replay_changes_nothing() -> None:
    fastpaths.clear()
    x = real(f32(1, 2))
    ok = Counting()
    with set_default_executor(ok):
        for _ in range(2):
            x - 1  # kept (line A)
    failing = Failing(RuntimeError("device lost"))
    tampering = Tampering(lambda outs: [o.astype(np.float64) for o in outs])
    for executor, error in ((failing, RuntimeError), (tampering, ExecutorResultError)):
        with set_default_executor(executor), pytest.raises(error):
            for _ in range(2):
                x - 1  # line B: staged and executed, then would be replayed
    assert_same(x.to_numpy(), f32(1, 2))
    fastpaths.clear()


@pytest.mark.spec("REAL-49", "REAL-44", "EXEC-8")
def test_replays_from_several_threads_are_correct(ex: Counting) -> None:
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(50):
                a = np.full(3, k * 100 + i, np.float32)
                y = real(a) + real(a)
                np.testing.assert_array_equal(y.to_numpy(), a * 2)
        except BaseException as e:  # reported on the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and ex.calls == 200 and fastpaths.memo_size() == 1


@pytest.mark.spec("REAL-49")
def test_the_memo_is_bounded(ex: Counting, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastpaths, "MEMO_SIZE", 3)
    x = real(f32(1, 2))
    for c in range(6):
        x + float(c)
    assert fastpaths.memo_size() == 3
