"""The JIT (composite) executor (spec/reference-executors.md, JIT-1..JIT-14)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

import interpreter.selection as selection
from interpreter.dtype import DType
from interpreter.errors import ExecutorInputError, UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import Graph, ops
from interpreter.graph.key import structural_key
from interpreter.graph.ops.staging import stage1
from interpreter.registry import EXACT, REGISTRY, OpDef, register
from interpreter.registry.rules import elementwise
from interpreter.testing import Buf, assert_same, build
from reference_executors.compiling import CompilingExecutor
from reference_executors.jit import CACHE_SIZE, CompositeExecutor, JitExecutor, may_mutate
from tests.executors.fakes import WAIT_S, FakeCompiler, wait_for
from tests.frontend.helpers import Counting, f32

RAISING = "test_jit_raising"


@pytest.fixture
def raising_op() -> Iterator[OpDef]:
    """A registered op whose kernel fails at run time (the interpreter accepts the graph)."""

    def kernel(x: np.ndarray) -> np.ndarray:
        raise ZeroDivisionError("kernel exploded")

    op = register(OpDef(RAISING, summary="raises", category="test", operands=("x",), attrs=(),
                        infer=elementwise, kernel=kernel, dtypes=frozenset(DType),
                        tolerance=EXACT))
    yield op
    del REGISTRY[RAISING]


def chain(name: str = "chain") -> Graph:
    return build(lambda x: (x + 1.0) * 2.0, f32(1, 2), name=name)


def negated(inputs: Sequence[Any]) -> list[Any]:
    return [-np.asarray(inputs[0])]


def jit(compiler: FakeCompiler, max_ops: int | None = None, **kw: Any) -> JitExecutor:
    return JitExecutor(interpreter=Counting(InterpreterExecutor(max_ops=max_ops)),
                       compiler=compiler, **kw)


@pytest.mark.spec("JIT-1", "JIT-13")
def test_default_construction_and_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAX_INTERPRETER_MAX_OPS", "7")
    e = JitExecutor()
    assert CompositeExecutor is JitExecutor
    assert isinstance(e.interpreter, InterpreterExecutor) and e.interpreter.max_ops == 7
    assert isinstance(e.compiler, CompilingExecutor)
    assert e.sync_on_interpreter_fallback is True and e.cache_size == CACHE_SIZE == 128
    for name in ("jit", "composite", "default"):
        built = selection.build_executor(name)
        assert type(built) is JitExecutor and built.interpreter.max_ops == 7
    assert type(selection.build_executor("compile")) is CompilingExecutor
    assert_same(e.execute(chain(), [f32(1, 2)])[0], f32(4, 6))
    with pytest.raises(ValueError, match="cache_size must be at least 1, got 0"):
        JitExecutor(cache_size=0)


@pytest.mark.spec("JIT-3", "JIT-4", "JIT-5", "JIT-12")
def test_interpreter_serves_while_pending_then_the_compiled_plan() -> None:
    compiler = FakeCompiler(gated=True, fn=negated)
    e = jit(compiler)
    g = build(lambda x: x * 3.0, f32(1, 2))
    assert e.state(g) == "absent"
    assert_same(e.execute(g, [f32(1, 2)])[0], f32(3, 6))  # interpreted
    assert e.interpreter.calls == 1 and e.state(g) == "pending" and e.submitted == 1
    compiler.gate.set()
    wait_for(lambda: e.state(g) == "compiled", "the compile")
    assert_same(e.execute(g, [f32(1, 2)])[0], f32(-1, -2))  # the plan, not the interpreter
    assert_same(e.execute(build(lambda x: x * 3.0, f32(1, 2)), [f32(5, 6)])[0], f32(-5, -6))
    assert e.interpreter.calls == 1 and compiler.runs == 2
    assert compiler.compiles == 1 and e.submitted == 1


@pytest.mark.spec("JIT-2")
def test_one_compile_per_structure_per_instance() -> None:
    compiler = FakeCompiler()
    e = jit(compiler)
    e.execute(chain("a"), [f32(1, 2)])
    e.execute(chain("b"), [f32(3, 4)])  # another name, the same structure
    wait_for(lambda: e.state(chain()) == "compiled", "the compile")
    assert compiler.compiles == 1 and len(e.cached_keys()) == 1
    other = jit(compiler)
    other.execute(chain(), [f32(1, 2)])
    wait_for(lambda: other.state(chain()) == "compiled", "the second instance's compile")
    assert compiler.compiles == 2
    e.execute(build(lambda x: (x + 1.0) * 3.0, f32(1, 2)), [f32(1, 2)])
    wait_for(lambda: compiler.compiles == 3, "a compile for a new structure")


@pytest.mark.spec("JIT-3")
def test_the_compile_sees_the_graph_as_given_not_as_lowered() -> None:
    """MAX MUST 28: the compile gets a snapshot of the graph as given, and the compiled plan
    agrees with the interpreter, which lowers a copy: the caller's graph is unchanged
    (EXEC-15)."""
    def graph() -> Graph:
        return build(lambda x, y: x + y, f32(1, 2), np.array([[1.0], [2.0]], np.float64))

    g = graph()
    before = g.to_text()
    assert g.needs_lowering
    compiler = FakeCompiler(gated=True)
    e = jit(compiler)
    inputs = [f32(1, 2), np.array([[1.0], [2.0]], np.float64)]
    first = e.execute(g, inputs)[0]
    assert g.needs_lowering and g.to_text() == before  # the interpreter lowered a copy
    compiler.gate.set()
    wait_for(lambda: e.state(graph()) == "compiled", "the compile")
    assert compiler.texts == [before]
    assert_same(e.execute(graph(), inputs)[0], first)
    assert_same(first, np.array([[2, 3], [3, 4]], np.float64))
    assert compiler.runs == 1 and e.interpreter.calls == 1


@pytest.mark.spec("JIT-3", "GRAPH-13")
def test_the_snapshot_is_a_structural_copy_taken_before_anything_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The compile gets a copy of the graph as it was at its first call (new objects, the
    same ops, attributes, sites and outputs), made without rendering or parsing text."""
    g = chain()
    text, sites = g.to_text(), [n.site for n in g.nodes]
    rendered: list[Graph] = []
    render = Graph.to_text

    def spy(self: Graph, *args: Any, **kwargs: Any) -> str:
        rendered.append(self)
        return render(self, *args, **kwargs)

    def no_parse(text: str) -> Graph:
        raise AssertionError("the snapshot was parsed from text")

    monkeypatch.setattr(Graph, "to_text", spy)
    monkeypatch.setattr(Graph, "parse", staticmethod(no_parse))
    compiler = FakeCompiler(gated=True)
    e = jit(compiler)
    assert_same(e.execute(g, [f32(1, 2)])[0], f32(4, 6))
    g.outputs = [g.nodes[1].results[0]]  # the caller changes its graph afterwards
    g.nodes[2].attrs["value"] = np.full((2,), 5.0, np.float32)
    g.changed()
    compiler.gate.set()
    wait_for(lambda: compiler.compiles == 1 and e.state(chain()) == "compiled", "the compile")
    (snapshot,) = compiler.graphs
    assert snapshot is not g
    assert all(a is not b for a, b in zip(snapshot.nodes, g.nodes, strict=True))
    assert compiler.texts == [text] and [n.site for n in snapshot.nodes] == sites
    assert not any(r is g for r in rendered)  # only the fake compiler rendered the copy


