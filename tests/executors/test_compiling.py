"""CompilingExecutor: planner (fusion groups, liveness reuse, refusal), numerics, protocol."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import ExecutorInputError, UnsupportedGraphError
from interpreter.executor import Executor, InterpreterExecutor
from interpreter.graph import BufferType, DeviceRef, Graph, TensorType, ops
from reference_executors.compiling import CompilingExecutor
from reference_executors.compiling_plan import plan_graph

from .graphs import chain16, chain_n, mlp, mlp_inputs

F32 = DType.float32


def bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def both(graph_fn, inputs, **kw):  # type: ignore[no-untyped-def]
    """(compiled, reference) outputs of two fresh copies of a graph."""
    got = CompilingExecutor(**kw).execute(graph_fn(), [a.copy() for a in inputs])
    ref = InterpreterExecutor().execute(graph_fn(), [a.copy() for a in inputs])
    return got, ref


def special_f32(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    x[:8] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-45, -1e-40, 3.4e38]
    return x


@pytest.mark.spec("COMP-1")
def test_is_an_executor_and_execute_is_compile_then_run() -> None:
    ex = CompilingExecutor()
    assert isinstance(ex, Executor)
    g = chain_n(3)
    x, y = np.arange(16, dtype=np.float32), np.ones(16, np.float32)
    plan = ex.compile(g)
    assert bits_equal(ex.execute(g, [x, y])[0], plan.run([x, y])[0])
    assert ex.compiles == 1


@pytest.mark.spec("COMP-2", "COMP-5")
def test_the_16_op_chain_is_one_fused_kernel() -> None:
    plan = CompilingExecutor().compile(chain16(1000))
    assert plan.kernel_count == 1
    (group,) = plan.plan.groups
    names = [plan.graph.nodes[p].op.name for p in group.members]
    assert {"add", "mul", "max", "min", "greater", "select", "cast", "exp"} <= set(names)
    assert len(group.outputs) == 1  # only the graph output is materialized (COMP-3)


@pytest.mark.spec("COMP-2", "COMP-7")
@pytest.mark.parametrize("dtype", [DType.float32, DType.float16, DType.bfloat16])
@pytest.mark.parametrize("block", [7, 16384])
def test_chain_is_bit_identical_to_the_reference(dtype: DType, block: int) -> None:
    """float16/bfloat16 round after every op, exactly as the reference (no excess precision
    across fused ops); NaN, -0, inf and subnormals go through unchanged rules."""
    npt = dtype.to_numpy()
    with np.errstate(over="ignore"):  # 3.4e38 -> inf in the half formats
        x, y = special_f32(1000, 1).astype(npt), special_f32(1000, 2).astype(npt)
    got, ref = both(lambda: chain16(1000, dtype), [x, y], block=block)
    assert bits_equal(got[0], ref[0])


@pytest.mark.spec("COMP-7")
def test_half_precision_rounds_per_op() -> None:
    """(x + y) - x in float16 loses y's low bits at the add: a fused float32 evaluation
    would return y exactly, the reference (and this executor) returns 0."""
    def g() -> Graph:
        with Graph("h", [TensorType(DType.float16, (4,))] * 2) as g:
            x, y = g.inputs
            g.output(ops.sub(ops.add(x, y), x))
        return g

    x = np.full(4, 2048, np.float16)
    y = np.full(4, 0.5, np.float16)
    got, ref = both(g, [x, y])
    assert bits_equal(got[0], ref[0]) and not got[0].any()


@pytest.mark.spec("COMP-2", "COMP-3")
def test_broadcast_blocks_along_axis_0_and_matches_at_block_edges() -> None:
    def g() -> Graph:
        with Graph("b", [TensorType(F32, (9, 5)), TensorType(F32, (5,)), TensorType(F32, ())]
                   ) as g:
            x, r, s = g.inputs
            g.output(ops.exp(ops.mul(ops.add(x, r), s)), ops.maximum(x, s))
        return g

    rng = np.random.default_rng(3)
    ins = [rng.standard_normal((9, 5)).astype(np.float32),
           rng.standard_normal(5).astype(np.float32), np.array(0.5, np.float32)]
    plan = CompilingExecutor(block=10).compile(g())
    assert plan.kernel_count == 1
    for block in (1, 10, 16384):
        got, ref = both(g, ins, block=block)
        assert all(bits_equal(a, b) for a, b in zip(got, ref, strict=True))


@pytest.mark.spec("COMP-2", "COMP-6")
def test_a_library_op_splits_fusion_groups() -> None:
    """matmul reads the first group's value, so it closes the group: 2 kernels + 1 call."""
    def g() -> Graph:
        with Graph("m", [TensorType(F32, (4, 4))] * 2) as g:
            x, w = g.inputs
            h = ops.matmul(ops.mul(ops.add(x, x), x), w)
            g.output(ops.exp(ops.sub(h, x)))
        return g

    plan = plan_graph(g_lowered := CompilingExecutor().compile(g()).graph)
    kinds = ["node" if s.node is not None else "group" for s in plan.steps]
    assert kinds == ["group", "node", "group"]
    assert [len(s.members) for s in plan.groups] == [2, 2]
    assert g_lowered.nodes[plan.steps[1].node or 0].op.name == "matmul"
    rng = np.random.default_rng(4)
    ins = [rng.standard_normal((4, 4)).astype(np.float32) for _ in range(2)]
    got, ref = both(g, ins)
    assert bits_equal(got[0], ref[0])


