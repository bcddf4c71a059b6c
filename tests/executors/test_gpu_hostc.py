"""The generated CUDA kernels compiled for the HOST and compared with the registry (GPU-17).

Every golden kernel (each elementwise op x GPU dtype, the random kernels, the fused chain16)
is compiled by the host C++ compiler with a small shim for the CUDA intrinsics it uses
(bit casts, ``__double2float_rz``), one loop per kernel, and
run over sampled values (special values paired at random) against the op's registry kernel
within the op's ULP budget, unspecified elements masked. This checks the generated code's
logic (rounding, NaN, signed zeros, wrap-around, Philox) on a CPU; it is not a GPU result:
CUDA's libm and NVRTC are only exercised by ``scripts/gpu_check.sh``. Skipped without g++.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.executor import InterpreterExecutor
from interpreter.graph import DeviceRef, Graph
from interpreter.registry import REGISTRY
from interpreter.registry.random import largest_below
from reference_executors.cuda_codegen import ELEMENTWISE_OPS, KernelSource
from reference_executors.cuda_codegen import random_kernel as make_random_kernel
from tools.golden import cuda_sources, op_graphs

from . import hostc
from .gpu_graphs import on_device
from .graphs import chain16

pytestmark = pytest.mark.skipif(hostc.CXX is None, reason="no C++ compiler (g++) to compile the "
                                "generated kernels for the host")
N = 2048


@dataclass
class Case:
    fn: str
    source: KernelSource
    graph: Graph | None = None  # None: a random kernel
    label: str = ""


def _all_cases() -> dict[str, list[Case]]:
    cases: dict[str, list[Case]] = {}
    for name in sorted(ELEMENTWISE_OPS):
        for label, g in op_graphs(name):
            (source,) = cuda_sources(g)
            cases.setdefault(name, []).append(Case("", source, g, label))
    for name in ("random_uniform", "random_normal"):
        for d in (DType.float16, DType.float32, DType.float64):
            cases.setdefault(name, []).append(Case("", make_random_kernel(name, d), None,
                                                   d.value))
    for d in (DType.float32, DType.float16):
        (source,) = cuda_sources(on_device(chain16(N, d), DeviceRef.GPU(0)))
        cases.setdefault("chain16", []).append(Case("", source, chain16(N, d), d.value))
    k = 0
    for group in cases.values():
        for c in group:
            c.fn, k = f"k{k}", k + 1
    return cases


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, list[Case]]]:
    cases = _all_cases()
    every = [c for group in cases.values() for c in group]
    return hostc.build([c.source for c in every], tmp_path_factory.mktemp("hostc")), cases


def _values(rng: np.random.Generator, d: DType, n: int) -> np.ndarray:
    """Random values of ``d`` with special values in the first quarter, in random pairs."""
    npd = d.to_numpy()
    if d is DType.bool:
        return rng.integers(0, 2, n).astype(bool)
    if d.is_integral():
        info = np.iinfo(npd)
        x = rng.integers(info.min, info.max, n, dtype=npd, endpoint=True)
        x[n // 4: n // 2] = rng.integers(max(info.min, -9), 10, n // 4).astype(npd)
        edges = [info.min, info.max, 0, 1, info.min + 1, 2 if info.min == 0 else -1]
        x[: n // 4] = rng.choice(np.array(edges, npd), n // 4)
        return x
    fi = np.finfo(npd)
    with np.errstate(over="ignore"):
        x = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(npd)
    x[n // 4: n // 4 + n // 8] = (rng.integers(-8, 8, n // 8) * 0.5).astype(npd)  # ties
    special = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, 0.5, -0.5, 2.5, float(fi.max),
               -float(fi.max), float(fi.tiny), float(fi.smallest_subnormal),
               -float(fi.smallest_subnormal)]
    x[: n // 4] = rng.choice(np.array(special, np.float64), n // 4).astype(npd)
    return x


def _run(lib: Any, case: Case, ins: list[np.ndarray], out: np.ndarray) -> None:
    hostc.run(getattr(lib, case.fn), ins, [out])


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in units of the last place (NaN matches NaN); other kinds: 0 or huge."""
    if a.dtype.kind != "f":
        return np.where(a == b, 0, 1 << 40)
    lo = np.iinfo(np.int64).min
    ia, ib = (np.asarray(x.view(f"i{x.dtype.itemsize}"), np.int64) for x in (a, b))
    ia, ib = np.where(ia < 0, lo - ia, ia), np.where(ib < 0, lo - ib, ib)
    return np.where(np.isnan(a) & np.isnan(b), 0, np.abs(ia - ib))