@pytest.mark.spec("JIT-6")
def test_a_refused_graph_waits_for_its_compile() -> None:
    compiler = FakeCompiler(gated=True, fn=negated)
    e = jit(compiler, max_ops=0)
    opener = threading.Timer(0.05, compiler.gate.set)
    opener.start()
    assert_same(e.execute(chain(), [f32(1, 2)])[0], f32(-1, -2))
    opener.join()
    assert e.interpreter.calls == 1 and compiler.compiles == 1 and compiler.runs == 1


@pytest.mark.spec("JIT-6")
def test_without_sync_fallback_a_refusal_propagates_and_the_compile_goes_on() -> None:
    compiler = FakeCompiler(gated=True, fn=negated)
    e = jit(compiler, max_ops=0, sync_on_interpreter_fallback=False)
    with pytest.raises(UnsupportedGraphError, match=r"require compilation.*threshold 0"):
        e.execute(chain(), [f32(1, 2)])
    assert e.submitted == 1
    compiler.gate.set()
    wait_for(lambda: e.state(chain()) == "compiled", "the compile")
    assert_same(e.execute(chain(), [f32(3, 4)])[0], f32(-3, -4))
    assert e.interpreter.calls == 1


@pytest.mark.spec("JIT-7")
def test_failed_compiles_are_sticky() -> None:
    boom = RuntimeError("no kernel for this")
    compiler = FakeCompiler(error=boom)
    e = jit(compiler, max_ops=0)
    for _ in range(3):
        with pytest.raises(RuntimeError, match="no kernel for this") as info:
            e.execute(chain(), [f32(1, 2)])
        assert info.value is boom
    assert compiler.compiles == 1 and e.submitted == 1 and e.state(chain()) == "failed"
    # an interpreter that accepts the graph keeps serving it
    serving = jit(compiler)
    for _ in range(2):
        assert_same(serving.execute(chain(), [f32(1, 2)])[0], f32(4, 6))
    wait_for(lambda: serving.state(chain()) == "failed", "the failing compile")
    assert_same(serving.execute(chain(), [f32(1, 2)])[0], f32(4, 6))
    assert compiler.compiles == 2 and serving.interpreter.calls == 3


