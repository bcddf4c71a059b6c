"""Executors on devices (EXEC-10..13): the suite's host arrays in, host arrays out.

An executor may declare ``devices`` (default ``(DeviceRef.CPU(),)``), ``to_device(array,
device)`` and ``to_host(array)``. For an executor whose ``devices[0]`` is not a CPU, the
suite's one call pipeline (``conformance.pipeline.ExecutorUnderTest``) hands each call
over with a :class:`DeviceHandOver`, so the rest of the suite uses it like a CPU executor:

- a graph whose values are all on CPUs is handed over as its copy on ``devices[0]``
  (``interpreter.graph.retarget``; the reference runs the CPU graph, EXEC-14); a graph that
  already names other devices is handed over as it is;
- every input on a non-CPU device the executor serves is handed over as
  ``to_device(host_array, device)``; on a device it does not serve, as the host array (the
  executor must refuse that graph, EXEC-16, and ``to_device`` could not place it);
- after the call (refusals and errors included) every handed-over input is brought back
  with ``to_host(the same object)`` and copied into the host array when it changed, so the
  suite's host-side checks see the device's side effects (EXEC-3, EXEC-6, EXEC-11);
- results on a non-CPU device must be native arrays (not ``numpy.ndarray``, EXEC-12) that
  share memory with no input and no other result (EXEC-5); they come back through
  ``to_host``.

A violation found here raises :class:`DeviceProtocolError`, which the suite blames on the
executor (CONF-22). The graph handed over must come back unchanged: the pipeline checks the
device copy, the graph the executor was given (EXEC-15, CONF-83).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from interpreter.errors import ExecutorResultError
from interpreter.graph.core import Graph
from interpreter.graph.retarget import devices_of, retarget
from interpreter.types import DeviceRef

__all__ = ["DeviceHandOver", "DeviceProtocolError", "declared_device", "shares_memory"]

_CPU_DLPACK = 1  # DLDeviceType kDLCPU


class DeviceProtocolError(ExecutorResultError):
    """The executor broke a protocol rule on its device arrays (EXEC-5, EXEC-6, EXEC-12);
    found by the suite around the call, so reported without the suite's traceback."""


def declared_device(executor: Any) -> DeviceRef:
    """``executor.devices[0]``, or ``DeviceRef.CPU()`` when it declares no devices (EXEC-10)."""
    devices = getattr(executor, "devices", None)
    if devices is None:
        return DeviceRef.CPU()
    devices = tuple(devices)
    if not devices or not all(isinstance(d, DeviceRef) for d in devices):
        raise TypeError(f"{type(executor).__name__}.devices must be a non-empty tuple of "
                        f"DeviceRef, got {devices!r} [EXEC-10]")
    return devices[0]


def _extent(x: Any) -> tuple[Any, int, int] | None:
    """(address space, first byte, one past the last byte) of an array's memory, or None."""
    iface = getattr(x, "__cuda_array_interface__", None)
    if isinstance(iface, dict):
        shape, strides = iface["shape"], iface.get("strides")
        itemsize = np.dtype(iface["typestr"]).itemsize
        if not all(shape):
            return None
        if strides is None:
            strides = [itemsize * int(np.prod(shape[k + 1:])) for k in range(len(shape))]
        lo = hi = int(iface["data"][0])
        for n, s in zip(shape, strides, strict=True):
            lo, hi = (lo + (n - 1) * s, hi) if s < 0 else (lo, hi + (n - 1) * s)
        return "cuda", lo, hi + itemsize
    return None


def _host_view(x: Any) -> np.ndarray | None:
    """A numpy view of ``x``'s memory when it lives on the host (numpy, or CPU DLPack)."""
    if isinstance(x, np.ndarray):
        return x
    device = getattr(x, "__dlpack_device__", None)
    if device is None or int(device()[0]) != _CPU_DLPACK:
        return None
    try:
        return np.from_dlpack(x)
    except Exception:
        return None


