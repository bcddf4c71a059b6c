"""Eager, lazy and graph realization contexts (spec/realization.md, REAL-1..19, 29, 39, 45, 47)."""

from __future__ import annotations

import asyncio
import gc
import weakref

import numpy as np
import pytest

import interpreter.experimental.functional as F
from interpreter.dtype import DType
from interpreter.errors import UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.experimental.context import run_sync
from interpreter.experimental.realization_context import (
    EagerRealizationContext,
    GraphRealizationContext,
    LazyRealizationContext,
    set_default_realization_context,
)
from interpreter.experimental.tensor import (
    RealizationContext,
    Tensor,
    current_realization_context,
    realization_context,
)
from interpreter.graph import BufferType, Graph, TensorType
from interpreter.testing import assert_same
from tests.frontend.helpers import Counting, Failing, f32


def real(a: np.ndarray) -> Tensor:
    return Tensor.from_dlpack(a)


@pytest.mark.spec("REAL-5", "REAL-9")
def test_eager_context_realizes_everything_in_one_executor_call() -> None:
    ex = Counting()
    x = real(f32(1, 2, 3))
    with EagerRealizationContext(ex) as ctx, realization_context(ctx):
        y = (x + 1) * 2
        assert not y.real
        assert ex.calls == 0
    assert y.real
    assert ex.calls == 1
    assert_same(y.to_numpy(), f32(4, 6, 8))


@pytest.mark.spec("REAL-5")
def test_zeros_plus_one_times_two_minus_one_batched() -> None:
    ex = Counting()
    with EagerRealizationContext(ex) as ctx, realization_context(ctx):
        a = Tensor.zeros([2, 2])
        b = a + 1
        c = b * 2
        d = c - 1
        assert not any(t.real for t in (a, b, c, d))
    assert all(t.real for t in (a, b, c, d))
    assert ex.calls == 1
    assert_same(d.to_numpy(), np.ones((2, 2), np.float32))
    assert_same(c.to_numpy(), np.full((2, 2), 2.0, np.float32))


@pytest.mark.spec("REAL-1")
def test_contexts_satisfy_the_protocol() -> None:
    assert isinstance(EagerRealizationContext(), RealizationContext)
    assert isinstance(LazyRealizationContext(), RealizationContext)
    assert isinstance(GraphRealizationContext(Graph("g")), RealizationContext)


@pytest.mark.spec("REAL-2")
def test_current_context_lookup() -> None:
    with pytest.raises(LookupError):
        current_realization_context()
    assert current_realization_context(None) is None
    ctx = EagerRealizationContext()
    with ctx, realization_context(ctx):
        assert current_realization_context() is ctx
    assert current_realization_context(None) is None


@pytest.mark.spec("REAL-3")
def test_add_source_rejects_unrealized() -> None:
    ctx = LazyRealizationContext()
    with ctx, realization_context(ctx):
        y = real(f32(1)) + 1
        with pytest.raises(TypeError, match="Only realized tensors"):
            ctx.add_source(y)


@pytest.mark.spec("REAL-4")
def test_add_source_is_idempotent() -> None:
    ctx = EagerRealizationContext()
    x = real(f32(1, 2))
    n = len(ctx.graph.inputs)
    s1 = ctx.add_source(x)
    s2 = ctx.add_source(x)
    assert s1 == s2 and s1.value is s2.value
    assert len(ctx.graph.inputs) == n + 1
    assert ctx.sources[s1.value] is x
    assert ctx.source_values[id(x)] is s1.value
    assert s1.value.type == TensorType(DType.float32, (2,))


@pytest.mark.spec("REAL-6")
def test_add_mutable_source_upgrades_a_read_only_source() -> None:
    ctx = EagerRealizationContext()
    x = real(f32(1, 2))
    ro = ctx.add_source(x).value
    m1 = ctx.add_mutable_source(x).value
    assert isinstance(m1.type, BufferType) and m1 is not ro
    assert ctx.add_mutable_source(x).value is m1
    assert ctx.add_source(x).value is m1