@pytest.mark.spec("COMP-4")
def test_liveness_reuses_a_dead_kernel_output_buffer() -> None:
    """y1 is dead once the first matmul ran, so y2 is written into y1's buffer."""
    def g() -> Graph:
        with Graph("l", [TensorType(F32, (8, 8))] * 2) as g:
            x, w = g.inputs
            m1 = ops.matmul(ops.mul(x, x), w)
            m2 = ops.matmul(ops.add(m1, m1), w)
            g.output(ops.sub(m2, x))
        return g

    plan = CompilingExecutor().compile(g())
    assert plan.kernel_count == 3
    assert plan.buffer_count == 2  # 3 materialized outputs, 2 buffers: one reused
    assert len(set(plan.plan.slots.values())) == 2
    rng = np.random.default_rng(5)
    ins = [rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2)]
    got, ref = both(g, ins)
    assert bits_equal(got[0], ref[0])


@pytest.mark.spec("COMP-4")
def test_liveness_keeps_a_buffer_a_library_view_still_reads() -> None:
    """reshape returns a view of y1; the view is an output, so y1's buffer is never reused
    (a second kernel of the same dtype and shape gets its own buffer)."""
    def g() -> Graph:
        with Graph("v", [TensorType(F32, (4, 4))]) as g:
            (x,) = g.inputs
            r = ops.reshape(ops.mul(x, x), (16,))
            g.output(r, ops.add(x, x))
        return g

    plan = CompilingExecutor().compile(g())
    assert plan.kernel_count == 2 and plan.buffer_count == 2
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    got, ref = both(g, [x])
    assert all(bits_equal(a, b) for a, b in zip(got, ref, strict=True))
    assert not np.shares_memory(got[0], got[1])


@pytest.mark.spec("COMP-8")
def test_refuses_before_any_side_effect() -> None:
    with Graph("gpu", [BufferType(F32, (3,)), TensorType(F32, (3,), DeviceRef.GPU(0))]) as g:
        buf, x = g.inputs
        ops.buffer_store(buf, ops.buffer_load(buf) + 1.0)  # type: ignore[arg-type,operator]
        g.output(x)
    b = np.arange(3, dtype=np.float32)
    ex = CompilingExecutor()
    with pytest.raises(UnsupportedGraphError, match=r"gpu.*\[COMP-8\]"):
        ex.execute(g, [b, np.zeros(3, np.float32)])
    assert b.tolist() == [0.0, 1.0, 2.0] and ex.compiles == 0
    with Graph("none", [TensorType(F32, (3,))]) as g2:
        ops.exp(g2.inputs[0])  # type: ignore[arg-type]
    with pytest.raises(UnsupportedGraphError, match="no outputs"):
        ex.compile(g2)


@pytest.mark.spec("COMP-1")
def test_mutation_freshness_and_read_only_inputs() -> None:
    with Graph("mut", [BufferType(F32, (4,)), TensorType(F32, (4,))]) as g:
        buf, x = g.inputs
        old = ops.buffer_load(buf)  # type: ignore[arg-type]
        ops.buffer_store(buf, ops.add(old, x))  # type: ignore[arg-type]
        g.output(old, x, ops.mul(x, x))
    b, x = np.ones(4, np.float32), np.arange(4, dtype=np.float32)
    x.setflags(write=False)
    ex = CompilingExecutor()
    outs = ex.execute(g, [b, x])
    assert b.tolist() == [1.0, 2.0, 3.0, 4.0]  # stored exactly once
    assert outs[0].tolist() == [1.0] * 4  # the load is a copy (MUT-1)
    assert outs[1].tolist() == x.tolist() and outs[1].flags.writeable
    assert not any(np.shares_memory(o, a) for o in outs for a in (b, x))
    ex.execute(g, [b, x])
    assert b.tolist() == [1.0, 3.0, 5.0, 7.0]  # a second run: a second store, same plan
    with pytest.raises(ExecutorInputError, match="EXEC-7"):
        ex.execute(g, [b])


