"""Differential execution: run a case through the executor under test and the reference,
compare outputs and final buffer contents, and bisect multi-op graphs to the first diverging
node.

Verdict of one case (:func:`check_case`):

1. Both executors get their own copies of the inputs (buffers are mutated in place).
2. Outputs and buffer contents that are bit-identical pass at once (the common case).
3. Otherwise each differing value is compared under its producing op's tolerance, with the
   op's unspecified elements masked, using the reference's operands of that op.
4. A value that still differs fails outright when everything upstream of it is exact and
   fully specified. Otherwise (inexact or unspecified upstream values may legitimately
   differ and then be amplified, e.g. ``floor(exp(x))``) every node upstream is checked
   *locally*: the executor runs the graph prefix up to the node's operands and up to its
   results, and the node's results must match the reference kernel applied to the
   executor's own operands. The first node failing that check is the first divergence.
   The search covers only the nodes upstream of values that fail (CONF-20).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from interpreter.errors import UnsupportedGraphError
from interpreter.evaluate import evaluate
from interpreter.graph.core import Graph, Node, Value
from interpreter.graph.lowering import lower
from interpreter.registry import op_with
from interpreter.types import BufferType

from .calls import ExecutorRaised, SuiteError
from .compare import Mismatch, as_numpy, compare_arrays, compare_op
from .layout import byte_exact_buffers, byte_exact_values, layout_problem, nan_bytes
from .pipeline import call_executor
from .shrink_budget import ShrinkBudget
from .strategies import Case
from .verdicts import Finding, indent, render_findings, rules_in

__all__ = [
    "Divergence",
    "ReferenceRefused",
    "Verdict",
    "buffer_inputs",
    "check_case",
    "cone",
    "describe_node",
    "first_divergence",
    "prefix_graph",
]


class ReferenceRefused(Exception):
    """The reference interpreter refused the case: it cannot serve as a differential test."""


@dataclass
class Divergence:
    """The first node whose results do not follow from the executor's own operands."""

    index: int
    node: str
    mismatch: Mismatch
    graph: Graph  # the prefix graph ending at the node (outputs: its results)

    def __str__(self) -> str:
        return (f"first diverging node: #{self.index} {self.node}\n"
                + indent(self.mismatch.message))


@dataclass
class Verdict:
    """The judgement of one case: ``message`` renders ``title`` and ``findings`` (each with
    its rule ids, ``conformance.verdicts``)."""

    ok: bool
    message: str = ""
    title: str = ""
    findings: list[Finding] = field(default_factory=list)
    expected: dict[str, np.ndarray] = field(default_factory=dict)
    actual: dict[str, np.ndarray] = field(default_factory=dict)
    divergence: Divergence | None = None
    locally_checked: bool = False
    #: the outputs and buffer inputs that fail (not those within tolerance or explained by
    #: the executor's own operands); the divergence search starts from these only
    failing: list[Value] = field(default_factory=list)
    #: the search for the first diverging node stopped at the shrink budget (CONF-114)
    search_stopped: bool = False


def buffer_inputs(graph: Graph) -> list[int]:
    return [i for i, v in enumerate(graph.inputs) if isinstance(v.type, BufferType)]


def describe_node(graph: Graph, index: int) -> str:
    node = graph.nodes[index]
    ops = ", ".join(str(v.type) for v in node.operands)
    res = ", ".join(str(v.type) for v in node.results) or "()"
    attrs = ", ".join(f"{k}={_short(v)}" for k, v in sorted(node.attrs.items()))
    return f"{node.op.name}({ops}){' {' + attrs + '}' if attrs else ''} -> {res}"


