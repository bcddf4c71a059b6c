"""The structural key executors cache by (interpreter/graph/key.py; JIT-2, COMP-9)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.graph import Graph
from interpreter.graph.key import key_nodes, structural_key
from interpreter.graph.splat import array_key, splat
from interpreter.graph.text import parse, to_text
from interpreter.registry import get_op
from interpreter.types import DeviceRef, TensorType
from reference_executors.compiling import CompilingExecutor
from reference_executors.jit import JitExecutor

CPU = DeviceRef.CPU()


def _graph(name: str = "g", *, op: str = "add", dtype: DType = DType.float32,
           device: DeviceRef = CPU, shape: tuple[int, ...] = (3, 2), attr: Any = 2.0,
           const: Any = None, buffer_input: bool = False, swap_outputs: bool = False
           ) -> Graph:
    t = TensorType(dtype, (2, 3), device)
    g = Graph(name, [t, t.as_buffer() if buffer_input else t])
    a = g.inputs[0]
    (s,) = g.stage(get_op(op), (a, a), {})
    (r,) = g.stage(get_op("reshape"), (s,), {"shape": shape})
    value = np.array(attr, np.float32) if const is None else const
    (c,) = g.stage(get_op("constant"), (), {"value": value, "device": device})
    g.output(*((c, r) if swap_outputs else (r, c)))
    return g


@pytest.mark.spec("JIT-2")
def test_equal_structures_have_equal_keys_whatever_the_name() -> None:
    g = _graph("first")
    assert structural_key(g) == structural_key(_graph("second"))
    assert hash(structural_key(g)) == hash(structural_key(_graph("third")))
    assert structural_key(parse(to_text(g))) == structural_key(g)


_BIG = np.arange(200, dtype=np.float32)  # 800 bytes: keyed by digest
_BIG2 = _BIG.copy()
_BIG2[-1] = -1.0


@pytest.mark.spec("JIT-2")
@pytest.mark.parametrize(("base", "change"), [
    ({}, {"op": "sub"}), ({}, {"shape": (6,)}), ({}, {"attr": -2.0}),
    ({"attr": 0.0}, {"attr": -0.0}), ({}, {"dtype": DType.float64}),
    ({}, {"device": DeviceRef.CPU(1)}), ({}, {"buffer_input": True}),
    ({}, {"swap_outputs": True}),
    ({"const": _BIG}, {"const": _BIG2}),
    ({"const": np.array(np.nan, np.float32)},
     {"const": np.array(0x7FC00001, np.uint32).view(np.float32)}),
    ({"const": np.ones(4, np.float32)}, {"const": np.full(4, 2.0, np.float32)}),
], ids=["op", "shape-attr", "constant", "signed-zero", "dtype", "device", "buffer-input",
        "output-order", "large-constant-bytes", "nan-payload", "constant-bytes"])
def test_any_structural_change_changes_the_key(base: dict[str, Any],
                                               change: dict[str, Any]) -> None:
    assert structural_key(_graph(**base)) == structural_key(_graph(**base))
    assert structural_key(_graph(**{**base, **change})) != structural_key(_graph(**base))


@pytest.mark.spec("JIT-2")
@pytest.mark.parametrize(("a", "b"), [
    (1, 1.0), (1, True), (0.0, -0.0), (math.nan, -math.nan), ((1, 2), [1, 2]),
    (DType.float32, "f32"), (None, 0),
])
def test_attribute_values_equal_in_python_but_of_another_kind_or_bits_differ(
        a: Any, b: Any) -> None:
    def key(value: Any) -> Any:
        g = Graph("g", [TensorType(DType.float32, (1,))])
        # a node's attributes as the key sees them (no type rule checks them here)
        (r,) = g.stage(get_op("negate"), (g.inputs[0],), {})
        g.nodes[0].attrs["probe"] = value
        g.output(r)
        return structural_key(g)

    assert key(a) == key(a) and key(a) != key(b)


@pytest.mark.spec("JIT-2")
def test_the_key_is_cached_on_the_graph_and_follows_changes() -> None:
    t = TensorType(DType.float32, (2,))
    g = Graph("g", [t])
    (r,) = g.stage(get_op("negate"), (g.inputs[0],), {})
    k1 = structural_key(g)
    assert structural_key(g) is k1  # cached: the same object
    g.stage(get_op("abs"), (r,), {})
    k2 = structural_key(g)
    assert k2 != k1
    g.output(r)
    assert structural_key(g) != k2


@pytest.mark.spec("JIT-2")
@pytest.mark.spec("COMP-9")
def test_executors_do_not_render_text_on_a_cache_hit(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    jit, comp = JitExecutor(), CompilingExecutor()
    for e in (jit, comp):
        e.execute(_graph(), [x, x])
    jit.wait_compiled()

    def no_text(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("text rendered on a cache hit")

    monkeypatch.setattr(Graph, "to_text", no_text)
    monkeypatch.setattr(Graph, "structural_hash", no_text)
    monkeypatch.setattr("interpreter.graph.text._render", no_text)
    for e in (jit, comp):
        r, c = e.execute(_graph("again"), [x, x])
        np.testing.assert_array_equal(r, (x + x).reshape(3, 2))
        np.testing.assert_array_equal(c, np.float32(2.0))
    assert comp.compiles == 1 and jit.submitted == 1


@pytest.mark.spec("JIT-2")
@pytest.mark.parametrize(("value", "dtype", "shape"), [
    (1.5, np.float32, (4, 4)), (-0.0, np.float64, (3,)), (7, np.int8, ()),
    (True, np.bool_, (2, 1))])
def test_a_shared_splats_cached_key_is_the_key_of_an_equal_fresh_array(
        value: Any, dtype: Any, shape: tuple[int, ...]) -> None:
    """Weak constants share one splat per scalar (graph/splat.py), keyed once: that key is
    what an equal array made independently keys to, and differs from another scalar's."""
    dt = DType.from_numpy(np.dtype(dtype))
    shared = splat(value, dt, shape)
    assert splat(value, dt, shape) is shared and not shared.flags.writeable
    fresh = np.ndarray(shape, dtype, buffer=np.array(value, dtype), strides=(0,) * len(shape))
    assert array_key(shared) == array_key(fresh)
    assert array_key(shared) != array_key(splat(not value if dtype is np.bool_ else -value
                                               if value else 1, dt, shape))


@pytest.mark.spec("JIT-2")
def test_an_array_that_is_not_a_shared_splat_is_keyed_by_its_bytes_each_time() -> None:
    a = np.zeros(4, np.float32)
    before = array_key(a)
    a[0] = 1.0
    assert array_key(a) != before
    a.flags.writeable = False  # read-only now, but its owner could write again: still keyed
    ro = array_key(a)
    a.flags.writeable = True
    a[1] = 2.0
    assert array_key(a) != ro


@pytest.mark.spec("JIT-2")
def test_a_flat_key_splits_back_into_its_nodes() -> None:
    """``key_nodes`` reads the flat key back per node (what the EXEC-15 message names)."""
    g = _graph()
    ins, nodes, outs = key_nodes(structural_key(g))
    t = ("tensor", DType.float32, (2, 3))
    assert [(i[0].__name__.lower()[:6], i[1], i[2]) for i in ins] == [t, t]
    assert [(op.name, operands) for op, operands, _, _ in nodes] == [
        ("add", (0, 0)), ("reshape", (2,)), ("constant", ())]
    assert [len(results) for *_, results in nodes] == [1, 1, 1]
    assert dict(nodes[1][2])["shape"] == (tuple, (3, 2))
    assert outs == (3, 4)
