"""A graph's version, its memos and its structural copy (spec/graph.md, GRAPH-13)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.evaluate import plan
from interpreter.graph import Graph, TensorType, lower, ops
from interpreter.graph.copy import copy_graph
from interpreter.graph.key import fresh_structural_key, structural_key
from interpreter.graph.lowering import lowered
from interpreter.graph.passes import dead_code_elimination, remove_unused_inputs
from interpreter.registry import get_op
from interpreter.testing import build

F32 = TensorType(DType.float32, (3,))


def two_inputs() -> Graph:
    """``exp(x0) + 1`` with an unused second input and a dead ``abs``."""
    with Graph("g", [F32, F32]) as g:
        x = g.inputs[0]
        ops.abs(x)
        g.output(ops.exp(x) + 1.0)
    return g


CHANGES: list[tuple[str, Callable[[Graph], object]]] = [
    ("stage", lambda g: g.stage(get_op("negate"), (g.inputs[0],), {})),
    ("append", lambda g: g.append(get_op("negate"), (g.inputs[0],), {}, F32)),
    ("add_input", lambda g: g.add_input(F32)),
    ("output", lambda g: (setattr(g, "outputs", None), g.output(g.inputs[0]))),
    ("assign inputs", lambda g: setattr(g, "inputs", list(g.inputs))),
    ("assign nodes", lambda g: setattr(g, "nodes", list(g.nodes))),
    ("assign outputs", lambda g: setattr(g, "outputs", list(g.outputs or ()))),
    ("dead code elimination", dead_code_elimination),
    ("remove unused inputs", remove_unused_inputs),
    ("changed", lambda g: g.changed()),
]


@pytest.mark.spec("GRAPH-13")
@pytest.mark.parametrize("change", [c for _, c in CHANGES], ids=[n for n, _ in CHANGES])
def test_every_change_increases_the_version(change: Callable[[Graph], object]) -> None:
    g = two_inputs()
    before = g.version
    change(g)
    assert g.version > before


@pytest.mark.spec("GRAPH-13", "LOWER-1")
def test_lowering_in_place_is_a_change_and_a_lowered_graph_is_left_alone() -> None:
    g = build(lambda a, b: a + b, np.zeros(3, np.int8), np.zeros(3, np.float32))
    before = g.version
    lower(g)
    assert g.version > before
    again = g.version
    lower(g)
    assert g.version == again


@pytest.mark.spec("GRAPH-13")
def test_a_memo_is_computed_once_per_version() -> None:
    g = two_inputs()
    calls: list[int] = []

    def nodes(graph: Graph) -> int:
        calls.append(graph.version)
        return len(graph.nodes)

    assert [g.memo("n", nodes) for _ in range(3)] == [4, 4, 4] and len(calls) == 1
    assert g.memo("other", nodes) == 4 and len(calls) == 2  # one entry per name
    dead_code_elimination(g)
    assert g.memo("n", nodes) == 3 and calls[-1] == g.version and len(calls) == 3


@pytest.mark.spec("GRAPH-13", "JIT-2", "LOWER-2", "EXEC-9")
def test_the_key_the_lowered_copy_and_the_plan_follow_every_change() -> None:
    g = build(lambda a, b: ops.exp(a + b), np.zeros(3, np.int8), np.zeros(3, np.float32))
    key, copy, steps = structural_key(g), lowered(g), plan(g)
    assert structural_key(g) is key and lowered(g) is copy and plan(g) is steps
    assert [n.name for n in copy.nodes] == ["cast", "add", "exp"]
    (r,) = g.stage(get_op("negate"), (g.nodes[-1].results[0],), {})
    g.outputs = [r]
    assert structural_key(g) != key and structural_key(g) == fresh_structural_key(g)
    assert [n.name for n in lowered(g).nodes] == ["cast", "add", "exp", "negate"]
    assert [s[1].op.name for s in plan(g).steps] == ["add", "exp", "negate"]
    node = g.nodes[-1]
    g.nodes[-1] = type(node)(get_op("abs"), node.operands, {}, node.results, node.site)
    g.changed()  # an edit in place, announced
    assert [n.name for n in lowered(g).nodes][-1] == "abs"
    assert [s[1].op.name for s in plan(g).steps][-1] == "abs"
    assert structural_key(g) == fresh_structural_key(g)


@pytest.mark.spec("GRAPH-13", "JIT-3")
def test_a_structural_copy_is_the_same_structure_in_new_objects() -> None:
    g = build(lambda a, b: ops.exp(a + b) * 2.0, np.zeros(3, np.int8), np.zeros(3, np.float32))
    c = copy_graph(g)
    assert c is not g and c.name == g.name and c.needs_lowering and g.needs_lowering
    assert fresh_structural_key(c) == fresh_structural_key(g) and c.to_text() == g.to_text()
    old = set(g.inputs) | {r for n in g.nodes for r in n.results}
    new = set(c.inputs) | {r for n in c.nodes for r in n.results}
    assert not old & new and all(v.graph is c for v in new)
    assert [(n.op, n.site) for n in c.nodes] == [(n.op, n.site) for n in g.nodes]
    assert all(a.attrs is not b.attrs for a, b in zip(c.nodes, g.nodes, strict=True))
    assert c.outputs is not None and c.outputs[0] is c.nodes[-1].results[0]


@pytest.mark.spec("GRAPH-13")
def test_a_copy_shares_read_only_arrays_and_copies_writable_ones() -> None:
    with Graph("g", [F32]) as g:
        weights = ops.constant(np.array([1.0, 2.0, 3.0], np.float32), DType.float32)
        g.output(g.inputs[0] * weights + 1.0)
    shared = g.nodes[0].attrs["value"]  # staged constants and splats are read-only
    writable = np.array([4.0, 5.0, 6.0], np.float32)
    g.nodes[2].attrs["value"] = writable  # the splat of 1.0, replaced by hand
    g.changed()
    c = copy_graph(g)
    assert not shared.flags.writeable and c.nodes[0].attrs["value"] is shared
    copied = c.nodes[2].attrs["value"]
    assert copied is not writable and copied.tolist() == [4.0, 5.0, 6.0]
    writable[...] = 7.0  # a later write to the original reaches only the original
    assert copied.tolist() == [4.0, 5.0, 6.0]


@pytest.mark.spec("GRAPH-13")
def test_copying_a_graph_that_uses_a_value_before_defining_it_fails() -> None:
    g = build(lambda x: ops.exp(x) + 1.0, np.zeros(2, np.float32))
    g.nodes.reverse()
    g.changed()
    with pytest.raises(KeyError):
        copy_graph(g)


def test_a_module_level_cache_table_is_emptied_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """``graph/caches.py``: every table is bounded the same way (``keep``)."""
    from interpreter.graph import caches

    monkeypatch.setattr(caches, "SIZE", 3)
    table: dict[int, str] = {}
    for i in range(3):
        assert caches.keep(table, i, str(i)) == str(i)
    assert table == {0: "0", 1: "1", 2: "2"}
    caches.keep(table, 9, "9")
    assert table == {9: "9"}