@pytest.mark.spec("COMP-9")
def test_plans_are_cached_by_structural_hash_in_a_bounded_lru() -> None:
    ex = CompilingExecutor(cache_size=2)
    p1 = ex.compile(chain_n(3))
    assert ex.compile(chain_n(3)) is p1 and ex.compiles == 1  # a new, equal graph
    ex.compile(chain_n(4))
    ex.compile(chain_n(5))
    assert ex.cached_plans() == 2 and ex.compiles == 3
    assert ex.compile(chain_n(3)) is not p1 and ex.compiles == 4  # evicted: least recent
    assert CompilingExecutor().compile(chain_n(3)) is not p1  # per instance


@pytest.mark.spec("COMP-10")
def test_compiles_a_10_op_graph_in_under_5_ms() -> None:
    best = min(_compile_seconds(chain_n(10)) for _ in range(7))
    assert best <= 0.005, f"best compile of a 10-op graph: {best * 1e3:.2f} ms"


def _compile_seconds(g: Graph) -> float:
    ex = CompilingExecutor()
    t = time.perf_counter()
    ex.compile(g)
    return time.perf_counter() - t


@pytest.mark.spec("COMP-11")
def test_one_plan_runs_on_8_threads_at_once() -> None:
    ex = CompilingExecutor(block=64)
    g = chain16(5000)
    plan = ex.compile(g)
    rng = np.random.default_rng(6)
    ins = [[rng.standard_normal(5000).astype(np.float32) for _ in range(2)] for _ in range(8)]
    want = [InterpreterExecutor().execute(chain16(5000), i)[0] for i in ins]
    got: list[np.ndarray | None] = [None] * 8

    def work(k: int) -> None:
        for _ in range(5):
            got[k] = plan.run(ins[k])[0]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(g_ is not None and bits_equal(g_, w) for g_, w in zip(got, want, strict=True))


@pytest.mark.spec("COMP-6")
def test_mlp_matches_the_reference_within_tolerance() -> None:
    got, ref = both(lambda: mlp(8, 32), mlp_inputs(8, 32))
    np.testing.assert_array_equal(got[0], ref[0])


@pytest.mark.spec("COMP-6")
def test_generated_code_never_calls_the_interpreter_loop() -> None:
    plan = CompilingExecutor().compile(mlp(8, 32))
    assert "evaluate" not in plan.source
    assert plan.kernel_count == 3 and plan.source.count("for i in range") == 3


@pytest.mark.spec("COMP-7")
@pytest.mark.parametrize("dtype", [DType.float32, DType.float64, DType.float16, DType.bfloat16,
                                   DType.int8, DType.uint16, DType.bool])
def test_fused_max_min_select_keep_signed_zeros_and_nan(dtype: DType) -> None:
    """The direct max/min (NUM-8: -0 < +0, NaN propagates) and bit-select match the
    reference on every pair of special values."""
    npt = dtype.to_numpy()
    vals = np.array([np.nan, -0.0, 0.0, 1.0, -1.0, np.inf, -np.inf, 2.5, 1e-45])
    with np.errstate(all="ignore"):
        x = np.repeat(vals, len(vals)).astype(npt) if dtype.is_float() else \
            np.repeat(np.arange(9), 9).astype(npt)
        y = np.tile(vals, len(vals)).astype(npt) if dtype.is_float() else \
            np.tile(np.arange(9)[::-1], 9).astype(npt)

    def g() -> Graph:
        with Graph("mm", [TensorType(dtype, (81,))] * 2) as g:
            a, b = g.inputs
            g.output(ops.maximum(a, b), ops.minimum(a, b),
                     ops.where(ops.greater(a, b), a, b), ops.where(ops.equal(a, b), b, a))
        return g

    got, ref = both(g, [x, y], block=16)
    for a, b in zip(got, ref, strict=True):
        nan = np.isnan(b.astype(np.float64)) if dtype.is_float() else np.zeros(81, bool)
        assert np.array_equal(np.isnan(a.astype(np.float64)) if dtype.is_float() else nan,
                              nan)
        assert a[~nan].tobytes() == b[~nan].tobytes()


