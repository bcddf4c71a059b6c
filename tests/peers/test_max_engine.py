"""The MAX peer adapter (peers/max_engine.py).

Engine-free tests run everywhere (CI does not install ``max``); engine tests are skipped
with the reason when ``max`` does not import.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import BufferType, Graph, TensorType, lowered, ops
from peers import max_engine
from peers.max_engine import max_available, refusal
from tests.peers.graphs import store_then_exp

pytestmark = pytest.mark.peer

MISSING = max_available()
needs_max = pytest.mark.skipif(MISSING is not None,
                               reason=f"max (the peer-max extra) is not installed: {MISSING}")




def test_refusal_names_the_reason_and_changes_nothing() -> None:
    g = lowered(store_then_exp(DType.float16))
    text = g.to_text()
    why = refusal(g, interpreter=True)
    assert why is not None and "16- and 8-bit floats" in why
    assert refusal(g, interpreter=False) is None  # tried on the compiling executor
    assert g.to_text() == text


def test_unmapped_op_is_refused() -> None:
    with Graph("g", input_types=[TensorType(DType.float32, (3,))]) as g:
        (x,) = g.inputs
        ops.print(x, "x")
        g.output(x)
    why = refusal(lowered(g), interpreter=False)
    assert why is not None and "debug_print" in why and "not mapped" in why


def test_constructor_without_max_says_why() -> None:
    if MISSING is None:
        pytest.skip("max is installed: the constructor succeeds")
    from interpreter.errors import ExecutorUnavailableError
    with pytest.raises(ExecutorUnavailableError, match="max"):
        max_engine.MaxInterpreterExecutor()


# ---- engine-free tests of the executors over a fake ``max`` ---------------------------

class _FakeRefusal(RuntimeError):
    """Stands for ``max.experimental.executor.UnsupportedGraphError``."""


class _FakeInterpreter:
    """Stands for MAX's ``InterpreterExecutor``: runs the "MAX graph" (the lowered graph
    itself, see ``fake_max``) with the reference interpreter on the arrays given, so stores
    reach the caller's buffers as DLPack would make them. ``refuse_after_run``: mutate, then
    refuse (a dispatch-time refusal after a store)."""

    runs: ClassVar[list[Graph]] = []
    refuse_after_run = False

    def execute(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        _FakeInterpreter.runs.append(graph)
        outs = InterpreterExecutor().execute(graph, inputs)
        if _FakeInterpreter.refuse_after_run:
            raise _FakeRefusal("UnsupportedOpVariant")
        return outs


@pytest.fixture
def fake_max(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Installs a fake ``max`` package and fakes of the adapter's MAX-facing helpers;
    returns the call logs: ``translate`` (graphs translated) and ``snapshot`` (taken)."""
    import contextlib
    import sys
    import types

    pkg = types.ModuleType("max")
    pkg.__version__ = "fake"  # type: ignore[attr-defined]
    executor = types.ModuleType("max.experimental.executor")
    executor.InterpreterExecutor = _FakeInterpreter  # type: ignore[attr-defined]
    executor.UnsupportedGraphError = _FakeRefusal  # type: ignore[attr-defined]
    for name, mod in (("max", pkg), ("max.graph", types.ModuleType("max.graph")),
                      ("max.experimental", types.ModuleType("max.experimental")),
                      ("max.experimental.executor", executor)):
        monkeypatch.setitem(sys.modules, name, mod)
    log: dict[str, list[Any]] = {"translate": [], "snapshot": []}
    real_snapshot = max_engine._snapshot

    def translate(g: Graph) -> Graph:
        log["translate"].append(g)
        return g

    def snapshot(g: Graph, arrays: list[np.ndarray]) -> Any:
        log["snapshot"].append(g)
        return real_snapshot(g, arrays)

    monkeypatch.setattr(max_engine, "translate", translate)
    monkeypatch.setattr(max_engine, "_snapshot", snapshot)
    monkeypatch.setattr(max_engine, "_to_max", lambda a, dt: a)
    monkeypatch.setattr(max_engine, "_from_max", lambda b, dt, shape: np.array(b, copy=True))
    monkeypatch.setattr(max_engine, "_mlir_context", contextlib.nullcontext)
    monkeypatch.setattr(_FakeInterpreter, "runs", [])
    monkeypatch.setattr(_FakeInterpreter, "refuse_after_run", False)
    return log


