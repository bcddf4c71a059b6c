"""GPU executor, CPU-checkable parts: import without CuPy, refusals, plan, generated CUDA
source (golden files). Nothing here needs CuPy or a GPU. The registry kernels it runs on
device arrays are checked over a fake CuPy in test_gpu_kernels.py."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from interpreter.dtype import DType
from interpreter.errors import ExecutorUnavailableError
from interpreter.graph import DeviceRef, Graph, TensorType, ops
from interpreter.graph.lowering import lower
from interpreter.registry import REGISTRY
from reference_executors import cuda_codegen, gpu
from reference_executors.cuda_codegen import ELEMENTWISE_OPS, generate_group
from reference_executors.gpu import CupyExecutor, gpu_refusal, plan_gpu
from tools.golden import DIR

from .gpu_graphs import on_device
from .graphs import mlp

GPU0 = DeviceRef.GPU(0)
F32, F16 = DType.float32, DType.float16


def t(dtype: DType, shape: tuple[int, ...], device: DeviceRef = GPU0) -> TensorType:
    return TensorType(dtype, shape, device)


# -- GPU-2: constructing without CuPy / without a device -----------------------------------------
def _fake_cupy(version: str, count: Any) -> types.ModuleType:
    m = types.ModuleType("cupy")
    m.__version__ = version  # type: ignore[attr-defined]

    def get_count() -> int:
        if isinstance(count, Exception):
            raise count
        return int(count)

    runtime = types.SimpleNamespace(getDeviceCount=get_count)
    m.cuda = types.SimpleNamespace(runtime=runtime)  # type: ignore[attr-defined]
    return m


@pytest.mark.spec("GPU-2")
def test_module_imports_without_cupy_and_the_constructor_says_why(monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # "import cupy" raises ImportError
    assert gpu.CupyExecutor.__name__ == "CupyExecutor"
    with pytest.raises(ExecutorUnavailableError) as info:
        CupyExecutor()
    msg = str(info.value)
    assert msg.startswith("CupyExecutor needs CuPy 13+ (pip install 'eager-conformance[gpu]'): ")
    assert msg.endswith("[GPU-2]")


@pytest.mark.spec("GPU-2")
@pytest.mark.parametrize(("version", "count", "expected"), [
    ("12.3.0", 1, "CupyExecutor needs CuPy 13+ (pip install 'eager-conformance[gpu]'); found "
                  "CuPy 12.3.0 [GPU-2]"),
    ("13.1.0", RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected"),
     "CupyExecutor: no CUDA device visible: cudaErrorNoDevice: no CUDA-capable device is "
     "detected [GPU-2]"),
    ("13.1.0", 0, "CupyExecutor: no CUDA device visible: the CUDA runtime reports 0 devices "
                  "[GPU-2]"),
])
def test_constructor_reports_old_cupy_and_missing_devices(monkeypatch: Any, version: str,
                                                          count: Any, expected: str) -> None:
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(version, count))
    with pytest.raises(ExecutorUnavailableError) as info:
        CupyExecutor()
    assert str(info.value) == expected


# -- GPU-3, GPU-11: refusals -----------------------------------------------------------------
def _graph(types_: list[TensorType], body: Any, name: str = "g") -> Graph:
    with Graph(name, types_) as g:
        g.output(*body(*g.inputs))
    return g


@pytest.mark.spec("GPU-3")
@pytest.mark.parametrize(("graph", "reason"), [
    (lambda: _graph([t(F32, (2,), DeviceRef.CPU())], lambda x: [ops.add(x, x)]),
     "graph is CPU-placed (no value on a GPU); use a CPU executor"),
    (lambda: _graph([t(DType.bfloat16, (2,))], lambda x: [ops.add(x, x)]),
     "input 0 has dtype bfloat16: CuPy has no bfloat16 or float8 dtypes, so this executor "
     "refuses them"),
    (lambda: _graph([t(F32, (2,))], lambda x: [ops.cast(x, DType.float8_e5m2)]),
     "cast result has dtype float8_e5m2: CuPy has no bfloat16 or float8 dtypes, so this "
     "executor refuses them"),
    (lambda: _graph([t(F32, (2,), DeviceRef.CPU()), t(F32, (2,))],
                    lambda x, y: [ops.add(x, x), y]),
     "add computes on the CPU; this executor computes on GPUs only (CPU values may only be "
     "transferred)"),
    (lambda: _graph([t(F32, (3,))], lambda x: [ops.top_k(x, 2)[0]]),
     "op top_k is not supported on the GPU: sorts stably with NaN as the largest value "
     "(numpy's order, top_k.C2): CuPy documents its sort as stable but not where it puts "
     "NaN, so executors running the kernel on CuPy arrays refuse it"),
])
def test_refusals_name_the_reason(graph: Any, reason: str) -> None:
    assert gpu_refusal(graph()) == reason


@pytest.mark.spec("GPU-3")
def test_refusal_checks_visible_devices_and_outputs() -> None:
    g = _graph([t(F32, (2,), DeviceRef.GPU(1))], lambda x: [ops.add(x, x)])
    assert gpu_refusal(g, device_count=1) == ("input 0 is on gpu:1, but only 1 GPU(s) are "
                                              "visible")
    assert gpu_refusal(g, device_count=2) is None
    with Graph("open", [t(F32, (2,))]) as open_:
        ops.add(open_.inputs[0], open_.inputs[0])
    assert gpu_refusal(open_) == "graph has no outputs (call graph.output(...))"


@pytest.mark.spec("GPU-3", "GPU-15")
def test_transfers_between_cpu_and_gpu_are_accepted() -> None:
    cpu = DeviceRef.CPU()

    def body(x: Any) -> list[Any]:
        y = ops.mul(ops.transfer_to(x, GPU0), 2.0)
        return [ops.transfer_to(y, cpu)]

    assert gpu_refusal(_graph([t(F32, (3,), cpu)], body)) is None


# -- GPU-4, GPU-5: the plan ------------------------------------------------------------------
def _on_gpu(graph: Graph) -> Graph:
    return on_device(graph, GPU0)


@pytest.mark.spec("GPU-4", "GPU-5")
def test_mlp_plan_is_matmuls_plus_one_fused_kernel_per_layer() -> None:
    plan = plan_gpu(_on_gpu(mlp(4, 8, 3)))
    kinds = [type(s).__name__ if isinstance(s, gpu.KernelStep) else s.node.op.name
             for s in plan.steps]
    assert kinds == ["matmul", "KernelStep"] * 3
    assert plan.kernel_count == 3
    for step in plan.steps:
        if isinstance(step, gpu.KernelStep):  # bias broadcast + add + gelu in one kernel
            names = [plan.graph.nodes[p].op.name for p in step.members]
            assert names == ["broadcast_to", "add", "gelu"]
            assert [v.type.shape for v in step.externals] == [(8,), (4, 8)]


@pytest.mark.spec("GPU-5")
def test_elementwise_node_outside_a_group_gets_its_own_kernel() -> None:
    def body(x: Any, y: Any) -> list[Any]:
        s = ops.sum(x, axis=1)  # library call between two kernels
        return [ops.exp(ops.add(s, y))]

    plan = plan_gpu(lower(_graph([t(F32, (2, 3)), t(F32, (2, 1))], body)))
    assert [isinstance(s, gpu.KernelStep) for s in plan.steps] == [False, True]
    assert len(plan.sources()) == 1


@pytest.mark.spec("GPU-8")
def test_intermediates_die_after_their_last_reader() -> None:
    def body(x: Any) -> list[Any]:
        s = ops.sum(ops.exp(x), axis=1)  # steps 0 (kernel), 1 (library)
        return [ops.exp(ops.sum(ops.exp(s), axis=0))]  # steps 2, 3, 4

    g = lower(_graph([t(F32, (2, 3))], body))
    plan = plan_gpu(g)
    assert len(plan.steps) == 5
    (inner,) = plan.steps[0].outputs  # type: ignore[union-attr]
    # read by the reduction (step 1), whose result may be a view of it and is read by step 2
    assert plan.ends[inner] == 2
    assert plan.ends[g.outputs[0]] == len(plan.steps)  # type: ignore[index]


# -- GPU-6, GPU-7, GPU-17: generated source ---------------------------------------------------
@pytest.mark.spec("GPU-17")
def test_golden_files_cover_every_elementwise_op() -> None:
    elementwise = {n for n, op in REGISTRY.items()
                   if op.category in ("elementwise-unary", "elementwise-binary")}
    assert elementwise | {"select", "broadcast_to"} == set(ELEMENTWISE_OPS)
    names = {p.stem for p in (DIR / "cuda").glob("*.cu")}
    assert set(ELEMENTWISE_OPS) <= names
    assert names - set(ELEMENTWISE_OPS) == {"_preamble", "_chain16", "random_uniform",
                                            "random_normal"}


def _kernel(types_: list[TensorType], body: Any) -> str:
    plan = plan_gpu(lower(_graph(types_, body)))
    (source,) = plan.sources()
    return source.operation


@pytest.mark.spec("GPU-6")
def test_float16_rounds_after_every_op_and_transcendentals_round_once_from_double() -> None:
    src = _kernel([t(F16, (4,))] * 2, lambda x, y: [ops.exp(ops.add(ops.mul(x, y), y))])
    assert src.splitlines() == [
        "const float a0 = ec_h2f(x0);", "const float a1 = ec_h2f(x1);",
        "const float t0 = ec_rh(a0 * a1);", "const float t1 = ec_rh(t0 + a1);",
        "const float t2 = ec_dh(exp((double)t1));", "o0 = ec_f2h(t2);"]


@pytest.mark.spec("GPU-6")
def test_no_fma_and_integer_wraparound_in_unsigned_arithmetic() -> None:
    plan = plan_gpu(lower(_graph([t(DType.int32, (4,))] * 2,
                                 lambda x, y: [ops.add(ops.mul(x, y), y)])))
    (source,) = plan.sources()
    assert source.options == ("--fmad=false",)
    assert "const int t0 = (int)((unsigned int)a0 * (unsigned int)a1);" in source.operation
    assert "const int t1 = (int)((unsigned int)t0 + (unsigned int)a1);" in source.operation


@pytest.mark.spec("GPU-7")
def test_kernel_names_hash_the_source_so_equal_groups_share_a_kernel() -> None:
    def build(dtype: DType) -> Any:
        return plan_gpu(lower(_graph([t(dtype, (4,))] * 2, lambda x, y: [ops.add(x, y)])))

    a, b, c = build(F32).sources()[0], build(F32).sources()[0], build(F16).sources()[0]
    assert a == b and a.name == b.name
    assert a.name != c.name and a.name.startswith("ec_fused_")


@pytest.mark.spec("GPU-5")
def test_group_materializes_only_values_read_outside() -> None:
    g = lower(_graph([t(F32, (4,))] * 2,
                     lambda x, y: [ops.add(ops.mul(x, y), y), ops.mul(x, y)]))
    members = list(range(len(g.nodes)))
    source, ext = generate_group(g, members, list(g.outputs or ()))
    assert ext == list(g.inputs)
    assert source.out_params == "float32 o0, float32 o1"


def test_preamble_has_no_includes() -> None:  # NVRTC include paths vary between installs
    assert "#include" not in cuda_codegen.PREAMBLE
