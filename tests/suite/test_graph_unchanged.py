"""EXEC-15 / CONF-83: executors never change the graph they are given; the suite checks it.

The check itself on small deliberately-wrong executors (each call through
``conformance.pipeline.call_executor``, as the suite makes it), the shipped executors on varied
graphs, ``lowered`` (the copy executors lower), and the suite's verdict on
``tests/suite/broken_executors.py:TupleAttrsToListsInPlace``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conformance import unchanged as unchanged_module
from conformance.calls import ExecutorRaised
from conformance.isolate import IsolatedExecutor
from conformance.pipeline import ExecutorUnderTest, call_executor
from conformance.unchanged import GraphChangedError
from interpreter.dtype import DType
from interpreter.errors import UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import Graph, TensorType, lower, ops
from interpreter.graph.core import Node
from interpreter.graph.key import fresh_structural_key, structural_key
from interpreter.graph.lowering import lowered
from interpreter.testing import Buf, assert_same, build
from reference_executors.compiling import CompilingExecutor
from reference_executors.jit import JitExecutor
from tests.suite.device_executors import SimulatedGpuExecutor
from tests.suite.suite_runner import BROKEN, run_suite

F32 = DType.float32
X = np.arange(6, dtype=np.float32).reshape(2, 3)


def shaped() -> Graph:
    """exp, then a reshape: a tuple attribute (node 1)."""
    return lower(build(lambda x: ops.reshape(ops.exp(x), (3, 2)), X, name="shaped"))


EXPECTED = InterpreterExecutor().execute(shaped(), [X.copy()])[0]


class Mutating:
    """The reference interpreter (on a copy of the graph) after ``edit`` changed the graph
    it was given; ``then`` runs after the edit (e.g. raises)."""

    def __init__(self, edit: Callable[[Graph], None],
                 then: Callable[[], None] | None = None) -> None:
        self.edit, self.then = edit, then

    def execute(self, graph: Graph, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        out = list(InterpreterExecutor().execute(Graph.parse(graph.to_text()), inputs))
        self.edit(graph)
        if self.then is not None:
            self.then()
        return out


def changed_message(edit: Callable[[Graph], None], graph: Graph | None = None) -> str:
    """The verdict for an executor that makes ``edit``; the graph is put back afterwards."""
    g = graph if graph is not None else shaped()
    text = g.to_text()
    with pytest.raises(ExecutorRaised) as info:
        call_executor(Mutating(edit), g, [X.copy()])
    assert isinstance(info.value.original, GraphChangedError)
    assert g.to_text() == text, "the suite did not put the graph back"
    return info.value.describe()


def _listify(g: Graph) -> None:
    g.nodes[1].attrs["shape"] = list(g.nodes[1].attrs["shape"])


def _drop_node(g: Graph) -> None:
    g.nodes = g.nodes[1:]


def _extra_output(g: Graph) -> None:
    g.outputs = [*(g.outputs or ()), g.nodes[0].results[0]]


def _retype_input(g: Graph) -> None:
    g.inputs[0].type = TensorType(DType.float64, (2, 3))


def _add_attr(g: Graph) -> None:
    g.nodes[0].attrs["fast_math"] = True


def _insert_cast(g: Graph) -> None:
    cast = g.nodes[0]
    g.nodes = [Node(cast.op, cast.operands, {"dtype": F32}, (), None), *g.nodes]


@pytest.mark.spec("EXEC-15", "CONF-83")
@pytest.mark.parametrize(("edit", "says"), [
    (_listify, "graph 'shaped': execute changed the graph it was given: node 1 (reshape) "
               "differs: attribute 'shape': (3, 2) -> [3, 2] [EXEC-15]"),
    (_add_attr, "node 0 (exp) differs: attribute 'fast_math': (absent) -> True [EXEC-15]"),
    (_extra_output, "outputs (%2) -> (%2, %1) [EXEC-15]"),
    (_retype_input, "input types (tensor<f32[2,3] cpu:0>) -> (tensor<f64[2,3] cpu:0>)"),
    (_insert_cast, "2 nodes -> 3 nodes; from node 0: (exp, reshape) -> (exp, exp, reshape)"),
    (_drop_node, "node 0 (reshape) now uses a value no earlier node defines [EXEC-15]"),
], ids=["tuple-to-list", "added-attribute", "extra-output", "input-type", "inserted-node",
        "dropped-node"])
def test_a_change_fails_naming_the_first_difference(edit: Callable[[Graph], None],
                                                    says: str) -> None:
    message = changed_message(edit)
    assert says in message, message
    assert "Traceback" not in message  # found around the call: no suite frames (CONF-83)


@pytest.mark.spec("EXEC-15", "CONF-83")
def test_an_unchanged_graph_passes_and_equal_lists_are_no_change() -> None:
    g = shaped()

    def equal_lists(graph: Graph) -> None:
        graph.nodes, graph.outputs = list(graph.nodes), list(graph.outputs or ())

    (out,) = call_executor(Mutating(equal_lists), g, [X.copy()])
    assert_same(out, EXPECTED)
    (again,) = call_executor(InterpreterExecutor(), g, [X.copy()])
    assert_same(again, out)


@pytest.mark.spec("EXEC-15", "CONF-83", "EXEC-3")
def test_a_refusal_after_a_change_is_the_change() -> None:
    """A refusal is no verdict, so a refusal that changed the graph fails with EXEC-15."""
    def refuse() -> None:
        raise UnsupportedGraphError("too big")

    g = shaped()
    with pytest.raises(ExecutorRaised) as info:
        call_executor(Mutating(_listify, refuse), g, [X.copy()])
    assert isinstance(info.value.original, GraphChangedError)
    assert isinstance(info.value.original.__cause__, UnsupportedGraphError)
    assert ("execute changed the graph it was given, then refused it (too big): node 1 "
            "(reshape) differs") in info.value.describe()


@pytest.mark.spec("EXEC-15", "CONF-83", "CONF-22")
def test_an_exception_after_a_change_stays_the_verdict_with_a_note() -> None:
    def crash() -> None:
        raise ValueError("kernel failed")

    g = shaped()
    with pytest.raises(ExecutorRaised) as info:
        call_executor(Mutating(_listify, crash), g, [X.copy()])
    text = info.value.describe()
    assert isinstance(info.value.original, ValueError)
    assert text.startswith("the executor raised ValueError: kernel failed")
    assert ("the executor also changed the graph it was given: node 1 (reshape) differs: "
            "attribute 'shape': (3, 2) -> [3, 2] [EXEC-15]") in text


@pytest.mark.spec("CONF-83", "CONF-110")
def test_the_pipeline_computes_the_key_twice_per_call(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """One wrapper, one check per call: two fresh keys (before, after) of the graph the
    executor is handed, also when the wrapped executor goes through ``call_executor``
    again; for a device executor, of its device copy only."""
    computed: list[Graph] = []

    def counting(graph: Graph) -> Any:
        computed.append(graph)
        return fresh_structural_key(graph)

    monkeypatch.setattr(unchanged_module, "fresh_structural_key", counting)
    g = shaped()
    wrapped = ExecutorUnderTest(InterpreterExecutor())
    call_executor(wrapped, g, [X.copy()])
    assert computed == [g, g]
    computed.clear()
    on_device = ExecutorUnderTest(SimulatedGpuExecutor())
    call_executor(on_device, g, [X.copy()])
    placed = on_device.placed(g)
    assert placed is not g and computed == [placed, placed]


class MutatesOnDevice(SimulatedGpuExecutor):
    """Renames the dtype of the first node's result on the graph it is handed (its device
    copy): results stay right."""

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[Any]:
        out = super().execute(graph, inputs)
        r = graph.nodes[0].results[0]
        r.type = TensorType(DType.float64, r.type.shape, r.type.device)
        return out


@pytest.mark.spec("EXEC-15", "CONF-83", "CONF-70")
def test_the_device_copy_handed_over_is_checked_too() -> None:
    g = shaped()
    with pytest.raises(ExecutorRaised) as info:
        call_executor(MutatesOnDevice(), g, [X.copy()])
    assert isinstance(info.value.original, GraphChangedError)
    assert ("node 0 (exp) differs: result types tensor<f32[2,3] gpu:0> -> "
            "tensor<f64[2,3] gpu:0> [EXEC-15]") in info.value.describe()
    (out,) = call_executor(SimulatedGpuExecutor(), shaped(), [X.copy()])
    assert_same(out, EXPECTED)


# -- the shipped executors ---------------------------------------------------------------------
def _needs_lowering() -> tuple[Graph, list[np.ndarray]]:
    """int8 + float32 with broadcasting: lowering adds a cast and a broadcast_to."""
    a = np.array([1, -2, 3], np.int8)
    b = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    g = build(lambda a, b: ops.exp(a + b) * 2.0, a, b, name="needs_lowering")
    assert g.needs_lowering
    return g, [a, b]


def _buffer() -> tuple[Graph, list[np.ndarray]]:
    g = build(lambda b, x: (ops.buffer_store(b, ops.buffer_load(b) + x), x * 2.0)[1],
              Buf(np.zeros(3, np.float32)), np.ones(3, np.float32), name="buffer")
    return lower(g), [np.zeros(3, np.float32), np.ones(3, np.float32)]


def _constant() -> tuple[Graph, list[np.ndarray]]:
    table = np.arange(12, dtype=np.float64).reshape(3, 4)
    g = build(lambda x: ops.sum(x * ops.constant(table), axis=1), np.ones((3, 4)),
              name="constant")
    return lower(g), [np.full((3, 4), 0.5)]


def _shapes() -> tuple[Graph, list[np.ndarray]]:
    def fn(x: Any) -> Any:
        a, b = ops.split(ops.permute(x, (1, 0)), [1, 2], axis=0)
        return ops.reshape(b, (6,)), a

    return lower(build(fn, np.arange(9, dtype=np.float32).reshape(3, 3), name="shapes")), \
        [np.arange(9, dtype=np.float32).reshape(3, 3)]


GRAPHS = {"needs-lowering": _needs_lowering, "buffer": _buffer, "constant": _constant,
          "split-permute": _shapes}


@pytest.fixture(params=["interpreter", "compiling", "jit"])
def shipped(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "interpreter":
        yield InterpreterExecutor()
    elif request.param == "compiling":
        yield CompilingExecutor()
    else:
        jit = JitExecutor()
        yield jit
        jit.wait_compiled()


@pytest.mark.spec("EXEC-15")
@pytest.mark.parametrize("make", list(GRAPHS.values()), ids=list(GRAPHS))
def test_shipped_executors_leave_the_graph_unchanged(
        shipped: Any, make: Callable[[], tuple[Graph, list[np.ndarray]]]) -> None:
    """Each graph runs three times (the JIT's third call on its compiled plan); its fresh
    key, text and lowering flag stay as they were, and every run agrees."""
    graph, inputs = make()
    key, text, flag = fresh_structural_key(graph), graph.to_text(), graph.needs_lowering
    expected = InterpreterExecutor().execute(lowered(graph), [a.copy() for a in inputs])
    for attempt in range(3):
        if attempt == 2 and isinstance(shipped, JitExecutor):
            shipped.wait_compiled()
        outs = shipped.execute(graph, [a.copy() for a in inputs])
        assert fresh_structural_key(graph) == key, f"{shipped!r} changed {graph.name!r}"
        assert graph.to_text() == text and graph.needs_lowering == flag
        assert_same(list(map(np.asarray, outs)), expected)


@pytest.mark.spec("EXEC-15", "LOWER-2")
def test_lowered_is_a_cached_copy_and_the_graph_stays_high_level() -> None:
    graph, _ = _needs_lowering()
    text = graph.to_text()
    copy = lowered(graph)
    assert copy is not graph and not copy.needs_lowering and graph.to_text() == text
    assert [n.name for n in copy.nodes] == ["cast", "broadcast_to", "add", "exp", "constant",
                                            "mul"]
    assert copy.to_text() == lower(Graph.parse(text)).to_text()
    assert lowered(graph) is copy  # cached while the graph keeps its lists
    assert structural_key(graph) != structural_key(copy)
    done = lowered(copy)
    assert done is copy


# -- the suite's verdict -----------------------------------------------------------------------
@pytest.mark.spec("CONF-83", "CONF-22", "CONF-18")
def test_the_suite_fails_a_graph_changing_executor_with_exec15(tmp_path: Path) -> None:
    """``TupleAttrsToListsInPlace`` returns right results: only EXEC-15 fails it, as a
    verdict (not a suite error), in the per-op and the protocol tests alike."""
    run = run_suite(tmp_path, "TupleAttrsToListsInPlace", ["test_ops.py", "test_protocol.py"],
                    "reshape-float32-general or exp-float32-general or aliasing")
    assert run.outcomes["conformance/test_ops.py::test_op[exp-float32-general]"] == "passed"
    failures = run.failures()
    assert sorted(failures) == [
        "conformance/test_ops.py::test_op[reshape-float32-general]",
        "conformance/test_protocol.py::test_outputs_fresh_when_aliasing_is_tempting"], failures
    for text in failures.values():
        assert "execute changed the graph it was given: node " in text, text
        assert "(reshape) differs: attribute 'shape': (" in text and "[EXEC-15]" in text
        assert "SUITE ERROR" not in text and "Traceback" not in text, text


# -- under --conformance-isolate ---------------------------------------------------------------
class RefusesAfterListify:
    """Turns node 1's ``shape`` into a list, then refuses (for the isolated worker)."""

    def execute(self, graph: Graph, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        _listify(graph)
        raise UnsupportedGraphError("too big")


class CrashesAfterListify:
    """Turns node 1's ``shape`` into a list, then raises (for the isolated worker)."""

    def execute(self, graph: Graph, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        _listify(graph)
        raise ValueError("kernel failed")


@contextmanager
def _isolated(spec: str, tmp_path: Path) -> Iterator[IsolatedExecutor]:
    iso = IsolatedExecutor(spec, timeout=60, artifacts=tmp_path)
    try:
        yield iso
    finally:
        iso.close()


@pytest.mark.spec("EXEC-15", "CONF-83", "CONF-12")
def test_isolated_worker_reports_the_change_with_the_in_process_text(tmp_path: Path) -> None:
    """The worker checks its parsed copy; the parent's verdict reads as in-process."""
    in_process = changed_message(_listify)
    with _isolated(f"{BROKEN}:TupleAttrsToListsInPlace", tmp_path) as iso:
        g = shaped()
        text = g.to_text()
        with pytest.raises(ExecutorRaised) as info:
            call_executor(iso, g, [X.copy()])
        assert isinstance(info.value.original, GraphChangedError)
        assert info.value.describe() == in_process
        assert g.to_text() == text


@pytest.mark.spec("EXEC-15", "CONF-83", "EXEC-3", "CONF-22")
def test_isolated_refusal_or_crash_after_a_change(tmp_path: Path) -> None:
    """A refusal after a change is the change; another exception stays the verdict with
    the note, as in-process."""
    with _isolated(f"{__name__}:RefusesAfterListify", tmp_path) as iso:
        with pytest.raises(ExecutorRaised) as info:
            call_executor(iso, shaped(), [X.copy()])
        assert isinstance(info.value.original, GraphChangedError)
        assert isinstance(info.value.original.__cause__, UnsupportedGraphError)
        assert ("graph 'shaped': execute changed the graph it was given, then refused it "
                "(too big): node 1 (reshape) differs: attribute 'shape': (3, 2) -> [3, 2] "
                "[EXEC-15]") == info.value.describe()
    with _isolated(f"{__name__}:CrashesAfterListify", tmp_path) as iso:
        with pytest.raises(ExecutorRaised) as info:
            call_executor(iso, shaped(), [X.copy()])
        text = info.value.describe()
        assert isinstance(info.value.original, ValueError)
        assert text.startswith("the executor raised ValueError: kernel failed"), text
        assert ("the executor also changed the graph it was given: node 1 (reshape) differs: "
                "attribute 'shape': (3, 2) -> [3, 2] [EXEC-15]") in text


@pytest.mark.spec("CONF-83", "CONF-12", "CONF-18")
def test_the_isolated_suite_fails_a_graph_changing_executor_with_exec15(tmp_path: Path
                                                                         ) -> None:
    run = run_suite(tmp_path, "TupleAttrsToListsInPlace", ["test_ops.py"],
                    "reshape-float32-general", "--conformance-isolate")
    failures = run.failures()
    assert list(failures) == ["conformance/test_ops.py::test_op[reshape-float32-general]"], \
        run.outcomes
    text = failures["conformance/test_ops.py::test_op[reshape-float32-general]"]
    assert "execute changed the graph it was given: node " in text, text
    assert "(reshape) differs: attribute 'shape': (" in text and "[EXEC-15]" in text, text
    assert "SUITE ERROR" not in text and "the executor raised" not in text, text


@pytest.mark.spec("EXEC-15", "CONF-83", "CONF-12")
def test_the_isolated_suite_passes_a_conformant_executor(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "interpreter.executor:InterpreterExecutor", ["test_ops.py"],
                    "reshape-float32-general", "--conformance-isolate")
    assert run.code == 0 and run.outcomes == {
        "conformance/test_ops.py::test_op[reshape-float32-general]": "passed"}, run.text()