def _pure(k: float = 1.0) -> Graph:
    with Graph("pure", input_types=[TensorType(DType.float32, (3,)),
                                    BufferType(DType.float32, (3,))]) as g:
        x, buf = g.inputs
        g.output(ops.exp(x) + k, ops.buffer_load(buf))
    return g


def test_interpreter_translates_a_structure_once(fake_max: dict[str, list[Any]]) -> None:
    ex = max_engine.MaxInterpreterExecutor()
    x = np.array([0.0, 1.0, -1.0], np.float32)
    for _ in range(3):
        out, loaded = ex.execute(_pure(), [x, np.full(3, 2.0, np.float32)])
        np.testing.assert_allclose(out, np.exp(x) + 1.0, rtol=1e-6)
        assert (loaded == 2.0).all()
    ex.execute(store_then_exp(), [x, np.zeros(3, np.float32)])
    assert len(fake_max["translate"]) == 2 and ex.compiles == 2  # two structures
    runs = _FakeInterpreter.runs
    assert len(runs) == 4 and runs[0] is runs[1] is runs[2]  # the cached MAX graph, reused


def test_interpreter_cache_is_a_bounded_lru(fake_max: dict[str, list[Any]]) -> None:
    ex = max_engine.MaxInterpreterExecutor(cache_size=1)
    x, b = np.zeros(3, np.float32), np.zeros(3, np.float32)
    ex.execute(_pure(), [x, b])
    ex.execute(store_then_exp(), [x, b.copy()])  # evicts the first structure
    ex.execute(_pure(), [x, b])
    assert len(fake_max["translate"]) == 3 and len(ex._cache) == 1


def test_snapshot_only_for_graphs_that_store(fake_max: dict[str, list[Any]]) -> None:
    ex = max_engine.MaxInterpreterExecutor()
    x = np.array([1.0, 2.0, 3.0], np.float32)
    assert not max_engine.mutates(lowered(_pure()))
    assert max_engine.mutates(lowered(store_then_exp()))
    ex.execute(_pure(), [x, np.zeros(3, np.float32)])
    assert fake_max["snapshot"] == []
    buf = np.zeros(3, np.float32)
    ex.execute(store_then_exp(), [x, buf])
    assert len(fake_max["snapshot"]) == 1 and (buf == x).all()


def test_dispatch_refusal_restores_the_stored_buffer(fake_max: dict[str, list[Any]]) -> None:
    _FakeInterpreter.refuse_after_run = True
    buf = np.full(3, 7.0, np.float32)
    with pytest.raises(UnsupportedGraphError, match="refused by MAX at dispatch"):
        max_engine.MaxInterpreterExecutor().execute(
            store_then_exp(), [np.ones(3, np.float32), buf])
    assert (buf == 7.0).all()  # the store ran, then was undone (EXEC-3)


@pytest.mark.parametrize("value", [np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2],
                                   np.array(2.5, np.float32)], ids=["strided", "rank-0"])
def test_constant_passes_a_private_contiguous_copy_of_its_shape(
        monkeypatch: pytest.MonkeyPatch, value: np.ndarray) -> None:
    """A strided value crosses as a C-contiguous copy; a rank-0 one keeps shape ()
    (``np.ascontiguousarray`` made it (1,))."""
    import sys
    import types

    graph_mod = types.ModuleType("max.graph")
    graph_mod.DeviceRef = types.SimpleNamespace(CPU=lambda: "cpu")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "max.graph", graph_mod)
    monkeypatch.setattr(max_engine, "_mdtype", lambda dt: dt.name)
    seen: list[tuple[Any, ...]] = []
    fake_ops = types.SimpleNamespace(constant=lambda *a: seen.append(a) or "c")
    with Graph("c", input_types=[]) as g:
        g.output(ops.constant(value, DType.float32))
    node = g.nodes[0]
    assert max_engine._constant(fake_ops, [], dict(node.attrs), node) == "c"
    arr, mdt, dev = seen[0]
    assert mdt == "float32" and dev == "cpu" and arr.shape == value.shape
    assert arr.flags.c_contiguous and (arr == value).all()
    assert not np.shares_memory(arr, node.attrs["value"])


