"""The reference interpreter loop: run a lowered graph node by node with numpy kernels.

Deliberately simple (EXEC-9): an environment maps each value to its array, every node calls
its registry kernel, a value is dropped after its last use (memory stays bounded on long
graphs, as JAX's ``eval_jaxpr``), outputs are made fresh (EXEC-5). This is the only loop
that applies kernels: debug mode (``debug.py``) and the suite's bisection observe it through
``on_node``; the suite's diagnosis variants and mutants replace kernels through ``kernel``
(as ONNX's reference evaluator takes ``new_ops``).

What the loop needs besides the nodes (which values die where) is a :class:`Plan`, computed
once per graph version (``Graph.memo``), so a graph executed again pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .errors import ExecutorInputError
from .graph.core import Graph, Node, Value
from .registry.core import OpDef, as_results
from .types import DeviceRef

__all__ = ["KernelFor", "OnNode", "Plan", "evaluate", "fresh_outputs", "node_note", "plan"]

#: ``on_node(position, node, operand_arrays, result_arrays)``, called after each kernel.
OnNode = Callable[[int, Node, list[Any], tuple[Any, ...]], None]
#: ``kernel(node)``: the kernel to run for ``node`` instead of its op's (None: the op's);
#: asked right before the node runs, so it may depend on what ran before.
KernelFor = Callable[[Node], Callable[..., Any] | None]
#: One loop step of a :class:`Plan`: position, node, kernel, operand registers, attributes,
#: the register of its one result (-1: it has another number of results), all its result
#: registers, the registers read here for the last time.
Step = tuple[int, Node, Callable[..., Any], tuple[int, ...], dict[str, Any], int,
             tuple[int, ...], tuple[int, ...]]


def node_note(node: Node, pos: int) -> str:
    """The note added to a kernel's exception: which node, on what, staged where."""
    types = ", ".join(str(v.type) for v in node.operands) or "no operands"
    return (f"while interpreting node #{pos} {node.op.name}({types}) staged at "
            f"{node.location_str()}")


class Plan:
    """The nodes of one graph state as loop steps over numbered registers, and what an
    executor's refusal checks.

    Every value has a register: the inputs ``0..n-1``, then the results in node order.
    A step is ``(pos, node, kernel, operands, attrs, one, results, dead)``: the node's
    kernel, operand registers and attributes read once here rather than per execution, its
    result registers (``one``: the only one, or -1) and the registers it reads for the last
    time (``dead``; graph outputs never die). ``ops`` are the distinct ops (by name, first
    use first), ``off_cpu`` the off-CPU result devices (each with the first op producing a
    value there). Valid until the graph changes (``plan``: ``Graph.memo``, GRAPH-13)."""

    __slots__ = ("off_cpu", "ops", "registers", "steps", "to_return")

    def __init__(self, graph: Graph) -> None:
        outputs = graph.outputs or []
        reg: dict[Value, int] = {v: i for i, v in enumerate(graph.inputs)}
        for node in graph.nodes:
            for r in node.results:
                reg[r] = len(reg)
        self.registers = len(reg)
        self.to_return = [reg[v] for v in outputs]
        read_later: set[Value] = set(outputs)
        steps: list[Step] = []
        for pos in range(len(graph.nodes) - 1, -1, -1):  # a value dies at its last reader
            node = graph.nodes[pos]
            dead = []
            for v in node.operands:
                if v not in read_later:
                    read_later.add(v)
                    dead.append(reg[v])
            results = tuple(reg[r] for r in node.results)
            steps.append((pos, node, node.op.kernel, tuple(reg[v] for v in node.operands),
                          node.attrs, results[0] if len(results) == 1 else -1, results,
                          tuple(dead)))
        steps.reverse()
        self.steps = steps
        self.ops: dict[str, OpDef] = {}
        self.off_cpu: dict[DeviceRef, str] = {}
        for node in graph.nodes:
            self.ops.setdefault(node.op.name, node.op)
            for r in node.results:
                if r.type.device.device_type != "cpu":
                    self.off_cpu.setdefault(r.type.device, node.op.name)


def plan(graph: Graph) -> Plan:
    """The plan of ``graph`` in its current state, kept until it changes (``Graph.memo``)."""
    return graph.memo("plan", Plan)


def evaluate(graph: Graph, inputs: Sequence[np.ndarray], on_node: OnNode | None = None,
             kernel: KernelFor | None = None) -> list[np.ndarray]:
    """Execute ``graph`` (lowered, inputs validated) and return fresh output arrays.

    ``on_node`` observes every node after its kernel; ``kernel(node)`` may replace a node's
    kernel. A kernel's exception propagates with its type unchanged and a note naming the
    node."""
    p = plan(graph)
    if len(inputs) != len(graph.inputs):
        raise ExecutorInputError(f"evaluate: graph {graph.name!r} expected "
                                 f"{len(graph.inputs)} inputs, got {len(inputs)} [EXEC-7]")
    env: list[Any] = [*inputs, *[None] * (p.registers - len(inputs))]  # register -> array
    steps = p.steps if kernel is None else _overridden(p.steps, kernel)
    with np.errstate(all="ignore"):  # IEEE results, never warnings (NUM-5)
        for pos, node, fn, operands, attrs, one, results, dead in steps:
            try:
                if attrs or len(operands) != 2:
                    out = fn(*[env[i] for i in operands], **attrs)
                else:  # a binary op without attributes, the most common node: no arg list
                    a, b = operands
                    out = fn(env[a], env[b])
            except Exception as e:
                e.add_note(node_note(node, pos))
                raise
            if one >= 0 and on_node is None:  # the common case, kept cheap:
                env[one] = out  # a one-result kernel returns it (``as_results``)
            else:
                outs = as_results(out)
                if on_node is not None:  # operands are still in env: they die below
                    on_node(pos, node, [env[i] for i in operands], outs)
                for i, o in zip(results, outs, strict=True):
                    env[i] = o
            for i in dead:
                env[i] = None
    return fresh_outputs([env[i] for i in p.to_return], inputs)


def _overridden(steps: Sequence[Step], kernel_for: KernelFor) -> Iterator[Step]:
    """The steps with the kernels ``kernel_for`` picks, each asked when its step comes."""
    for pos, node, fn, operands, attrs, one, results, dead in steps:
        yield pos, node, kernel_for(node) or fn, operands, attrs, one, results, dead


def fresh_outputs(outputs: Sequence[Any], inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Copy any output that is not a plain array, a view, an input, returned twice,
    read-only (EXEC-5) or not C-contiguous (DT-2); copies are C-contiguous."""
    taken = set(map(id, inputs))
    fresh: list[np.ndarray] = []
    for a in outputs:
        if (a.__class__ is not np.ndarray or a.base is not None or id(a) in taken
                or not a.flags.writeable or not a.flags.c_contiguous):
            a = np.array(a, copy=True, order="C")
        taken.add(id(a))
        fresh.append(a)
    return fresh
