"""Shape reach (CONF-86, CONF-87) and constant reach with twins (CONF-88, CONF-89): what the
generators hand out, checked against the numbers the spec states."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conformance.constants import CONSTANT_OPS, constant_case, constant_groups, twins
from conformance.strategies import (
    LONG_SIDE,
    REACH_ELEMENTS,
    REACH_SIDES,
    TIER_ELEMENTS,
    TIER_SIDE,
    RngArgSource,
    reach_cases,
    reach_headlines,
    tier_case,
)
from conformance.test_reach import reach_ops, tier_ops
from interpreter.dtype import DType
from interpreter.registry import REGISTRY

FLOATS = [d for d in DType if d.is_float()]


def _axes(case: object) -> set[int]:
    graph, call = case.graph, case.call  # type: ignore[attr-defined]
    shapes = [v.type.shape for v in (*graph.inputs, *(graph.outputs or ()))]
    shapes.append(tuple(call.attrs.get("shape", ())))
    return {s for shape in shapes for s in shape}


@pytest.mark.spec("CONF-86")
def test_reach_structures_meet_every_size_within_the_budget() -> None:
    met: set[int] = set()
    kept = total = 0
    for name in reach_ops():
        op = REGISTRY[name]
        for dtype in op.data_dtypes:
            cases = reach_cases(op, dtype)
            assert len(cases) == 2, (name, dtype)
            for case, headline in zip(cases, reach_headlines(op, dtype), strict=True):
                axes = _axes(case)
                assert max(axes) >= min(REACH_SIDES), (name, dtype, axes)
                kept, total = kept + (headline in axes), total + 1
                met |= axes
                for a in case.inputs:  # a drawn tensor, or one derived from a few
                    assert a.size <= 5 * REACH_ELEMENTS, (name, dtype, a.shape)
                assert len(case.extra_inputs) <= 3
    assert set(REACH_SIDES) | {LONG_SIDE} <= met
    assert kept >= 0.9 * total, (kept, total)  # a sampler may resize the headline axis


@pytest.mark.spec("CONF-86")
def test_reach_axis_kinds() -> None:
    """matmul's m, k and n, and both ends of a reduced rank-2+ tensor, are long somewhere."""
    mm = REGISTRY["matmul"]
    ks = {c.inputs[0].shape[-1] for d in mm.data_dtypes for c in reach_cases(mm, d)}
    ms = {c.inputs[0].shape[-2] for d in mm.data_dtypes for c in reach_cases(mm, d)}
    ns = {c.inputs[1].shape[-1] for d in mm.data_dtypes for c in reach_cases(mm, d)}
    assert max(ks) >= 17 and max(ms) >= 17 and max(ns) >= 17, (ks, ms, ns)
    red = REGISTRY["reduce_sum"]
    axes = {(c.call.attrs["axis"] % c.inputs[0].ndim, c.inputs[0].ndim)
            for d in red.data_dtypes for c in reach_cases(red, d)
            if c.call is not None and c.inputs[0].shape[c.call.attrs["axis"]] >= 7}
    assert any(a == n - 1 for a, n in axes) and any(a < n - 1 for a, n in axes), axes


@pytest.mark.spec("CONF-86")
def test_ordinary_sources_keep_their_bounds() -> None:
    src = RngArgSource(7)
    assert all(0 <= src.axis_size(0, 4, rest=3) <= 4 for _ in range(200))
    assert all(max(src.shape(), default=0) <= 5 for _ in range(200))
    reach = RngArgSource(7, reach=257)
    assert reach.shape(max_rank=2, max_side=3) and max(reach.shape(max_side=3)) <= 3
    assert 257 in reach.shape(min_rank=1, max_rank=1)
    assert all(math.prod(reach.shape(rest=40)) * 40 <= REACH_ELEMENTS for _ in range(50))


@pytest.mark.spec("CONF-87")
def test_ops_with_and_without_reach_cells() -> None:
    ops = set(reach_ops())
    for name in ("add", "matmul", "reduce_sum", "reduce_max", "cumsum", "softmax", "top_k",
                 "gather", "scatter", "concat", "split", "slice", "select", "cast"):
        assert name in ops, name
    assert not ops & {"tile", "pad", "random_uniform", "random_normal", "debug_print",
                      "range"}


