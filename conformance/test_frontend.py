"""The front end driven by the executor under test (CONF-15).

Every context here is ``EagerRealizationContext(executor=E)`` / ``LazyRealizationContext
(executor=E)`` with ``E`` the executor under test, so these tests see what a user of the
tensor API sees. Expected values come from a plain numpy model of the same program (IEEE-exact
ops only: add, sub, mul, max, min, negate, abs), so results must be bit-identical (NaN equals
NaN) wherever the realization boundaries fall.
"""

from __future__ import annotations

import contextlib
import gc
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from conformance.frontend_repro import Recorder, artifacts_for, diverging_graph
from conformance.outcomes import refused
from interpreter.errors import UnsupportedGraphError

try:
    import interpreter.experimental.functional as F
    from interpreter.experimental.realization_context import (
        EagerRealizationContext,
        LazyRealizationContext,
    )
    from interpreter.experimental.tensor import Tensor, realization_context
except ImportError as e:  # the front end (issue 3) is not there yet
    pytest.skip(f"the tensor front end is not importable ({e}); front-end conformance "
                "tests need the interpreter.experimental package",
                allow_module_level=True)

SHAPE = (2, 3)
DTYPES = (np.float32, np.int32)
FLOAT_VALUES = (0.0, -0.0, 1.0, -1.5, 2.25, 7.0, -8.0, 1e30, -1e-30, np.inf, -np.inf, np.nan)
INT_VALUES = (0, 1, -1, 7, -8, 100, 2**31 - 1, -(2**31))

BINARY: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "max": (lambda a, b: F.maximum(a, b), np.maximum),
    "min": (lambda a, b: F.minimum(a, b), np.minimum),
}
UNARY: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "negate": (lambda a: -a, np.negative),
    "abs": (lambda a: abs(a), np.abs),
}


def same(got: np.ndarray, want: np.ndarray) -> bool:
    return bool(got.dtype == want.dtype and got.shape == want.shape
                and np.array_equal(got, want, equal_nan=want.dtype.kind == "f"))


@contextlib.contextmanager
def refusals_are_refused() -> Iterator[None]:
    try:
        yield
    except UnsupportedGraphError as e:
        refused(f"front-end graph: {e}")


# -- programs: straight-line op sequences over a register file ----------------------------------
Step = tuple[Any, ...]


@st.composite
def programs(draw: Any, max_steps: int = 10) -> tuple[Any, list[np.ndarray], list[Step]]:
    """A dtype, three initial arrays of shape [2, 3] and a list of steps. Steps:
    ``("bin", name, i, j)``, ``("un", name, i)``, ``("row", name, i, j)`` (rhs is row 0 of
    register j, broadcast) and ``("set", i, j, r)`` (``regs[i][r] = regs[j][r]``, in place)."""
    dtype = draw(st.sampled_from(DTYPES))
    pool = FLOAT_VALUES if dtype is np.float32 else INT_VALUES
    inits = [np.array(draw(st.lists(st.sampled_from(pool), min_size=6, max_size=6)),
                      dtype).reshape(SHAPE) for _ in range(3)]
    steps: list[Step] = []
    n = 3
    for _ in range(draw(st.integers(1, max_steps))):
        kind = draw(st.sampled_from(["bin", "bin", "un", "row", "set"]))
        i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if kind == "set":
            steps.append(("set", i, j, draw(st.integers(0, SHAPE[0] - 1))))
            continue
        if kind == "un":
            steps.append(("un", draw(st.sampled_from(sorted(UNARY))), i))
        else:
            steps.append((kind, draw(st.sampled_from(sorted(BINARY))), i, j))
        n += 1
    return dtype, inits, steps


def model(inits: Sequence[np.ndarray], steps: Sequence[Step]) -> list[np.ndarray]:
    """The program run on numpy arrays (value semantics; ``set`` mutates one register)."""
    regs = [a.copy() for a in inits]
    with np.errstate(all="ignore"):
        for s in steps:
            if s[0] == "bin":
                regs.append(BINARY[s[1]][1](regs[s[2]], regs[s[3]]))
            elif s[0] == "row":
                regs.append(BINARY[s[1]][1](regs[s[2]], regs[s[3]][0]))
            elif s[0] == "un":
                regs.append(UNARY[s[1]][1](regs[s[2]]))
            else:
                regs[s[1]][s[3]] = regs[s[2]][s[3]]
    return regs


def apply(regs: list[Any], s: Step) -> None:
    if s[0] == "bin":
        regs.append(BINARY[s[1]][0](regs[s[2]], regs[s[3]]))
    elif s[0] == "row":
        regs.append(BINARY[s[1]][0](regs[s[2]], regs[s[3]][0]))
    elif s[0] == "un":
        regs.append(UNARY[s[1]][0](regs[s[2]]))
    else:
        regs[s[1]][s[3]] = regs[s[2]][s[3]]


