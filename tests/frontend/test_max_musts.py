"""MAX's pinned behaviours (max-semantics.md section 10) that no other test checked.

The table "MAX pinned behaviours" at the end of spec/realization.md maps every MUST to its
rule and test; this file holds the tests the audit found missing. Each test names the MUST
number it covers in its docstring.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import interpreter.experimental.functional as F
import interpreter.selection as selection
from interpreter.dtype import DType
from interpreter.errors import UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.experimental import realization_context as rc
from interpreter.experimental.context import run_sync
from interpreter.experimental.realization_context import (
    EagerRealizationContext,
    LazyRealizationContext,
)
from interpreter.experimental.tensor import Tensor, realization_context
from interpreter.graph import Graph, lower, ops
from interpreter.graph.ops.staging import stage1
from interpreter.registry import EXACT, REGISTRY, OpDef, register
from interpreter.registry.rules import elementwise
from interpreter.selection import PreferInterpreterExecutor, build_executor
from interpreter.testing import assert_same, build, run
from reference_executors.compiling import CompilingExecutor
from reference_executors.jit import JitExecutor
from tests.executors.fakes import WAIT_S, FakeCompiler
from tests.frontend.helpers import Counting, f32


@pytest.fixture
def raising_op() -> Iterator[OpDef]:
    """A registered op whose kernel fails at run time (the interpreter accepts the graph)."""

    def kernel(x: np.ndarray) -> np.ndarray:
        raise ZeroDivisionError("kernel exploded")

    op = register(OpDef("test_max_must_raising", summary="raises", category="test",
                        operands=("x",), attrs=(), infer=elementwise, kernel=kernel,
                        dtypes=frozenset(DType), tolerance=EXACT))
    yield op
    del REGISTRY["test_max_must_raising"]


# -- realization contexts ------------------------------------------------------------------
@pytest.mark.spec("REAL-18", "REAL-17")
def test_out_of_the_box_factory_builds_an_eager_context() -> None:
    """MUST 16: the initial default factory is ``EagerRealizationContext``."""
    ctx = rc.default_realization_context()
    assert type(ctx) is EagerRealizationContext
    y = Tensor.from_dlpack(f32(1, 2)) * 3  # implicit context from that factory: realized now
    assert y.real
    assert_same(y.to_numpy(), f32(3, 6))


# -- executor selection ----------------------------------------------------------------------
@pytest.mark.spec("SEL-3")
def test_fallback_internal_is_not_an_executor_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """MUST 29, overridden by spec-decisions 2: MAX's ``fallback-internal`` is unknown here."""
    monkeypatch.setenv("MAX_EAGER_EXECUTOR", "fallback-internal")
    with pytest.raises(ValueError,
                       match=r"MAX_EAGER_EXECUTOR.*'compile', 'composite', 'default', 'gpu', "
                       r"'interpreter', 'jit'"):
        selection.env_executor()
    with pytest.raises(ValueError, match="unknown executor name 'fallback-internal'"):
        build_executor("fallback-internal")


@pytest.mark.spec("SEL-3", "SEL-4")
@pytest.mark.parametrize(("raw", "expected"), [(None, 1024), ("0", 0), ("abc", 1024),
                                               ("5", 5)])
def test_max_ops_reaches_the_composite_interpreter(monkeypatch: pytest.MonkeyPatch,
                                                   raw: str | None, expected: int) -> None:
    """MUST 30 (our part): ``MAX_INTERPRETER_MAX_OPS`` bounds the composite's interpreter."""
    if raw is None:
        monkeypatch.delenv("MAX_INTERPRETER_MAX_OPS", raising=False)
    else:
        monkeypatch.setenv("MAX_INTERPRETER_MAX_OPS", raw)
    e = build_executor("composite")
    assert type(e) is JitExecutor and isinstance(e.interpreter, InterpreterExecutor)
    assert e.interpreter.max_ops == expected
    one_op = build(lambda x: ops.negate(x), f32(1))
    assert e.interpreter.can_execute(one_op) is (expected >= 1)


