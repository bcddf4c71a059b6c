"""CupyExecutor's Python plumbing over a fake CuPy (``fake_cupy``: numpy storage, generated
kernels compiled for the host). Checks input import, kernel and library steps, transfers,
random, in-place buffers, freshness and refusal on "device" arrays against the reference
interpreter. These are not GPU results; skipped without g++."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import ExecutorInputError, UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import BufferType, DeviceRef, Graph, TensorType, ops
from reference_executors.gpu import CupyExecutor

from . import hostc
from .fake_cupy import make_fake_cupy
from .gpu_graphs import on_device
from .graphs import chain16, mlp, mlp_inputs

pytestmark = pytest.mark.skipif(hostc.CXX is None, reason="no C++ compiler (g++) to compile "
                                "the generated kernels for the host")
GPU0, CPU = DeviceRef.GPU(0), DeviceRef.CPU()
F32 = DType.float32


@pytest.fixture
def ex(monkeypatch: pytest.MonkeyPatch) -> Any:
    fake = make_fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    executor = CupyExecutor()
    executor.fake = fake
    return executor


def both(ex: Any, build: Any, inputs: list[np.ndarray]) -> tuple[list[Any], list[Any]]:
    outs = ex.execute(on_device(build(), GPU0), [ex.to_device(a, GPU0) for a in inputs])
    assert all(isinstance(o, ex.fake.ndarray) for o in outs)
    ref = InterpreterExecutor().execute(build(), [a.copy() for a in inputs])
    return [ex.to_host(o) for o in outs], ref


@pytest.mark.spec("GPU-5", "GPU-12", "GPU-14")
@pytest.mark.parametrize("dtype", [DType.float16, DType.float32])
def test_chain16_through_the_executor(ex: Any, dtype: DType) -> None:
    rng = np.random.default_rng(0)
    ins = [(rng.standard_normal(300) * 3).astype(dtype.to_numpy()) for _ in range(2)]
    (got,), (ref,) = both(ex, lambda: chain16(300, dtype), ins)
    assert ex.compile(on_device(chain16(300, dtype), GPU0)).kernel_count == 1
    np.testing.assert_array_max_ulp(got, ref, maxulp=2)


@pytest.mark.spec("GPU-9", "GPU-10")
def test_mlp_library_and_kernel_steps(ex: Any) -> None:
    ins = mlp_inputs(4, 16, 2)
    (got,), (ref,) = both(ex, lambda: mlp(4, 16, 2), ins)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.spec("GPU-14", "GPU-8")
def test_views_and_repeated_outputs_are_fresh(ex: Any) -> None:
    def build() -> Graph:
        with Graph("views", [TensorType(F32, (2, 3))]) as g:
            x = g.inputs[0]
            r = ops.reshape(x, (3, 2))
            e = ops.exp(x)
            g.output(r, e, e, x)
        return g

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    xd = ex.to_device(x, GPU0)
    outs = ex.execute(on_device(build(), GPU0), [xd])
    assert len({id(o) for o in [*outs, xd]}) == 5
    assert all(o.base is None for o in outs)
    ref = InterpreterExecutor().execute(build(), [x.copy()])
    for o, r in zip(outs, ref, strict=True):
        np.testing.assert_array_max_ulp(ex.to_host(o), r, maxulp=2)


@pytest.mark.spec("GPU-14", "GPU-13")
def test_buffer_mutated_in_place_and_numpy_inputs_rejected(ex: Any) -> None:
    with Graph("store", [BufferType(F32, (4,), GPU0), TensorType(F32, (4,), GPU0)]) as g:
        buf, x = g.inputs
        ops.buffer_store(buf, ops.mul(x, 2.0))
        g.output(ops.buffer_load(buf))
    b = ex.to_device(np.zeros(4, np.float32), GPU0)
    (out,) = ex.execute(g, [b, ex.to_device(np.arange(4, dtype=np.float32), GPU0)])
    assert ex.to_host(b).tolist() == [0, 2, 4, 6] and out is not b
    assert ex.to_host(out).tolist() == [0, 2, 4, 6]
    with pytest.raises(ExecutorInputError, match=r"input 0 must be a GPU array .*\[GPU-13\]"):
        ex.execute(g, [np.zeros(4, np.float32), np.zeros(4, np.float32)])


@pytest.mark.spec("GPU-3")
def test_refusal_before_side_effects_on_device_arrays(ex: Any) -> None:
    with Graph("refused", [BufferType(F32, (3,), GPU0)]) as g:
        ops.buffer_store(g.inputs[0], ops.constant(np.ones(3, np.float32), device=GPU0))
        g.output(ops.top_k(ops.buffer_load(g.inputs[0]), 2)[0])
    b = ex.to_device(np.zeros(3, np.float32), GPU0)
    with pytest.raises(UnsupportedGraphError, match=r"op top_k is not supported .*\[GPU-3\]"):
        ex.execute(g, [b])
    assert ex.to_host(b).tolist() == [0, 0, 0]


@pytest.mark.spec("GPU-15")
def test_transfer_both_ways(ex: Any) -> None:
    with Graph("t", [TensorType(F32, (3,), CPU)]) as g:
        y = ops.mul(ops.transfer_to(g.inputs[0], GPU0), 2.0)
        g.output(ops.transfer_to(y, CPU), y)
    host, dev = ex.execute(g, [np.array([1, 2, 3], np.float32)])
    assert type(host) is np.ndarray and host.tolist() == [2, 4, 6]
    assert isinstance(dev, ex.fake.ndarray) and ex.to_host(dev).tolist() == [2, 4, 6]


@pytest.mark.spec("GPU-16")
@pytest.mark.parametrize("dtype", [DType.float16, DType.float64])  # float32: test_gpu_hostc
def test_random_through_the_executor(ex: Any, dtype: DType) -> None:
    def build() -> Graph:
        with Graph("r", [TensorType(DType.uint64, (1,))]) as g:
            g.output(ops.uniform(g.inputs[0], (2, 500), -0.5, 3.75, dtype),
                     ops.normal(g.inputs[0], (7,), 1.5, 0.25, dtype))
        return g

    (u, n), (ru, rn) = both(ex, build, [np.array([5], np.uint64)])
    assert u.tobytes() == ru.tobytes()
    np.testing.assert_array_max_ulp(n, rn, maxulp=4)


@pytest.mark.spec("GPU-7")
def test_kernels_are_shared_across_equal_groups(ex: Any) -> None:
    for _ in range(2):
        ex.execute(on_device(chain16(16), GPU0),
                   [ex.to_device(np.ones(16, np.float32), GPU0)] * 2)
    assert ex.compiles == 1 and len(ex._kernels) == 1


@pytest.mark.spec("GPU-9", "GPU-11")
def test_registry_kernels_with_several_none_and_no_operands(ex: Any) -> None:
    """split (two results), buffer_store_slice (none), buffer_create and range (no operands:
    on the host, uploaded) and scatter (served since its kernel writes each target once)."""
    i64 = DType.int64

    def build() -> Graph:
        with Graph("kernels", [TensorType(F32, (2, 4)), TensorType(i64, (2, 4))]) as g:
            x, idx = g.inputs
            a, b = ops.split(x, [1, 3], axis=1)
            buf = ops.buffer_create(F32, (2, 4))
            ops.buffer_store_slice(buf, ops.exp(b), (slice(None), slice(1, None)))
            s = ops.scatter(x, ops.mul(x, 10.0), idx, axis=1)  # duplicate targets: last wins
            g.output(a, ops.buffer_load(buf), s, ops.range(4, dtype=i64))
        return g

    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    idx = np.array([[0, 0, 3, 3], [1, -1, 1, 2]], np.int64)
    got, ref = both(ex, build, [x, idx])
    assert got[2].tolist() == [[10, 1, 2, 30], [4, 60, 70, 50]]  # by hand: last write wins
    assert got[3].tolist() == [0, 1, 2, 3]
    for g_, r_ in zip(got, ref, strict=True):
        np.testing.assert_array_max_ulp(g_, r_, maxulp=2)
