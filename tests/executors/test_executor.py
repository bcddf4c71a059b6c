"""InterpreterExecutor protocol: refusal, validation, freshness, mutation, threads."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import ExecutorInputError
from interpreter.executor import Executor, InterpreterExecutor, UnsupportedGraphError
from interpreter.graph import BufferType, DeviceRef, Graph, TensorType, lower, ops
from interpreter.graph.core import Node
from interpreter.registry import EXACT, REGISTRY, OpDef, get_op, register
from interpreter.registry.rules import elementwise
from interpreter.testing import Buf, assert_same, build, run

F32 = DType.float32


def five_op_graph() -> Graph:
    """constant (a splat, PROMO-4), add, mul, exp, sqrt."""
    return lower(build(lambda x: ops.sqrt(ops.exp((x + 1.0) * x)), np.zeros(3, np.float32)))


@pytest.mark.spec("EXEC-1")
def test_duck_typed_executor_is_an_executor() -> None:
    class Duck:
        def execute(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
            return []

    assert isinstance(Duck(), Executor)
    assert isinstance(InterpreterExecutor(), Executor)
    assert not isinstance(object(), Executor)


@pytest.mark.spec("EXEC-2", "EXEC-3")
def test_threshold_refuses_before_any_side_effect() -> None:
    with Graph("g", [TensorType(F32, (3,)), BufferType(F32, (3,))]) as g:
        x, b = g.inputs
        ops.buffer_store(b, x * 2.0)
        y = ops.exp(x) + x
        g.output(y)
    n = len(lower(g).nodes)  # the threshold counts lowered (dispatchable) ops
    assert n >= 5
    x, buf = np.arange(3, dtype=np.float32), np.full(3, 7, np.float32)
    before = (x.tobytes(), buf.tobytes())
    ex = InterpreterExecutor(max_ops=n - 1)
    assert not ex.can_execute(g)
    with pytest.raises(UnsupportedGraphError, match=rf"require compilation.*threshold {n - 1}"):
        ex.execute(g, [x, buf])
    assert (x.tobytes(), buf.tobytes()) == before
    assert InterpreterExecutor(max_ops=n).can_execute(g)
    assert InterpreterExecutor(max_ops=None).can_execute(g)
    assert not InterpreterExecutor(max_ops=0).can_execute(g)


@pytest.mark.spec("EXEC-2")
def test_max_ops_two_refuses_a_five_op_graph() -> None:
    g = five_op_graph()
    assert [n.name for n in g.nodes] == ["constant", "add", "mul", "exp", "sqrt"]
    with pytest.raises(UnsupportedGraphError):
        InterpreterExecutor(max_ops=2).execute(g, [np.zeros(3, np.float32)])


@pytest.mark.spec("EXEC-2")
def test_refuses_gpu_values_compilation_hook_and_missing_outputs() -> None:
    with Graph("gpu", [TensorType(F32, (2,), DeviceRef.GPU(0))]) as g:
        g.output(g.inputs[0] + g.inputs[0])
    assert "gpu:0" in InterpreterExecutor().refusal(g)  # type: ignore[operator]
    ex = InterpreterExecutor()
    ex.compilation_required = frozenset({"mul"})
    assert not ex.can_execute(five_op_graph())
    with Graph("noout", [TensorType(F32, (2,))]) as g2:
        ops.exp(g2.inputs[0])
    with pytest.raises(UnsupportedGraphError, match="no outputs"):
        InterpreterExecutor().execute(g2, [np.zeros(2, np.float32)])


@pytest.mark.spec("EXEC-7")
def test_input_validation_messages() -> None:
    g = build(lambda a, b, c: a + b + c, *[np.zeros(2, np.float32)] * 3)
    ex = InterpreterExecutor()
    with pytest.raises(ExecutorInputError, match=r"expected 3 inputs, got 1"):
        ex.execute(g, [np.zeros(2, np.float32)])
    good = [np.zeros(2, np.float32)] * 2
    with pytest.raises(ExecutorInputError, match=r"input 2 .*float64.*expected tensor<f32\[2\]"):
        ex.execute(g, [*good, np.zeros(2, np.float64)])
    with pytest.raises(ExecutorInputError, match=r"input 2 .*shape \[3\]"):
        ex.execute(g, [*good, np.zeros(3, np.float32)])
    with pytest.raises(ExecutorInputError, match=r"numpy.ndarray"):
        ex.execute(g, [*good, [0.0, 0.0]])
    gb = build(lambda b: ops.buffer_store(b, b[...]), Buf(np.zeros(2, np.float32)))
    ro = np.zeros(2, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ExecutorInputError, match="read-only"):
        ex.execute(gb, [ro])


def _shares(a: np.ndarray, others: list[np.ndarray]) -> bool:
    return any(np.shares_memory(a, o) for o in others)


@pytest.mark.spec("EXEC-4", "EXEC-5")
@pytest.mark.parametrize("case", ["identity", "reshape", "twice", "constant", "slice", "bcast"])
def test_outputs_are_fresh(case: str) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    fns = {
        "identity": lambda x: x,
        "reshape": lambda x: ops.reshape(x, (3, 2)),
        "twice": lambda x: (x + 1.0, x + 1.0),
        "constant": lambda x: (ops.constant(np.ones(2, np.float32)), x),
        "slice": lambda x: (x[0], x[:, ::-1]),
        "bcast": lambda x: ops.broadcast_to(x[0], (4, 3)),
    }
    g = build(fns[case], x)
    outs = InterpreterExecutor().execute(g, [x])
    assert len(outs) == len(g.outputs or ())
    for i, (o, v) in enumerate(zip(outs, g.outputs or (), strict=True)):
        assert o.dtype == v.type.dtype.to_numpy() and o.shape == v.type.shape
        assert not _shares(o, [x]) and not _shares(o, outs[:i] + outs[i + 1:])
        assert o.flags.writeable
    outs[0][...] = 99  # writing an output never changes the graph's constants or inputs
    assert_same(x, np.arange(6, dtype=np.float32).reshape(2, 3))
    if case == "constant":
        assert_same(InterpreterExecutor().execute(g, [x])[0], np.ones(2, np.float32))


@pytest.mark.spec("EXEC-6")
def test_read_only_inputs_are_never_written_and_buffers_mutated_once() -> None:
    x = np.arange(3, dtype=np.int64)
    x.flags.writeable = False  # any write would raise
    buf = np.array([10, 20, 30], np.int64)
    out = run(lambda x, b: (ops.buffer_store(b, ops.buffer_load(b) + x), x * 2)[1], x, Buf(buf))
    assert_same(out, np.array([0, 2, 4], np.int64))
    assert_same(buf, np.array([10, 21, 32], np.int64))  # once: not replayed, not skipped


@pytest.mark.spec("MUT-1")
def test_load_is_a_copy() -> None:
    buf = np.array([1.0, 2.0], np.float32)
    old = run(lambda b: (lambda v: (ops.buffer_store(b, v * 0.0), v)[1])(ops.buffer_load(b)),
              Buf(buf))
    assert_same(old, np.array([1.0, 2.0], np.float32))
    assert_same(buf, np.array([0.0, 0.0], np.float32))


@pytest.fixture
def raising_op() -> Iterator[OpDef]:
    def kernel(x: np.ndarray) -> np.ndarray:
        raise ZeroDivisionError("kernel exploded")

    op = register(OpDef("test_raising", summary="raises", category="test", operands=("x",),
                        attrs=(), infer=elementwise, kernel=kernel, dtypes=frozenset(DType),
                        tolerance=EXACT))
    yield op
    del REGISTRY["test_raising"]


@pytest.mark.spec("EXEC-9")
def test_runtime_errors_propagate_unchanged(raising_op: OpDef) -> None:
    from interpreter.graph.ops.staging import stage1

    g = build(lambda x: stage1("test_raising", (x + 1.0,)), np.zeros(2, np.float32))
    with pytest.raises(ZeroDivisionError, match="kernel exploded") as info:
        InterpreterExecutor().execute(g, [np.zeros(2, np.float32)])
    assert type(info.value) is ZeroDivisionError  # unchanged type, with a note on the node
    (note,) = info.value.__notes__
    assert note.startswith("while interpreting node #2 test_raising(tensor<f32[2] cpu:0>) "
                           f"staged at {__file__}:"), note


@pytest.mark.spec("EXEC-2")
def test_unregistered_op_is_refused(raising_op: OpDef) -> None:
    from interpreter.graph.ops.staging import stage1

    g = build(lambda x: stage1("test_raising", (x,)), np.zeros(2, np.float32))
    del REGISTRY["test_raising"]
    try:
        assert "unregistered op" in (InterpreterExecutor().refusal(g) or "")
    finally:
        REGISTRY["test_raising"] = raising_op


@pytest.mark.spec("EXEC-8")
def test_concurrent_execute_on_different_graphs() -> None:
    ex = InterpreterExecutor()
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for i in range(50):
                x = np.full(4, float(i), np.float32)
                g = build(lambda x, k=k: x * float(k) + 1.0, x)
                assert_same(ex.execute(g, [x])[0], np.full(4, i * k + 1.0, np.float32))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.spec("NUM-5")
def test_no_floating_point_warnings(recwarn: pytest.WarningsRecorder) -> None:
    x = np.array([0.0, -1.0, np.inf], np.float32)
    out = run(lambda x: ops.log(x) / x, x)
    assert np.isnan(out[1]) and len(recwarn) == 0


@pytest.mark.spec("EXEC-2")
def test_refusal_and_can_execute_never_change_the_graph() -> None:
    """The threshold counts lowered ops, but asking must not lower (or otherwise edit)."""
    with Graph("mixed", [TensorType(F32, (3,)), TensorType(DType.float16, (1,))]) as g:
        x, i = g.inputs
        g.output(ops.add(x, i))  # needs a cast and a broadcast_to once lowered
    assert g.needs_lowering and [n.name for n in g.nodes] == ["add"]
    assert InterpreterExecutor(max_ops=2).refusal(g) == (
        "its 3 ops require compilation: over the op-count threshold 2")
    assert InterpreterExecutor(max_ops=3).can_execute(g)
    assert g.needs_lowering and [n.name for n in g.nodes] == ["add"]
    out = InterpreterExecutor(max_ops=3).execute(
        g, [np.ones(3, np.float32), np.array([2], np.float16)])
    assert_same(out[0], np.full(3, 3, np.float32))


@pytest.mark.spec("EXEC-2")
def test_refusal_messages_name_the_real_reason() -> None:
    with Graph("gpu", [TensorType(F32, (2,), DeviceRef.GPU(0))]) as g:
        g.output(g.inputs[0] + g.inputs[0])
    with pytest.raises(UnsupportedGraphError) as info:
        InterpreterExecutor().execute(g, [np.zeros(2, np.float32)])
    assert str(info.value) == ("InterpreterExecutor: graph 'gpu' refused: input on gpu:0 "
                               "(the interpreter serves CPU devices only) [EXEC-2]")
    ex = InterpreterExecutor()
    ex.compilation_required = frozenset({"exp"})
    assert ex.refusal(five_op_graph()) == "op 'exp' requires compilation"


@pytest.mark.spec("EXEC-9")
def test_values_are_dropped_after_their_last_use() -> None:
    """On a long chain only a bounded number of intermediate arrays is alive at once."""
    import weakref

    from interpreter.evaluate import evaluate

    n = 200
    with Graph("chain", [TensorType(F32, (64,))]) as g:
        (x,) = g.inputs
        y = x
        for _ in range(n):
            y = ops.exp(ops.negate(y))
        g.output(y)
    lower(g)
    made: list[weakref.ref[np.ndarray]] = []
    alive: list[int] = []

    def watch(pos: int, node: object, args: list[object], outs: tuple[object, ...]) -> None:
        alive.append(sum(r() is not None for r in made))
        made.extend(weakref.ref(o) for o in outs if isinstance(o, np.ndarray))

    x0 = np.linspace(0, 1, 64, dtype=np.float32)
    (out,) = evaluate(g, [x0], on_node=watch)
    assert len(made) == 2 * n and max(alive) <= 2
    want = x0
    for _ in range(n):
        want = np.exp(-want)
    np.testing.assert_allclose(out, want, rtol=1e-5)


@pytest.mark.spec("EXEC-9")
def test_op_apply_always_gives_one_entry_per_result() -> None:
    """``OpDef.apply`` is the one place that reads the kernel convention: a tuple for one
    result (array or numpy scalar), for several (split, top_k) and for none (a store)."""
    x = np.array([3.0, 1.0, 2.0], np.float32)
    (neg,) = REGISTRY["negate"].apply(x)
    np.testing.assert_array_equal(neg, [-3.0, -1.0, -2.0])
    (s,) = REGISTRY["add"].apply(np.float32(1.5), np.float32(2.0))
    assert s == np.float32(3.5)
    pieces = REGISTRY["split"].apply(x, sizes=(1, 2), axis=0)
    assert isinstance(pieces, tuple) and [p.tolist() for p in pieces] == [[3.0], [1.0, 2.0]]
    values, indices = REGISTRY["top_k"].apply(x, k=2, axis=0)
    assert values.tolist() == [3.0, 2.0] and indices.tolist() == [0, 2]
    buf = np.zeros(3, np.float32)
    assert REGISTRY["buffer_store"].apply(buf, x) == ()
    np.testing.assert_array_equal(buf, x)


@pytest.mark.spec("EXEC-9")
def test_cached_plan_follows_the_graph_it_was_made_for() -> None:
    """The per-graph plan (last uses, ops, devices) is rebuilt when lowering replaces the
    nodes, so a refusal check before lowering never leaves a stale plan for the run."""
    from interpreter.evaluate import plan

    with Graph("mixed", [TensorType(DType.int8, (3,)), TensorType(F32, (3,))]) as g:
        a, b = g.inputs
        g.output(ops.add(a, b))
    ex = InterpreterExecutor()
    assert ex.refusal(g) is None
    assert [step[1].op.name for step in plan(g).steps] == ["add"]
    (out,) = ex.execute(g, [np.array([1, 2, 3], np.int8), np.full(3, 0.5, np.float32)])
    assert [step[1].op.name for step in plan(g).steps] == ["add"]  # ran a copy (EXEC-15)
    lower(g)  # in place: new nodes, so a new plan
    assert [step[1].op.name for step in plan(g).steps] == ["cast", "add"]
    assert out.dtype == np.float32 and out.tolist() == [1.5, 2.5, 3.5]
    (again,) = ex.execute(g, [np.array([4, 5, 6], np.int8), np.zeros(3, np.float32)])
    assert again.tolist() == [4.0, 5.0, 6.0] and plan(g) is plan(g)


@pytest.mark.spec("EXEC-9")
def test_a_plan_is_rebuilt_when_the_inputs_change() -> None:
    """Registers are numbered inputs first: removing an unused input renumbers them, so the
    cached plan must not serve the graph afterwards."""
    from interpreter.evaluate import evaluate, plan
    from interpreter.graph.passes import remove_unused_inputs

    g = Graph("g", [TensorType(F32, (2,)), TensorType(F32, (2,))])
    (r,) = g.stage(get_op("negate"), (g.inputs[1],), {})
    g.output(r)
    x, y = np.zeros(2, np.float32), np.array([1.0, 2.0], np.float32)
    first = plan(g)
    assert evaluate(g, [x, y])[0].tolist() == [-1.0, -2.0]
    assert remove_unused_inputs(g) == [1]
    assert plan(g) is not first
    assert evaluate(g, [y])[0].tolist() == [-1.0, -2.0]


@pytest.mark.spec("EXEC-9")
def test_evaluate_takes_a_per_node_kernel_override() -> None:
    """``evaluate(..., kernel=)`` runs ``kernel(node)`` instead of the op's kernel where it
    returns one, asking each node right before it runs (after the previous node's
    ``on_node``); the cached plan keeps the registry kernels for the next run."""
    from interpreter.evaluate import evaluate

    with Graph("g", [TensorType(F32, (3,))]) as g:
        (x,) = g.inputs
        g.output(ops.exp(ops.negate(x)))
    lower(g)
    events: list[str] = []

    def kernel_for(node: Node) -> Any:
        events.append(f"ask {node.op.name}")
        return (lambda a: np.asarray(a * 2, np.float32)) if node.op.name == "exp" else None

    def seen(pos: int, node: Node, args: list[Any], outs: tuple[Any, ...]) -> None:
        events.append(f"ran {node.op.name}: {outs[0].tolist()}")

    x0 = np.array([1.0, -2.0, 0.5], np.float32)
    (out,) = evaluate(g, [x0], on_node=seen, kernel=kernel_for)
    assert out.tolist() == [-2.0, 4.0, -1.0]  # 2 * (-x): exp replaced, negate kept
    assert events == ["ask negate", "ran negate: [-1.0, 2.0, -0.5]", "ask exp",
                      "ran exp: [-2.0, 4.0, -1.0]"]
    (again,) = evaluate(g, [x0])
    np.testing.assert_allclose(again, np.exp(-x0.astype(np.float64)), rtol=1e-6)


def test_plan_cache_evicts_the_least_recently_used() -> None:
    from interpreter.executor import PlanCache
    cache: PlanCache[str, int] = PlanCache(2)
    built: list[str] = []

    def build(key: str, value: int) -> int:
        return cache.get_or_build(key, lambda: built.append(key) or value)

    assert (build("a", 1), build("b", 2)) == (1, 2)
    assert cache.get("a") == 1  # "a" is now the most recent: "b" goes first
    assert build("c", 3) == 3
    assert (cache.get("b"), cache.get("a"), cache.get("c"), len(cache)) == (None, 1, 3, 2)
    assert build("a", 9) == 1 and built == ["a", "b", "c"] and cache.builds == 3
    with pytest.raises(ZeroDivisionError):  # a failed build keeps nothing
        cache.get_or_build("d", lambda: 1 // 0)
    assert (cache.get("d"), len(cache), cache.builds) == (None, 2, 3)
    with pytest.raises(ValueError, match="size must be at least 1"):
        PlanCache(0)