@pytest.mark.spec("SEL-7", "EXEC-9", "REAL-39")
def test_explicit_interpreter_runtime_error_leaves_the_eager_exit(raising_op: OpDef) -> None:
    """MUST 34 (and 21): a real ``InterpreterExecutor`` kernel failure propagates unchanged
    out of the context's exit; the tensors stay unrealized."""
    x = Tensor.from_dlpack(f32(1, 2))
    boom = F.functional(lambda v: stage1("test_max_must_raising", (v,)))
    ctx = EagerRealizationContext(InterpreterExecutor())
    with pytest.raises(ZeroDivisionError, match="kernel exploded"), ctx, \
            realization_context(ctx):
        y = boom(x)
        z = x + 1
    assert not y.real and not z.real and x.real
    assert_same(x.storage, f32(1, 2))


@pytest.mark.spec("SEL-7", "EXEC-2", "EXEC-3")
def test_interpreter_refusal_propagates_from_exit_and_realize_all() -> None:
    """MUST 35: the context does no fallback for a real ``UnsupportedGraphError``; a mutable
    source is untouched after the refusal (spec-decisions 3)."""
    buf_arr = f32(0, 0)
    buf = Tensor.from_dlpack(buf_arr)
    ctx = EagerRealizationContext(InterpreterExecutor(max_ops=0))
    with pytest.raises(UnsupportedGraphError, match=r"require compilation.*threshold 0"), \
            ctx, realization_context(ctx):
        buf[0:1] = Tensor.from_dlpack(f32(5))
        y = Tensor.from_dlpack(f32(1)) + 1
    assert not y.real and not buf.real
    assert_same(buf_arr, f32(0, 0))

    lazy = LazyRealizationContext(InterpreterExecutor(max_ops=0))
    with lazy, realization_context(lazy):
        z = Tensor.from_dlpack(f32(2)) * 2
    with pytest.raises(UnsupportedGraphError, match=r"require compilation.*threshold 0"):
        run_sync(lazy.realize_all())
    assert not z.real


# -- interpreter -------------------------------------------------------------------------------
@pytest.mark.spec("EXEC-2")
def test_constants_count_as_dispatchable_ops() -> None:
    """MUST 38: two constants and an add are three ops for the threshold."""
    g = lower(build(lambda: ops.constant(f32(1, 2)) + ops.constant(f32(3, 4))))
    assert [n.op.name for n in g.nodes] == ["constant", "constant", "add"]
    assert InterpreterExecutor(max_ops=3).can_execute(g)
    assert not InterpreterExecutor(max_ops=2).can_execute(g)
    assert_same(InterpreterExecutor(max_ops=3).execute(g, [])[0], f32(4, 6))


@pytest.mark.spec("constant.C3")
@pytest.mark.parametrize(("value", "expected"), [
    (42, np.array(42, np.int64)),
    (3.14, np.array(3.14, np.float32)),
    (True, np.array(True)),
])
def test_scalar_constants_are_rank_0_buffers(value: Any, expected: np.ndarray) -> None:
    """MUST 41: Python scalar constants materialize as rank-0 buffers of the default dtype."""
    out = run(lambda: ops.constant(value))
    assert isinstance(out, np.ndarray) and out.shape == ()
    assert_same(out, expected)


@pytest.mark.spec("EXEC-4")
def test_graph_shapes_return_one_buffer_per_output() -> None:
    """MUST 42: constant-only, input-plus-constant, chained and multi-output graphs."""
    ex = InterpreterExecutor()
    g = build(lambda: ops.constant(np.array([[1, 2]], np.int32)))
    (only,) = ex.execute(g, [])
    assert_same(only, np.array([[1, 2]], np.int32))

    x = f32(1, 2, 3)
    assert_same(run(lambda v: v + ops.constant(f32(10, 20, 30)), x), f32(11, 22, 33))
    assert_same(run(lambda v: ops.sqrt((v + 1.0) * (v + 1.0)) - 1.0, x), f32(1, 2, 3))

    g = build(lambda v: (v * 2.0, v - 1.0, ops.reshape(v, (3, 1))), x)
    outs = ex.execute(g, [x])
    assert len(outs) == 3
    assert_same(outs[0], f32(2, 4, 6))
    assert_same(outs[1], f32(0, 1, 2))
    assert_same(outs[2], np.array([[1], [2], [3]], np.float32))


