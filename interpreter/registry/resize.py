"""Resize ops: nearest, linear and bicubic interpolation (spec/ops/resize_*.md).

Each output index ``i`` of a resized axis (input length ``n``, output length ``m``) maps to
an exact input coordinate ``c = num / den`` (rational, computed with integers: RESIZE
coordinate modes below). Nearest rounds ``c`` to one input index; linear and bicubic read a
window of ``T`` taps (2 or 4) around ``floor(c)`` with weights from ``c - floor(c)``, taps
outside ``[0, n)`` clamped to the edge. Axes whose length does not change are copied
(every mode maps them to themselves). Kernels compute in the operands' namespace (``xp``);
the taps and weights depend only on the shapes and are computed on the host.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import arrays
from ..types import ValueType
from ..validators import int_tuple_problem
from .attrtypes import AttrType
from .core import ArgSource, Attrs, OpCall, OpDef, Tolerance, register
from .dtypesets import ALL, FLOATS
from .reduction import float_info, widen

__all__ = ["COORDINATE_MODES", "ROUND_MODES", "coordinates"]

Array = Any
Taps = tuple[np.ndarray, np.ndarray]  # (indices (m, T) int64 in [0, n), weights (m, T) float64)

#: MAX's coordinate_transform_mode values, in MAX's integer order (0..3)
COORDINATE_MODES = ("half_pixel", "align_corners", "asymmetric", "half_pixel_1D")
#: MAX's round_mode values of resize_nearest, in MAX's integer order (0..3)
ROUND_MODES = ("HalfDown", "HalfUp", "Floor", "Ceil")
_STR = AttrType("str", lambda v: type(v) is str)
_MODE_TYPES = {"coordinate_transform_mode": AttrType(
    "str", _STR.check, f"one of {', '.join(COORDINATE_MODES)} (MAX's 0..3)"),
    "round_mode": AttrType("str", _STR.check, f"one of {', '.join(ROUND_MODES)} (MAX's 0..3)")}
#: a float32 coordinate is within this much (times |c| + 1) of the exact one (resize_nearest.C3)
COORDINATE_SLACK = 2.0 ** -18


def coordinates(n: int, m: int, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """The exact input coordinate ``num / den`` of each output index ``i`` in ``[0, m)``
    (int64 arrays; ``den > 0``)."""
    i = np.arange(m, dtype=np.int64)
    one = np.ones(m, np.int64)
    if mode in ("half_pixel", "half_pixel_1D"):
        if mode == "half_pixel_1D" and m == 1:
            return 0 * i, one
        return (2 * i + 1) * n - m, 2 * m * one  # (i + 1/2) * n / m - 1/2
    if mode == "align_corners":
        return (i * (n - 1), max(m - 1, 1) * one) if m > 1 else (0 * i, one)
    return i * n, m * one  # asymmetric: i * n / m


def _floor_frac(num: np.ndarray, den: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """floor(c) and c - floor(c) of c = num / den, exactly (then the fraction in float64)."""
    fl = num // den
    return fl, (num - fl * den) / den


def _window(n: int, m: int, mode: str, kernel: Callable[[np.ndarray], np.ndarray],
            offsets: range) -> Taps:
    fl, t = _floor_frac(*coordinates(n, m, mode))
    off = np.asarray(offsets)
    idx = np.clip(fl[:, None] + off, 0, n - 1)
    return idx, kernel(t[:, None] - off)


def _tent(d: np.ndarray) -> np.ndarray:
    return np.maximum(0.0, 1.0 - np.abs(d))


def _keys(d: np.ndarray, a: float = -0.75) -> np.ndarray:
    """Keys' cubic convolution kernel with ``a = -0.75`` (PyTorch's and MAX's)."""
    s = np.abs(d)
    near = ((a + 2) * s - (a + 3)) * s * s + 1
    far = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
    return np.where(s <= 1, near, np.where(s < 2, far, 0.0))


def linear_taps(n: int, m: int, mode: str) -> Taps:
    return _window(n, m, mode, _tent, range(0, 2))


def cubic_taps(n: int, m: int, mode: str) -> Taps:
    return _window(n, m, mode, _keys, range(-1, 3))