@pytest.mark.spec("REAL-8")
def test_finalize_outputs_seed_first_then_creation_order_and_can_repeat() -> None:
    ctx = EagerRealizationContext()
    x = real(f32(1, 2))
    with ctx, realization_context(ctx):
        b = x * 3
        a = x + 1
        outs, g = ctx.finalize_graph()
        outs2, g2 = ctx.finalize_graph()  # a retry rebuilds the outputs
    assert g2 is g and len(g.outputs or ()) == 3
    assert outs[1] is b and outs[2] is a and outs2[1:] == [b, a]
    assert g.outputs[0].type == TensorType(DType.uint64, (1,))  # type: ignore[index]
    assert_same(a.to_numpy(), f32(2, 3))
    assert_same(b.to_numpy(), f32(3, 6))


@pytest.mark.spec("REAL-10")
def test_realize_all_inside_the_context_raises() -> None:
    ctx = EagerRealizationContext()
    with ctx, realization_context(ctx):
        y = real(f32(1)) + 1
        with pytest.raises(TypeError, match="before realization context is completed"):
            run_sync(ctx.realize_all())
        with pytest.raises(TypeError, match="before realization context is completed"):
            asyncio.run(ctx.realize_all())
        assert not y.real
    assert y.real


@pytest.mark.spec("REAL-11")
def test_lazy_context_does_not_realize_on_exit_and_await_realizes_all() -> None:
    ex = Counting()
    ctx = LazyRealizationContext(ex)
    with ctx, realization_context(ctx):
        a = real(f32(1)) + 1
        b = a * 10
    assert not a.real and not b.real and ex.calls == 0

    async def go() -> Tensor:
        return await b.realize

    assert asyncio.run(go()) is b
    assert a.real and b.real and ex.calls == 1
    assert_same(b.to_numpy(), f32(20))


@pytest.mark.spec("REAL-11")
def test_await_tensor_realizes() -> None:
    with F.lazy():
        a = real(f32(2)) * 3

    async def go() -> Tensor:
        return await a

    assert asyncio.run(go()) is a and a.real and a.item() == 6.0


@pytest.mark.spec("REAL-11", "REAL-12")
def test_lazy_item_and_dlpack_realize() -> None:
    with F.lazy():
        a = real(f32(1.5)) + 1
        b = real(f32(1, 2)) * 2
    assert a.item() == 2.5
    assert b.real  # same context
    with F.lazy():
        c = real(f32(1, 2)) - 1
    assert not c.real
    assert_same(np.from_dlpack(c), f32(0, 1))
    with F.lazy():
        d = real(f32(4)) + 0
    assert_same(np.asarray(d), f32(4))
    with F.lazy():
        e = real(f32(0)) + 0
    assert bool(e) is False


@pytest.mark.spec("REAL-7")
def test_dropped_tensor_is_not_computed_and_its_source_is_pruned() -> None:
    ex = Counting()
    x, s = real(f32(1, 2)), real(f32(7, 7))
    ctx = LazyRealizationContext(ex)
    with ctx, realization_context(ctx):
        a = x + 1
        b = s * 3
    ref = weakref.ref(b)
    del b
    gc.collect()
    assert ref() is None
    run_sync(a.realize)
    (g,) = ex.graphs
    assert len(g.inputs) == 2  # the seed and x; s was only used by the dropped tensor
    assert all(t is not s for t in ctx.sources.values()) or ctx.graph is not g
    (xs,) = [arr for arr in ex.inputs[0] if arr.dtype == np.float32]
    assert xs is x.storage
    assert {n.op.name for n in g.nodes} <= {"add", "constant", "broadcast_to"}
    assert_same(a.to_numpy(), f32(2, 3))


@pytest.mark.spec("REAL-15")
def test_graph_context_cannot_realize() -> None:
    ctx = GraphRealizationContext(Graph("g"))
    with pytest.raises(TypeError, match="Can't realize from a graph"):
        run_sync(ctx.realize_all())


