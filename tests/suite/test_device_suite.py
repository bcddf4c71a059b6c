"""The suite on a device executor (EXEC-10..13, CONF-70..75), checked on a CPU.

``tests.suite.device_executors:SimulatedGpuExecutor`` serves ``gpu:0`` with host memory behind
handles that are not numpy arrays; its broken variants each get one device rule wrong. The
plumbing is checked directly (``conformance.devices``) and by running small slices of the
suite in-process (``tests.suite.suite_runner.run_suite``) with the verdicts a vendor would read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conformance.calls import ExecutorRaised
from conformance.devices import DeviceProtocolError, declared_device, shares_memory
from conformance.executors import ExecutorSpecError, resolve
from conformance.pipeline import ExecutorUnderTest, call_executor
from interpreter.errors import UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import BufferValue, DeviceRef, ops
from interpreter.graph.retarget import devices_of
from interpreter.testing import Buf, assert_same, build
from tests.suite.device_executors import SimulatedGpuArray, SimulatedGpuExecutor
from tests.suite.suite_runner import ROOT, assert_repro_fails, run_suite

DEV = "tests.suite.device_executors"
GPU0 = DeviceRef.GPU(0)


def _store_graph() -> tuple[Any, np.ndarray, np.ndarray]:
    buf = np.array([1.0, 2.0, 3.0], np.float32)
    x = np.array([0.5, -0.0, 4.0], np.float32)

    def fn(b: BufferValue, x: Any) -> Any:
        ops.buffer_store(b, ops.buffer_load(b) * 2.0 + x)
        return x * 3.0

    return build(fn, Buf(buf), x, name="store"), buf, x


class _Spy(SimulatedGpuExecutor):
    """Records what the executor was handed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[Any, list[Any]]] = []

    def execute(self, graph: Any, inputs: Any) -> list[SimulatedGpuArray]:
        self.seen.append((graph, list(inputs)))
        return super().execute(graph, inputs)


# -- the plumbing, directly ---------------------------------------------------------------------
@pytest.mark.spec("EXEC-10", "CONF-70")
def test_cpu_executors_are_used_as_they_are() -> None:
    ref = InterpreterExecutor()
    assert declared_device(ref) == DeviceRef.CPU()
    assert ExecutorUnderTest(ref).on_device is None
    assert type(resolve("interpreter.executor:InterpreterExecutor").executor) is \
        InterpreterExecutor
    sim = resolve(f"{DEV}:SimulatedGpuExecutor").executor
    assert isinstance(sim, SimulatedGpuExecutor)
    assert ExecutorUnderTest(sim).on_device is not None


@pytest.mark.spec("EXEC-11", "EXEC-12", "CONF-70", "CONF-71")
def test_graphs_go_to_devices0_and_buffers_come_back() -> None:
    spy = _Spy()
    graph, buf, x = _store_graph()
    out = ExecutorUnderTest(spy).execute(graph, [buf, x])
    (handed, arrays), = spy.seen
    assert devices_of(handed) == {GPU0} and devices_of(graph) == {DeviceRef.CPU()}
    assert [type(a) for a in arrays] == [SimulatedGpuArray, SimulatedGpuArray]
    assert_same(buf, np.array([2.5, 4.0, 10.0], np.float32))  # mutated once, on the device
    assert_same(out, [np.array([1.5, -0.0, 12.0], np.float32)])
    assert isinstance(out[0], np.ndarray)


@pytest.mark.spec("EXEC-10", "EXEC-11")
def test_simulated_gpu_refuses_cpu_graphs_and_numpy_inputs() -> None:
    graph, buf, x = _store_graph()
    sim = SimulatedGpuExecutor()
    with pytest.raises(UnsupportedGraphError, match=r"serves gpu:0 only.*cpu:0"):
        sim.execute(graph, [buf, x])
    with pytest.raises(TypeError, match="implicit conversion"):
        np.asarray(sim.to_device(x, GPU0))
    with pytest.raises(TypeError, match=r"expected a SimulatedGpuArray, got numpy\.ndarray"):
        sim.to_host(x)


class _ReturnsInput(SimulatedGpuExecutor):
    def execute(self, graph: Any, inputs: Any) -> list[Any]:
        super().execute(graph, inputs)
        return [inputs[1]]


class _RepeatsOutput(SimulatedGpuExecutor):
    def execute(self, graph: Any, inputs: Any) -> list[Any]:
        out = super().execute(graph, inputs)
        return [out[0], out[0]]


