"""The registry kernels the GPU executor runs on device arrays, checked over a fake CuPy
whose arrays numpy refuses (``fake_cupy``), and the array namespace seam they compute in
(``interpreter/arrays.py``). Nothing here needs CuPy, a GPU or a compiler."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from interpreter import arrays
from interpreter.dtype import DType
from interpreter.graph import DeviceRef, Graph, TensorType, ops
from interpreter.registry import REGISTRY
from interpreter.registry.core import TRAITS
from interpreter.testing.sampling import RandomArgSource
from reference_executors.cuda_codegen import ELEMENTWISE_OPS, GPU_DTYPES
from reference_executors.gpu import gpu_refusal

from .fake_cupy import host, make_fake_cupy

GPU0 = DeviceRef.GPU(0)

#: ops the GPU executor runs by its registry kernel on device arrays: every op with operands
#: that it neither fuses, nor transfers, nor draws with its Philox kernel, nor refuses
DEVICE_KERNEL_OPS = sorted(
    name for name, op in REGISTRY.items()
    if op.operands and name not in ELEMENTWISE_OPS and op.category != "random"
    and name != "transfer" and op.host_only is None)
#: refused ops whose kernels are written over the namespace all the same
REFUSED_BUT_NAMESPACED = ["allgather", "allreduce_sum", "argsort", "bottom_k", "top_k",
                          "distributed_broadcast", "distributed_scatter", "reducescatter_sum"]


@pytest.fixture
def cp(monkeypatch: pytest.MonkeyPatch) -> Any:
    fake = make_fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    return fake


def _same(got: Any, ref: Any) -> bool:
    """Bit-identical: dtype, shape, values, NaN where NaN, the sign of zeros."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.dtype != ref.dtype or got.shape != ref.shape:
        return False
    if got.dtype.kind == "f":
        return bool(np.array_equal(got, ref, equal_nan=True)
                    and np.array_equal(np.signbit(got), np.signbit(ref)))
    return bool(np.array_equal(got, ref))


def _on_gpu(call: Any) -> bool:
    """Every array of the sampled call has a dtype CuPy holds (GPU-3)."""
    dtypes = [DType.from_numpy(a.dtype) for a in call.operands]
    dtypes += [v for v in call.attrs.values() if isinstance(v, DType)]
    return all(d in GPU_DTYPES for d in dtypes)


