"""A fake ``cupy`` module for the GPU executor's plumbing tests (no GPU, no CuPy).

Device arrays are a numpy subclass with ``get()`` and ``device``; array functions are numpy's
(results viewed as device arrays); ``ElementwiseKernel`` compiles the generated kernel body
for the host (``hostc``). It exercises the executor's Python code paths (input import,
kernel and library steps, transfers, random, freshness, liveness), never GPU numerics.
"""

from __future__ import annotations

import tempfile
import types
from pathlib import Path
from typing import Any

import numpy as np

from reference_executors.cuda_codegen import KernelSource

from . import hostc

__all__ = ["make_fake_cupy"]


_LIBS: dict[str, Any] = {}
_TMP: list[tempfile.TemporaryDirectory[str]] = []


def _tmp() -> str:
    """One directory for the session's libraries, removed at interpreter exit."""
    if not _TMP:
        _TMP.append(tempfile.TemporaryDirectory(prefix="fakecupy"))
    return _TMP[0].name


class _Device:
    def __init__(self, id: int = 0) -> None:
        self.id = id

    def __enter__(self) -> _Device:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


class ndarray(np.ndarray):
    """A "device" array: numpy storage, on fake GPU 0."""

    @property
    def device(self) -> _Device:
        return _Device(0)

    def get(self) -> np.ndarray:
        return np.array(self.view(np.ndarray), copy=True)


def _wrap(r: Any) -> Any:
    if isinstance(r, np.ndarray):
        return r.view(ndarray)
    if isinstance(r, tuple | list):
        return type(r)(_wrap(x) for x in r)
    return r


class ElementwiseKernel:
    """Compiles ``operation`` for the host on first call (one library per kernel)."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str,
                 preamble: str = "", options: tuple[str, ...] = ()) -> None:
        self.source = KernelSource(name, in_params, out_params, operation, preamble, options)
        self.n_in = len([p for p in in_params.split(", ") if p])
        self._fn: Any = None
        self.calls = 0

    def __call__(self, *args: Any) -> None:
        if self._fn is None:
            lib = _LIBS.get(self.source.name)
            if lib is None:  # one host library per distinct kernel, for the whole session
                lib = hostc.build([self.source], Path(tempfile.mkdtemp(dir=_tmp())))
                _LIBS[self.source.name] = lib
            self._fn = lib.k0
        ins, outs = args[: self.n_in], list(args[self.n_in:])
        shape = outs[0].shape
        arrays = [np.broadcast_to(np.asarray(a), shape) if isinstance(a, np.ndarray)
                  and not self.source.name.startswith("ec_random") else np.asarray([a])
                  if not isinstance(a, np.ndarray) else np.asarray(a) for a in ins]
        hostc.run(self._fn, arrays, [np.asarray(o) for o in outs])
        self.calls += 1


def make_fake_cupy() -> types.ModuleType:
    m = types.ModuleType("cupy")
    m.__version__ = "13.0.0+fake"  # type: ignore[attr-defined]
    m.ndarray = ndarray  # type: ignore[attr-defined]
    m.ElementwiseKernel = ElementwiseKernel  # type: ignore[attr-defined]
    m.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1), Device=_Device)

    def array(a: Any, dtype: Any = None, copy: bool = True) -> ndarray:
        base = a.view(np.ndarray) if isinstance(a, np.ndarray) else a
        return np.array(base, dtype=dtype, copy=True).view(ndarray)

    m.array = array  # type: ignore[attr-defined]
    m.asarray = array  # type: ignore[attr-defined]
    m.from_dlpack = lambda x: np.from_dlpack(x).view(ndarray)  # type: ignore[attr-defined]

    def passthrough(name: str) -> Any:
        fn = getattr(np, name)
        if not callable(fn) or isinstance(fn, type):
            return fn  # dtypes (uint16, int64, float32, ...)
        return lambda *a, **k: _wrap(fn(*a, **k))

    m.__getattr__ = passthrough  # type: ignore[attr-defined]
    return m