@pytest.mark.spec("REAL-5", "EXEC-4")
def test_eager_context_with_several_outputs_uses_one_execute() -> None:
    """MUST 2 and 42 through the front end: one call, one buffer per output (plus the seed)."""
    ex = Counting()
    with EagerRealizationContext(ex) as ctx, realization_context(ctx):
        a = Tensor.full([2], 3.0)
        b = a * a
        c = b - a
    assert ex.calls == 1
    (g,) = ex.graphs
    assert len(g.outputs or ()) == 4  # seed, a, b, c
    assert_same(a.to_numpy(), f32(3, 3))
    assert_same(b.to_numpy(), f32(9, 9))
    assert_same(c.to_numpy(), f32(6, 6))


@pytest.mark.spec("SEL-2")
def test_use_interpreter_true_propagates_runtime_errors_without_fallback(
        raising_op: OpDef) -> None:
    """MUST 18, overridden by spec-decisions 1: ``use_interpreter=True`` compiles only graphs
    the interpreter refuses statically; an interpreter runtime error propagates unchanged."""
    with pytest.warns(DeprecationWarning, match="use_interpreter"):
        ctx = EagerRealizationContext(use_interpreter=True)
    compiling = Counting()
    ctx.executor.compiling = compiling
    x = Tensor.from_dlpack(f32(1, 2))
    boom = F.functional(lambda v: stage1("test_max_must_raising", (v,)))
    with pytest.raises(ZeroDivisionError, match="kernel exploded"), ctx, \
            realization_context(ctx):
        y = boom(x)
    assert compiling.calls == 0 and not y.real



# -- reference executors (issue 10) -----------------------------------------------------------
@pytest.fixture
def flaky_op() -> Iterator[OpDef]:
    """A registered op whose kernel fails on its first call only, then returns ``x + 100``."""
    calls = [0]

    def kernel(x: np.ndarray) -> np.ndarray:
        calls[0] += 1
        if calls[0] == 1:
            raise ZeroDivisionError("kernel exploded once")
        return x + 100

    op = register(OpDef("test_max_must_flaky", summary="fails once", category="test",
                        operands=("x",), attrs=(), infer=elementwise, kernel=kernel,
                        dtypes=frozenset(DType), tolerance=EXACT))
    yield op
    del REGISTRY["test_max_must_flaky"]


def _eager(executor: Any, value: float) -> Tensor:
    """``(x + 1) * 2`` of a one-element source through one eager context on ``executor``."""
    ctx = EagerRealizationContext(executor)
    with ctx, realization_context(ctx):
        y = (Tensor.from_dlpack(f32(value)) + 1) * 2
    return y


def _flaky(executor: Any) -> Tensor:
    ctx = EagerRealizationContext(executor)
    flaky = F.functional(lambda v: stage1("test_max_must_flaky", (v,)))
    with pytest.warns(UserWarning, match="Please file a bug"), ctx, realization_context(ctx):
        y = flaky(Tensor.from_dlpack(f32(1, 2)))
    return y


@pytest.mark.spec("EXEC-4")
def test_compiling_executor_gives_the_same_results_every_call() -> None:
    """MUST 22 (differs: our compiling executor caches plans per instance, see
    spec/reference-executors.md): every call, and every instance, gives the same results."""
    x = f32(0.5, -1, 3)
    expected = InterpreterExecutor().execute(build(lambda v: v * 2.0 - v, x), [x])[0]
    e = CompilingExecutor()
    for executor in (e, e, CompilingExecutor()):
        assert_same(executor.execute(build(lambda v: v * 2.0 - v, x), [x])[0], expected)


