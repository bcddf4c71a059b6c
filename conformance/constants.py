"""Constant and weak-scalar reach (CONF-88): hard constants, their twins, and the graphs.

Compilers rewrite graphs around constants: strength reduction (``x / c`` -> ``x * (1/c)``),
constant folding, plan caches keyed by value. ``hard_constants(dtype)`` is the set every
constant-reach graph meets: inexact reciprocals (3, 7, 10, 0.1, 1/3), powers of two, +-0,
NaN with the default and a non-default payload, +-inf, subnormals, the smallest normal,
+-max (integers: small values, powers of two, 0, +-1, min, max). ``twin(c)`` is the value a
twin graph puts in ``c``'s place: ``-c``, or only a zero's sign flipped, or a NaN's payload.

``constant_case(op, dtype, weak, twin)`` is one graph: ``op(x, c)`` and ``op(c, x)`` for
every hard ``c`` of a group (``select``: ``select(cond, x, c)`` and ``select(cond, c, x)``), with
``c`` staged as a rank-0 ``constant`` node or, ``weak=True``, as the front end stages a
Python scalar (a weak constant splatted to ``x``'s shape, PROMO-4). ``twins`` gives the
constants of its twin graphs (CONF-89).
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import numpy as np

from interpreter.dtype import DType
from interpreter.graph import ops
from interpreter.graph.core import Graph
from interpreter.graph.lowering import lower
from interpreter.graph.ops.staging import stage_op
from interpreter.graph.splat import splat
from interpreter.registry import REGISTRY, OpDef
from interpreter.testing.sampling import RandomArgSource, special_values
from interpreter.types import DeviceRef, TensorType

from .strategies import EXTRA_SET_RATES, Case

__all__ = [
    "CONSTANT_OPS",
    "X_SHAPE",
    "constant_case",
    "constant_groups",
    "fails_alone",
    "hard_constants",
    "replay_pair",
    "twins",
    "write_pair",
]

#: The shape of the tensor operand ``x`` of a constant-reach graph.
X_SHAPE = (3, 7)
#: Hard float constants (rounded to the dtype), besides the dtype's special values.
HARD_FLOATS = (3.0, 7.0, 10.0, 0.1, 1 / 3, 2.0, 4.0, 0.25, 1024.0, -3.0)
#: Hard integer constants (those the dtype holds), besides its special values.
HARD_INTS = (2, 3, 4, 7, 10, 16, 64, -3, -7)

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def constant_ops() -> tuple[str, ...]:
    """Ops with a constant-reach cell: every broadcasting op (the binary elementwise ops and
    ``select``), a constant taking the place of one of its data operands."""
    return tuple(sorted(n for n, op in REGISTRY.items() if op.broadcast))


CONSTANT_OPS = constant_ops()


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(_UINT[a.dtype.itemsize])


def _payload_nan(dtype: DType) -> np.ndarray | None:
    """The dtype's default NaN with its highest payload bit below the quiet bit flipped
    (``None`` where the dtype has one NaN per sign)."""
    import ml_dtypes

    np_dtype = dtype.to_numpy()
    nan = np.array([np.nan], dtype=np_dtype)
    nmant = int(ml_dtypes.finfo(np_dtype).nmant)
    if nmant < 2:
        return None
    other = (_bits(nan) ^ (1 << (nmant - 2))).view(np_dtype)
    return other if np.isnan(other[0]) else None


def hard_constants(dtype: DType) -> np.ndarray:
    """The hard constants of ``dtype`` (1-D, no two with the same bytes)."""
    np_dtype = dtype.to_numpy()
    if dtype is DType.bool:
        return np.array([False, True])
    parts = [special_values(dtype)]
    if dtype.is_integral():
        info = np.iinfo(np_dtype)
        parts.append(np.array([v for v in HARD_INTS if info.min <= v <= info.max],
                              dtype=np_dtype))
    else:
        with np.errstate(over="ignore"):
            parts.append(np.array(HARD_FLOATS, dtype=np.float64).astype(np_dtype))
        nan = _payload_nan(dtype)
        if nan is not None:
            parts.append(nan)
    out: list[Any] = []
    seen: set[bytes] = set()
    for v in np.concatenate(parts).astype(np_dtype):
        key = np.array(v).tobytes()
        if key not in seen:
            seen.add(key)
            out.append(v)
    return np.array(out, dtype=np_dtype)


def _negated(c: np.ndarray) -> np.ndarray:
    """``-c`` (bool: ``not c``; unsigned and the signed minimum, which have no negation:
    ``c`` with its lowest bit flipped; a NaN: its sign bit flipped)."""
    dtype = DType.from_numpy(c.dtype)
    if dtype is DType.bool:
        return ~c
    if dtype.is_integral():
        flip = (_bits(c.copy()) ^ 1).view(c.dtype)
        if dtype.is_unsigned():
            return flip
        low = c == np.iinfo(c.dtype).min
        return np.where(low, flip, -np.where(low, 0, c))
    sign = np.array(1 << (8 * c.dtype.itemsize - 1), _UINT[c.dtype.itemsize])
    return (_bits(c.copy()) ^ sign).view(c.dtype)


def _other_nan(v: np.ndarray, weak: bool) -> np.ndarray:
    """NaN ``v`` (shape (1,)) with another payload where the dtype has one (``weak``: one
    that survives the front end's staging of a Python float), else with its sign flipped."""
    nmant = _nmant(v.dtype)
    if nmant >= 2:
        other = (_bits(v.copy()) ^ np.array(1 << (nmant - 2), _bits(v).dtype)).view(v.dtype)
        ok = bool(np.isnan(other[0]))
        if ok and weak:
            staged = np.array(splat(float(other[0]), DType.from_numpy(v.dtype), ()))
            ok = _bits(staged.reshape(1))[0] == _bits(other)[0]
        if ok:
            return other
    return _negated(v)


def twins(group: str, cs: np.ndarray, weak: bool) -> list[tuple[str, np.ndarray]]:
    """The twins of a constant-reach graph whose constants are ``cs`` (CONF-89): for the
    ``"values"`` group the *sign* twin (every constant negated) and, for floats, the *zero*
    twin (only the zeros' signs flipped); for the ``"nan"`` group the *payload* twin (every
    NaN with another payload, or sign where the dtype has no other)."""
    if group == "nan":
        return [("payload", np.concatenate([_other_nan(cs[i:i + 1], weak)
                                            for i in range(cs.size)]))]
    out = [("sign", _negated(cs))]
    if DType.from_numpy(cs.dtype).is_float():
        out.append(("zero", np.where(cs == 0, _negated(cs), cs)))
    return out


def constant_groups(dtype: DType) -> dict[str, np.ndarray]:
    """``hard_constants(dtype)`` split: ``"values"`` (no NaN) and, for floats, ``"nan"`` (the
    NaNs and a negative NaN). Kept apart so that a cache comparing values with ``==`` (NaN
    never equal) still meets twins it would confuse."""
    cs = hard_constants(dtype)
    if not dtype.is_float():
        return {"values": cs}
    nan = np.isnan(cs)
    nans = np.concatenate([cs[nan], _negated(cs[nan][:1])])
    return {"values": cs[~nan], "nan": nans}


def _nmant(np_dtype: Any) -> int:
    import ml_dtypes

    return int(ml_dtypes.finfo(np_dtype).nmant)


def _python(v: Any, dtype: DType) -> bool | int | float:
    if dtype is DType.bool:
        return bool(v)
    return int(v) if dtype.is_integral() else float(v)


def _only(dtypes: frozenset[DType]) -> DType:
    (dtype,) = dtypes  # an operand before the data operand has one dtype (a condition)
    return dtype


def constant_case(op: OpDef, dtype: DType, weak: bool, cs: np.ndarray, name: str) -> Case:
    """The constant-reach graph of ``(op, dtype)`` over constants ``cs`` (module docstring)
    with its input sets (CONF-30): ``x`` (and the operands before the data operand:
    ``select``'s ``cond``) drawn at each special-value rate, the same for every graph of the
    cell."""
    x_t = TensorType(dtype, X_SHAPE, DeviceRef.CPU())
    lead = [TensorType(_only(s), X_SHAPE, DeviceRef.CPU())
            for s in op.operand_dtype_sets[:op.data_operand or 0]]
    types = [*lead, x_t]
    kind = "weak" if weak else "constant"
    with Graph(f"conformance_{op.name}_{kind}_{name}", input_types=types) as g:
        x = g.inputs[-1]
        outs = []
        for v in cs:
            for first in (True, False):
                c: Any = (_python(v, dtype) if weak
                          else ops.constant(np.array(v), device=DeviceRef.CPU()))
                pair = [x, c] if first else [c, x]
                (r,) = stage_op(op, [*g.inputs[:len(lead)], *pair])
                outs.append(r)
        g.output(*outs)
    lower(g)
    seed = zlib.crc32(f"constants/{op.name}/{dtype.value}".encode())
    sets = []
    for k, rate in enumerate((0.2, *EXTRA_SET_RATES)):
        src = RandomArgSource(seed + k, rate)
        sets.append([src.values(t.dtype, t.shape) for t in types])
    return Case(g, sets[0], op.name, dtype, "constant", None, seed, extra_inputs=sets[1:])


# -- twin failures: a repro of the pair (CONF-89) ------------------------------------------------
def fails_alone(artifacts: Any) -> bool:
    """Whether the failing case stored by ``artifacts`` (as generated) fails on a fresh
    executor instance too (``conformance.artifacts.replay``; a refusal or suite error counts
    as failing: only a clean pass marks a twin failure as state kept across graphs)."""
    import io

    from .artifacts import replay

    d = artifacts.path / "original"
    return replay(d if (d / "graph.txt").exists() else artifacts.path, artifacts.spec,
                  out=io.StringIO()) != 0


def write_pair(artifacts: Any, first: Case) -> Path:
    """Store ``first`` (its first input set) beside the failing case and a ``repro.py``
    replaying the pair on one executor instance; returns that script."""
    from .artifacts import repro_script, save_arrays

    d = artifacts.path / "twin"
    (d / "first").mkdir(parents=True, exist_ok=True)
    (d / "first" / "graph.txt").write_text(first.graph.to_text())
    save_arrays(d / "first" / "inputs.npz", {f"in{i}": a for i, a in enumerate(first.inputs)})
    second = artifacts.path / "original"
    if not (second / "graph.txt").exists():
        second = artifacts.path
    script = d / "repro.py"
    doc = (f"Replay of a twin failure: {artifacts.test_id}\n\n"
           f"The failing graph ({second}) passes on a fresh executor: it failed when run right "
           f"after its\ntwin ({d / 'first'}) on the same executor instance. This runs the "
           "twin, then the failing graph,\non one instance:\n"
           f"    python {script} [--executor=module:Class]\n"
           "Exits 1 while the executor disagrees with the reference, 0 once it agrees.")
    script.write_text(repro_script(doc, "conformance.constants:replay_pair",
                                   f'here / "first", Path({str(second)!r}), spec',
                                   artifacts.spec, artifacts.workdir))
    return script


def replay_pair(first: Path, second: Path, executor_spec: str) -> int:
    """Run case ``first`` on the executor, then judge case ``second`` on the same instance
    (``conformance.artifacts.replay``'s exit codes: 0 agree, 1 disagree, 2 refused, 3 suite
    error)."""
    from interpreter.executor import InterpreterExecutor

    from .artifacts import load_case
    from .calls import quiet
    from .differential import check_case
    from .executors import resolve

    try:
        g1, in1 = load_case(first)
        g2, in2 = load_case(second)
        executor = resolve(executor_spec).under_test()
    except Exception as e:
        print(f"ERROR: {type(e).__name__}: {e}")
        return 3
    try:
        with quiet():
            executor.execute(g1, [np.array(a, copy=True) for a in in1])
            verdict = check_case(Case(g2, in2), executor, InterpreterExecutor(),
                                 label=f"replay of {second} after {first}")
    except Exception as e:
        print(f"FAIL: {type(e).__name__}: {e}")
        return 1
    if not verdict.ok:
        print(f"FAIL: {verdict.message}")
        return 1
    print(f"OK: {executor_spec} agrees with the reference on {second} after {first}")
    return 0