@pytest.mark.spec("REAL-14", "REAL-17")
def test_ops_in_a_bare_graph_use_a_graph_context_and_embed_constants() -> None:
    x = Tensor.full([2], 5.0)
    assert x.real
    with Graph("g") as g:
        y = x + Tensor.ones([2])
        assert not y.real
        assert isinstance(y.state.ctx, GraphRealizationContext)  # type: ignore[union-attr]
        g.output(y._graph_value)
    assert g.inputs == []
    (out,) = InterpreterExecutor().execute(g, [])
    assert_same(out, f32(6, 6))


@pytest.mark.spec("REAL-13")
def test_lazy_tensor_is_realized_before_embedding_in_a_graph() -> None:
    with F.lazy():
        a = real(f32(1, 2)) + 1
    with Graph("g") as g:
        y = a * 2
        g.output(y._graph_value)
    assert a.real
    assert_same(InterpreterExecutor().execute(g, [])[0], f32(4, 6))


@pytest.mark.spec("REAL-13")
def test_lazy_operand_of_an_eager_op_is_realized_first() -> None:
    with F.lazy():
        lazy_t = Tensor.full([1], 5.0)
    eager = lazy_t + 1
    assert lazy_t.real and eager.real
    assert eager.item() == 6.0


@pytest.mark.spec("REAL-11", "REAL-5")
def test_inner_eager_realizes_without_outer_lazy() -> None:
    with F.lazy():
        outer = real(f32(1)) + 1
        inner_ctx = EagerRealizationContext()
        with inner_ctx, realization_context(inner_ctx):
            inner = real(f32(2)) * 2
        assert inner.real and not outer.real
    assert not outer.real
    assert inner.item() == 4.0 and outer.item() == 2.0


@pytest.mark.spec("REAL-18", "REAL-17")
def test_default_realization_context_factory() -> None:
    made: list[EagerRealizationContext] = []
    ex = Counting()

    def factory() -> EagerRealizationContext:
        made.append(EagerRealizationContext(ex))
        return made[-1]

    with set_default_realization_context(factory):
        y = real(f32(1)) + 1
        assert y.real and len(made) == 1 and ex.calls == 1
    real(f32(1)) + 1
    assert len(made) == 1  # restored
    handle = set_default_realization_context(factory)
    real(f32(1)) + 1
    assert len(made) == 2  # immediate, persists while the handle is unused
    handle.__exit__(None, None, None)


@pytest.mark.spec("REAL-17")
def test_op_outside_any_context_is_a_realized_one_op_graph() -> None:
    ex = Counting()
    with set_default_realization_context(lambda: EagerRealizationContext(ex)):
        x = real(f32(1, 2))
        y = x + x
    assert y.real and ex.calls == 1
    assert [n.op.name for n in ex.graphs[0].nodes] == ["add"]
    assert_same(y.to_numpy(), f32(2, 4))


@pytest.mark.spec("REAL-19")
def test_functional_body_is_one_graph() -> None:
    ex = Counting()

    @F.functional
    def body(a: object, b: object) -> object:
        return (a + b) * 2 - 1  # type: ignore[operator]

    with set_default_realization_context(lambda: EagerRealizationContext(ex)):
        y = body(real(f32(1, 2)), real(f32(3, 4)))
    assert isinstance(y, Tensor) and y.real and ex.calls == 1
    assert_same(y.to_numpy(), f32(7, 11))
    assert F.add.graph_op.__name__ == "add"


@pytest.mark.spec("REAL-29")
def test_no_realization_when_the_body_raises() -> None:
    ex = Counting()
    ctx = EagerRealizationContext(ex)
    with pytest.raises(KeyError), ctx, realization_context(ctx):
        y = real(f32(1)) + 1
        raise KeyError("body")
    assert not y.real and ex.calls == 0