@pytest.mark.spec("COMP-12")
def test_env_compile_selects_the_compiling_executor() -> None:
    """``MAX_EAGER_EXECUTOR=compile`` runs tensors through ``CompilingExecutor``."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("import interpreter.selection as s\n"
            "from interpreter.experimental.tensor import Tensor\n"
            "x = Tensor([1.0, 2.0, 3.0])\n"
            "print(type(s.default_executor()).__name__, ((x + x) * x).to_numpy().tolist())\n")
    env = {**os.environ, "MAX_EAGER_EXECUTOR": "compile"}
    out = subprocess.run([sys.executable, "-c", code], env=env,
                         cwd=Path(__file__).resolve().parents[2], capture_output=True,
                         text=True, check=True).stdout
    assert out.split(maxsplit=1) == ["CompilingExecutor", "[2.0, 8.0, 18.0]\n"]


@pytest.mark.spec("COMP-2", "COMP-7")
def test_rank_0_kernel() -> None:
    """A rank-0 fused kernel (no block loop): ufuncs, max/min and select on 0-d arrays."""
    def g() -> Graph:
        with Graph("r0", [TensorType(DType.float64, ())] * 2) as g:
            a, b = g.inputs
            m = ops.maximum(a, b)
            g.output(ops.where(ops.greater(m, a), ops.minimum(a, b), ops.exp(m)))
        return g

    for x, y in [(-0.0, 0.0), (1.0, 2.0), (np.nan, 1.0)]:
        got, ref = both(g, [np.array(x), np.array(y)])
        assert got[0].shape == () and (bits_equal(got[0], ref[0])
                                        or (np.isnan(got[0]) and np.isnan(ref[0])))


def _scaled(n: int) -> Graph:
    """``(x * 2.5, 2.5)``: a weak constant used by a fused group and returned itself."""
    with Graph("scaled", [TensorType(F32, (n,))]) as g:
        (x,) = g.inputs
        c = ops.constant(np.float32(2.5), F32, DeviceRef.CPU())
        g.output(ops.mul(x, 2.5), c)
    return g


@pytest.mark.spec("COMP-20")
@pytest.mark.parametrize("n", [9, 40])
def test_constants_are_evaluated_once_and_one_block_needs_no_loop(n: int) -> None:
    ex = CompilingExecutor(block=16)
    plan = ex.compile(_scaled(n))
    const = next(i for i, node in enumerate(plan.graph.nodes) if node.op.name == "constant")
    assert f"= const{const}\n" in plan.source and f"k{const}(" not in plan.source
    assert ("for i in range" in plan.source) == (n > 16)  # one block: whole arrays
    x = special_f32(n, 7)
    first, second = plan.run([x]), plan.run([x])
    ref = InterpreterExecutor().execute(_scaled(n), [x])
    for got in (first, second):
        assert all(bits_equal(a, b) for a, b in zip(got, ref, strict=True))
    assert first[1] is not second[1] and first[1].flags.writeable  # fresh (EXEC-5)
    first[1][...] = 0
    assert plan.run([x])[1][()] == np.float32(2.5)  # the compiled constant is untouched


@pytest.mark.spec("COMP-21", "EXEC-7")
def test_the_jit_validates_a_compiled_call_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import reference_executors.compiling as compiling
    import reference_executors.jit as jit

    calls: list[str] = []
    for module in (compiling, jit):
        real = module.validate_inputs

        def counted(who: str, *args: object, _real: object = real) -> None:
            calls.append(who)
            _real(who, *args)  # type: ignore[operator]

        monkeypatch.setattr(module, "validate_inputs", counted)
    ex = jit.JitExecutor()
    g, x = chain_n(3), [np.arange(16, dtype=np.float32), np.ones(16, np.float32)]
    ex.execute(g, x)
    ex.wait_compiled()
    calls.clear()
    (out,) = ex.execute(g, x)
    assert calls == ["JitExecutor"]
    assert bits_equal(out, InterpreterExecutor().execute(chain_n(3), x)[0])
    with pytest.raises(ExecutorInputError, match=r"JitExecutor: input 1 .*\[EXEC-7\]"):
        ex.execute(g, [x[0], x[1].astype(np.float64)])