@pytest.mark.spec("JIT-4", "JIT-5")
def test_composite_serves_from_the_interpreter_until_the_compile_lands() -> None:
    """MUST 23: interpreted while pending; then the plan, without the interpreter and
    without a second submission."""
    compiler = FakeCompiler(gated=True)
    e = JitExecutor(interpreter=Counting(), compiler=compiler)
    assert _eager(e, 1).item() == 4.0
    assert e.interpreter.calls == 1 and compiler.runs == 0
    compiler.gate.set()
    e.wait_compiled()
    assert _eager(e, 2).item() == 6.0
    assert e.interpreter.calls == 1 and compiler.runs == 1 and e.submitted == 1


@pytest.mark.spec("JIT-6", "SEL-7")
def test_composite_waits_for_the_compile_on_refusal_or_raises() -> None:
    """MUST 24: sync fallback on: a refused graph is served by the compiled plan; off:
    ``UnsupportedGraphError`` leaves the exit, tensors stay unrealized, the compile goes on."""
    refusing = InterpreterExecutor(max_ops=0)
    e = JitExecutor(interpreter=refusing, compiler=FakeCompiler())
    assert _eager(e, 1).item() == 4.0 and e.submitted == 1
    compiler = FakeCompiler(gated=True)
    off = JitExecutor(interpreter=refusing, compiler=compiler,
                      sync_on_interpreter_fallback=False)
    x = Tensor.from_dlpack(f32(1))
    ctx = EagerRealizationContext(off)
    with pytest.raises(UnsupportedGraphError, match=r"require compilation.*threshold 0"), \
            ctx, realization_context(ctx):
        y = x + 1
    assert not y.real and off.submitted == 1
    compiler.gate.set()
    off.wait_compiled()
    assert compiler.compiles == 1 and compiler.runs == 0


@pytest.mark.spec("JIT-2")
def test_one_compile_per_structure_never_shared_across_executors() -> None:
    """MUST 25: two contexts staging the same structure share one compile in one executor;
    another executor compiles its own."""
    compiler = FakeCompiler()
    e = JitExecutor(interpreter=InterpreterExecutor(max_ops=0), compiler=compiler)
    assert _eager(e, 1).item() == 4.0
    assert _eager(e, 5).item() == 12.0
    assert compiler.compiles == 1
    other = JitExecutor(interpreter=InterpreterExecutor(max_ops=0), compiler=compiler)
    assert _eager(other, 1).item() == 4.0
    assert compiler.compiles == 2


@pytest.mark.spec("JIT-7")
def test_failed_compiles_are_cached_and_re_raised() -> None:
    """MUST 26: every later call re-raises the same error; nothing is resubmitted."""
    boom = RuntimeError("compile failed")
    compiler = FakeCompiler(error=boom)
    e = JitExecutor(interpreter=InterpreterExecutor(max_ops=0), compiler=compiler)
    for value in (1.0, 2.0):
        x = Tensor.from_dlpack(f32(value))
        ctx = EagerRealizationContext(e)
        with pytest.raises(RuntimeError, match="compile failed") as info, ctx, \
                realization_context(ctx):
            y = x * 3
        assert info.value is boom and not y.real
    assert compiler.compiles == 1 and e.submitted == 1


@pytest.mark.spec("JIT-8", "REAL-44")
def test_one_compile_under_concurrent_demand() -> None:
    """MUST 27: eight threads realizing the same structure at once: one compile."""
    compiler = FakeCompiler(gated=True)
    e = JitExecutor(interpreter=InterpreterExecutor(max_ops=0), compiler=compiler)
    barrier = threading.Barrier(8)
    got: dict[int, float] = {}

    def work(i: int) -> None:
        barrier.wait()
        got[i] = _eager(e, float(i)).item()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    assert compiler.started.wait(WAIT_S)
    compiler.gate.set()
    for t in threads:
        t.join(WAIT_S)
    assert got == {i: 2.0 * (i + 1) for i in range(8)}
    assert compiler.compiles == 1 and e.submitted == 1


