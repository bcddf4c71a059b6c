"""CupyExecutor benchmarks (issue 11, GPU-18); skipped without CuPy or a CUDA device.

Run: ``pytest benchmarks/bench_gpu.py --benchmark-enable -p no:xdist -s`` (as
``scripts/gpu_check.sh`` does). Groups: ``gpu-chain16`` (the 16-op elementwise chain on 64M
float32 against a CuPy device-to-device copy of the same bytes), ``gpu-latency`` (one op on
a small GPU array, execute + synchronize), ``gpu-mlp`` (3 x matmul + bias + gelu against the
same forward pass written by hand in CuPy). ``test_gpu_ratios`` measures everything in one
run and prints the ratios (target: the chain moves bytes at >= 70 % of copy bandwidth); with
``GPU_BENCH_JSON=path`` it also writes them as JSON. Timing targets are reported, not
asserted. Tensor note: the front end's ``Tensor`` stores numpy arrays, so "realize latency
from a Tensor on the GPU" is measured at the executor boundary (a single-op graph on a
device array, execute + synchronize).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from benchmarks.timing import best_of
from interpreter.dtype import DType
from interpreter.errors import ExecutorUnavailableError
from interpreter.graph import DeviceRef, Graph, TensorType, ops
from reference_executors.gpu import CupyExecutor
from tests.executors.gpu_graphs import on_device
from tests.executors.graphs import chain16, mlp, mlp_inputs

cp = pytest.importorskip("cupy", reason="CuPy not installed")
try:
    EX = CupyExecutor()
except ExecutorUnavailableError as e:
    pytest.skip(str(e), allow_module_level=True)

GPU0 = DeviceRef.GPU(0)
N_FULL = 64 * 1024 * 1024


def _n(benchmark: Any) -> int:
    return 1 << 20 if benchmark.disabled else N_FULL


def _sync(fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        out = fn()
        cp.cuda.get_current_stream().synchronize()
        return out

    return run


def _chain(n: int) -> tuple[Graph, list[Any]]:
    rng = np.random.default_rng(0)
    ins = [cp.asarray(rng.standard_normal(n, dtype=np.float32)) for _ in range(2)]
    return on_device(chain16(n), GPU0), ins


def _single_op() -> tuple[Graph, list[Any]]:
    with Graph("add1", [TensorType(DType.float32, (16,), GPU0)] * 2) as g:
        g.output(ops.add(*g.inputs))
    return g, [cp.arange(16, dtype=np.float32)] * 2


def _hand_mlp(ins: list[Any]) -> Any:
    from cupyx.scipy.special import erf  # type: ignore[import-not-found,unused-ignore]

    v = ins[0]
    for i in range(1, len(ins), 2):
        h = v @ ins[i] + ins[i + 1]
        v = 0.5 * h * (1 + erf(h * np.float32(1 / math.sqrt(2))))
    return v


@pytest.mark.benchmark(group="gpu-chain16")
def test_gpu_chain16(benchmark: Any) -> None:
    g, ins = _chain(_n(benchmark))
    benchmark(_sync(lambda: EX.execute(g, ins)))


@pytest.mark.benchmark(group="gpu-chain16")
def test_gpu_copy(benchmark: Any) -> None:
    _, (x, _y) = _chain(_n(benchmark))
    dst = cp.empty_like(x)
    benchmark(_sync(lambda: dst.__setitem__(Ellipsis, x)))


@pytest.mark.benchmark(group="gpu-latency")
def test_gpu_single_op_latency(benchmark: Any) -> None:
    g, ins = _single_op()
    benchmark(_sync(lambda: EX.execute(g, ins)))


@pytest.mark.benchmark(group="gpu-mlp")
@pytest.mark.parametrize("who", ["executor", "hand-written"])
def test_gpu_mlp(benchmark: Any, who: str) -> None:
    ins = [cp.asarray(a) for a in mlp_inputs()]
    g = on_device(mlp(), GPU0)
    fn = (lambda: EX.execute(g, ins)) if who == "executor" else (lambda: _hand_mlp(ins))
    benchmark(_sync(fn))


def test_gpu_ratios(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """All issue-11 ratios from one run, printed (``-s``)."""
    n, rep = _n(benchmark), 3 if benchmark.disabled else 10
    g, ins = _chain(n)
    plan = EX.compile(g)
    t_chain = best_of(_sync(lambda: EX.execute(g, ins)), rep, warm_up=True)
    dst = cp.empty_like(ins[0])
    t_copy = best_of(_sync(lambda: dst.__setitem__(Ellipsis, ins[0])), rep, warm_up=True)
    # the chain reads two inputs and writes one output (12 B/element); the copy reads and
    # writes one array (8 B/element): compare bandwidths
    ratio = (12 * n / t_chain) / (8 * n / t_copy)
    g1, ins1 = _single_op()
    t_one = best_of(_sync(lambda: EX.execute(g1, ins1)), rep * 10, warm_up=True)
    m_ins = [cp.asarray(a) for a in mlp_inputs()]
    mg = on_device(mlp(), GPU0)
    t_mlp = best_of(_sync(lambda: EX.execute(mg, m_ins)), rep, warm_up=True)
    t_hand = best_of(_sync(lambda: _hand_mlp(m_ins)), rep, warm_up=True)
    result = {"n": n, "kernels": plan.kernel_count, "chain16_ms": t_chain * 1e3,
              "copy_ms": t_copy * 1e3, "chain16_bandwidth_vs_copy": ratio,
              "single_op_us": t_one * 1e6, "mlp_ms": t_mlp * 1e3, "mlp_hand_ms": t_hand * 1e3,
              "mlp_vs_hand": t_mlp / t_hand}
    lines = [f"gpu chain16 n={n}: kernels={plan.kernel_count} chain={t_chain * 1e3:.3f} ms "
             f"copy={t_copy * 1e3:.3f} ms bandwidth ratio {100 * ratio:.0f}% (target >= 70%)",
             f"gpu single-op execute+sync latency: {t_one * 1e6:.1f} us",
             f"gpu mlp: executor={t_mlp * 1e3:.3f} ms hand-written cupy={t_hand * 1e3:.3f} ms "
             f"(executor/hand {t_mlp / t_hand:.2f})"]
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    path = os.environ.get("GPU_BENCH_JSON")
    if path:
        with open(path, "w") as f:
            json.dump(result, f, indent=2)
    assert plan.kernel_count == 1