@pytest.mark.spec("EXEC-5", "EXEC-12", "CONF-72")
def test_device_results_must_be_fresh_native_arrays() -> None:
    graph, buf, x = _store_graph()
    with pytest.raises(ExecutorRaised) as info:
        call_executor(_ReturnsInput(), graph, [buf.copy(), x])
    text = info.value.describe()
    assert text == ("the executor broke the device protocol: graph 'store': output 0 shares "
                    "memory with input 1 on gpu:0 (outputs must be fresh buffers) [EXEC-5]")
    g2 = build(lambda x: (x + 1.0, x + 1.0), x, name="twice")
    with pytest.raises(ExecutorRaised) as repeated:
        ExecutorUnderTest(_RepeatsOutput()).execute(g2, [x])
    assert isinstance(repeated.value.original, DeviceProtocolError)
    assert "outputs 0 and 1 share memory" in str(repeated.value.original)


class _Cuda:
    """Just a CUDA array interface (what cupy arrays expose)."""

    def __init__(self, ptr: int, n: int, stride: int | None = None) -> None:
        self.__cuda_array_interface__ = {
            "data": (ptr, False), "shape": (n,), "typestr": "<f4",
            "strides": None if stride is None else (stride,), "version": 3}


@pytest.mark.spec("CONF-72")
def test_shares_memory_on_cuda_address_ranges_and_host_dlpack() -> None:
    assert shares_memory(_Cuda(4096, 4), _Cuda(4096 + 12, 4))
    assert not shares_memory(_Cuda(4096, 4), _Cuda(4096 + 16, 4))
    assert shares_memory(_Cuda(4096, 4, -4), _Cuda(4096 - 12, 1))  # negative stride
    assert not shares_memory(_Cuda(4096, 0), _Cuda(4096, 4))  # empty: no memory
    a = np.arange(6.0)
    assert shares_memory(SimulatedGpuArray(a), SimulatedGpuArray(a[3:]))
    assert not shares_memory(SimulatedGpuArray(a[:3]), SimulatedGpuArray(a[3:]))