def run_program(executor: Any, inits: Sequence[np.ndarray], steps: Sequence[Step],
                chunks: Sequence[int], mode: str) -> list[np.ndarray]:
    """Run ``steps`` in consecutive chunks of the given sizes; each chunk is one eager
    context (``mode="eager"``), one lazy context (``"lazy"``), or, inside one outer lazy
    context, alternately an inner eager context and the outer lazy one (``"nested"``)."""
    regs: list[Any] = [Tensor.from_dlpack(a.copy()) for a in inits]
    it = iter(steps)
    with contextlib.ExitStack() as outer:
        if mode == "nested":
            octx = outer.enter_context(LazyRealizationContext(executor=executor))
            outer.enter_context(realization_context(octx))
        for k, size in enumerate(chunks):
            chunk = [s for _, s in zip(range(size), it, strict=False)]
            if mode == "nested" and k % 2:
                for s in chunk:
                    apply(regs, s)
                continue
            cls = LazyRealizationContext if mode == "lazy" else EagerRealizationContext
            with cls(executor=executor) as ctx, realization_context(ctx):
                for s in chunk:
                    apply(regs, s)
    return [np.array(r.to_numpy()) for r in regs]


def partitions(n: int) -> st.SearchStrategy[list[int]]:
    """Chunk sizes summing to ``n`` (a random partition of the program)."""
    return st.lists(st.integers(1, max(n, 1)), min_size=1, max_size=max(n, 1)).map(
        lambda sizes: _clip(sizes, n))


def _clip(sizes: list[int], n: int) -> list[int]:
    out: list[int] = []
    left = n
    for s in sizes:
        if left <= 0:
            break
        out.append(min(s, left))
        left -= out[-1]
    if left > 0:
        out.append(left)
    return out


def _compare(results: list[np.ndarray], want: list[np.ndarray], how: str,
             steps: Sequence[Step]) -> None:
    for i, (g, w) in enumerate(zip(results, want, strict=True)):
        assert same(g, w), (
            f"realization boundaries changed a value ({how}): register {i} is\n{g!r}\n"
            f"but the program gives\n{w!r}\nprogram: {list(steps)} [CONF-15]")


@pytest.mark.spec("CONF-15", "MUT-1", "MUT-3", "CONF-97")
@settings(deadline=None)
@given(prog=programs(), data=st.data())
def test_realization_boundary_invariance(executor: Any, prog: Any, data: Any,
                                         pytestconfig: pytest.Config) -> None:
    """The same program realized after every op, in a random partition, only at the end,
    lazily and in nested lazy/eager contexts gives the values of the numpy model. A failure
    names the graph that diverged, its diagnosis and a graph repro (CONF-97)."""
    _, inits, steps = prog
    want = model(inits, steps)
    n = len(steps)
    plans = {
        "after every op": ([1] * n, "eager"),
        "at the end": ([n], "eager"),
        "random partition": (data.draw(partitions(n), label="partition"), "eager"),
        "one lazy context": ([n], "lazy"),
        "nested lazy/eager": (data.draw(partitions(n), label="nested partition"), "nested"),
    }
    with refusals_are_refused():
        for how, (chunks, mode) in plans.items():
            got = run_program(executor, inits, steps, chunks, mode)
            try:
                _compare(got, want, f"{how}, chunks {chunks}", steps)
            except AssertionError as e:
                rec = Recorder(executor)
                with contextlib.suppress(Exception):
                    run_program(rec, inits, steps, chunks, mode)
                art = artifacts_for(pytestconfig, "test_frontend.realization_boundary_invariance")
                raise AssertionError(f"{e}{diverging_graph(rec.calls, executor, art)}") from None


# -- sources reused across realizations ------------------------------------------------------------
@pytest.mark.spec("CONF-15", "MUT-5")
def test_sources_reused_across_realizations(executor: Any) -> None:
    """One realized tensor feeds several successive contexts, is mutated in one of them, and
    every later realization sees exactly the new contents."""
    base = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    s = Tensor.from_dlpack(base.copy())
    with refusals_are_refused():
        outs = []
        for k in range(3):
            with EagerRealizationContext(executor=executor) as ctx, realization_context(ctx):
                outs.append(s * float(k + 1))
        for k, o in enumerate(outs):
            assert same(o.to_numpy(), base * np.float32(k + 1)), f"realization {k}"
        with EagerRealizationContext(executor=executor) as ctx, realization_context(ctx):
            before = s + 0.0
            s[1] = s[0] * 10.0
            after = s + 0.0
        new = base.copy()
        new[1] = base[0] * 10
        assert same(before.to_numpy(), base), "a read staged before a store saw the store"
        assert same(after.to_numpy(), new), "a read staged after a store missed it"
        assert same(s.to_numpy(), new), "the mutated source does not hold the stored rows"
        with LazyRealizationContext(executor=executor) as ctx, realization_context(ctx):
            later = s - 1.0
        assert same(later.to_numpy(), new - 1), "a later lazy context saw stale contents"


