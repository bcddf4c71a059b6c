"""Graphs and values that expose composition and rounding effects (CONF-50).

Random graphs rarely hold the *shape* of graph or the *values* a platform effect needs, so
effects such as FMA contraction pass them. Each :class:`Hazard` here is one small graph
built for one effect, with inputs chosen so that the effect changes the result:

* ``fma``: ``mul`` feeding ``add``/``sub`` with ``c ~ -round(a*b)``, so a fused ``a*b+c``
  returns the product's rounding error where two roundings give (nearly) 0 (NUM-12);
* ``chain``: ``(x + y) - y``, ``(x * z) / z`` and ``x * y + z``, where keeping intermediates
  wider than their dtype returns ``x`` exactly and rounding each one does not (NUM-12);
* ``narrow``: ``cast`` to a narrower float at and one source ULP either side of the
  target's rounding midpoints, and integers past 2^24 / 2^53 (NUM-4: one rounding);
* ``overflow``: integer ``negate``/``abs``/``add``/``sub``/``mul`` on the boundary values of
  every integer dtype (NUM-2: wrap-around).

Every effect shows in most elements of every example, so any seed catches it.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from interpreter.dtype import DType
from interpreter.errors import GraphTypeError
from interpreter.graph import ops
from interpreter.graph.core import Graph, TensorValue
from interpreter.graph.lowering import lower
from interpreter.types import DeviceRef, TensorType

from .strategies import Case

__all__ = ["FLOATS", "NARROWINGS", "Hazard", "build_case", "hazards"]

#: Float dtypes with arithmetic (``add``/``mul``/``div``).
FLOATS = (DType.float16, DType.bfloat16, DType.float32, DType.float64)
_F8 = (DType.float8_e4m3fn, DType.float8_e5m2)
#: (source, target) of the narrowing casts generated.
NARROWINGS: tuple[tuple[DType, DType], ...] = (
    *[(DType.float64, t) for t in (DType.float32, DType.float16, DType.bfloat16, *_F8)],
    *[(DType.float32, t) for t in (DType.float16, DType.bfloat16, *_F8)],
    *[(s, DType.float32) for s in (DType.int32, DType.int64, DType.uint32, DType.uint64)],
    *[(s, DType.float64) for s in (DType.int64, DType.uint64)],
)
_INTS = (DType.int8, DType.int16, DType.int32, DType.int64,
         DType.uint8, DType.uint16, DType.uint32, DType.uint64)
#: Elements per input array.
SIZE = 64


@dataclass(frozen=True)
class Hazard:
    """One generated effect: ``family`` in fma/chain/narrow/overflow, the cell's data dtype
    and (``narrow``) the cast target."""

    family: str
    dtype: DType
    target: DType | None = None

    @property
    def id(self) -> str:
        tail = f"-{self.target.value}" if self.target is not None else ""
        return f"{self.family}-{self.dtype.value}{tail}"

    @property
    def target_effect(self) -> str:
        """What the cell's graph is built to expose, with the rules it would break."""
        return {"fma": "FMA contraction of mul feeding add/sub, rounding once [NUM-12, NUM-9]",
                "chain": "intermediates kept wider than their dtype in an elementwise chain "
                         "[NUM-12, NUM-9]",
                "narrow": "double rounding of a narrowing cast near the target's midpoints "
                          "[NUM-4]",
                "overflow": "saturation or trapping at the integer overflow boundary "
                            "[NUM-2]"}[self.family]

    @property
    def rules(self) -> tuple[str, ...]:
        return {"fma": ("NUM-9", "NUM-12"), "chain": ("NUM-9", "NUM-12"),
                "narrow": ("NUM-4",), "overflow": ("NUM-2",)}[self.family]


def hazards() -> list[Hazard]:
    """Every hazard cell, in a stable order."""
    out = [Hazard("fma", d) for d in FLOATS] + [Hazard("chain", d) for d in FLOATS]
    out += [Hazard("narrow", s, t) for s, t in NARROWINGS]
    out += [Hazard("overflow", d) for d in _INTS]
    return out


def build_case(h: Hazard, seed: int) -> Case:
    """The hazard's graph with inputs drawn from ``seed`` (deterministic)."""
    rng = np.random.default_rng(seed)
    builder = {"fma": _fma, "chain": _chain, "narrow": _narrow, "overflow": _overflow}
    graph, inputs = builder[h.family](h, rng)
    lower(graph)
    return Case(graph, inputs, op=h.family, dtype=h.dtype, shape_class="general", seed=seed)


# -- graphs ----------------------------------------------------------------------------------
def _graph(name: str, inputs: list[np.ndarray]) -> tuple[Graph, list[TensorValue]]:
    types = [TensorType(DType.from_numpy(a.dtype), tuple(a.shape), DeviceRef.CPU())
             for a in inputs]
    g = Graph(name, input_types=types)
    return g, [v for v in g.inputs if isinstance(v, TensorValue)]


def _fma(h: Hazard, rng: np.random.Generator) -> tuple[Graph, list[np.ndarray]]:
    a, b = _mantissas(h.dtype, rng, 2)
    p = (a * b).astype(a.dtype)  # the correctly rounded product (exact in a wider type)
    c = -p
    nudge = rng.random(SIZE) < 0.25  # some c next to -p, not on it
    c[nudge] = (p[nudge].astype(np.float64) * -1.125).astype(a.dtype)
    g, (va, vb, vc, vp) = _graph(f"hazard_fma_{h.dtype.value}", [a, b, c, p])
    with g:
        g.output(ops.add(ops.mul(va, vb), vc), ops.sub(ops.mul(va, vb), vp),
                 ops.add(vc, ops.mul(vb, va)))
    return g, [a, b, c, p]