@pytest.mark.spec("EXEC-13", "CONF-73", "CONF-74")
def test_unavailable_executor_is_a_clean_usage_error(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    spec = f"{DEV}:UnavailableGpuExecutor"
    with pytest.raises(ExecutorSpecError) as info:
        resolve(spec)
    assert str(info.value) == (
        f"--executor={spec}: {DEV}.UnavailableGpuExecutor cannot run on this machine: "
        "UnavailableGpuExecutor needs CuPy 13+ (pip install 'eager-conformance[gpu]'): "
        "No module named 'cupy'")
    code = pytest.main([str(ROOT / "conformance" / "test_protocol.py"), "-q",
                        "-p", "no:cacheprovider", f"--executor={spec}", "-k", "wrong_input"])
    err = capsys.readouterr().err
    assert int(code) == int(pytest.ExitCode.USAGE_ERROR)
    assert "cannot run on this machine" in err and "Traceback" not in err
    assert resolve(f"{DEV}:SimulatedGpuExecutor").describe().endswith(
        "; graphs on gpu:0, arrays via to_device/to_host")


class _BadDevices(SimulatedGpuExecutor):
    devices = ("gpu:0",)  # type: ignore[assignment]


@pytest.mark.spec("EXEC-10")
def test_malformed_devices_attribute_is_reported() -> None:
    with pytest.raises(TypeError, match=r"devices must be a non-empty tuple of DeviceRef.*"
                                        r"EXEC-10"):
        declared_device(_BadDevices())


# -- slices of the suite, in-process --------------------------------------------------------------
#: The CI slice: every test family once on the simulated GPU (CONF-70), a few seconds.
SLICE = [
    (["test_protocol.py"], None),
    (["test_ops.py"], "[add-float32-general or buffer_store-int32-general "
                      "or matmul-float32-general or sum-float16-general and not gather_sum"),
    (["test_graphs.py"], "test_graph and devices"),
    (["test_hazards.py"], "fma-float32"),
    (["test_random.py"], "float32"),
    (["test_determinism.py"], "add or buffer_store"),
    (["test_frontend.py"], "sources_reused or state_machine"),
]


@pytest.mark.spec("CONF-70", "CONF-71", "CONF-75", "EXEC-14")
@pytest.mark.parametrize(("files", "k"), SLICE, ids=[f[0] for f, _ in SLICE])
def test_simulated_gpu_passes_the_suite(tmp_path: Path, files: list[str], k: str | None
                                        ) -> None:
    run = run_suite(tmp_path, f"{DEV}:SimulatedGpuExecutor", files, k)
    assert run.outcomes, f"nothing ran ({files}, -k {k!r})"
    assert not run.failed(), run.text()
    assert run.code == 0


# name, files, -k selection, words the failure message must contain
BROKEN = [
    ("ReturnsHostArrays", ["test_protocol.py"], "mutation_applied",
     ["device protocol", "is a numpy.ndarray", "EXEC-12"]),
    ("RebindsBuffers", ["test_protocol.py"], "mutation", ["mutation dropped", "EXEC-6"]),
    ("WritesReadOnlyInput", ["test_protocol.py"],
     "test_outputs_declared_fresh_inputs_untouched and (add or exp)",
     ["was modified by execute", "EXEC-6"]),
    ("RefusesAfterStoreOnDevice", ["test_protocol.py"], "refusal",
     ["EXEC-3", "after modifying"]),
]


@pytest.mark.spec("CONF-71", "CONF-72", "CONF-18")
@pytest.mark.parametrize(("broken", "files", "k", "words"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_device_executor_is_caught(tmp_path: Path, broken: str, files: list[str],
                                          k: str, words: list[str]) -> None:
    run = run_suite(tmp_path, f"{DEV}:{broken}", files, k)
    assert run.failed(), f"{broken} passed {sorted(run.outcomes)}"
    text = run.text()
    for word in words:
        assert word in text, f"{broken}: {word!r} not in:\n{text}"
    assert "SUITE ERROR" not in text
    if broken == "ReturnsHostArrays":  # found around the call: no suite frames (CONF-72)
        assert "conformance/devices.py" not in text, text


@pytest.mark.spec("CONF-70", "CONF-11")
def test_device_repro_replays_through_to_device(tmp_path: Path) -> None:
    """A failure on the device leaves a host-numpy repro that replays it (through
    ``to_device``: the stored graph and inputs are the CPU ones)."""
    run = run_suite(tmp_path, f"{DEV}:RebindsBuffers", ["test_protocol.py"], "mutation_applied")
    assert run.failed() and "mutation dropped" in run.text()
    assert_repro_fails(run)


@pytest.mark.spec("CONF-76")
def test_value_failure_names_the_graph_the_device_executor_saw(tmp_path: Path) -> None:
    """A value failure on the device: the artifacts hold the CPU graph (graph.txt, for the
    reference and repro.py) and the graph as handed over (graph.device.txt, on gpu:0); the
    message names the latter, and the repro still reproduces the failure."""
    run = run_suite(tmp_path, f"{DEV}:ScalesExpOnDevice", ["test_ops.py"], "exp-float32-general")
    assert run.failed(), sorted(run.outcomes)
    text = run.text()
    assert "differ from the reference" in text and "SUITE ERROR" not in text
    assert "the executor was handed the graph on its device:" in text
    assert run.artifacts is not None
    placed = sorted(run.artifacts.rglob("graph.device.txt"))
    assert placed
    for p in placed:
        cpu = (p.parent / "graph.txt").read_text()
        assert "gpu:0" in p.read_text() and "cpu:0" not in p.read_text()
        assert "cpu:0" in cpu and p.read_text().replace("gpu:0", "cpu:0") == cpu
    assert_repro_fails(run)
    cpu_run = run_suite(tmp_path / "cpu", "SelectSwapsFloatBranches", ["test_ops.py"],
                        "select-float32-general")  # a CPU executor: no placement, no file
    assert cpu_run.failed() and cpu_run.artifacts is not None
    assert list(cpu_run.artifacts.rglob("graph.txt"))
    assert not list(cpu_run.artifacts.rglob("graph.device.txt"))
    assert "handed the graph on its device" not in cpu_run.text()


@pytest.mark.spec("CONF-70")
def test_the_device_copy_is_made_once_per_graph() -> None:
    spy = _Spy()
    graph, buf, x = _store_graph()
    on = ExecutorUnderTest(spy)
    on.execute(graph, [buf, x])
    on.execute(graph, [buf, x])
    assert spy.seen[0][0] is spy.seen[1][0]
    graph.outputs = [graph.inputs[1]]  # a changed graph gets a new copy
    placed = on.placed(graph)
    assert placed is not spy.seen[0][0] and placed is on.placed(graph)
    assert placed.outputs is not None and placed.outputs[0] is placed.inputs[1]


@pytest.mark.spec("CONF-70", "CONF-72")
def test_isolated_worker_drives_the_device_executor(tmp_path: Path) -> None:
    """Under ``--conformance-isolate`` the worker process wraps the executor the same way."""
    run = run_suite(tmp_path, f"{DEV}:ReturnsHostArrays", ["test_protocol.py"], "mutation_applied",
                    "--conformance-isolate")
    text = run.text()
    assert run.failed() and "is a numpy.ndarray" in text and "[EXEC-12]" in text, text
