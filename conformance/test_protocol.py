"""Protocol conformance of the executor under test (EXEC-1..8, MUT-1..2).

Graphs are small and fixed, or one sampled call per registry op (``OpDef.sample`` with a
seeded ``RandomArgSource``), so every check is deterministic and fast. Expected values are
hand-written or plain numpy formulas, never the reference's output.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from conformance.artifacts import ArtifactDir
from conformance.compare import compare_op
from conformance.devices import declared_device
from conformance.outcomes import refused
from interpreter.dtype import DType
from interpreter.errors import UnsupportedGraphError
from interpreter.graph import ops
from interpreter.graph.core import BufferValue, Graph, TensorValue
from interpreter.registry import REGISTRY, OpDef
from interpreter.registry.core import OpCall
from interpreter.testing import Buf, build
from interpreter.testing.sampling import RandomArgSource
from interpreter.types import BufferType, DeviceRef, TensorType

SAMPLES_PER_OP = 3
SAMPLED_OPS = sorted(name for name, op in REGISTRY.items() if op.sample is not None)


# -- helpers ----------------------------------------------------------------------------------
def execute(executor: Any, graph: Graph, inputs: Sequence[np.ndarray],
            art: ArtifactDir | None = None) -> list[np.ndarray]:
    """Run ``graph`` (its repro written first, CONF-11); a refusal ends the test as
    *refused* (CONF-5)."""
    if art is not None:
        art.write_case(graph, [np.array(a, copy=True) for a in inputs])
    try:
        return list(executor.execute(graph, list(inputs)))
    except UnsupportedGraphError as e:
        refused(f"graph {graph.name!r}: {e}")
        raise  # unreachable: refused() skips or fails


def op_graph(op: OpDef, call: OpCall) -> Graph:
    """A graph running ``op`` once on ``call``; buffers (inputs and created) are loaded after
    the op, so their final contents are outputs too."""
    types = []
    for i, a in enumerate(call.operands):
        t = TensorType(DType.from_numpy(a.dtype), a.shape, DeviceRef.CPU())
        types.append(t.as_buffer() if i in call.buffers else t)
    with Graph(f"protocol_{op.name}", input_types=types) as g:
        results = g.stage(op, list(g.inputs), call.attrs)
        outs: list[Any] = [r for r in results if isinstance(r, TensorValue)]
        bufs = [v for v in (*g.inputs, *results) if isinstance(v, BufferValue)]
        outs += [ops.buffer_load(b) for b in bufs]
        g.output(*outs)
    return g


def declared(graph: Graph) -> list[tuple[np.dtype[Any], tuple[int, ...]]]:
    return [(t.dtype.to_numpy(), tuple(t.shape)) for t in graph.output_types]


def check_outputs(graph: Graph, inputs: Sequence[np.ndarray], outputs: Sequence[Any],
                  what: str) -> None:
    """EXEC-4 (count, dtype, shape) and EXEC-5 (fresh memory)."""
    want = declared(graph)
    assert len(outputs) == len(want), (
        f"{what}: execute returned {len(outputs)} outputs for {len(want)} declared outputs "
        f"[EXEC-4]")
    for i, (o, (dtype, shape)) in enumerate(zip(outputs, want, strict=True)):
        assert isinstance(o, np.ndarray), (
            f"{what}: output {i} is a {type(o).__name__}, not a numpy.ndarray [EXEC-4]")
        assert o.dtype == dtype, (
            f"{what}: output {i} has dtype {o.dtype}; the graph declares {dtype} [EXEC-4]")
        assert o.shape == shape, (
            f"{what}: output {i} has shape {list(o.shape)}; the graph declares {list(shape)} "
            "[EXEC-4]")
    for i, o in enumerate(outputs):
        for j, a in enumerate(inputs):
            assert not np.shares_memory(o, a), (
                f"{what}: output {i} shares memory with input {j} (outputs must be fresh "
                "buffers) [EXEC-5]")
        for j in range(i):
            assert not np.shares_memory(o, outputs[j]), (
                f"{what}: outputs {j} and {i} share memory (outputs must be fresh buffers) "
                "[EXEC-5]")


def snapshot(inputs: Sequence[np.ndarray]) -> list[bytes]:
    return [a.tobytes() for a in inputs]


def check_untouched(graph: Graph, inputs: Sequence[np.ndarray], before: list[bytes],
                    what: str, indices: Sequence[int] | None = None) -> None:
    for i in range(len(inputs)) if indices is None else indices:
        assert inputs[i].tobytes() == before[i], (
            f"{what}: input {i} ({graph.inputs[i].type}) was modified by execute [EXEC-6]")


def readonly_indices(graph: Graph) -> list[int]:
    return [i for i, v in enumerate(graph.inputs) if not isinstance(v.type, BufferType)]


# -- EXEC-4/5/6 on one sampled call of every registry op -----------------------------------------
@pytest.mark.spec("EXEC-1", "EXEC-4", "EXEC-5", "EXEC-6")
@pytest.mark.parametrize("op_name", SAMPLED_OPS)
def test_outputs_declared_fresh_inputs_untouched(executor: Any, op_name: str,
                                                 conformance_artifacts: ArtifactDir) -> None:
    """Every op: one output per declared output with its dtype and shape, fresh memory, and
    read-only inputs byte-identical afterwards."""
    op = REGISTRY[op_name]
    assert op.sample is not None
    for seed in range(SAMPLES_PER_OP):
        call = op.sample(RandomArgSource(seed))
        graph = op_graph(op, call)
        inputs = [np.array(a, copy=True) for a in call.operands]
        before = snapshot(inputs)
        what = f"{op_name} (sample seed {seed}, graph {graph.name!r})"
        outputs = execute(executor, graph, inputs, conformance_artifacts)
        check_outputs(graph, inputs, outputs, what)
        check_untouched(graph, inputs, before, what, readonly_indices(graph))


# -- EXEC-5: outputs that invite aliasing -------------------------------------------------------
@pytest.mark.spec("EXEC-4", "EXEC-5")
def test_outputs_fresh_when_aliasing_is_tempting(executor: Any,
                                                 conformance_artifacts: ArtifactDir) -> None:
    """An input returned as is, one value returned twice, a reshape, a slice, a buffer load
    and a constant: all must come back as distinct fresh buffers."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([5, 6, 7, 8], np.int32)

    def fn(x: TensorValue, b: BufferValue) -> tuple[Any, ...]:
        c = ops.constant(np.array([1.5, 2.5], np.float32))
        return (x, x, ops.reshape(x, (3, 2)), x[0], b[...], c, c)

    graph = build(fn, x, Buf(b), name="aliasing_prone")
    inputs = [x, b]
    outputs = execute(executor, graph, inputs, conformance_artifacts)
    check_outputs(graph, inputs, outputs, "aliasing-prone graph")
    c = np.array([1.5, 2.5], np.float32)
    expected = [x, x, x.reshape(3, 2), x[0], b, c, c]
    for i, (o, e) in enumerate(zip(outputs, expected, strict=True)):
        np.testing.assert_array_equal(o, e, err_msg=f"output {i} of the aliasing-prone graph")
    # writing into one output must not show up anywhere else
    outputs[0][...] = -1
    assert (x == np.arange(6, dtype=np.float32).reshape(2, 3)).all() and (outputs[1] != -1).all(), \
        "writing into output 0 changed the input or output 1 [EXEC-5]"


