"""Library calls of the GPU executor: the non-fused ops, written once over an array module
``xp`` (``cupy`` on the GPU; ``numpy`` in the CPU tests, which compare every one with its
registry kernel) (GPU-9, GPU-10).

Each function mirrors its registry kernel (interpreter/registry/) with ``xp`` in place of
numpy; 16-bit floats are widened to float32 as the registry does (REDUCE-2). On the GPU,
sums, products, means, cumsums, softmax and matmul use CuPy's reductions and cuBLAS, whose
accumulation order differs from numpy's: they are inside each op's ``reduction(n)``
tolerance class (TOL-2), not bit-identical. Every other function here is exact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["LIBRARY", "REFUSED_OPS"]

Array = Any
Lib = Callable[[Any, Sequence[Array], dict[str, Any]], Any]

#: ops the GPU executor refuses up front, and why (GPU-11).
REFUSED_OPS: dict[str, str] = {
    "top_k": "no CuPy sort with the reference's stable order and NaN placement is verified",
    "scatter": "CuPy's scatter of duplicate indices has no defined winner",
    "debug_print": "printing needs a host round trip per call",
    "allreduce_sum": "collectives need several devices; this executor serves one graph "
                     "at a time without peer communication",
    "allgather": "collectives need several devices; this executor serves one graph at a "
                 "time without peer communication",
}


def _low(x: Array) -> bool:
    return bool(x.dtype == np.float16)


def _widen(xp: Any, x: Array) -> Array:
    return x.astype(xp.float32) if _low(x) else x


def _reduce(name: str) -> Lib:
    def fn(xp: Any, ops: Sequence[Array], attrs: dict[str, Any]) -> Array:
        (x,), axis = ops, attrs["axis"]
        f = getattr(xp, name)
        if name in ("sum", "prod") and not _low(x):
            return f(x, axis=axis, keepdims=True, dtype=x.dtype)
        return f(_widen(xp, x), axis=axis, keepdims=True).astype(x.dtype)

    return fn


def _mean(xp: Any, ops: Sequence[Array], attrs: dict[str, Any]) -> Array:
    (x,), axis = ops, attrs["axis"]
    with np.errstate(invalid="ignore"):  # an empty axis: 0/0 = NaN (REDUCE-3)
        return (xp.sum(_widen(xp, x), axis=axis, keepdims=True) / x.shape[axis]
                ).astype(x.dtype)


def _arg(name: str) -> Lib:
    def fn(xp: Any, ops: Sequence[Array], attrs: dict[str, Any]) -> Array:
        f = getattr(xp, name)
        return f(_widen(xp, ops[0]), axis=attrs["axis"], keepdims=True).astype(xp.int64)

    return fn


def _cumsum(xp: Any, ops: Sequence[Array], attrs: dict[str, Any]) -> Array:
    x, axis = ops[0], attrs["axis"]
    a = _widen(xp, x)
    a = xp.flip(a, axis) if attrs["reverse"] else a
    c = xp.cumsum(a, axis=axis, dtype=a.dtype)
    if attrs["exclusive"]:
        shifted = xp.zeros_like(c)
        dst = [slice(None)] * c.ndim
        src = [slice(None)] * c.ndim
        dst[axis], src[axis] = slice(1, None), slice(None, -1)
        shifted[tuple(dst)] = c[tuple(src)]
        c = shifted
    c = xp.flip(c, axis) if attrs["reverse"] else c
    return c.astype(x.dtype)


def _softmax(log: bool) -> Lib:
    def fn(xp: Any, ops: Sequence[Array], attrs: dict[str, Any]) -> Array:
        x, axis = ops[0], attrs["axis"]
        if x.shape[axis] == 0:
            return x.copy()
        a = _widen(xp, x)
        s = a - xp.max(a, axis=axis, keepdims=True)
        if log:
            return (s - xp.log(xp.sum(xp.exp(s), axis=axis, keepdims=True))).astype(x.dtype)
        e = xp.exp(s)
        return (e / xp.sum(e, axis=axis, keepdims=True)).astype(x.dtype)

    return fn


def _matmul(xp: Any, ops: Sequence[Array], attrs: dict[str, Any]) -> Array:
    a, b = ops
    if _low(a):
        return xp.matmul(_widen(xp, a), _widen(xp, b)).astype(a.dtype)
    return xp.matmul(a, b)


def _split(xp: Any, ops: Sequence[Array], attrs: dict[str, Any]) -> Any:
    cuts = [int(c) for c in np.cumsum(attrs["sizes"])[:-1]]
    pieces = tuple(xp.split(ops[0], cuts, axis=attrs["axis"]))
    return pieces if len(pieces) > 1 else pieces[0]


def _pad(xp: Any, ops: Sequence[Array], attrs: dict[str, Any]) -> Array:
    x, paddings = ops[0], attrs["paddings"]
    shape = tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, paddings, strict=True))
    fill = np.array(attrs["value"]).astype(x.dtype)[()]
    out = xp.full(shape, fill, x.dtype)
    out[tuple(slice(lo, lo + d) for d, (lo, _) in zip(x.shape, paddings, strict=True))] = x
    return out


def _gather(xp: Any, ops: Sequence[Array], attrs: dict[str, Any]) -> Array:
    x, indices = ops
    axis = attrs["axis"] % x.ndim
    n = x.shape[axis]
    if n == 0:  # every index is out of range: unspecified, the reference gives zeros
        return xp.zeros(x.shape[:axis] + indices.shape + x.shape[axis + 1:], x.dtype)
    idx = indices.astype(xp.int64)
    idx = xp.clip(xp.where(idx < 0, idx + n, idx), 0, n - 1)  # out of range: unspecified
    return xp.take(x, idx, axis=axis)


def _store(xp: Any, ops: Sequence[Array], attrs: dict[str, Any]) -> None:
    ops[0][...] = ops[1]  # in place (MUT-2)


def _store_slice(xp: Any, ops: Sequence[Array], attrs: dict[str, Any]) -> None:
    ops[0][tuple(slice(a, b, c) for a, b, c in attrs["slices"])] = ops[1]


LIBRARY: dict[str, Lib] = {
    "reshape": lambda xp, ops, attrs: xp.reshape(ops[0], attrs["shape"]),
    "permute": lambda xp, ops, attrs: xp.transpose(ops[0], attrs["perm"]),
    "slice": lambda xp, ops, attrs: ops[0][tuple(slice(a, b, c) for a, b, c in
                                                 attrs["slices"])],
    "broadcast_to": lambda xp, ops, attrs: xp.broadcast_to(ops[0], attrs["shape"]),
    "concat": lambda xp, ops, attrs: xp.concatenate(list(ops), axis=attrs["axis"]),
    "split": _split,
    "tile": lambda xp, ops, attrs: xp.tile(ops[0], attrs["repeats"]),
    "pad": _pad,
    "gather": _gather,
    "reduce_sum": _reduce("sum"),
    "reduce_prod": _reduce("prod"),
    "reduce_max": _reduce("max"),
    "reduce_min": _reduce("min"),
    "reduce_mean": _mean,
    "argmax": _arg("argmax"),
    "argmin": _arg("argmin"),
    "cumsum": _cumsum,
    "softmax": _softmax(log=False),
    "logsoftmax": _softmax(log=True),
    "matmul": _matmul,
    "buffer_load": lambda xp, ops, attrs: ops[0].copy(),  # copy-on-load (MUT-1)
    "buffer_store": _store,
    "buffer_store_slice": _store_slice,
    "buffer_create": lambda xp, ops, attrs: xp.zeros(attrs["shape"],
                                                     attrs["dtype"].to_numpy()),
}