@pytest.mark.spec("JIT-8")
@pytest.mark.parametrize("max_ops", [None, 0], ids=["interpreted", "refused"])
def test_eight_concurrent_first_calls_share_one_compile(max_ops: int | None) -> None:
    compiler = FakeCompiler(gated=True, fn=negated)
    e = jit(compiler, max_ops=max_ops)
    barrier = threading.Barrier(8)
    results: list[Any] = []

    def call(i: int) -> None:
        barrier.wait()
        results.append((i, e.execute(chain(f"g{i}"), [f32(i, i)])[0]))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    wait_for(lambda: e.interpreter.calls == 8, "eight interpreter calls")
    if max_ops is None:
        wait_for(lambda: len(results) == 8, "the interpreted calls")
    compiler.gate.set()
    for t in threads:
        t.join(WAIT_S)
    assert sorted(i for i, _ in results) == list(range(8))
    for i, out in results:
        assert_same(out, -f32(i, i) if max_ops == 0 else f32(2 * (i + 1), 2 * (i + 1)))
    assert compiler.compiles == 1 and e.submitted == 1
    assert e.interpreter.calls == 8


@pytest.mark.spec("JIT-9")
def test_the_cache_is_a_bounded_lru() -> None:
    compiler = FakeCompiler()
    e = jit(compiler, cache_size=2)
    graphs = [build(lambda x, k=k: x + float(k), f32(1)) for k in range(3)]
    keys = [structural_key(g) for g in graphs]

    def call(g: Graph) -> None:
        e.execute(g, [f32(1)])
        e.wait_compiled()

    for g in graphs[:2]:
        call(g)
    call(graphs[0])  # 0 is now the most recently used
    call(graphs[2])  # evicts 1
    assert e.cached_keys() == [keys[0], keys[2]] and compiler.compiles == 3
    call(graphs[1])  # seen again: compiled again
    assert compiler.compiles == 4
    assert e.submitted == 4 and e.cached_keys() == [keys[2], keys[1]]


@pytest.mark.spec("JIT-9")
def test_repeated_calls_of_one_structure_keep_it_most_recently_used() -> None:
    """The last structure served is found by one key comparison (no LRU update per call);
    it still counts as the most recently used when another structure needs room."""
    compiler = FakeCompiler()
    e = jit(compiler, cache_size=2)
    graphs = [build(lambda x, k=k: x * float(k), f32(1)) for k in range(3)]
    keys = [structural_key(g) for g in graphs]
    for g in (graphs[0], graphs[1]):
        e.execute(g, [f32(1)])
        e.wait_compiled()
    for _ in range(3):  # 0 again, three times: served as the last structure after the first
        e.execute(build(lambda x: x * 0.0, f32(1)), [f32(1)])
    assert e.cached_keys() == [keys[1], keys[0]]
    e.execute(graphs[2], [f32(1)])  # evicts 1, not the hot 0
    e.wait_compiled()
    assert e.cached_keys() == [keys[0], keys[2]] and compiler.compiles == 3


