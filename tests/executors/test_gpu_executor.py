"""CupyExecutor on a GPU: differential checks against the reference interpreter.

Skipped without CuPy ("CuPy not installed") or without a CUDA device (the constructor's
reason). Run on a GPU machine by ``scripts/gpu_check.sh``. The conformance suite
(``--executor=reference_executors.gpu:CupyExecutor``) covers every op; these tests cover
the executor's own machinery.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import ExecutorInputError, ExecutorUnavailableError, UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import BufferType, DeviceRef, Graph, TensorType, ops
from reference_executors.gpu import CupyExecutor

from .gpu_graphs import on_device
from .graphs import chain16, mlp, mlp_inputs

cp = pytest.importorskip("cupy", reason="CuPy not installed")
try:
    EX = CupyExecutor()
except ExecutorUnavailableError as e:  # CuPy without a device
    pytest.skip(str(e), allow_module_level=True)

GPU0, CPU = DeviceRef.GPU(0), DeviceRef.CPU()
F32 = DType.float32


def run_both(build: Callable[[], Graph], inputs: list[np.ndarray]) -> tuple[list[Any], list[Any]]:
    """(GPU results on the host, reference results) of ``build()`` on GPU 0 and on the CPU."""
    gpu_in = [EX.to_device(a, GPU0) for a in inputs]
    got = [EX.to_host(a) for a in EX.execute(on_device(build(), GPU0), gpu_in)]
    ref = InterpreterExecutor().execute(build(), [a.copy() for a in inputs])
    return got, ref


def ulps(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance in units of the last place (NaN matches NaN)."""
    assert a.dtype == b.dtype and a.shape == b.shape
    both_nan = np.isnan(a) & np.isnan(b)
    ia = a.view(f"i{a.dtype.itemsize}").astype(np.int64)
    ib = b.view(f"i{b.dtype.itemsize}").astype(np.int64)
    ia = np.where(ia < 0, np.iinfo(np.int64).min - ia, ia)  # sign-magnitude -> ordered
    ib = np.where(ib < 0, np.iinfo(np.int64).min - ib, ib)
    d = np.where(both_nan, 0, np.abs(ia - ib))
    return int(d.max(initial=0))


def _special(n: int, dtype: Any, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 3).astype(dtype)
    x[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0]
    return x


@pytest.mark.spec("GPU-5", "GPU-6")
@pytest.mark.parametrize("dtype", [DType.float32, DType.float16, DType.float64])
def test_chain16_matches_the_reference(dtype: DType) -> None:
    n = 10_000
    ins = [_special(n, dtype.to_numpy(), s) for s in (1, 2)]
    plan = EX.compile(on_device(chain16(n, dtype), GPU0))
    assert plan.kernel_count == 1
    (got,), (ref,) = run_both(lambda: chain16(n, dtype), ins)
    assert ulps(got, ref) <= 2  # exp: ulp(2); every other op bit-identical


@pytest.mark.spec("GPU-16")
@pytest.mark.parametrize("dtype", [DType.float16, DType.float32, DType.float64])
@pytest.mark.parametrize("seed", [0, 42, 2**64 - 1])
def test_random_uniform_is_bit_identical(dtype: DType, seed: int) -> None:
    def build() -> Graph:
        with Graph("u", [TensorType(DType.uint64, (1,))]) as g:
            g.output(ops.uniform(g.inputs[0], (3000,), -0.5, 3.75, dtype))
        return g

    (got,), (ref,) = run_both(build, [np.array([seed], np.uint64)])
    assert got.tobytes() == ref.tobytes()


@pytest.mark.spec("GPU-16")
def test_random_normal_within_budget() -> None:
    def build() -> Graph:
        with Graph("n", [TensorType(DType.uint64, (1,))]) as g:
            g.output(ops.normal(g.inputs[0], (3000,), dtype=DType.float64))
        return g

    (got,), (ref,) = run_both(build, [np.array([7], np.uint64)])
    assert ulps(got, ref) <= 4


@pytest.mark.spec("GPU-9", "GPU-10")
def test_mlp_within_tolerance() -> None:
    ins = mlp_inputs(8, 64, 2)
    (got,), (ref,) = run_both(lambda: mlp(8, 64, 2), ins)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.spec("GPU-14", "GPU-9")
def test_buffer_input_is_mutated_in_place_on_the_device() -> None:
    with Graph("store", [BufferType(F32, (4,), GPU0), TensorType(F32, (4,), GPU0)]) as g:
        buf, x = g.inputs
        ops.buffer_store(buf, ops.mul(x, 2.0))
        g.output(ops.buffer_load(buf))
    b = cp.zeros(4, np.float32)
    x = cp.arange(4, dtype=np.float32)
    (out,) = EX.execute(g, [b, x])
    assert b.get().tolist() == [0, 2, 4, 6]
    assert out is not b and out.get().tolist() == [0, 2, 4, 6]


class _DLPackOnly:
    """A foreign GPU array: only the DLPack protocol (as a PyTorch or JAX array)."""

    def __init__(self, a: Any) -> None:
        self._a = a

    def __dlpack__(self, **kw: Any) -> Any:
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self) -> Any:
        return self._a.__dlpack_device__()


@pytest.mark.spec("GPU-13")
def test_dlpack_inputs_are_zero_copy_and_numpy_inputs_are_rejected() -> None:
    with Graph("store", [BufferType(F32, (3,), GPU0)]) as g:
        ops.buffer_store(g.inputs[0], ops.constant(np.ones(3, np.float32), device=GPU0))
        g.output(ops.buffer_load(g.inputs[0]))
    owner = cp.zeros(3, np.float32)
    EX.execute(g, [_DLPackOnly(owner)])
    assert owner.get().tolist() == [1, 1, 1]
    with pytest.raises(ExecutorInputError, match=r"must be a GPU array .*numpy\.ndarray"):
        EX.execute(g, [np.zeros(3, np.float32)])


@pytest.mark.spec("GPU-3")
def test_refusal_happens_before_any_side_effect_on_device_arrays() -> None:
    with Graph("refused", [BufferType(F32, (3,), GPU0)]) as g:
        ops.buffer_store(g.inputs[0], ops.constant(np.ones(3, np.float32), device=GPU0))
        g.output(ops.top_k(ops.buffer_load(g.inputs[0]), 2)[0])
    owner = cp.zeros(3, np.float32)
    with pytest.raises(UnsupportedGraphError, match=r"top_k .*\[GPU-3\]"):
        EX.execute(g, [owner])
    assert owner.get().tolist() == [0, 0, 0]


@pytest.mark.spec("GPU-15", "GPU-12")
def test_transfer_both_ways_and_the_device_contract() -> None:
    with Graph("t", [TensorType(F32, (3,), CPU)]) as g:
        y = ops.mul(ops.transfer_to(g.inputs[0], GPU0), 2.0)
        g.output(ops.transfer_to(y, CPU), y)
    host, dev = EX.execute(g, [np.array([1, 2, 3], np.float32)])
    assert isinstance(host, np.ndarray) and host.tolist() == [2, 4, 6]
    assert isinstance(dev, cp.ndarray) and EX.to_host(dev).tolist() == [2, 4, 6]
    assert EX.devices[0] == GPU0
    a = EX.to_device(np.arange(3, dtype=np.int16), GPU0)
    assert isinstance(a, cp.ndarray) and EX.to_host(a).tolist() == [0, 1, 2]