# -- EXEC-6: read-only inputs --------------------------------------------------------------------
@pytest.mark.spec("EXEC-6", "TOL-1")
def test_readonly_inputs_untouched_when_dead_after_use(executor: Any,
                                                       conformance_artifacts: ArtifactDir) -> None:
    """An input whose last use is the first op (a donation/in-place temptation) is unchanged."""
    x = np.linspace(-2, 2, 12).reshape(3, 4)
    y = np.arange(4, dtype=np.float64)
    graph = build(lambda x, y: ops.exp(ops.negate(x * 2.0 + y)), x, y, name="dead_input")
    inputs = [x, y]
    before = snapshot(inputs)
    (out,) = execute(executor, graph, inputs, conformance_artifacts)
    check_untouched(graph, inputs, before, "dead-after-use graph")
    # the value under exp's own tolerance (TOL-1): an executor's exp may differ by ULPs
    arg = -(np.linspace(-2, 2, 12).reshape(3, 4) * 2.0 + np.arange(4.0))
    miss = compare_op(REGISTRY["exp"], [arg], {}, [np.exp(arg)], [out],
                      label="dead-after-use graph: output 0 (exp [float64])")
    if miss is not None:
        pytest.fail(f"{miss.message} [TOL-1]", pytrace=False)


# -- EXEC-6 / MUT: mutable inputs mutated exactly once -------------------------------------------
def _mutation_message(name: str, got: np.ndarray, orig: np.ndarray, once: np.ndarray,
                      twice: np.ndarray) -> str:
    if np.array_equal(got, orig):
        return (f"{name}: mutation dropped: the BufferType input still holds {orig.tolist()} "
                f"after execute; expected {once.tolist()} (stores must reach the caller's "
                "buffer) [EXEC-6]")
    if np.array_equal(got, twice):
        return (f"{name}: mutation replayed: the BufferType input holds {got.tolist()}, the "
                f"result of applying the store twice; expected {once.tolist()} [EXEC-6]")
    return f"{name}: BufferType input holds {got.tolist()}; expected {once.tolist()} [EXEC-6]"