# -- the seam ---------------------------------------------------------------------------------
@pytest.mark.spec("GPU-1", "GPU-9")
def test_namespace_is_numpy_for_host_values_and_never_imports_cupy() -> None:
    code = ("import sys, numpy as np\nfrom interpreter import arrays\n"
            "for x in (np.zeros(3), np.float32(1), np.ma.masked_array(np.zeros(3)), 1.5):\n"
            "    assert arrays.namespace(x) is np\n"
            "assert 'cupy' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.spec("GPU-9")
def test_namespace_is_cupy_for_device_arrays(cp: Any) -> None:
    assert arrays.namespace(cp.zeros((2,), np.float32)) is cp
    assert arrays.namespace(np.zeros(2)) is np


@pytest.mark.spec("GPU-9")
def test_errstate_is_numpy_s_for_numpy_and_changes_nothing_for_cupy(cp: Any) -> None:
    with np.errstate(invalid="raise", divide="raise"):
        with arrays.errstate(np, invalid="ignore", divide="ignore"):
            assert np.geterr()["invalid"] == "ignore" and np.geterr()["divide"] == "ignore"
        with arrays.errstate(cp, invalid="ignore"):
            assert np.geterr()["invalid"] == "raise" and np.geterr()["divide"] == "raise"


@pytest.mark.spec("GPU-9")
@pytest.mark.parametrize(("value", "dtype", "expected"), [
    (1.1, ml_dtypes.bfloat16, 1.1015625),  # 0x3F8D: the nearest bfloat16
    (70000.0, np.float16, np.inf),  # past float16's max (65504): rounds to inf
    (-0.0, np.float32, -0.0),
    (True, np.int8, 1),
])
def test_fill_value_rounds_on_the_host(value: Any, dtype: Any, expected: float) -> None:
    got = arrays.fill_value(value, np.dtype(dtype))
    assert isinstance(got, np.generic) and got.dtype == np.dtype(dtype)
    assert float(got) == expected and np.signbit(float(got)) == np.signbit(expected)


# -- the fake CuPy catches numpy on device arrays ----------------------------------------------
@pytest.mark.spec("GPU-9")
@pytest.mark.parametrize("kernel", [
    lambda x: np.sum(x, axis=0),  # a numpy function
    lambda x: np.exp(x),  # a numpy ufunc
    lambda x: np.asarray(x) + 1,  # a host copy
    lambda x: np.zeros_like(x),  # a numpy creation function from the operand
    lambda x: _into_host(x),  # a host array written with the device array
], ids=["function", "ufunc", "asarray", "zeros_like", "setitem"])
def test_a_kernel_calling_numpy_on_a_device_array_fails(cp: Any, kernel: Any) -> None:
    x = cp.array(np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError):
        kernel(x)


def _into_host(x: Any) -> np.ndarray:
    out = np.zeros(x.shape, x.dtype)
    out[...] = x
    return out


# -- the registry kernels on device arrays (GPU-9, GPU-10) --------------------------------------
@pytest.mark.spec("GPU-9", "GPU-10")
@pytest.mark.parametrize("name", DEVICE_KERNEL_OPS + REFUSED_BUT_NAMESPACED)
def test_registry_kernel_on_device_arrays_equals_its_numpy_run(cp: Any, name: str) -> None:
    """The kernel computes in the namespace of its operands: over the fake CuPy every result
    is a device array, bit-identical to the same kernel on numpy (the fake computes with
    numpy, so even sums accumulate in numpy's order; on CuPy they are within their
    reduction tolerance, GPU-10), and operands change as on numpy (buffers in place)."""
    op, src, checked = REGISTRY[name], RandomArgSource(seed=11), 0
    assert op.sample is not None
    for _ in range(60):
        call = op.sample(src)
        if not _on_gpu(call):
            continue
        host_ops = [a.copy() for a in call.operands]
        device_ops = [cp.array(a) for a in call.operands]
        with np.errstate(all="ignore"):  # the fake's numpy warns where CuPy would not
            ref = op.apply(*host_ops, **call.attrs)
            got = op.apply(*device_ops, **call.attrs)
        assert len(got) == len(ref)
        for g, r in zip(got, ref, strict=True):
            assert isinstance(g, cp.ndarray), (name, call, type(g))
            assert _same(host(g), r), (name, call)
        for g, r in zip(device_ops, host_ops, strict=True):
            assert _same(host(g), r), (name, call, "operand")
        checked += 1
    assert checked >= 10


@pytest.mark.spec("GPU-9")
def test_the_device_kernel_ops_are_every_non_fused_op() -> None:
    """The list above is not empty by accident: it holds what gpu_library held, and scatter."""
    assert set(DEVICE_KERNEL_OPS) == {
        "argmax", "argmin", "buffer_load", "buffer_store", "buffer_store_slice", "concat",
        "cumsum", "gather", "logsoftmax", "matmul", "pad", "permute", "reduce_max",
        "reduce_mean", "reduce_min", "reduce_prod", "reduce_sum", "reshape", "scatter",
        "slice", "softmax", "split", "tile"} | {  # issue 19: masks, shapes and resize
        "band_part", "squeeze", "unsqueeze", "resize_nearest", "resize_linear", "resize_bicubic",
        "roi_align"} | {  # issue 19: convolution, pooling and normalizations
        "avg_pool2d", "conv2d", "conv2d_transpose", "conv3d", "max_pool2d",
        "group_norm", "layer_norm", "rms_norm",
        # the indexing family (issue 19): scatter reductions by a segmented scan over xp
        "gather_nd", "gather_sum", "scatter_add", "scatter_max", "scatter_min", "scatter_mul",
        "scatter_nd", "scatter_nd_add", "scatter_nd_max", "scatter_nd_min", "scatter_nd_mul"}


# -- GPU-11: served and refused ops come from the registry ---------------------------------------
def _one_op_graph(body: Any, *shapes: tuple[int, ...]) -> Graph:
    with Graph("g", [TensorType(DType.float32, s, GPU0) for s in shapes]) as g:
        g.output(*body(*g.inputs))
    return g


@pytest.mark.spec("GPU-11")
def test_refused_ops_are_those_with_a_host_only_trait() -> None:
    refused = {name for name, op in REGISTRY.items() if op.host_only is not None}
    assert refused == {"top_k", "debug_print", "allreduce_sum", "allgather", "argsort",
                       "bottom_k", "reducescatter_sum", "distributed_broadcast",
                       "distributed_scatter"}
    assert REGISTRY["top_k"].host_only == TRAITS["nan-last-sort"]


@pytest.mark.spec("GPU-11")
def test_a_trait_in_the_registry_entry_refuses_or_serves_an_op(
        monkeypatch: pytest.MonkeyPatch) -> None:
    tile = _one_op_graph(lambda x: [ops.tile(x, (2, 1))], (2, 3))
    assert gpu_refusal(tile) is None
    top_k = _one_op_graph(lambda x: [ops.top_k(x, 2)[0]], (3,))
    assert gpu_refusal(top_k) is not None

    def with_traits(name: str, traits: frozenset[str]) -> None:
        monkeypatch.setitem(REGISTRY, name, dataclasses.replace(REGISTRY[name], traits=traits))

    with_traits("tile", frozenset({"host-output"}))
    with_traits("top_k", frozenset())
    assert gpu_refusal(_one_op_graph(lambda x: [ops.tile(x, (2, 1))], (2, 3))) == (
        "op tile is not supported on the GPU: writes to the host's stdout: on a device every "
        "call would need a round trip to the host, so device executors refuse it")
    assert gpu_refusal(_one_op_graph(lambda x: [ops.top_k(x, 2)[0]], (3,))) is None

