"""A simulated GPU executor and broken variants of it: the suite's device plumbing on a CPU.

:class:`SimulatedGpuExecutor` declares ``devices = (DeviceRef.GPU(0),)`` (EXEC-10). Its
native arrays are :class:`SimulatedGpuArray` handles around host memory that, like
``cupy.ndarray``, refuse implicit conversion to numpy, so suite code that hands over or reads
numpy arrays directly fails loudly. It refuses graphs with values anywhere but ``gpu:0``,
runs the CPU copy of a graph (``retarget``) with the reference kernels, and mutates the
memory behind buffer handles in place. The broken variants each get one device rule wrong;
only the device-aware suite can catch them (tests/suite/test_device_suite.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from interpreter.errors import ExecutorInputError, ExecutorUnavailableError, UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.graph.core import Graph
from interpreter.graph.retarget import devices_of, retarget
from interpreter.types import DeviceRef, TensorType

__all__ = [
    "RebindsBuffers",
    "RefusesAfterStoreOnDevice",
    "ReturnsHostArrays",
    "SimulatedGpuArray",
    "SimulatedGpuExecutor",
    "UnavailableGpuExecutor",
    "WritesReadOnlyInput",
]

GPU0 = DeviceRef.GPU(0)


class SimulatedGpuArray:
    """A value on the simulated GPU: host memory behind a handle that is not a numpy array."""

    __slots__ = ("_host", "device")

    def __init__(self, host: np.ndarray, device: DeviceRef = GPU0) -> None:
        self._host = host
        self.device = device

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._host.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._host.dtype

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError("implicit conversion of a SimulatedGpuArray to numpy is not allowed; "
                        "use SimulatedGpuExecutor.to_host()")

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._host.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._host.__dlpack_device__()  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"SimulatedGpuArray({self.dtype}{list(self.shape)}, {self.device})"


class SimulatedGpuExecutor:
    """Serves graphs on ``gpu:0`` by running their CPU copy with the reference kernels."""

    devices: tuple[DeviceRef, ...] = (GPU0,)
    #: graphs with more ops are refused (so the suite's refusal probes run on device arrays)
    MAX_OPS = 1024

    def __init__(self) -> None:
        self.reference = InterpreterExecutor(max_ops=self.MAX_OPS)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def to_device(self, array: np.ndarray, device: DeviceRef) -> SimulatedGpuArray:
        if device not in self.devices:
            raise ValueError(f"{type(self).__name__} serves {self.devices}, not {device}")
        return SimulatedGpuArray(np.array(array, copy=True), device)

    def to_host(self, array: Any) -> np.ndarray:
        if not isinstance(array, SimulatedGpuArray):
            raise TypeError(f"to_host: expected a SimulatedGpuArray, got "
                            f"{type(array).__module__}.{type(array).__name__}")
        return array._host.copy()

    def refusal(self, graph: Graph) -> str | None:
        others = sorted(str(d) for d in devices_of(graph) if d not in self.devices)
        if others:
            return f"{type(self).__name__} serves gpu:0 only; the graph has values on " \
                   f"{', '.join(others)}"
        return self.reference.refusal(retarget(graph))

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[SimulatedGpuArray]:
        reason = self.refusal(graph)
        if reason is not None:
            raise UnsupportedGraphError(reason)
        if len(inputs) != len(graph.inputs):
            raise ExecutorInputError(f"expected {len(graph.inputs)} inputs, got {len(inputs)}")
        for i, a in enumerate(inputs):
            if not isinstance(a, SimulatedGpuArray):
                raise ExecutorInputError(f"input {i} ({graph.inputs[i].type}) is a "
                                         f"{type(a).__name__}, not a SimulatedGpuArray")
        return self.wrap(self.run(retarget(graph), [a._host for a in inputs]))

    def run(self, cpu_graph: Graph, hosts: list[np.ndarray]) -> list[np.ndarray]:
        """The reference on the memory behind the handles: buffers mutate in place."""
        return list(self.reference.execute(cpu_graph, hosts))

    def wrap(self, outputs: Sequence[np.ndarray]) -> list[Any]:
        return [SimulatedGpuArray(o) for o in outputs]


# -- broken variants: each gets one device rule wrong --------------------------------------------
class ReturnsHostArrays(SimulatedGpuExecutor):
    """Returns host numpy arrays for a GPU graph instead of its native arrays (EXEC-12)."""

    def wrap(self, outputs: Sequence[np.ndarray]) -> list[Any]:
        return list(outputs)


class RebindsBuffers(SimulatedGpuExecutor):
    """Stores into a new device array instead of the caller's buffer (EXEC-6, EXEC-11)."""

    def run(self, cpu_graph: Graph, hosts: list[np.ndarray]) -> list[np.ndarray]:
        return super().run(cpu_graph, [h.copy() for h in hosts])


class WritesReadOnlyInput(SimulatedGpuExecutor):
    """Reuses its first read-only float input's device memory as scratch (EXEC-6)."""

    def run(self, cpu_graph: Graph, hosts: list[np.ndarray]) -> list[np.ndarray]:
        outs = super().run(cpu_graph, hosts)
        for v, h in zip(cpu_graph.inputs, hosts, strict=True):
            if isinstance(v.type, TensorType) and h.dtype.kind == "f" and h.size:
                h[...] = 0
                break
        return outs


class RefusesAfterStoreOnDevice(SimulatedGpuExecutor):
    """Runs a graph with stores, then refuses it: the device buffer already changed (EXEC-3)."""

    def run(self, cpu_graph: Graph, hosts: list[np.ndarray]) -> list[np.ndarray]:
        outs = super().run(cpu_graph, hosts)
        if any(n.op.side_effect for n in cpu_graph.nodes):
            raise UnsupportedGraphError(f"{type(self).__name__}: stores need compilation")
        return outs


class ScalesExpOnDevice(SimulatedGpuExecutor):
    """Computes float32 ``exp`` 0.1 % high: a plain value failure, no protocol breach."""

    def run(self, cpu_graph: Graph, hosts: list[np.ndarray]) -> list[np.ndarray]:
        outs = super().run(cpu_graph, hosts)
        if any(n.op.name == "exp" for n in cpu_graph.nodes):
            for o in outs:
                if o.dtype == np.float32:
                    o *= np.float32(1.001)
        return outs


class UnavailableGpuExecutor(SimulatedGpuExecutor):
    """An executor that cannot run on this machine (EXEC-13)."""

    def __init__(self) -> None:
        raise ExecutorUnavailableError("UnavailableGpuExecutor needs CuPy 13+ (pip install "
                                       "'eager-conformance[gpu]'): No module named 'cupy'")