# -- dropped tensors and garbage collection --------------------------------------------------------
class _Counting:
    """Wraps the executor under test; records the number of outputs of every graph."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.outputs: list[int] = []

    def execute(self, graph: Any, inputs: Sequence[Any]) -> Any:
        self.outputs.append(len(graph.outputs or ()))
        return self.inner.execute(graph, inputs)


@pytest.mark.spec("CONF-15")
def test_dropped_tensors_are_not_outputs_and_are_collected(executor: Any) -> None:
    """Tensors dropped before realization are garbage collected and not computed; the
    survivors are correct; after realization no tensor keeps its context alive."""
    counting = _Counting(executor)
    x = Tensor.from_dlpack(np.arange(6, dtype=np.float32).reshape(SHAPE))
    with refusals_are_refused():
        with LazyRealizationContext(executor=counting) as ctx, realization_context(ctx):
            keep = x * 2.0
            dropped = [x + float(k) for k in range(5)]
            probes = [weakref.ref(t) for t in dropped]
            del dropped
            gc.collect()
            also = keep - 1.0
        ctx_ref = weakref.ref(ctx)
        del ctx
        assert all(p() is None for p in probes), "dropped unrealized tensors stay alive"
        assert same(also.to_numpy(), np.arange(6, dtype=np.float32).reshape(SHAPE) * 2 - 1)
        assert same(keep.to_numpy(), np.arange(6, dtype=np.float32).reshape(SHAPE) * 2)
    assert counting.outputs, "the executor was never called"
    # seed + keep + also: the five dropped tensors must not be outputs
    assert counting.outputs[0] <= 3, (
        f"the realized graph had {counting.outputs[0]} outputs; dropped tensors were computed")
    gc.collect()
    assert ctx_ref() is None, "a realized context is still referenced after realization"


# -- a hypothesis state machine over tensors -------------------------------------------------------
class TensorMachine(RuleBasedStateMachine):
    """Create tensors, combine them, mutate rows in place, open/close eager or lazy contexts,
    realize and drop them, in any order; every realized value must equal the numpy model."""

    tensors = Bundle("tensors")

    def __init__(self, executor: Any) -> None:
        super().__init__()
        self.executor = executor
        self.open: list[tuple[Any, Any]] = []  # (context, realization_context(context))
        self.live: list[tuple[Any, np.ndarray]] = []

    @initialize(target=tensors, values=st.lists(st.sampled_from(FLOAT_VALUES), min_size=6,
                                                max_size=6))
    def first(self, values: list[float]) -> tuple[Any, np.ndarray]:
        return self._create(values)

    @rule(target=tensors, values=st.lists(st.sampled_from(FLOAT_VALUES), min_size=6,
                                          max_size=6))
    def create(self, values: list[float]) -> tuple[Any, np.ndarray]:
        return self._create(values)

    def _create(self, values: list[float]) -> tuple[Any, np.ndarray]:
        arr = np.array(values, np.float32).reshape(SHAPE)
        pair = (Tensor.from_dlpack(arr.copy()), arr)
        self.live.append(pair)
        return pair

    @rule(target=tensors, a=tensors, b=tensors, name=st.sampled_from(sorted(BINARY)))
    def binary(self, a: Any, b: Any, name: str) -> tuple[Any, np.ndarray]:
        with np.errstate(all="ignore"):
            pair = (BINARY[name][0](a[0], b[0]), BINARY[name][1](a[1], b[1]))
        self.live.append(pair)
        return pair

    @rule(a=tensors, b=tensors, row=st.integers(0, SHAPE[0] - 1))
    def set_row(self, a: Any, b: Any, row: int) -> None:
        a[0][row] = b[0][row]
        a[1][row] = b[1][row]

    @rule(kind=st.sampled_from(["eager", "lazy"]))
    def open_context(self, kind: str) -> None:
        if len(self.open) >= 2:
            return
        cls = EagerRealizationContext if kind == "eager" else LazyRealizationContext
        ctx = cls(executor=self.executor).__enter__()
        rc = realization_context(ctx)
        rc.__enter__()
        self.open.append((ctx, rc))

    @rule()
    def close_context(self) -> None:
        if self.open:
            ctx, rc = self.open.pop()
            rc.__exit__(None, None, None)
            ctx.__exit__(None, None, None)

    @rule(t=tensors)
    def realize(self, t: Any) -> None:
        if self.open:
            return  # realizing inside an open eager context is an error by design
        got = np.array(t[0].to_numpy())
        assert same(got, t[1]), f"realized value\n{got!r}\n!= model\n{t[1]!r} [CONF-15]"

    @rule(t=consumes(tensors))
    def drop(self, t: Any) -> None:
        self.live = [p for p in self.live if p is not t]
        del t
        gc.collect()

    @invariant()
    def realized_tensors_match(self) -> None:
        for t, arr in self.live:
            if t.real:
                got = t.to_numpy()
                assert same(got, arr), f"realized value\n{got!r}\n!= model\n{arr!r} [CONF-15]"

    def teardown(self) -> None:
        while self.open:
            self.close_context()
        for t, arr in self.live:
            got = t.to_numpy()
            assert same(got, arr), f"final value\n{got!r}\n!= model\n{arr!r} [CONF-15]"


@pytest.mark.spec("CONF-15", "MUT-3")
def test_tensor_state_machine(executor: Any) -> None:
    with refusals_are_refused():
        run_state_machine_as_test(cast(Any, lambda: TensorMachine(executor)),
                                  settings=settings(deadline=None, stateful_step_count=15))