def _short(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"array<{v.dtype}{list(v.shape)}>"
    return repr(v)


# -- graph surgery --------------------------------------------------------------------------
def prefix_graph(graph: Graph, stop: int, observe: Sequence[Value], name: str = "prefix"
                 ) -> Graph:
    """A copy of ``graph`` with nodes ``[0, stop)`` whose outputs are ``observe`` (values of
    ``graph``); buffers among them are observed through a trailing ``buffer_load``. The copy
    keeps every input, in order, so the original input arrays apply."""
    g = Graph(name, input_types=graph.input_types)
    env: dict[Value, Value] = dict(zip(graph.inputs, g.inputs, strict=True))
    for node in graph.nodes[:stop]:
        results = g.stage(node.op, [env[v] for v in node.operands], node.attrs)
        env.update(zip(node.results, results, strict=True))
    outs = []
    load = op_with("buffer-load")
    for v in observe:
        mapped = env[v]
        if isinstance(mapped.type, BufferType):
            (mapped,) = g.stage(load, [mapped], {})
        outs.append(mapped)
    g.output(*outs)
    return lower(g)


def cone(graph: Graph, seeds: Iterable[Value]) -> list[int]:
    """Indices of the nodes the ``seeds`` depend on (buffers: every store into them)."""
    needed = set(seeds)
    keep: list[int] = []
    for i in range(len(graph.nodes) - 1, -1, -1):
        node = graph.nodes[i]
        writes = node.op.side_effect and any(v in needed for v in node.operands)
        if writes or any(r in needed for r in node.results):
            keep.append(i)
            needed.update(node.operands)
    keep.reverse()
    return keep


def _strict(graph: Graph, nodes: Iterable[int]) -> bool:
    """True when every node is exact and has no unspecified elements."""
    return all(graph.nodes[i].op.tolerance.kind == "exact"
               and graph.nodes[i].op.unspecified is None for i in nodes)


def _perturb_budget(graph: Graph, nodes: Iterable[int]) -> int:
    budget = 0
    for i in nodes:
        tol = graph.nodes[i].op.tolerance
        if tol.kind == "ulp":
            budget = max(budget, tol.ulps)
        elif tol.kind == "reduction":
            budget = max(budget, 8 * tol.ulps)
    return min(budget, 64)


# -- running --------------------------------------------------------------------------------
def _run(executor: Any, graph: Graph, inputs: Sequence[np.ndarray], *, reference: bool = False
         ) -> tuple[list[Any], list[np.ndarray]]:
    """Outputs and input copies after the run. Only the executor's own exceptions become
    ``ExecutorRaised``; the reference's (other than a refusal) are suite errors (CONF-22)."""
    copies = [np.array(a, copy=True) for a in inputs]
    if not reference:
        return call_executor(executor, graph, copies), copies
    try:
        return list(executor.execute(graph, copies)), copies
    except UnsupportedGraphError:
        raise
    except Exception as e:
        raise SuiteError(f"the reference interpreter raised {type(e).__name__} on "
                         f"{graph.name!r}: {e}") from e


def _reference_env(graph: Graph, inputs: Sequence[np.ndarray]
                   ) -> tuple[dict[Value, Any], list[list[np.ndarray]]]:
    """Every value of ``graph`` under the reference kernels, and each node's operands.

    Runs the reference loop (``evaluate``) and records through its ``on_node`` hook. The
    operands are recorded after the kernel; only ops without results write buffers, so the
    operands of every node with results are as the kernel saw them."""
    env: dict[Value, Any] = {v: np.array(a, copy=True) for v, a in zip(graph.inputs, inputs,
                                                                       strict=True)}
    operands: list[list[np.ndarray]] = []

    def record(pos: int, node: Node, args: list[Any], results: tuple[Any, ...]) -> None:
        operands.append([np.array(a, copy=True) if isinstance(v.type, BufferType)
                         else np.asarray(a) for a, v in zip(args, node.operands,
                                                            strict=True)])
        env.update(zip(node.results, results, strict=True))

    evaluate(graph, [env[v] for v in graph.inputs], on_node=record)
    return env, operands


def check_case(case: Case, executor: Any, reference: Any, *, label: str = "",
               locate: bool = True, budget: ShrinkBudget | None = None,
               search: bool = True) -> Verdict:
    """Run ``case`` through ``reference`` then ``executor`` and judge the difference.

    ``locate=False`` skips the search for the first diverging node where it cannot change
    the verdict (an output with an all-exact upstream fails anyway); the minimiser uses it.
    ``budget`` bounds that search where it cannot change the verdict (CONF-114): it stops
    with ``search_stopped`` when the next prefix does not fit. ``search=False`` makes no
    local check at all: a value beyond tolerance fails at once (a batch, CONF-136).

    Raises ``ReferenceRefused`` when the reference refuses, and lets the executor's
    ``UnsupportedGraphError`` (a refusal) and any other exception propagate.
    """
    graph = case.graph
    try:
        expected, ref_inputs = _run(reference, graph, case.inputs, reference=True)
    except UnsupportedGraphError as e:
        raise ReferenceRefused(str(e)) from e
    got_raw, got_inputs = _run(executor, graph, case.inputs)
    bufs = buffer_inputs(graph)
    exp_map = {f"out{i}": np.asarray(a) for i, a in enumerate(expected)}
    exp_map.update({f"buf{i}": ref_inputs[i] for i in bufs})
    act_map: dict[str, np.ndarray] = {}
    for i, a in enumerate(got_raw):
        try:
            act_map[f"out{i}"] = as_numpy(a)
        except Exception:
            pass
    act_map.update({f"buf{i}": got_inputs[i] for i in bufs})
    verdict = Verdict(True, expected=exp_map, actual=act_map)
    title = label or graph.name
    if len(got_raw) != len(expected):
        verdict.ok = False
        verdict.title = verdict.message = (f"{title}: executor returned {len(got_raw)} "
                                           f"outputs; the graph declares {len(expected)} "
                                           "[EXEC-4]")
        return verdict

    differing: list[tuple[str, Value, Mismatch]] = []
    outputs = list(graph.outputs or [])
    for i, (e_raw, g) in enumerate(zip(expected, got_raw, strict=True)):
        m = compare_arrays(np.asarray(e_raw), g, label=f"output {i}")
        if m is not None and m.kind in ("dtype", "shape"):
            m.message += f" [EXEC-4{', DT-2' if m.kind == 'dtype' else ''}]"
        if m is None and outputs[i].type.device.is_cpu():
            m = layout_problem(g, f"output {i}")
        if m is not None:
            differing.append((f"out{i}", outputs[i], m))
    for i in bufs:
        m = compare_arrays(ref_inputs[i], got_inputs[i],
                           label=f"final contents of buffer input {i}")
        if m is not None:
            differing.append((f"buf{i}", graph.inputs[i], m))
    if not differing:
        differing = _byte_mismatches(case, exp_map, act_map)
    if not differing:
        return verdict

    env, node_operands = _reference_env(graph, case.inputs)
    producer = {r: (k, j) for k, n in enumerate(graph.nodes) for j, r in enumerate(n.results)}
    hard: list[tuple[Value, str]] = []
    soft: list[tuple[Value, str]] = []
    for key, value, m in differing:
        if m.kind != "values":
            hard.append((value, m.message))
            continue
        where = producer.get(value)
        if where is not None:
            k, j = where
            node = graph.nodes[k]
            results = [np.asarray(env[r]) for r in node.results]
            got = act_map.get(key)
            m2 = compare_op(node.op, node_operands[k], node.attrs, results,
                            [got if r is value else results[jj]
                             for jj, r in enumerate(node.results)],
                            label=f"{m.message.split(':')[0]} ({node.op.name} "
                                  f"[{results[j].dtype}])")
            if m2 is None:
                continue  # within the op's tolerance: not a failure, not a divergence seed
            m = m2
        nodes = cone(graph, [value])
        if _strict(graph, nodes):
            hard.append((value, m.message))
        else:
            soft.append((value, m.message))
    if not hard and not soft:
        return verdict
    if not search:
        verdict.ok = False
        verdict.title = verdict.message = f"{title}: values differ (not searched)"
        return verdict
    # Only failing values seed the search: a value within tolerance is no evidence, and a
    # node outside every failing value's cone cannot be its cause.
    seeds = [v for v, _ in hard + soft]
    # bytes and layout (DT-6, DT-2) are not compared node by node: no divergence search
    form_only = all(m.kind in ("bytes", "layout") for _, _, m in differing)
    stop = _Stop(None if soft else budget)  # a soft value's verdict needs the whole search
    div = first_divergence(graph, case.inputs, executor, seeds, stop) if (
        soft or (locate and len(graph.nodes) > 1 and not form_only)) else None
    verdict.divergence = div
    verdict.search_stopped = stop.stopped
    verdict.locally_checked = bool(soft)
    if not hard and div is None:
        return verdict  # every node follows from the executor's own operands
    verdict.ok = False
    # a soft value fails when the divergence lies upstream of it (others are not proven)
    proven = [(v, s) for v, s in soft if div is not None and div.index in cone(graph, [v])]
    verdict.failing = [v for v, _ in hard + proven]
    verdict.title = f"{title}: the executor's results differ from the reference"
    verdict.findings = [Finding(m, rules_in(m) or ("TOL-1",)) for _, m in hard or proven]
    if div is not None and len(graph.nodes) > 1:
        verdict.findings.append(Finding(str(div), rules_in(str(div)) or ("TOL-1", "CONF-20")))
    elif stop.stopped:
        verdict.findings.append(Finding(
            "the search for the first diverging node stopped: the shrink budget is spent "
            "(--conformance-shrink-calls, --conformance-shrink-structures)", ("CONF-114",)))
    elif len(graph.nodes) > 1 and locate and not form_only:
        verdict.findings.append(Finding(
            "every node agrees when run as a prefix of the graph: the result depends on the "
            "surrounding graph (fusion or scheduling)", ("CONF-20",)))
    verdict.message = render_findings(verdict.title, verdict.findings)
    return verdict


def _byte_mismatches(case: Case, expected: dict[str, np.ndarray],
                     actual: dict[str, np.ndarray]) -> list[tuple[str, Value, Mismatch]]:
    """NaN bytes of the values whose bytes the spec fixes (DT-6, MUT-2), once every value
    matches; elements an op leaves unspecified (TOL-2) are not compared."""
    graph = case.graph
    exact, buffers = byte_exact_values(graph), byte_exact_buffers(graph)
    keys = [(f"out{i}", v, f"output {i}") for i, v in enumerate(graph.outputs or [])
            if v in exact]
    keys += [(f"buf{i}", v, f"final contents of buffer input {i}")
             for i, v in enumerate(graph.inputs) if v in buffers]
    found: list[tuple[str, Value, Mismatch]] = []
    producer = {r: n for n in graph.nodes for r in n.results}
    env: tuple[dict[Value, Any], list[list[np.ndarray]]] | None = None
    for key, v, label in keys:
        e, g = expected.get(key), actual.get(key)
        if e is None or g is None:
            continue
        node = producer.get(v)
        what = f"{label} ({node.op.name})" if node is not None else label
        rule = "DT-6" if key.startswith("out") else "MUT-2"
        m = nan_bytes(e, g, what, rule)
        if m is not None and node is not None and node.op.unspecified is not None:
            env = env or _reference_env(graph, case.inputs)
            k = graph.nodes.index(node)
            try:
                mask = np.asarray(node.op.unspecified(*env[1][k], **node.attrs), bool)
            except Exception:
                mask = np.ones(e.shape, bool)  # cannot tell: not compared
            m = nan_bytes(e, g, what, rule, mask if mask.size else None)
        if m is not None:
            found.append((key, v, m))
    return found


class _Stop:
    """Whether the divergence search may run its next local check (CONF-114)."""

    def __init__(self, budget: ShrinkBudget | None) -> None:
        self.budget = budget
        self.stopped = False

    def allows(self, graphs: Sequence[Graph]) -> bool:
        b = self.budget
        if b is None or not b.started:
            return True
        new = sum(1 for key in {g.structural_hash() for g in graphs} if b.new_structure(key))
        if b.allows(calls=2) and b.used_structures() + new <= b.structures:
            return True
        self.stopped = True
        b.stop("divergence search")
        return False


def first_divergence(graph: Graph, inputs: Sequence[np.ndarray], executor: Any,
                     seeds: Sequence[Value], stop: _Stop | None = None
                     ) -> Divergence | None:
    """Check the nodes upstream of ``seeds`` in order; the first whose executor results
    differ from the reference kernel on the executor's own operands (TOL-n). ``stop`` ends
    the search early when the shrink budget is spent (CONF-114)."""
    nodes = cone(graph, seeds)
    for k in nodes:
        node = graph.nodes[k]
        prefixes = _prefixes(graph, k, node)
        if stop is not None and not stop.allows(prefixes):
            return None
        try:
            m = _local_check(prefixes, k, node, inputs, executor,
                             _perturb_budget(graph, cone(graph, node.operands)))
        except UnsupportedGraphError:
            continue  # the executor does not run this prefix: no evidence either way
        if m is not None:
            tail = graph.nodes[k].results
            observe = list(tail) + [v for v in node.operands
                                    if isinstance(v.type, BufferType)]
            return Divergence(k, describe_node(graph, k), m,
                              prefix_graph(graph, k + 1, observe, f"{graph.name}_node{k}"))
    return None


def _prefixes(graph: Graph, k: int, node: Node) -> tuple[Graph, Graph]:
    """The prefix graphs of node ``k``'s local check: its operands, its results."""
    buffers = [v for v in node.operands if isinstance(v.type, BufferType)]
    return (prefix_graph(graph, k, list(node.operands), f"{graph.name}_before{k}"),
            prefix_graph(graph, k + 1, [*node.results, *buffers], f"{graph.name}_after{k}"))


def _local_check(prefixes: tuple[Graph, Graph], k: int, node: Node,
                 inputs: Sequence[np.ndarray], executor: Any, perturb: int
                 ) -> Mismatch | None:
    before, after = prefixes
    label = f"node #{k} {node.op.name}"
    try:
        operands_raw, _ = _run(executor, before, inputs)
        got, _ = _run(executor, after, inputs)
    except ExecutorRaised as e:
        return Mismatch(f"{label}: {e.describe()}")
    operands = [np.array(as_numpy(a), copy=True) for a in operands_raw]
    for v, a in zip(node.operands, operands, strict=True):
        want = v.type.dtype.to_numpy()
        if a.dtype != want or a.shape != v.type.shape:
            return Mismatch(f"{label}: operand of type {v.type} came back as "
                            f"{a.dtype}{list(a.shape)}")
    work = [np.array(a, copy=True) for a in operands]
    try:
        with np.errstate(all="ignore"):
            out = node.op.apply(*work, **node.attrs)
    except Exception as e:
        return Mismatch(f"{label}: the reference kernel fails on the executor's operands "
                        f"({type(e).__name__}: {e})")
    written = [w for w, v in zip(work, node.operands, strict=True)
               if isinstance(v.type, BufferType)]
    expected = [np.asarray(r) for r in out] + written
    return compare_op(node.op, operands, node.attrs, expected, got, label=label,
                      perturb_ulps=perturb)