@pytest.mark.spec("CONF-150")
def test_tier_structures_are_above_the_tier_thresholds() -> None:
    from reference_executors.compiling import BLOCK, NATIVE_MIN

    assert TIER_SIDE == 65537 and TIER_ELEMENTS == 3 * 65537
    assert TIER_SIDE > max(NATIVE_MIN, 1 << 16) and TIER_SIDE % BLOCK == 1
    ops = tier_ops()
    assert len(ops) == 41 and "select" in ops and "cast" in ops and "broadcast_to" not in ops
    assert all(REGISTRY[n].category.startswith("elementwise") for n in ops if n != "select")
    for name in ops:
        op = REGISTRY[name]
        for dtype in op.data_dtypes:
            case = tier_case(op, dtype)
            assert case is not None and case.shape_class == "tier", (name, dtype)
            sizes = [math.prod(v.type.shape) for v in case.graph.outputs or ()]
            assert max(sizes) >= TIER_SIDE, (name, dtype, sizes)
            assert TIER_SIDE in _axes(case), (name, dtype)
            for a in case.inputs:
                assert a.size <= TIER_ELEMENTS, (name, dtype, a.shape)
            assert len(case.extra_inputs) == 3, (name, dtype)


@pytest.mark.spec("CONF-150")
def test_a_tier_structure_reaches_the_native_tier() -> None:
    """On the reference compiler, with a C compiler, abs-int32's tier structure runs as one
    C kernel (no other cell of the suite does) and matches the reference."""
    from interpreter.executor import InterpreterExecutor
    from reference_executors import compiling_native
    from reference_executors.compiling import CompilingExecutor

    if compiling_native.compiler() is None:
        pytest.skip("no C compiler: the native tier is off")
    case = tier_case(REGISTRY["abs"], DType.int32)
    assert case is not None
    plan = CompilingExecutor().compile(case.graph)
    assert plan.native_kernel_count == 1
    for inputs in (case.inputs, *case.extra_inputs):
        got, = plan.run(inputs)
        want, = InterpreterExecutor().execute(case.graph, inputs)
        np.testing.assert_array_equal(got, want)
    assert (case.inputs[0] < 0).any()  # a negative int32 whose abs the C kernel computes


@pytest.mark.spec("CONF-88")
def test_hard_constants_hold_the_hard_values() -> None:
    f32 = constant_groups(DType.float32)
    vals = f32["values"]
    for v in (3.0, 7.0, 10.0, np.float32(0.1), 1024.0, 0.0, np.inf):
        assert np.any(vals == np.float32(v)), v
    assert np.any((vals == 0) & np.signbit(vals)) and np.any((vals == 0) & ~np.signbit(vals))
    assert np.any(vals == np.finfo(np.float32).max)
    assert np.any(vals == np.finfo(np.float32).smallest_subnormal)
    bits = {int(b) for b in f32["nan"].view(np.uint32)}
    assert np.isnan(f32["nan"]).all() and bits == {0x7FC00000, 0x7FE00000, 0xFFC00000}
    assert set(constant_groups(DType.int8)) == {"values"}
    assert {-128, 127, 3, 7, 10} <= set(constant_groups(DType.int8)["values"].tolist())


@pytest.mark.spec("CONF-89")
def test_twins() -> None:
    g = constant_groups(DType.float32)
    (sign, neg), (zero, z) = twins("values", g["values"], weak=False)
    assert (sign, zero) == ("sign", "zero")
    np.testing.assert_array_equal(neg, -g["values"])
    assert (np.signbit(neg) != np.signbit(g["values"])).all()
    moved = np.signbit(z) != np.signbit(g["values"])
    assert (moved == (g["values"] == 0)).all() and moved.sum() == 2
    ((name, nans),) = twins("nan", g["nan"], weak=True)
    assert name == "payload" and np.isnan(nans).all()
    assert (nans.view(np.uint32) != g["nan"].view(np.uint32)).all()
    ints = constant_groups(DType.int8)["values"]
    ((_, ineg),) = twins("values", ints, weak=False)
    assert ineg[ints == -128].tolist() == [-127] and ineg[ints == 7].tolist() == [-7]


@pytest.mark.spec("CONF-88", "CONF-89")
@pytest.mark.parametrize("weak", [False, True])
@pytest.mark.parametrize("dtype", [*FLOATS, DType.int32, DType.uint8])
def test_every_twin_is_its_own_structure(dtype: DType, weak: bool) -> None:
    """The structural key holds each constant's sign bit and NaN payload, for constant
    nodes and weak splats alike: a plan cache keyed on it never serves a twin."""
    op = REGISTRY["select"]  # every dtype
    for group, cs in constant_groups(dtype).items():
        first = constant_case(op, dtype, weak, cs, group)
        keys = {first.graph.structural_hash()}
        for name, other in twins(group, cs, weak):
            keys.add(constant_case(op, dtype, weak, other, name).graph.structural_hash())
        assert len(keys) == 1 + len(twins(group, cs, weak)), (dtype, group, weak)


def test_constant_ops() -> None:
    assert {"add", "div", "pow", "mod", "floor_div", "max", "min", "equal", "less",
            "select"} - {"less"} <= set(CONSTANT_OPS)
