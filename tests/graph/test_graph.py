"""Graph building, staging errors, lowering and passes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreter.dtype import DType
from interpreter.errors import EagerConformanceError, GraphBuildError, GraphVerificationError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import BufferType, Graph, TensorType, TensorValue, lower, ops
from interpreter.graph.core import site_key
from interpreter.graph.passes import dead_code_elimination, prune, remove_unused_inputs, verify
from interpreter.testing import assert_same, build

F32 = DType.float32


@pytest.mark.spec("GRAPH-3")
def test_graph_context_and_inputs() -> None:
    with Graph("g", [TensorType(F32, (2,)), BufferType(DType.int8, (3,))]) as g:
        assert Graph.current is g
        a, b = g.inputs
        assert isinstance(a, TensorValue) and a.type == TensorType(F32, (2,))
        assert b.type == BufferType(DType.int8, (3,))
        c = g.add_input(TensorType(F32, (2,)))
        g.output(a + c)
    with pytest.raises(GraphBuildError, match="no current graph"):
        Graph.current  # noqa: B018
    with pytest.raises(GraphBuildError, match="no current graph"):
        ops.range(3)  # no operand to take a graph from
    assert TensorType(F32, (2,)).as_buffer().as_tensor() == TensorType(F32, (2,))


@pytest.mark.spec("GRAPH-3", "GRAPH-6")
def test_build_misuse_errors() -> None:
    with Graph("a", [TensorType(F32, (2,))]) as ga:
        x = ga.inputs[0]
    with Graph("b", [TensorType(F32, (2,))]) as gb:
        with pytest.raises(GraphBuildError, match="belongs to graph 'a'"):
            ops.add(gb.inputs[0], x)
        gb.output(gb.inputs[0])
        with pytest.raises(GraphBuildError, match="already has outputs"):
            gb.output(gb.inputs[0])
    with Graph("c", [BufferType(F32, (2,))]) as gc, pytest.raises(GraphBuildError, match="GRAPH-6"):
        gc.output(gc.inputs[0])


@pytest.mark.spec("GRAPH-7")
@pytest.mark.parametrize(("fn", "arrays", "exc", "pattern"), [
    (lambda a, b: a + b, [np.zeros((2, 3), np.float32), np.zeros(4, np.float32)], ValueError,
     r"add: .*\[BCAST-1\].*tensor<f32\[2,3\] cpu:0>, tensor<f32\[4\] cpu:0>"),
    (lambda a, b: a + b, [np.zeros(2, np.uint8), np.zeros(2, np.int8)], TypeError,
     r"add: .*uint8, int8.*\[PROMO-2\].*tensor<ui8\[2\] cpu:0>, tensor<si8\[2\] cpu:0>"),
    (lambda a: ops.sqrt(a), [np.zeros(2, np.int32)], TypeError, r"sqrt: .*int32.*\[OPDT-1\]"),
    (lambda a: ops.reshape(a, (4,)), [np.zeros(3, np.float32)], ValueError, r"reshape"),
    (lambda a: a[5], [np.zeros(3, np.float32)], IndexError, r"out of bounds"),
])
def test_staging_errors_are_project_errors(fn, arrays, exc, pattern) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(exc, match=pattern) as info:
        build(fn, *arrays)
    assert isinstance(info.value, EagerConformanceError)


shape_st = st.lists(st.integers(1, 3), max_size=3).map(tuple)
dtype_st = st.sampled_from([DType.int8, DType.int16, DType.uint8, DType.float32,
                            DType.float64, DType.bool])


@pytest.mark.spec("LOWER-1")
@settings(max_examples=40, deadline=None)
@given(shape_st, shape_st, dtype_st, dtype_st)
def test_lowering_is_explicit_idempotent_and_value_preserving(
        sa: tuple[int, ...], sb: tuple[int, ...], da: DType, db: DType) -> None:
    a = np.ones(sa, da.to_numpy())
    b = np.ones(sb, db.to_numpy())
    try:
        g = build(lambda x, y: ops.maximum(x, y), a, b)
    except EagerConformanceError:
        return  # not promotable / broadcastable: staging refused, nothing to lower
    text_before = [n.name for n in g.nodes]
    lower(g)
    verify(g)
    for node in g.nodes:
        if node.op.broadcast:
            assert len({v.type for v in node.operands}) == 1
    assert lower(g) is g and [n.name for n in g.nodes][-1] == text_before[-1]
    (out,) = InterpreterExecutor().execute(g, [a, b])
    with np.errstate(all="ignore"):
        want = np.maximum(a.astype(out.dtype), b.astype(out.dtype))
    assert_same(out, np.broadcast_to(want, out.shape).copy())


@pytest.mark.spec("GRAPH-8")
def test_dce_keeps_stores_and_their_dependencies() -> None:
    with Graph("g", [TensorType(F32, (2,)), BufferType(F32, (2,))]) as g:
        x, b = g.inputs
        dead = ops.exp(x)
        kept = ops.sqrt(x)
        ops.buffer_store(b, kept)
        _dead2 = dead * 2.0
        g.output(x + 1.0)
    names_before = [n.name for n in g.nodes]
    removed = dead_code_elimination(g)
    names = [n.name for n in g.nodes]
    assert removed == names_before.count("exp") + 2  # exp, constant 2.0, mul
    assert names == ["sqrt", "buffer_store", "constant", "add"]


@pytest.mark.spec("GRAPH-9")
def test_remove_unused_inputs_keeps_order() -> None:
    types = [TensorType(F32, (1,))] * 4
    with Graph("g", types) as g:
        _, b, _, d = g.inputs
        g.output(d + b)
    assert remove_unused_inputs(g) == [1, 3]
    assert g.inputs[0] is b and g.inputs[1] is d
    x = [np.array([1.0], np.float32), np.array([2.0], np.float32)]
    assert_same(InterpreterExecutor().execute(g, x)[0], np.array([3.0], np.float32))


@pytest.mark.spec("GRAPH-8", "GRAPH-9")
def test_prune_is_dce_then_unused_inputs_in_one_walk() -> None:
    """An input read only by dead code goes too; the others keep their order."""
    def staged() -> Graph:
        types = [TensorType(F32, (2,)), TensorType(F32, (2,)), BufferType(F32, (2,))]
        with Graph("g", types) as g:
            a, b, buf = g.inputs
            _dead = ops.exp(b)  # b is read only here
            ops.buffer_store(buf, ops.sqrt(a))
            g.output(a * 2.0)
        return g

    one, two = staged(), staged()
    assert prune(one) == [0, 2]
    dead_code_elimination(two)
    assert remove_unused_inputs(two) == [0, 2]
    assert [n.name for n in one.nodes] == [n.name for n in two.nodes] == [
        "sqrt", "buffer_store", "constant", "mul"]
    assert [v.type for v in one.inputs] == [v.type for v in two.inputs]


@pytest.mark.spec("GRAPH-10")
def test_verifier_catches_broken_graphs() -> None:
    g = build(lambda x: ops.exp(x), np.zeros(2, np.float32))
    verify(g)
    g.nodes[0].results[0].type = TensorType(DType.float64, (2,))
    with pytest.raises(GraphVerificationError, match=r"exp.*type rule"):
        verify(g)
    g2 = build(lambda x: ops.exp(x) + 1.0, np.zeros(2, np.float32))
    g2.nodes.reverse()
    with pytest.raises(GraphVerificationError, match="before it is defined"):
        verify(g2)
    g3 = build(lambda x, y: x + y, np.zeros(2, np.float32), np.zeros(1, np.float32))
    g3.needs_lowering = False
    with pytest.raises(GraphVerificationError, match="needs lowering"):
        verify(g3)


@pytest.mark.spec("LOWER-3", "NUM-1")
def test_less_lowers_to_greater_with_swapped_operands() -> None:
    x = np.array([1.0, np.nan, 3.0], np.float32)
    y = np.array([2.0, 1.0, np.nan], np.float32)
    g = build(lambda a, b: (a < b, a <= b), x, y)
    assert [n.name for n in g.nodes] == ["greater", "greater_equal"]
    lt, le = InterpreterExecutor().execute(g, [x, y])
    assert lt.tolist() == [True, False, False] and le.tolist() == [True, False, False]


@pytest.mark.spec("GRAPH-12")
def test_source_location_is_recorded() -> None:
    g = build(lambda x: ops.exp(x), np.zeros(1, np.float32))
    assert g.nodes[0].location_str().startswith(__file__)


@pytest.mark.spec("GRAPH-12")
def test_a_deep_line_of_a_long_function_is_recorded_exactly() -> None:
    """The staging site is the user's frame and bytecode offset; its line is computed only
    when shown, and is the line of the call (here line 302 of a generated function)."""
    filler = "".join(f"    v{i} = {i}\n" for i in range(300))
    src = f"def body(x):\n{filler}    return ops.negate(x)\n"
    namespace: dict[str, object] = {"ops": ops}
    exec(compile(src, "<generated>", "exec"), namespace)
    g = build(namespace["body"], np.zeros(2, np.float32))  # type: ignore[arg-type]
    (node,) = g.nodes
    assert node.location == ("<generated>", 302)
    assert node.location_str() == "<generated>:302"
    copy = lower(Graph.parse(g.to_text()))
    assert copy.nodes[0].location is None  # the text form carries no sites


@pytest.mark.spec("GRAPH-12")
def test_sites_of_two_code_objects_at_one_offset_stay_apart() -> None:
    """Sites are looked up by code object identity (not by hashing the code, which hashes
    its bytecode): two identical functions from different files keep their own locations."""
    graphs = []
    for name in ("<one>", "<two>"):
        namespace: dict[str, object] = {"ops": ops}
        exec(compile("def body(x):\n    return ops.negate(x)\n", name, "exec"), namespace)
        graphs.append(build(namespace["body"], np.zeros(1, np.float32)))  # type: ignore[arg-type]
    (a,), (b,) = (g.nodes for g in graphs)
    assert a.site[1] == b.site[1] and site_key(a.site) != site_key(b.site)  # type: ignore[index]
    assert (a.location, b.location) == (("<one>", 2), ("<two>", 2))
