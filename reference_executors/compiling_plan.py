"""The compiling executor's planner: fusion groups and the buffer liveness plan (COMP-2..5).

Reads a lowered graph only through the public IR (spec/graph.md): ``graph.inputs``,
``graph.nodes``, ``graph.outputs``, ``node.op``, ``node.operands``, ``node.results``,
``node.attrs``. Values are numbered: inputs first, then node results in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from interpreter.graph.core import Graph, Node, Value

__all__ = ["Group", "Plan", "Step", "broadcast_view", "fusable", "plan_graph"]


def fusable(node: Node) -> bool:
    """Ops with the ``fusable`` trait (elementwise) and one tensor result fuse (COMP-2)."""
    op = node.op
    return "fusable" in op.traits and len(node.results) == 1 and not op.side_effect


def broadcast_view(node: Node) -> bool:
    """A ``broadcast-view`` op: it reads its operand at any shape that broadcasts (COMP-2)."""
    return "broadcast-view" in node.op.traits


@dataclass
class Group:
    """One fused kernel: member node positions, all with result shape ``shape``."""

    shape: tuple[int, ...]
    members: list[int] = field(default_factory=list)
    values: set[Value] = field(default_factory=set)  # results of the members
    outputs: list[Value] = field(default_factory=list)  # members' results read outside


@dataclass
class Step:
    """A plan step: one node called as a library kernel, or one fused group."""

    node: int | None = None
    group: Group | None = None


@dataclass
class Plan:
    """Steps in execution order, value numbering, and each materialized group output's slot
    (storage reused by liveness: values with disjoint lifetimes share a slot, COMP-4)."""

    graph: Graph
    steps: list[Step]
    ids: dict[Value, int]
    slots: dict[Value, int]
    slot_types: list[tuple[Any, tuple[int, ...]]]

    @property
    def groups(self) -> list[Group]:
        return [s.group for s in self.steps if s.group is not None]


def _joins(node: Node, group: Group) -> bool:
    if node.results[0].type.shape != group.shape:
        return False
    return all(v in group.values or v.type.shape == group.shape
               or broadcast_view(node) for v in node.operands)


def _starts(node: Node) -> bool:
    shape = node.results[0].type.shape
    return broadcast_view(node) or all(v.type.shape == shape for v in node.operands)


def _group_steps(graph: Graph) -> list[Step]:
    """Greedy fusion in staging order (COMP-2): one open group; a fusable node of the group's
    shape joins it; a node that reads the group's values, a side effect, or a fusable node of
    another shape closes it. Other nodes meanwhile run before the group (they read nothing of
    it, and fused ops have no side effects, so the order is unobservable)."""
    steps: list[Step] = []
    open_: Group | None = None

    def close() -> None:
        nonlocal open_
        if open_ is not None:
            steps.append(Step(group=open_))
            open_ = None

    for pos, node in enumerate(graph.nodes):
        if fusable(node):
            if open_ is not None and _joins(node, open_):
                open_.members.append(pos)
                open_.values.add(node.results[0])
                continue
            if _starts(node):
                close()
                open_ = Group(node.results[0].type.shape, [pos], {node.results[0]})
                continue
        if open_ is not None and (node.op.side_effect
                                  or any(v in open_.values for v in node.operands)):
            close()
        steps.append(Step(node=pos))
    close()
    return steps


def _mark_outputs(graph: Graph, steps: list[Step]) -> None:
    """A member's result is materialized iff a node outside its group or the graph reads it."""
    readers: dict[Value, set[int]] = {}
    for pos, node in enumerate(graph.nodes):
        for v in node.operands:
            readers.setdefault(v, set()).add(pos)
    outs = set(graph.outputs or ())
    for step in steps:
        g = step.group
        if g is None:
            continue
        members = set(g.members)
        g.outputs = [graph.nodes[p].results[0] for p in g.members
                     if graph.nodes[p].results[0] in outs
                     or readers.get(graph.nodes[p].results[0], set()) - members]


def value_ends(graph: Graph, steps: list[Step]) -> dict[Value, int]:
    """The last step index at which each value (or any value that may alias it) is read.

    A library kernel's results may be views of its operands, so they extend the operands'
    lifetimes; graph outputs live to the end (COMP-4)."""
    step_of: dict[int, int] = {}
    for i, s in enumerate(steps):
        for p in ([s.node] if s.node is not None else s.group.members if s.group else []):
            step_of[p] = i
    end: dict[Value, int] = {v: len(steps) for v in graph.outputs or ()}
    for pos in range(len(graph.nodes) - 1, -1, -1):
        node, i = graph.nodes[pos], step_of[pos]
        alias = max((end.get(r, -1) for r in node.results), default=-1)
        library = steps[i].node is not None
        for v in node.operands:
            end[v] = max(end.get(v, -1), i, alias if library else -1)
    return end


def plan_graph(graph: Graph) -> Plan:
    """Plan a lowered graph: fusion groups, then slots for group outputs by liveness."""
    steps = _group_steps(graph)
    _mark_outputs(graph, steps)
    ids: dict[Value, int] = {v: i for i, v in enumerate(graph.inputs)}
    for node in graph.nodes:
        for r in node.results:
            ids[r] = len(ids)
    end = value_ends(graph, steps)
    slots: dict[Value, int] = {}
    slot_types: list[tuple[Any, tuple[int, ...]]] = []
    live: dict[int, Value] = {}  # slot -> the value it holds now
    free: list[int] = []
    for i, step in enumerate(steps):
        if step.group is None:
            continue
        for held, v in list(live.items()):
            if end.get(v, -1) < i:  # every reader (and alias) ran before this step
                del live[held]
                free.append(held)
        for v in step.group.outputs:
            key = (v.type.dtype, v.type.shape)
            reuse = next((s for s in free if slot_types[s] == key), None)
            if reuse is None:
                reuse = len(slot_types)
                slot_types.append(key)
            else:
                free.remove(reuse)
            slots[v] = reuse
            live[reuse] = v
    return Plan(graph, steps, ids, slots, slot_types)