def nearest_index(n: int, m: int, mode: str, round_mode: str) -> np.ndarray:
    """The input index each output index reads: ``c`` rounded by ``round_mode``, clamped."""
    num, den = coordinates(n, m, mode)
    rounded = {"HalfDown": -((den - 2 * num) // (2 * den)),  # ceil(c - 1/2)
               "HalfUp": (2 * num + den) // (2 * den),      # floor(c + 1/2)
               "Floor": num // den, "Ceil": -(-num // den)}[round_mode]
    return np.clip(rounded, 0, max(n - 1, 0))


def _resized(x_shape: tuple[int, ...], shape: tuple[int, ...]) -> list[int]:
    return [a for a, (n, m) in enumerate(zip(x_shape, shape, strict=True)) if n != m]


def _along(v: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """A per-output-index vector shaped to broadcast along ``axis``."""
    return v.reshape((-1,) + (1,) * (rank - axis - 1))


def _apply(a: Array, axis: int, idx: np.ndarray, w: np.ndarray, xp: Any) -> Array:
    """``sum over taps t of w[:, t] * a[idx[:, t]]`` along ``axis``, in ``a``'s dtype."""
    terms = [xp.asarray(_along(w[:, t], axis, a.ndim)) * xp.take(a, xp.asarray(idx[:, t]),
                                                                 axis=axis)
             for t in range(idx.shape[1])]
    out = terms[0]
    for term in terms[1:]:
        out = out + term
    return out


def interpolate(x: Array, shape: tuple[int, ...], taps: Callable[[int, int], Taps]) -> Array:
    """``sum over taps of w * x[idx]``, one resized axis after the other (in axis order), in
    float32 for 16-bit floats (float64 for float64), weights rounded to that dtype."""
    xp, a = arrays.namespace(x), widen(x)
    for axis in _resized(x.shape, shape):
        idx, w = taps(x.shape[axis], shape[axis])
        a = _apply(a, axis, idx, w.astype(a.dtype), xp)
    return a.astype(x.dtype)


# -- type rule and sampler (shared) --------------------------------------------------------
def _resize_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                  ) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    name = op.name
    if "coordinate_transform_mode" in op.attrs and \
            attrs.get("coordinate_transform_mode") not in COORDINATE_MODES:
        op.fail(types, f"{name}.C2", f"coordinate_transform_mode "
                f"{attrs.get('coordinate_transform_mode')!r} is not one of {COORDINATE_MODES}")
    if "round_mode" in op.attrs and attrs.get("round_mode") not in ROUND_MODES:
        op.fail(types, f"{name}.C2", f"round_mode {attrs.get('round_mode')!r} is not one of "
                f"{ROUND_MODES}")
    shape: Any = attrs.get("shape")
    problem = int_tuple_problem("shape", shape, t.rank)
    if problem is not None:
        op.fail(types, f"{name}.C1", f"{problem} (one output length per axis of x)")
    empty = [a for a, (n, m) in enumerate(zip(t.shape, shape, strict=True)) if n == 0 < m]
    if empty:
        op.fail(types, f"{name}.C1", f"axis {empty[0]} has length 0 and cannot grow to "
                f"{shape[empty[0]]}: there is nothing to interpolate")
    return (t.with_(shape=tuple(shape)),)


def _sample_lengths(src: ArgSource, rank_lo: int, rank_hi: int, keep: int = 0
                    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(input shape, output shape): each axis kept, doubled, halved or redrawn (long and
    1-element axes on either side, non-integer scales); the first ``keep`` axes kept."""
    x_shape = src.shape(min_rank=rank_lo, max_rank=rank_hi)
    out: list[int] = []
    for a, n in enumerate(x_shape):
        how = "keep" if a < keep or n == 0 else src.choice(
            ["one", "keep", "half", "any", "any", "double"])
        rest = max(1, int(np.prod(out + list(x_shape[a + 1:]))))
        m = {"keep": n, "double": 2 * n, "half": max(n // 2, 1), "one": 1}.get(how)
        out.append(src.axis_size(1, 7, rest=rest) if m is None else m)
    return x_shape, tuple(out)


def _sampler(dtypes: frozenset[Any], modes: bool, rounding: bool, rank: tuple[int, int],
             keep: int = 0) -> Callable[[ArgSource], OpCall]:
    def sample(src: ArgSource) -> OpCall:
        dtype = src.dtype(dtypes, data=True)
        x_shape, shape = _sample_lengths(src, *rank, keep=keep)
        attrs: dict[str, Any] = {"shape": shape}
        if modes:
            attrs["coordinate_transform_mode"] = src.choice(COORDINATE_MODES)
        if rounding:
            attrs["round_mode"] = src.choice(ROUND_MODES)
        return OpCall([src.values(dtype, x_shape)], attrs)
    return sample


# -- resize_nearest ------------------------------------------------------------------------
def _resize_nearest(x: Array, *, shape: tuple[int, ...], coordinate_transform_mode: str,
                    round_mode: str) -> Array:
    xp = arrays.namespace(x)
    for axis in _resized(x.shape, shape):
        idx = nearest_index(x.shape[axis], shape[axis], coordinate_transform_mode, round_mode)
        x = xp.take(x, xp.asarray(idx), axis=axis)
    return x


def _near_boundary(n: int, m: int, mode: str, round_mode: str) -> np.ndarray:
    """Output indices whose exact coordinate is within ``COORDINATE_SLACK * (|c| + 1)`` of
    a rounding boundary (half-integers, or integers for floor/ceil) but not exactly on one
    with a power-of-two ratio of the axis lengths (where float arithmetic is exact)."""
    num, den = coordinates(n, m, mode)
    c = num / den
    shift = 0.5 if round_mode.startswith("Half") else 0.0
    dist = np.abs(c - shift - np.round(c - shift))
    exact_ties = (dist == 0) & _dyadic(n, m, mode)
    return (dist <= COORDINATE_SLACK * (np.abs(c) + 1)) & ~exact_ties


def _dyadic(n: int, m: int, mode: str) -> bool:
    """The mode's scale is a power of two (or 1), so a float computation of c is exact."""
    p, q = (n - 1, m - 1) if mode == "align_corners" else (n, m)
    if min(p, q) <= 0 or (mode == "half_pixel_1D" and m == 1):
        return True
    r = max(p, q) // min(p, q)
    return max(p, q) % min(p, q) == 0 and r & (r - 1) == 0


def _resize_nearest_unspecified(x: np.ndarray, *, shape: tuple[int, ...],
                                coordinate_transform_mode: str, round_mode: str
                                ) -> np.ndarray:
    """Elements whose coordinate on some axis lies at a float32 rounding error from a
    rounding boundary (resize_nearest.C3)."""
    mask = np.zeros(shape, bool)
    for axis in _resized(x.shape, shape):
        near = _near_boundary(x.shape[axis], shape[axis], coordinate_transform_mode, round_mode)
        mask |= _along(near, axis, len(shape))
    return mask


register(OpDef("resize_nearest",
               summary="Resize every axis by nearest-neighbour sampling (MAX's coordinate "
                       "transform and round modes).",
               category="resize", operands=("input",),
               attrs=("shape", "coordinate_transform_mode", "round_mode"),
               infer=_resize_infer, kernel=_resize_nearest, dtypes=ALL,
               unspecified=_resize_nearest_unspecified,
               sample=_sampler(ALL, modes=True, rounding=True, rank=(0, 3)),
               traits=frozenset({"byte-copy"}), attr_types=_MODE_TYPES))


# -- resize_linear, resize_bicubic: tolerance, unspecified ----------------------------------
def _window_sums(x: np.ndarray, shape: tuple[int, ...], taps: Callable[[int, int], Taps],
                 weight: Callable[[np.ndarray], np.ndarray], also: tuple[int, ...] = ()
                 ) -> np.ndarray:
    """``interpolate`` in float64 with the weights replaced by ``weight(w)``, on the resized
    axes and the axes ``also``."""
    a = np.asarray(x, np.float64)
    for axis in sorted(set(_resized(x.shape, shape)) | set(also)):
        idx, w = taps(x.shape[axis], shape[axis])
        a = _apply(a, axis, idx, weight(w), np)
    return a


def _tolerance(taps_of: Callable[[str], Callable[[int, int], Taps]], mode: str) -> Tolerance:
    """REDUCE-6 with n = 2 per resized axis and M = the window's |x| sum scaled by the
    coordinates' magnitude: a float32 error of c moves the weights (|dw/dc| <= 1.35), and the
    taps' own roundings (up to 4 per axis) are covered by M's factor, which is >= 2."""

    def count(ops: Sequence[np.ndarray], attrs: Attrs, expected: Array) -> Any:
        return 2 ** len(_resized(ops[0].shape, attrs["shape"]))

    def scale(ops: Sequence[np.ndarray], attrs: Attrs, expected: Array) -> Any:
        x, shape = ops[0], attrs["shape"]
        cmode = attrs.get("coordinate_transform_mode", mode)
        coord = np.ones(shape)
        for axis in _resized(x.shape, shape):
            num, den = coordinates(x.shape[axis], shape[axis], cmode)
            coord = coord + _along(np.abs(num / den) + 1, axis, len(shape))
        finite = np.where(np.isfinite(np.asarray(x, np.float64)), np.abs(x), 0.0)
        return coord * _window_sums(finite, shape, taps_of(cmode), np.ones_like)

    count.__doc__ = "2 ** (number of resized axes)"
    scale.__doc__ = ("(1 + sum over resized axes of (|c| + 1)) * (sum of |x| over the "
                     "window), c the exact input coordinate")
    return Tolerance("reduction", 1, count, scale)


def _pass_overflow(a: np.ndarray, shape: tuple[int, ...], taps: Callable[[int, int], Taps],
                   big: float) -> np.ndarray:
    """Elements one of whose separable passes, in some order of the resized axes, meets a
    partial ``|terms|`` sum past ``big``: after the passes over some of the axes (``|w|``
    sums of ``a``, which is ``|x|``), the largest such sum in the element's window along
    the other axes."""
    resized = _resized(a.shape, shape)
    out = np.zeros(shape, bool)
    for k in range(1, len(resized)):
        for first in itertools.combinations(resized, k):
            sums = a
            for axis in first:
                idx, w = taps(a.shape[axis], shape[axis])
                sums = _apply(sums, axis, idx, np.abs(w), np)
            for axis in resized:
                if axis not in first:
                    idx, _ = taps(a.shape[axis], shape[axis])
                    sums = np.max([np.take(sums, idx[:, t], axis=axis)
                                   for t in range(idx.shape[1])], axis=0)
            out |= sums > big
    return out


def _unspecified(taps_of: Callable[[str], Callable[[int, int], Taps]], mode: str,
                 filtered: tuple[int, ...] | None = None) -> Callable[..., np.ndarray]:
    def unspecified(x: np.ndarray, *, shape: tuple[int, ...], **attrs: Any) -> np.ndarray:
        """Elements whose window, widened by one sample on each side of every resized axis
        and of the axes ``filtered`` (None: every axis) whose length stays, holds NaN or
        +-inf (an implementation may filter an axis whose length stays: a zero weight times
        an infinity is NaN), or whose |terms| add up past the dtype's max, over the whole
        window or in a separable pass over some of the resized axes."""
        taps = taps_of(attrs.get("coordinate_transform_mode", mode))

        def widened(n: int, m: int) -> Taps:
            idx, _ = taps(n, m)
            wide = np.concatenate([idx[:, :1] - 1, idx, idx[:, -1:] + 1], axis=1)
            return np.clip(wide, 0, n - 1), np.ones(wide.shape)

        bad = ~np.isfinite(np.asarray(x, np.float64))
        big = float(float_info(x.dtype).max)
        with np.errstate(all="ignore"):
            hits = _window_sums(bad.astype(np.float64), shape, widened, np.ones_like,
                                tuple(range(x.ndim)) if filtered is None else filtered)
            finite = np.where(bad, 0.0, np.abs(np.asarray(x, np.float64)))
            total = _window_sums(finite, shape, taps, np.abs)
            passes = _pass_overflow(finite, shape, taps, big)
        return (hits > 0) | (total > big) | passes
    return unspecified


# -- resize_linear -------------------------------------------------------------------------
def _resize_linear(x: Array, *, shape: tuple[int, ...], coordinate_transform_mode: str
                   ) -> Array:
    return interpolate(x, shape, lambda n, m: linear_taps(n, m, coordinate_transform_mode))


def _linear_taps_of(mode: str) -> Callable[[int, int], Taps]:
    return lambda n, m: linear_taps(n, m, mode)


register(OpDef("resize_linear",
               summary="Resize every axis by linear interpolation (separable tent filter, "
                       "MAX's coordinate transform modes; floats).",
               category="resize", operands=("input",),
               attrs=("shape", "coordinate_transform_mode"),
               infer=_resize_infer, kernel=_resize_linear, dtypes=FLOATS,
               tolerance=_tolerance(_linear_taps_of, "half_pixel"),
               unspecified=_unspecified(_linear_taps_of, "half_pixel"),
               sample=_sampler(FLOATS, modes=True, rounding=False, rank=(0, 3)),
               attr_types={"coordinate_transform_mode": _MODE_TYPES["coordinate_transform_mode"]}))


# -- resize_bicubic ------------------------------------------------------------------------
def _bicubic_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                   ) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    if t.rank != 4:
        op.fail(types, "resize_bicubic.C3", f"input must have rank 4 (NCHW), got rank {t.rank}")
    (out,) = _resize_infer(op, types, attrs)
    if out.shape[:2] != t.shape[:2]:
        op.fail(types, "resize_bicubic.C3", f"shape {list(attrs['shape'])} must keep the "
                f"batch and channel lengths {list(t.shape[:2])}")
    return (out,)


def _cubic_taps_of(mode: str) -> Callable[[int, int], Taps]:
    return lambda n, m: cubic_taps(n, m, mode)


def _resize_bicubic(x: Array, *, shape: tuple[int, ...]) -> Array:
    return interpolate(x, shape, _cubic_taps_of("half_pixel"))


register(OpDef("resize_bicubic",
               summary="Resize the H and W axes of an NCHW tensor by bicubic interpolation "
                       "(Keys, a = -0.75, half-pixel coordinates; floats).",
               category="resize", operands=("input",), attrs=("shape",),
               infer=_bicubic_infer, kernel=_resize_bicubic, dtypes=FLOATS,
               tolerance=_tolerance(_cubic_taps_of, "half_pixel"),
               unspecified=_unspecified(_cubic_taps_of, "half_pixel", filtered=(2, 3)),
               sample=_sampler(FLOATS, modes=False, rounding=False, rank=(4, 4), keep=2)))