@pytest.mark.spec("EXEC-6", "MUT-1", "MUT-2")
def test_mutation_applied_exactly_once(executor: Any,
                                       conformance_artifacts: ArtifactDir) -> None:
    """``buf <- load(buf) + 1`` is not idempotent: skipped and replayed stores both show."""
    buf = np.array([1, 2, 3], np.int32)
    x = np.array([10.0, 20.0], np.float32)

    def fn(b: BufferValue, x: TensorValue) -> tuple[Any, ...]:
        old = ops.buffer_load(b)
        ops.buffer_store(b, old + 1)
        return old, ops.buffer_load(b), x * 2.0

    graph = build(fn, Buf(buf), x, name="increment_buffer")
    inputs = [buf, x]
    outputs = execute(executor, graph, inputs, conformance_artifacts)
    check_outputs(graph, inputs, outputs, "increment graph")
    assert np.array_equal(buf, [2, 3, 4]), _mutation_message(
        "increment graph", buf, np.array([1, 2, 3]), np.array([2, 3, 4]), np.array([3, 4, 5]))
    assert outputs[0].tolist() == [1, 2, 3], (
        f"a load before the store must see the old contents (copy-on-load), got "
        f"{outputs[0].tolist()} [MUT-1]")
    assert outputs[1].tolist() == [2, 3, 4], (
        f"a load after the store must see the new contents, got {outputs[1].tolist()} [MUT-2]")
    assert outputs[2].tolist() == [20.0, 40.0]


@pytest.mark.spec("EXEC-6", "MUT-2", "MUT-3")
def test_slice_store_applied_exactly_once(executor: Any,
                                          conformance_artifacts: ArtifactDir) -> None:
    """``buf[1:3] <- load(buf)[0:2] * 2 + 1`` changes only the slice, once."""
    buf = np.array([1.0, 2.0, 3.0, 4.0], np.float32)

    def fn(b: BufferValue) -> Any:
        ops.buffer_store_slice(b, ops.buffer_load(b)[0:2] * 2.0 + 1.0, (slice(1, 3),))
        return ops.buffer_load(b)

    graph = build(fn, Buf(buf), name="slice_store")
    (out,) = execute(executor, graph, [buf], conformance_artifacts)
    once = np.array([1.0, 3.0, 5.0, 4.0], np.float32)
    twice = np.array([1.0, 3.0, 7.0, 4.0], np.float32)
    assert np.array_equal(buf, once), _mutation_message(
        "slice-store graph", buf, np.array([1.0, 2.0, 3.0, 4.0]), once, twice)
    assert np.array_equal(out, once)


@pytest.mark.spec("EXEC-6", "MUT-2")
def test_unused_store_still_happens(executor: Any,
                                    conformance_artifacts: ArtifactDir) -> None:
    """A store no output depends on is a side effect and must happen (once)."""
    buf = np.array([[1, 2], [3, 4]], np.int64)
    x = np.array([1.0], np.float64)

    def fn(b: BufferValue, x: TensorValue) -> Any:
        ops.buffer_store(b, ops.buffer_load(b) * 3 - 1)
        return x + 1.0

    graph = build(fn, Buf(buf), x, name="unused_store")
    (out,) = execute(executor, graph, [buf, x], conformance_artifacts)
    once = np.array([[2, 5], [8, 11]])
    assert np.array_equal(buf, once), _mutation_message(
        "unused-store graph", buf, np.array([[1, 2], [3, 4]]), once, once * 3 - 1)
    assert out.tolist() == [2.0]


# -- EXEC-3: refusal before side effects ---------------------------------------------------------
def _probe_gpu_buffer() -> tuple[Graph, list[np.ndarray]]:
    """A store into a buffer declared on a GPU: CPU-only executors refuse it."""
    t = BufferType(DType.float32, (3,), DeviceRef.GPU(0))
    with Graph("probe_gpu_buffer", input_types=[t]) as g:
        (b,) = g.inputs
        assert isinstance(b, BufferValue)
        ops.buffer_store(b, ops.buffer_load(b) + 1.0)
        g.output(ops.buffer_load(b))
    return g, [np.array([1.0, 2.0, 3.0], np.float32)]