class _FakeStore:
    """Stands for ``peers.max_aot.AotStore``: "models" that run the reference."""

    def __init__(self, graphs: list[Graph]) -> None:
        self.keys = {lowered(g).structural_hash() for g in graphs}
        self.asked: list[str] = []

    def model(self, key: str) -> Any:
        self.asked.append(key)
        if key not in self.keys:
            return None
        return lambda *bufs: ["aot", *bufs]


def test_compiling_executor_loads_stored_structures(fake_max: dict[str, list[Any]],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    store = _FakeStore([_pure()])
    ex = max_engine.MaxCompilingExecutor(aot=store)  # type: ignore[arg-type]
    built: list[Any] = []
    monkeypatch.setattr(max_engine.MaxCompilingExecutor, "_run",
                        lambda self, prepared, low, bufs: built.append(prepared) or [])
    monkeypatch.setattr(max_engine, "_from_max", lambda b, dt, shape: b)
    x = np.zeros(3, np.float32)
    with pytest.raises(ValueError):  # the fake run returns no outputs: zip(strict) raises
        ex.execute(_pure(), [x, x.copy()])
    assert fake_max["translate"] == []  # found in the store: nothing translated, compiled
    assert store.asked == [lowered(_pure()).structural_hash()]
    assert built[0](1)[0] == "aot"


def test_recorder_records_each_structure_once_and_refuses_as_the_compiler(
        fake_max: dict[str, list[Any]], tmp_path: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from peers import max_aot
    monkeypatch.setenv(max_aot.RECORD_ENV, str(tmp_path))
    rec = max_aot.MaxGraphRecorder()
    x = np.array([0.0, 1.0, 2.0], np.float32)
    for _ in range(2):
        out, _loaded = rec.execute(_pure(), [x, np.zeros(3, np.float32)])
        np.testing.assert_allclose(out, np.exp(x) + 1.0, rtol=1e-6)
    rec.execute(_pure(2.0), [x, np.zeros(3, np.float32)])
    with Graph("p", input_types=[TensorType(DType.float32, (3,))]) as g:
        (v,) = g.inputs
        ops.print(v, "v")
        g.output(v)
    with pytest.raises(UnsupportedGraphError, match="debug_print"):
        rec.execute(g, [x])
    records = max_aot.read_records([tmp_path])
    assert len(records) == 2 and len(fake_max["translate"]) == 2
    for key, text in records.items():
        assert lowered(Graph.parse(text)).structural_hash() == key


def test_store_from_env_is_none_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from peers import max_aot
    monkeypatch.delenv(max_aot.STORE_ENV, raising=False)
    assert max_aot.store_from_env() is None


# ---- engine tests -------------------------------------------------------------------

def _graph() -> Graph:
    with Graph("g", input_types=[TensorType(DType.float32, (2, 3)),
                                 BufferType(DType.float32, (3,))]) as g:
        x, buf = g.inputs
        y = ops.exp(x) + 1.0
        ops.buffer_store(buf, y[0])
        g.output(y, x * 2.0)
    return g


def _inputs() -> list[np.ndarray]:
    return [np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3), np.zeros(3, np.float32)]


@needs_max
@pytest.mark.parametrize("cls", ["MaxInterpreterExecutor", "MaxCompilingExecutor"])
def test_engine_matches_reference_and_mutates_buffer(cls: str) -> None:
    ex = getattr(max_engine, cls)()
    g = _graph()
    ref_in, got_in = _inputs(), _inputs()
    ref = InterpreterExecutor().execute(g, ref_in)
    got = ex.execute(g, got_in)
    for r, o in zip(ref, got, strict=True):
        np.testing.assert_allclose(o, r, rtol=1e-6)
        assert o.dtype == r.dtype and o.shape == r.shape
    np.testing.assert_allclose(got_in[1], ref_in[1], rtol=1e-6)
    assert not any(np.shares_memory(o, a) for o in got for a in got_in)


@needs_max
def test_interpreter_refuses_float16_before_the_store() -> None:
    ex = max_engine.MaxInterpreterExecutor()
    g = store_then_exp(DType.float16)
    x = np.ones(3, np.float16)
    buf = np.full(3, 7, np.float16)
    with pytest.raises(UnsupportedGraphError, match="16- and 8-bit"):
        ex.execute(g, [x, buf])
    assert (buf == 7).all()


@needs_max
def test_integer_floor_div_by_zero_does_not_kill_the_process() -> None:
    with Graph("g", input_types=[TensorType(DType.int32, (4,)),
                                 TensorType(DType.int32, (4,))]) as g:
        a, b = g.inputs
        g.output(ops.floor_div(a, b), ops.mod(a, b))
    a = np.array([7, -7, np.iinfo(np.int32).min, 5], np.int32)
    b = np.array([2, 2, -1, 0], np.int32)
    q, r = max_engine.MaxInterpreterExecutor().execute(g, [a, b])
    # elements 2 and 3 are unspecified (NUM-3); the others are MAX's own results
    assert q.shape == (4,) and r.shape == (4,)


@needs_max
def test_rank0_bool_and_bfloat16_cross_by_their_bits() -> None:
    # a false alarm of the first run (test_graph[mixed-0]): Buffer.view needs rank >= 1
    import ml_dtypes

    from peers.max_engine import _from_max, _to_max
    for a, dt in ((np.array(True), DType.bool),
                  (np.array(1.5, ml_dtypes.bfloat16), DType.bfloat16),
                  (np.zeros((0, 2), np.bool_), DType.bool)):
        back = _from_max(_to_max(a, dt), dt, a.shape)
        assert back.dtype == a.dtype and back.shape == a.shape
        assert back.tobytes() == a.tobytes()


@needs_max
def test_execute_from_other_threads() -> None:
    # a false alarm of the first run (test_concurrent_execute_on_different_graphs):
    # mlir.Context.current is thread-local, so each call enters MAX's default context
    import threading
    ex = max_engine.MaxInterpreterExecutor()
    errors: list[str] = []

    def work(k: int) -> None:
        try:
            with Graph(f"g{k}", input_types=[TensorType(DType.float32, (3,))]) as g:
                (x,) = g.inputs
                g.output(x + float(k))
            (o,) = ex.execute(g, [np.zeros(3, np.float32)])
            assert (o == k).all()
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@needs_max
def test_interpreter_reruns_a_cached_structure() -> None:
    # the cached max.graph.Graph is lowered in place by its first run; later runs reuse it
    def graph() -> Graph:
        with Graph("twice", input_types=[TensorType(DType.float32, (3,)),
                                         BufferType(DType.float32, (3,))]) as g:
            x, buf = g.inputs
            ops.buffer_store(buf, x + x)
            g.output(x + x)
        return g

    ex = max_engine.MaxInterpreterExecutor()
    for k in range(3):
        x = np.array([1.0, -2.0, 0.5], np.float32) * (k + 1)
        buf = np.zeros(3, np.float32)
        (out,) = ex.execute(graph(), [x, buf])
        assert (out == 2 * x).all() and (buf == 2 * x).all()
    assert ex.compiles == 1


@needs_max
def test_aot_store_gives_the_same_bytes_as_a_graph_compiled_alone(tmp_path: Any) -> None:
    from peers import max_aot

    graphs = [_graph(), _pure(), store_then_exp()]
    records = {lowered(g).structural_hash(): lowered(g).to_text() for g in graphs}
    manifest = max_aot.build(records, tmp_path, group=8, log=lambda s: None)
    assert len(manifest["graphs"]) == 3 and manifest["left_out"] == {}
    assert max_aot.check(records, tmp_path, sample=3, log=lambda s: None) == (3, 0)


def test_pairs_listed_in_the_environment_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    g = lowered(store_then_exp())
    monkeypatch.setenv(max_engine.REFUSE_ENV, "add@float32, exp@float16")
    assert refusal(g, interpreter=False) is None
    monkeypatch.setenv(max_engine.REFUSE_ENV, "add@float32,exp@float32")
    why = refusal(g, interpreter=False)
    assert why is not None and "exp@float32 is listed in EAGER_MAX_REFUSE" in why
