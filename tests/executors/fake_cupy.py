"""A fake ``cupy`` module for CPU tests of the GPU executor and of the registry kernels over
the array namespace seam (``interpreter/arrays.py``): no GPU, no CuPy.

Its device arrays (:class:`ndarray`) hold numpy storage behind a handle that is *not* a
numpy array: like a ``cupy.ndarray`` it refuses implicit conversion (``np.asarray``), and,
stricter than CuPy, numpy's functions and ufuncs refuse it too, so a kernel that calls
``np.`` on a device array (instead of ``xp.``) fails here. The module's functions are the
CuPy functions the kernels and the executor use, computed by numpy on the storage; a host
numpy array passed to one is refused (CuPy refuses them too). ``ElementwiseKernel``
compiles the generated kernel body for the host (``hostc``). Results are numpy's: this
checks namespace use and the executor's plumbing, never GPU numerics.
"""

from __future__ import annotations

import tempfile
import types
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from reference_executors.cuda_codegen import KernelSource

from . import hostc

__all__ = ["CUPY_FUNCTIONS", "host", "make_fake_cupy", "ndarray"]

#: The CuPy functions the fake serves (each one a documented CuPy 13 function).
CUPY_FUNCTIONS = frozenset({
    "arange", "argmax", "argmin", "argsort", "broadcast_to", "ceil", "clip", "concatenate",
    "copyto", "cumsum", "empty", "exp", "flip", "floor", "full", "indices", "isnan", "log",
    "matmul", "max", "maximum", "min", "minimum", "nan_to_num", "prod", "ravel_multi_index",
    "reshape", "split", "stack", "sum", "take", "take_along_axis", "tile", "transpose", "trunc",
    "unique", "where", "zeros", "zeros_like", "mean", "sqrt"})

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


def _refuse(what: str) -> NoReturn:
    raise TypeError(f"{what} on a device array (fake cupy): a kernel must compute in the "
                    "namespace of its operands, xp = arrays.namespace(x) (interpreter/arrays.py)")


def _unwrap(x: Any) -> Any:
    """Device arrays to their storage, recursively; a host numpy array is refused."""
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, np.ndarray):
        _refuse("a host numpy array mixed into a CuPy operation")
    if isinstance(x, tuple | list):
        return type(x)(_unwrap(v) for v in x)
    return x


def _wrap(r: Any) -> Any:
    """numpy results as device arrays (a numpy scalar as a 0-d array, as CuPy returns)."""
    if isinstance(r, np.ndarray):
        return ndarray(r)
    if isinstance(r, np.generic):
        return ndarray(np.array(r))
    if isinstance(r, tuple | list):
        return type(r)(_wrap(x) for x in r)
    return r


def _call(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return _wrap(fn(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))


def _operator(name: str) -> Any:
    def op(self: ndarray, *args: Any) -> Any:
        return _call(getattr(self._a, name), args, {})

    op.__name__ = name
    return op


class ndarray:
    """A "device" array on fake GPU 0: numpy storage behind a handle numpy refuses."""

    __slots__ = ("_a",)
    __array_ufunc__ = None  # numpy's ufuncs refuse it; Python operators use ours
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, storage: np.ndarray) -> None:
        self._a = storage

    def __array__(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("implicit conversion to a numpy array")

    def __array_function__(self, func: Any, types_: Any, args: Any, kwargs: Any) -> NoReturn:
        _refuse(f"numpy.{func.__name__}")

    @property
    def device(self) -> _Device:
        return _Device(0)

    @property
    def base(self) -> Any:
        return self._a.base  # None unless a view, as CuPy's

    def get(self) -> np.ndarray:
        return np.array(self._a, copy=True)

    def __getattr__(self, name: str) -> Any:  # shape, dtype, astype, copy, view, reshape, ...
        if name.startswith("__"):
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if callable(attr):
            return lambda *args, **kwargs: _call(attr, args, kwargs)
        return _wrap(attr) if isinstance(attr, np.ndarray) else attr

    def __setitem__(self, key: Any, value: Any) -> None:
        self._a[_unwrap(key)] = _unwrap(value)

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Any:
        return (_wrap(row) for row in self._a)

    def __bool__(self) -> bool:
        return bool(self._a)

    def __int__(self) -> int:
        return int(self._a)

    def __float__(self) -> float:
        return float(self._a)

    def __index__(self) -> int:
        return self._a.__index__()

    def __repr__(self) -> str:
        return f"fake_cupy.ndarray({self._a!r})"


for _name in ("getitem", "add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv",
              "floordiv", "rfloordiv", "mod", "rmod", "pow", "rpow", "and", "rand", "or", "ror",
              "xor", "rxor", "lshift", "rlshift", "rshift", "rrshift", "neg", "pos", "abs",
              "invert", "eq", "ne", "lt", "le", "gt", "ge"):  # indexing and operators
    setattr(ndarray, f"__{_name}__", _operator(f"__{_name}__"))


def host(a: Any) -> np.ndarray:
    """The numpy storage of a device array (tests only: no copy)."""
    assert isinstance(a, ndarray), type(a)
    return a._a


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
        ins, outs = args[: self.n_in], [host(o) for o in args[self.n_in:]]
        shape = outs[0].shape
        random = self.source.name.startswith("ec_random")
        arrays = [np.asarray([a]) if not isinstance(a, ndarray)  # a scalar parameter
                  else host(a) if random else np.broadcast_to(host(a), shape) for a in ins]
        hostc.run(self._fn, arrays, outs)
        self.calls += 1


def make_fake_cupy() -> types.ModuleType:
    m = types.ModuleType("cupy")
    m.__version__ = "13.0.0+fake"  # type: ignore[attr-defined]
    m.ndarray = ndarray  # type: ignore[attr-defined]
    m.ElementwiseKernel = ElementwiseKernel  # type: ignore[attr-defined]
    m.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1), Device=_Device)

    def array(a: Any, dtype: Any = None, copy: bool = True) -> ndarray:
        """An upload (or a device copy): the one place host arrays are accepted."""
        base = a._a if isinstance(a, ndarray) else a
        return ndarray(np.array(base, dtype=dtype, copy=True))

    m.array = array  # type: ignore[attr-defined]
    m.asarray = array  # type: ignore[attr-defined]
    m.from_dlpack = lambda x: ndarray(np.from_dlpack(x))  # type: ignore[attr-defined]

    def function(name: str) -> Any:
        fn = getattr(np, name)
        if isinstance(fn, type):
            return fn  # dtypes (uint16, int64, float32, ...) are numpy's in CuPy too
        if name not in CUPY_FUNCTIONS:
            raise AttributeError(f"fake cupy has no {name!r}: add it to CUPY_FUNCTIONS if "
                                 "CuPy documents it")
        return lambda *args, **kwargs: _call(fn, args, kwargs)

    m.__getattr__ = function  # type: ignore[attr-defined]
    return m