@pytest.mark.spec("JIT-3")
def test_compiled_plan_agrees_with_the_interpreter_despite_in_place_lowering() -> None:
    """MUST 28 with the compiling executor: the first call is interpreted (on a lowered
    copy: the caller's graph is unchanged, EXEC-15); the plan, compiled from the graph as
    given, agrees."""
    def graph() -> Graph:
        return build(lambda x, y: x + y, f32(1, 2), np.array([[1.0], [2.0]]))

    inputs = [f32(1, 2), np.array([[1.0], [2.0]])]
    compiler = FakeCompiler(gated=True, inner=CompilingExecutor())
    e = JitExecutor(compiler=compiler)
    g = graph()
    first = e.execute(g, inputs)[0]
    assert g.needs_lowering and g.to_text() == graph().to_text()
    compiler.gate.set()
    e.wait_compiled()
    assert_same(first, np.array([[2, 3], [3, 4]], np.float64))
    assert_same(e.execute(graph(), inputs)[0], first)
    assert compiler.runs == 1 and e.submitted == 1


@pytest.mark.spec("JIT-1", "SEL-3", "SEL-4")
def test_max_ops_zero_still_runs_through_the_composite(monkeypatch: pytest.MonkeyPatch) -> None:
    """MUST 30: ``MAX_INTERPRETER_MAX_OPS=0`` makes the composite's interpreter refuse every
    graph, yet realization succeeds through the compiled plan."""
    monkeypatch.setenv("MAX_INTERPRETER_MAX_OPS", "0")
    e = build_executor("composite")
    assert type(e) is JitExecutor and e.interpreter.max_ops == 0
    e.interpreter = Counting(e.interpreter)
    assert _eager(e, 1).item() == 4.0
    assert e.interpreter.calls <= 1 and e.submitted == 1  # refused, or the plan had landed


@pytest.mark.spec("SEL-2", "JIT-10")
def test_fallback_paths_compile_only_what_the_interpreter_does_not_serve(
        flaky_op: OpDef) -> None:
    """MUST 32 (MAX's internal fallback executor; spec-decisions 1 and 2 keep no such name):
    ``use_interpreter=True`` never touches the compiler for a served graph and compiles a
    refused one synchronously; the JIT warns "file a bug" before it compiles after an
    interpreter runtime failure, with one cache entry per structure."""
    ex = PreferInterpreterExecutor()
    ex.compiling = Counting()
    assert _eager(ex, 1).item() == 4.0 and ex.compiling.calls == 0
    ex.interpreter.compilation_required = frozenset({"mul"})
    assert _eager(ex, 1).item() == 4.0 and ex.compiling.calls == 1

    compiler = FakeCompiler(gated=True)
    e = JitExecutor(interpreter=Counting(), compiler=compiler)
    threading.Timer(0.05, compiler.gate.set).start()
    y = _flaky(e)
    assert_same(y.to_numpy(), f32(101, 102))
    assert compiler.compiles == 1 and len(e.cached_keys()) == 1 and e.interpreter.calls == 1


@pytest.mark.spec("JIT-10")
def test_default_executor_recovers_from_an_interpreter_runtime_error(flaky_op: OpDef) -> None:
    """MUST 33: the default (composite) executor serves the compiled plan after the
    interpreter's runtime error, calling the interpreter exactly once."""
    e = build_executor("composite")
    assert type(e) is JitExecutor
    compiler = FakeCompiler(gated=True)
    e.compiler, e.interpreter = compiler, Counting(e.interpreter)
    threading.Timer(0.05, compiler.gate.set).start()
    y = _flaky(e)
    assert_same(y.to_numpy(), f32(101, 102))
    assert e.interpreter.calls == 1 and compiler.runs == 1