def shares_memory(a: Any, b: Any) -> bool:
    """Whether two arrays (numpy, CPU DLPack or CUDA array interface) share memory; CUDA
    arrays by overlapping address ranges."""
    if a is b:
        return True
    ha, hb = _host_view(a), _host_view(b)
    if ha is not None and hb is not None:
        return bool(np.shares_memory(ha, hb))
    ea, eb = _extent(a), _extent(b)
    return ea is not None and eb is not None and ea[1] < eb[2] and eb[1] < ea[2]


class DeviceHandOver:
    """How one executor on a device is handed a call and what comes back (see the module
    docstring)."""

    def __init__(self, executor: Any) -> None:
        self.device = declared_device(executor)
        self.served = frozenset(getattr(executor, "devices", None) or (DeviceRef.CPU(),))
        to_device = getattr(executor, "to_device", None)
        to_host = getattr(executor, "to_host", None)
        self._to_device: Callable[[np.ndarray, DeviceRef], Any] = (
            to_device if to_device is not None else lambda a, _d: a)
        self._to_host: Callable[[Any], Any] = to_host if to_host is not None else np.asarray

    def placed(self, graph: Graph) -> Graph:
        """The graph the executor is given: ``graph`` on ``devices[0]`` when it is all CPU.

        The copy is kept until the graph changes (``Graph.memo``, GRAPH-13), so an executor
        that caches per graph object sees one graph."""
        return graph.memo(f"conformance.on_device.{self.device}", self._place)

    def _place(self, graph: Graph) -> Graph:
        return retarget(graph, self.device) if all(d.is_cpu() for d in devices_of(graph)) \
            else graph

    def inputs(self, placed: Graph, inputs: Sequence[Any]) -> list[Any]:
        """The inputs as handed over: on the devices ``placed`` names (EXEC-11, EXEC-16)."""
        types = placed.input_types
        where = [types[i].device if i < len(types) else self.device
                 for i in range(len(inputs))]
        # an input on a device the executor does not serve is handed over as the host array:
        # the executor must refuse the graph (EXEC-16), and to_device cannot place it
        return [self._to_device(a, d) if isinstance(a, np.ndarray) and not d.is_cpu()
                and d in self.served else a for a, d in zip(inputs, where, strict=True)]

    def bring_back(self, graph: Graph, inputs: Sequence[Any], handed: Sequence[Any]) -> None:
        """Copy every handed-over input's device contents into its host array (EXEC-11)."""
        for i, (host, dev) in enumerate(zip(inputs, handed, strict=True)):
            if dev is host:
                continue
            now = np.asarray(self._to_host(dev))
            if now.dtype == host.dtype and now.shape == host.shape \
                    and now.tobytes() == host.tobytes():
                continue
            if not host.flags.writeable or now.shape != host.shape:
                kind = graph.input_types[i] if i < len(graph.input_types) else "input"
                raise DeviceProtocolError(
                    f"graph {graph.name!r}: the executor changed input {i} ({kind}) on "
                    f"{self.device}: {host.tolist()} -> {now.tolist()} [EXEC-6]")
            np.copyto(host, now, casting="unsafe")

    def results(self, graph: Graph, handed: Sequence[Any], outputs: Sequence[Any]
                ) -> list[np.ndarray]:
        """EXEC-12 and EXEC-5 on the device results, then their host copies."""
        types = graph.output_types
        for i, o in enumerate(outputs):
            device = types[i].device if i < len(types) else self.device
            if isinstance(o, np.ndarray) and not device.is_cpu():
                raise DeviceProtocolError(
                    f"graph {graph.name!r}: output {i} ({types[i] if i < len(types) else '?'})"
                    f" is a numpy.ndarray; values on {device} are returned as the executor's "
                    "native device arrays (what to_host() accepts) [EXEC-12]")
            for j, a in enumerate(handed):
                if shares_memory(o, a):
                    raise DeviceProtocolError(
                        f"graph {graph.name!r}: output {i} shares memory with input {j} on "
                        f"{device} (outputs must be fresh buffers) [EXEC-5]")
            for k in range(i):
                if shares_memory(o, outputs[k]):
                    raise DeviceProtocolError(
                        f"graph {graph.name!r}: outputs {k} and {i} share memory on {device} "
                        "(outputs must be fresh buffers) [EXEC-5]")
        return [np.asarray(self._to_host(o)) for o in outputs]