@pytest.mark.spec("JIT-9")
def test_a_compile_evicted_before_it_started_is_skipped() -> None:
    compiler = FakeCompiler(gated=True)
    e = jit(compiler, cache_size=1)
    graphs = [build(lambda x, k=k: x + float(k), f32(1)) for k in range(3)]
    texts = [g.to_text() for g in graphs]
    e.execute(graphs[0], [f32(1)])
    assert compiler.started.wait(WAIT_S)  # the worker is inside compile 0
    e.execute(graphs[1], [f32(1)])  # queued, then evicted by the next
    e.execute(graphs[2], [f32(1)])
    compiler.gate.set()
    wait_for(lambda: compiler.compiles == 2 and compiler.plans[1:] != [], "the last compile")
    assert e.submitted == 3 and compiler.texts == [texts[0], texts[2]]


@pytest.mark.spec("JIT-10")
def test_a_runtime_failure_is_served_by_the_compiled_plan_with_a_warning(
        raising_op: OpDef) -> None:
    compiler = FakeCompiler(gated=True, fn=negated)
    e = jit(compiler)
    g = build(lambda x: stage1(RAISING, (x,)), f32(1, 2))
    threading.Timer(0.05, compiler.gate.set).start()
    with pytest.warns(UserWarning, match=r"interpreter failed on graph 'example' "
                      r"\(ZeroDivisionError: kernel exploded\).*Please file a bug \[JIT-10\]"):
        out = e.execute(g, [f32(1, 2)])
    assert_same(out[0], f32(-1, -2))
    assert e.interpreter.calls == 1 and compiler.compiles == 1


@pytest.mark.spec("JIT-10")
def test_a_runtime_failure_after_a_possible_store_is_never_replayed(raising_op: OpDef) -> None:
    compiler = FakeCompiler(gated=True, fn=negated)
    e = jit(compiler)
    buf = np.zeros(2, np.float32)

    def body(b: Any, x: Any) -> Any:
        ops.buffer_store(b, ops.buffer_load(b) + x)
        return stage1(RAISING, (x,))

    g = build(body, Buf(buf), f32(1, 2))
    assert may_mutate(g)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ZeroDivisionError, match="kernel exploded"):
            e.execute(g, [buf, f32(1, 2)])
    compiler.gate.set()
    assert_same(buf, f32(1, 2))  # stored once, by the interpreter
    assert compiler.runs == 0 and e.interpreter.calls == 1
    assert not may_mutate(build(lambda x: x + 1.0, f32(1)))


@pytest.mark.spec("JIT-10")
def test_runtime_failure_without_sync_fallback_or_with_a_failing_compile(
        raising_op: OpDef) -> None:
    g = build(lambda x: stage1(RAISING, (x,)), f32(1, 2))
    compiler = FakeCompiler(gated=True, fn=negated)
    e = jit(compiler, sync_on_interpreter_fallback=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ZeroDivisionError, match="kernel exploded"):
            e.execute(g, [f32(1, 2)])
    compiler.gate.set()
    assert compiler.runs == 0
    e = jit(FakeCompiler(error=RuntimeError("cannot compile")))
    with pytest.warns(UserWarning, match="file a bug"), \
            pytest.raises(ZeroDivisionError, match="kernel exploded") as info:
        e.execute(g, [f32(1, 2)])
    assert info.value.__notes__[-1:] == ["JitExecutor: the compiled fallback failed too: "
                                    "RuntimeError: cannot compile [JIT-10]"]


@pytest.mark.spec("JIT-11")
def test_inputs_are_checked_before_anything_is_submitted() -> None:
    compiler = FakeCompiler()
    e = jit(compiler)
    with pytest.raises(ExecutorInputError, match=r"JitExecutor: graph 'chain' expected 1 "
                       r"inputs, got 0 \[EXEC-7\]"):
        e.execute(chain(), [])
    with pytest.raises(ExecutorInputError, match="JitExecutor: input 0 is an array of dtype "
                       "float64"):
        e.execute(chain(), [np.zeros(2)])
    with Graph("open", input_types=[]) as g:
        pass
    with pytest.raises(UnsupportedGraphError, match="'open' refused: graph has no outputs"):
        e.execute(g, [])
    assert e.submitted == 0 and e.interpreter.calls == 0 and e.cached_keys() == []


@pytest.mark.spec("JIT-14")
def test_many_threads_on_different_graphs() -> None:
    e = JitExecutor()
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            g = build(lambda x: x * float(k) + 1.0, f32(1, 2))
            for _ in range(5):
                assert_same(e.execute(g, [f32(1, 2)])[0], f32(k + 1, 2 * k + 1))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    assert errors == [] and e.submitted == 6