@pytest.mark.spec("REAL-29", "SEL-7")
def test_realization_failure_propagates_out_of_with() -> None:
    ctx = EagerRealizationContext(Failing(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"), ctx, realization_context(ctx):
        real(f32(1)) + 1
    err = UnsupportedGraphError("refused")
    ctx = EagerRealizationContext(Failing(err))
    with pytest.raises(UnsupportedGraphError) as info, ctx, realization_context(ctx):
        real(f32(1)) + 1
    assert info.value is err


@pytest.mark.spec("SEL-7")
def test_explicit_interpreter_runtime_error_propagates() -> None:
    class Broken(InterpreterExecutor):
        def execute(self, graph, inputs):  # type: ignore[no-untyped-def]
            raise FloatingPointError("kernel failed")

    ctx = EagerRealizationContext(Broken())
    with pytest.raises(FloatingPointError, match="kernel failed"), ctx, \
            realization_context(ctx):
        real(f32(1)) + 1


@pytest.mark.spec("REAL-39")
def test_failed_execution_changes_nothing_and_can_be_retried() -> None:
    from interpreter.experimental import random

    random.set_seed(5)
    ex = Failing(RuntimeError("boom"), times=1)
    x_arr = f32(1, 2)
    m_arr = f32(0, 0, 0)
    x, m = real(x_arr), real(m_arr)
    ctx = LazyRealizationContext(ex)
    with ctx, realization_context(ctx):
        y = x * 2
        m[1:2] = x[0:1] + 10
        r = random.uniform([2])
    assert not m.real
    with pytest.raises(RuntimeError, match="boom"):
        run_sync(y.realize)
    assert not y.real and not r.real and not m.real and x.real
    assert x.storage is x_arr and (m.storages or ())[0] is m_arr
    assert_same(m_arr, f32(0, 0, 0))
    assert random.seed().item() == 5
    assert_same(y.to_numpy(), f32(2, 4))  # retried: realizes
    assert m.real and m.storage is m_arr
    assert_same(m_arr, f32(0, 11, 0))
    assert random.seed().item() == 6


@pytest.mark.spec("REAL-45")
def test_dead_sources_are_freed() -> None:
    a = real(f32(1, 2))
    ref = weakref.ref(a)
    a *= 2
    gc.collect()
    assert ref() is None
    assert_same(a.to_numpy(), f32(2, 4))


@pytest.mark.spec("REAL-47")
def test_context_realized_early_continues_without_replaying_stores() -> None:
    buf_arr = f32(0, 0)
    buf = real(buf_arr)
    ex = Counting()
    ctx = LazyRealizationContext(ex)
    with ctx, realization_context(ctx):
        buf[0:1] = Tensor.ones([1]) + 0
        c = Tensor.full([1], 3.0)
    assert c.item() == 3.0  # realizes the context; it stays usable
    assert_same(buf_arr, f32(1, 0))
    with ctx, realization_context(ctx):
        d = c + 1
    assert d.item() == 4.0
    assert ex.calls == 2
    assert_same(buf_arr, f32(1, 0))
    assert "buffer_store_slice" not in {n.op.name for n in ex.graphs[1].nodes}


@pytest.mark.spec("REAL-48")
def test_write_in_inner_eager_context_keeps_outer_lazy_value() -> None:
    import numpy as np

    from interpreter.executor import InterpreterExecutor
    from interpreter.experimental.realization_context import (
        EagerRealizationContext,
        LazyRealizationContext,
    )
    from interpreter.experimental.tensor import Tensor, realization_context

    ex = InterpreterExecutor()
    a = Tensor.from_dlpack(np.zeros(3, np.float32))
    one = Tensor.from_dlpack(np.ones(1, np.float32))
    with LazyRealizationContext(executor=ex) as lz, realization_context(lz):
        b = a + 1.0
        with EagerRealizationContext(executor=ex) as e, realization_context(e):
            a[0:1] = one
        c = a + 1.0  # staged after the write: sees it
    np.testing.assert_array_equal(b.to_numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(c.to_numpy(), [2.0, 1.0, 1.0])
    np.testing.assert_array_equal(a.to_numpy(), [1.0, 0.0, 0.0])