def _budget(name: str) -> int:
    tol = str(REGISTRY[name].tolerance)
    return 0 if tol == "exact" else int(tol.split("(")[1].rstrip(")"))


@pytest.mark.spec("GPU-6", "GPU-17")
@pytest.mark.parametrize("name", sorted(ELEMENTWISE_OPS))
def test_generated_kernel_matches_the_registry_on_the_host(compiled: Any, name: str) -> None:
    lib, cases = compiled
    op, rng = REGISTRY[name], np.random.default_rng(sum(map(ord, name)))
    for case in cases[name]:
        assert case.graph is not None
        node = case.graph.nodes[-1]
        ins = [_values(rng, v.type.dtype, 1 if name == "broadcast_to" else N)
               for v in case.graph.inputs]
        if name == "pow" and ins[1].dtype.kind in "iu":  # mostly small exponents
            ins[1] = np.where(rng.random(N) < 0.7, ins[1] % 20, ins[1]).astype(ins[1].dtype)
        out = np.zeros(ins[0].size, case.graph.outputs[0].type.dtype.to_numpy())  # type: ignore[index]
        _run(lib, case, ins, out)
        with np.errstate(all="ignore"):
            ref = np.asarray(ins[0] if name == "broadcast_to"
                             else op.kernel(*ins, **dict(node.attrs))).astype(out.dtype)
            masked = np.zeros(out.shape, bool)
            if op.unspecified is not None:
                masked = np.broadcast_to(op.unspecified(*ins, **dict(node.attrs)), out.shape)
        d = np.where(masked, 0, _ulps(out, ref))
        bad = np.nonzero(d > _budget(name))[0][:3]
        assert bad.size == 0, (f"{name} {case.label}: inputs {[a[bad] for a in ins]} gave "
                               f"{out[bad]}, the registry {ref[bad]}")


@pytest.mark.spec("GPU-16", "GPU-17")
@pytest.mark.parametrize("name", ["random_uniform", "random_normal"])
def test_random_kernels_match_the_registry_on_the_host(compiled: Any, name: str) -> None:
    lib, cases = compiled
    for case in cases[name]:
        d = DType(case.label)
        for seed in (0, 5, 42, 2**64 - 1):
            s = np.array([seed], np.uint64)
            out = np.zeros(3000, d.to_numpy())
            if name == "random_uniform":
                attrs: dict[str, Any] = {"low": -0.5, "high": 3.75}
                args = [s, np.array([-0.5]), np.array([3.75]),
                        np.array([largest_below(3.75, d)])]
            else:
                attrs = {"mean": 1.5, "std": 0.25}
                args = [s, np.array([1.5]), np.array([0.25])]
            _run(lib, case, args, out)
            ref = REGISTRY[name].kernel(s, shape=(3000,), dtype=d, **attrs)
            assert int(_ulps(out, ref).max()) <= (0 if name == "random_uniform" else 4), (
                name, d, seed)


@pytest.mark.spec("GPU-5", "GPU-6", "GPU-17")
def test_fused_chain16_matches_the_interpreter_on_the_host(compiled: Any) -> None:
    lib, cases = compiled
    rng = np.random.default_rng(3)
    for case in cases["chain16"]:
        assert case.graph is not None
        d = case.graph.inputs[0].type.dtype
        ins = [_values(rng, d, N) for _ in range(2)]
        out = np.zeros(N, d.to_numpy())
        _run(lib, case, ins, out)
        (ref,) = InterpreterExecutor().execute(case.graph, [a.copy() for a in ins])
        assert int(_ulps(out, ref).max()) <= 2, case.label  # exp: ulp(2)