def _chain(h: Hazard, rng: np.random.Generator) -> tuple[Graph, list[np.ndarray]]:
    x, y, z = _mantissas(h.dtype, rng, 3)
    y = (y * np.exp2(rng.integers(1, 5, SIZE))).astype(x.dtype)  # x + y inexact
    g, (vx, vy, vz) = _graph(f"hazard_chain_{h.dtype.value}", [x, y, z])
    with g:
        g.output(ops.sub(ops.add(vx, vy), vy), ops.div(ops.mul(vx, vz), vz),
                 ops.add(ops.mul(vx, vy), vz))
    return g, [x, y, z]


def _mantissas(dtype: DType, rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """``n`` arrays of ``dtype`` with full random mantissas, signs, exponents in [-4, 4]."""
    nmant = int(ml_dtypes.finfo(dtype.to_numpy()).nmant)
    out = []
    for _ in range(n):
        m = 1 + rng.integers(0, 2**nmant, SIZE, dtype=np.int64) / 2.0**nmant
        s = rng.choice([-1.0, 1.0], SIZE) * np.exp2(rng.integers(-4, 5, SIZE))
        out.append((m * s).astype(dtype.to_numpy()))
    return out


def _narrow(h: Hazard, rng: np.random.Generator) -> tuple[Graph, list[np.ndarray]]:
    assert h.target is not None
    src = h.dtype.to_numpy()
    x = _int_midpoints(h.dtype, h.target, rng) if h.dtype.is_integral() \
        else _float_midpoints(h.dtype, h.target, rng)
    g, (vx,) = _graph(f"hazard_cast_{h.dtype.value}_{h.target.value}", [x.astype(src)])
    with g:
        g.output(ops.cast(vx, h.target))
    return g, [x.astype(src)]


def _float_midpoints(src: DType, dst: DType, rng: np.random.Generator) -> np.ndarray:
    """Midpoints between neighbouring finite ``dst`` values (normal and subnormal, both
    signs), each exactly, one ``src`` ULP below and one above."""
    t = dst.to_numpy()
    bits = np.dtype(f"u{t.itemsize}")
    n = SIZE // 4 + 1
    raw = rng.integers(0, 2 ** (8 * t.itemsize - 1) - 1, n, dtype=np.uint64).astype(bits)
    subnormal = rng.random(n) < 0.2
    raw[subnormal] %= bits.type(1 << int(ml_dtypes.finfo(t).nmant))
    lo = raw.view(t).astype(np.float64)
    hi = (raw + bits.type(1)).view(t).astype(np.float64)
    keep = np.isfinite(lo) & np.isfinite(hi)
    sign = rng.choice([-1.0, 1.0], int(keep.sum()))
    mid = ((lo[keep] + hi[keep]) / 2 * sign).astype(src.to_numpy())
    down = np.nextafter(mid, mid.dtype.type(-np.inf))
    up = np.nextafter(mid, mid.dtype.type(np.inf))
    return np.concatenate([mid, down, up])[:SIZE]


def _int_midpoints(src: DType, dst: DType, rng: np.random.Generator) -> np.ndarray:
    """Integers at ``dst``'s midpoints past 2^(mantissa bits + 1), and one either side."""
    info = np.iinfo(src.to_numpy())
    nmant = int(ml_dtypes.finfo(dst.to_numpy()).nmant)
    top = info.bits - (1 if info.min < 0 else 0)  # bits of the largest magnitude
    vals: list[int] = []
    for _ in range(SIZE // 3 + 1):
        e = int(rng.integers(nmant + 1, top))  # magnitude in [2^e, 2^(e+1))
        step = 1 << (e - nmant)  # the target's spacing there (> 1)
        base = (1 << e) + step * int(rng.integers(0, 1 << nmant))
        mid = base + step // 2
        sign = -1 if info.min < 0 and rng.random() < 0.5 else 1
        vals += [sign * v for v in (mid, mid - 1, mid + 1)]
    clipped = [min(max(v, int(info.min)), int(info.max)) for v in vals[:SIZE]]
    return np.array(clipped, dtype=src.to_numpy())


def _overflow(h: Hazard, rng: np.random.Generator) -> tuple[Graph, list[np.ndarray]]:
    t = h.dtype.to_numpy()
    info = np.iinfo(t)
    edge = sorted({int(info.min), int(info.min) + 1, int(info.max) - 1, int(info.max),
                   0, 1, 2, -1 if info.min < 0 else 3, int(info.max) // 2 + 1})
    pairs = [(a, b) for a in edge for b in edge]
    rng.shuffle(pairs)
    x = np.array([a for a, _ in pairs[:SIZE]], dtype=t)
    y = np.array([b for _, b in pairs[:SIZE]], dtype=t)
    g, (vx, vy) = _graph(f"hazard_overflow_{h.dtype.value}", [x, y])
    with g:
        outs = [ops.add(vx, vy), ops.sub(vx, vy), ops.mul(vx, vy), ops.abs(vx)]
        try:
            outs.append(ops.negate(vx))
        except GraphTypeError:  # a dtype negate does not take (unsigned: OPDT-1)
            pass
        g.output(*outs)
    return g, [x, y]