def _probe_many_ops(n: int = 1100) -> tuple[Graph, list[np.ndarray]]:
    """A store after a long chain: executors with an op-count threshold refuse it."""
    x = np.array([1.0, 2.0], np.float64)

    def fn(b: BufferValue) -> Any:
        v = ops.buffer_load(b)
        for _ in range(n // 2):
            v = v * 1.0 + 0.0
        ops.buffer_store(b, v + 1.0)
        return ops.buffer_load(b)

    return build(fn, Buf(x), name="probe_many_ops"), [x]


def _probe_store(name: str = "probe_store") -> tuple[Graph, list[np.ndarray]]:
    """A plain store: executors that compile stores may refuse it."""
    x = np.array([4, 5, 6], np.int32)
    y = np.array([1.0, 2.0], np.float32)

    def fn(b: BufferValue, y: TensorValue) -> Any:
        ops.buffer_store(b, ops.buffer_load(b) * 2)
        return y * 3.0

    return build(fn, Buf(x), y, name=name), [x, y]


PROBES: list[Callable[[], tuple[Graph, list[np.ndarray]]]] = [
    _probe_gpu_buffer, _probe_many_ops, _probe_store]


def _probes(executor: Any) -> list[Callable[[], tuple[Graph, list[np.ndarray]]]]:
    """The probes that may be refused: on an executor serving a GPU, a GPU buffer is an
    ordinary graph (CONF-75)."""
    if declared_device(executor).is_cpu():
        return PROBES
    return [p for p in PROBES if p is not _probe_gpu_buffer]


@pytest.mark.spec("EXEC-2", "EXEC-3", "CONF-71", "CONF-75")
def test_refusal_leaves_inputs_untouched(executor: Any,
                                         conformance_artifacts: ArtifactDir) -> None:
    """Whenever the executor refuses one of the probe graphs, every input (buffers included)
    must be byte-identical to before: refusal happens before any side effect."""
    refusals = 0
    for probe in _probes(executor):
        graph, inputs = probe()
        before = snapshot(inputs)
        conformance_artifacts.write_case(graph, [a.copy() for a in inputs], sub=graph.name)
        try:
            executor.execute(graph, inputs)
        except UnsupportedGraphError as e:
            refusals += 1
            for i, a in enumerate(inputs):
                assert a.tobytes() == before[i], (
                    f"executor refused graph {graph.name!r} ({e}) after modifying input {i} "
                    f"({graph.inputs[i].type}): {np.frombuffer(before[i], a.dtype).tolist()} "
                    f"-> {a.tolist()}; refusal must come before any side effect [EXEC-3]")
        except Exception:  # other errors are not refusals: not judged here
            continue
    if not refusals:
        pytest.skip("the executor refused none of the probe graphs; EXEC-3 not exercised")



def _unserved_device(executor: Any) -> DeviceRef:
    """The first ``gpu:N`` the executor does not declare (EXEC-10)."""
    served = set(getattr(executor, "devices", None) or (DeviceRef.CPU(),))
    n = 0
    while DeviceRef.GPU(n) in served:
        n += 1
    return DeviceRef.GPU(n)


@pytest.mark.spec("EXEC-16", "EXEC-2", "EXEC-3")
@pytest.mark.parametrize("placement", ["result", "input"])
def test_undeclared_device_refused(placement: str, executor: Any,
                                   conformance_artifacts: ArtifactDir) -> None:
    """A graph with a value on a device the executor does not serve is refused, never run
    on another device with its results returned."""
    device = _unserved_device(executor)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    cpu = TensorType(DType.float32, (3,), DeviceRef.CPU())
    if placement == "result":
        with Graph("probe_result_off_device", input_types=[cpu]) as g:
            (v,) = g.inputs
            assert isinstance(v, TensorValue)
            g.output(ops.transfer_to(v * 2.0, device))
    else:
        t = TensorType(DType.float32, (3,), device)
        with Graph("probe_input_off_device", input_types=[t]) as g:
            (v,) = g.inputs
            assert isinstance(v, TensorValue)
            g.output(v * 2.0)
    conformance_artifacts.write_case(g, [x.copy()])
    try:
        out = executor.execute(g, [x.copy()])
    except UnsupportedGraphError:
        return
    except Exception as e:
        pytest.fail(f"graph {g.name!r} places its {placement} on {device}, which the executor "
                    f"does not serve (devices {getattr(executor, 'devices', None)!r}); it "
                    f"raised {type(e).__name__}: {e}; expected UnsupportedGraphError "
                    f"[EXEC-16, EXEC-2]", pytrace=False)
    kinds = ", ".join(type(o).__name__ for o in out)
    pytest.fail(f"graph {g.name!r} places its {placement} on {device}, which the executor does "
                f"not serve (devices {getattr(executor, 'devices', None)!r}); it ran the graph "
                f"and returned {len(out)} result(s) ({kinds}) instead of refusing it with "
                f"UnsupportedGraphError [EXEC-16]", pytrace=False)

# -- EXEC-7, EXEC-17: wrong inputs are never silently accepted --------------------------------
def _must_reject(executor: Any, graph: Graph, inputs: Sequence[Any], wrong: str) -> None:
    """``executor.execute(graph, inputs)`` raises (a refusal reads as *refused*); results
    for inputs that do not match the graph fail the test citing EXEC-17."""
    try:
        out = executor.execute(graph, inputs)
    except UnsupportedGraphError as e:
        refused(f"graph {graph.name!r}: {e}")
    except Exception:
        return
    pytest.fail(f"graph {graph.name!r} declares {len(graph.inputs)} input(s) "
                f"({', '.join(str(v.type) for v in graph.inputs)}); given {wrong}, the "
                f"executor returned {len(out) if isinstance(out, Sequence) else '?'} "
                "result(s) instead of raising. An executor must reject inputs that do not "
                "match its graph (count, kind, dtype, shape) before running anything, e.g. "
                "with interpreter.errors.ExecutorInputError [EXEC-17]", pytrace=False)


@pytest.mark.spec("EXEC-7", "EXEC-17")
def test_wrong_input_count_raises(executor: Any) -> None:
    x = np.arange(3, dtype=np.float32)
    graph = build(lambda x: x + 1.0, x, name="one_input")
    _must_reject(executor, graph, [x, x], "2 inputs")


@pytest.mark.spec("EXEC-17")
@pytest.mark.parametrize("wrong", ["dtype", "shape"])
def test_wrong_input_dtype_or_shape_raises(executor: Any, wrong: str) -> None:
    """Provisional in this release (CONF-133): a failure is reported as a warning."""
    x = np.arange(3, dtype=np.float32)
    graph = build(lambda x: x + 1.0, x, name="float32_vector")
    given = (np.arange(3, dtype=np.float64) if wrong == "dtype"
             else np.arange(4, dtype=np.float32))
    _must_reject(executor, graph, [given],
                 f"an input of dtype {given.dtype} and shape {list(given.shape)}")


# -- EXEC-8: thread safety -----------------------------------------------------------------------
THREADS = 4
ROUNDS = 15


def _affine(scale: float) -> Callable[[TensorValue], TensorValue]:
    def fn(x: TensorValue) -> TensorValue:
        return x * scale + scale

    return fn


@pytest.mark.spec("EXEC-8", "EXEC-6")
def test_concurrent_execute_on_different_graphs(executor: Any) -> None:
    """Several threads execute different graphs at once; every result and every buffer
    mutation must be exactly what a single thread would get."""
    graphs: list[tuple[Graph, np.ndarray, np.ndarray]] = []
    for k in range(THREADS):
        shape = (k + 1, 3)
        x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
        scale = float(k + 2)
        g = build(_affine(scale), x, name=f"thread_{k}")
        graphs.append((g, x, x * scale + scale))
    counters = [np.zeros(k + 2, np.int64) for k in range(THREADS)]

    def increment(b: BufferValue) -> Any:
        ops.buffer_store(b, ops.buffer_load(b) + 1)
        return ops.buffer_load(b)

    inc = [build(increment, Buf(c), name=f"counter_{k}") for k, c in enumerate(counters)]
    errors: list[str] = []
    refusals: list[str] = []
    barrier = threading.Barrier(THREADS)

    def work(k: int) -> None:
        g, x, want = graphs[k]
        barrier.wait()
        for r in range(ROUNDS):
            try:
                (out,) = executor.execute(g, [x])
                executor.execute(inc[k], [counters[k]])
            except UnsupportedGraphError as e:
                refusals.append(str(e))
                return
            except Exception as e:
                errors.append(f"thread {k} round {r}: {type(e).__name__}: {e}")
                return
            if not np.array_equal(out, want):
                errors.append(f"thread {k} round {r}: got {out.tolist()}, expected "
                              f"{want.tolist()}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if refusals and not errors:
        refused(refusals[0])
    assert not errors, f"{len(errors)} wrong results under {THREADS} threads [EXEC-8]:\n" + \
        "\n".join(errors[:5])
    for k, c in enumerate(counters):
        assert (c == ROUNDS).all(), (
            f"thread {k}: counter buffer holds {c.tolist()} after {ROUNDS} increments "
            "[EXEC-8, EXEC-6]")
