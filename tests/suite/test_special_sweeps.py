"""Special-value sweeps (CONF-98), cast edge values (NUM-20), rank-0 enumeration (CONF-99)
and the generated special-value tables of the op pages (CONF-101)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conformance.strategies import RngArgSource, case_from_call, special_input_sets
from conformance.sweeps import NoSweep, sweep_case, sweep_cells, sweep_gaps, sweep_rows
from interpreter.dtype import DType
from interpreter.registry import REGISTRY
from interpreter.testing.sampling import RandomArgSource, cast_edge_values, special_values
from tools.spec import SPEC


def _bits(a: np.ndarray) -> set[bytes]:
    return {x.tobytes() for x in np.asarray(a).ravel()}


@pytest.mark.spec("CONF-98")
def test_binary_sweep_is_the_full_cross_product() -> None:
    case = sweep_case(REGISTRY["add"], DType.float32)
    lhs, rhs = case.inputs
    sv = special_values(DType.float32)
    assert lhs.shape == rhs.shape == (len(sv) ** 2,)
    pairs = {(a.tobytes(), b.tobytes()) for a, b in zip(lhs, rhs, strict=True)}
    assert pairs == {(a.tobytes(), b.tobytes()) for a in sv for b in sv}
    assert len(sv) == 13  # NaN, +-inf, +-0, +-subnormal, normal, +-max, +-1, 0.5


@pytest.mark.spec("CONF-98")
def test_select_sweep_covers_every_combination() -> None:
    c, x, y = sweep_case(REGISTRY["select"], DType.float32).inputs
    assert c.dtype == np.bool_ and len(c) == 2 * 13 * 13
    assert len({(bool(a), b.tobytes(), d.tobytes()) for a, b, d in zip(c, x, y,
                                                                      strict=True)}) == 338


@pytest.mark.spec("CONF-98")
@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod", "softmax", "argmax", "top_k",
                                  "cumsum", "reduce_max"])
def test_row_sweeps_put_each_special_at_each_position(name: str) -> None:
    op = REGISTRY[name]
    dtype = DType.float32
    case = sweep_case(op, dtype)
    (x,) = case.inputs
    assert x.shape == (13 * 4 + 4, 4) and case.call is not None
    assert case.call.attrs["axis"] in (1, -1)  # along the rows
    if name == "top_k":
        assert case.call.attrs["k"] == 4
    for s in special_values(dtype):
        for p in range(4):
            col = x[:, p]
            assert s.tobytes() in _bits(col), (name, s, p)
    last = x[-4:]
    assert np.isposinf(last[0, 0]) and np.isneginf(last[0, 1])
    assert np.isnan(last[1, 0]) and np.isposinf(last[1, 1])
    assert np.isnan(last[2]).all() and (last[3] == last[3, 0]).all()


@pytest.mark.spec("CONF-98")
def test_matmul_sweep_and_small_sampled_ops_meet_nan_and_inf() -> None:
    lhs, rhs = sweep_case(REGISTRY["matmul"], DType.float32).inputs
    assert np.isnan(lhs).any() and np.isinf(lhs).any() and np.isfinite(rhs).all()
    (x,) = sweep_case(REGISTRY["reduce_prod"], DType.float16).inputs
    assert np.isnan(x).any() and np.isinf(x).any()


@pytest.mark.spec("CONF-98", "CONF-21")
def test_ops_without_a_sweep_are_named_with_a_reason() -> None:
    gaps = sweep_gaps()
    assert {name for name, _ in gaps} == {"range", "buffer_create", "random_uniform",
                                          "random_normal"}
    assert all("draws no array of its data dtype" in why for why in gaps.values())
    with pytest.raises(NoSweep):
        sweep_case(REGISTRY["range"], DType.int32)
    cells = sweep_cells()
    pairs = {(n, d) for n, d, _ in cells}
    for name, op in REGISTRY.items():
        for d in op.data_dtypes:
            assert ((name, d) in pairs) != ((name, d) in gaps), (name, d)
    assert sum(1 for n, _, _ in cells if n == "cast") == 15 * 15


@pytest.mark.spec("NUM-20")
def test_cast_edges_reach_the_unsigned_upper_half() -> None:
    e = cast_edge_values(DType.float32, DType.uint32).astype(np.float64)
    assert 2.0**31 in e and (2.0**32 - 256) in e and 2.0**32 in e  # 2**32-256: below 2**32
    assert 3 * 2.0**30 in e and 0.5 in e and -0.5 in e and 2.5 in e
    assert np.isnan(e).any() and np.isposinf(e).any()
    e8 = cast_edge_values(DType.int64, DType.uint8)
    assert {127, 128, 129, 255, 256, -1}.issubset({int(v) for v in e8})
    f16 = cast_edge_values(DType.float32, DType.float16).astype(np.float64)
    assert 65504.0 in f16 and 65520.0 in f16  # max, and the overflow midpoint max + ulp/2
    assert float(np.nextafter(np.float32(65520), np.float32(0))) in f16  # rounds to max


@pytest.mark.spec("NUM-20")
def test_cast_sampler_draws_boundary_values() -> None:
    hits = 0
    for seed in range(200):
        call = REGISTRY["cast"].sample(RngArgSource(seed, DType.float32, "general"))
        x = call.operands[0].astype(np.float64)
        if call.attrs["dtype"] is DType.uint32 and ((x >= 2**31) & (x < 2**32)).any():
            hits += 1
    assert hits >= 1
    v = RandomArgSource(3).values(DType.float64, (400,), "edges:uint64")
    assert ((v >= 2.0**63) & (v < 2.0**64)).any()


@pytest.mark.spec("CONF-99")
def test_scalar_cell_enumerates_every_special_value() -> None:
    class Recording(RngArgSource):
        def __init__(self) -> None:
            super().__init__(5, DType.float32, "scalar")
            self.int_draws: list[int] = []

        def _int(self, lo: int, hi: int) -> int:
            out = super()._int(lo, hi)
            self.int_draws.append(out)
            return out

    op = REGISTRY["add"]
    src = Recording()
    case = case_from_call(op, op.sample(src))
    sets = special_input_sets(op, src.int_draws, case, DType.float32)
    assert len(sets) == 13
    sv = special_values(DType.float32)
    for k in range(2):
        got = [s[k] for s in sets]
        assert all(a.shape == () for a in got)
        assert _bits(np.stack(got)) == _bits(sv), k


def _table(name: str) -> str:
    text = (SPEC / "ops" / f"{name}.md").read_text()
    start = text.index("## Special values")
    return text[start:text.index("<!-- end of special-value table -->", start)]


@pytest.mark.spec("CONF-101")
def test_op_pages_carry_special_value_tables() -> None:
    exp = _table("exp")
    assert "| NaN | NaN |" in exp and "| inf | inf |" in exp and "| -inf | 0 |" in exp
    assert "| -0 | 1 |" in exp
    mx = [ln for ln in _table("max").splitlines() if ln.startswith("| **NaN**")]
    assert mx and set(mx[0].split("|")[2:-1]) == {" NaN "}  # NaN propagates (NUM-8)
    row = next(ln for ln in _table("max").splitlines() if ln.startswith("| **-0**"))
    assert row.split("|")[2].strip() == "0"  # max(-0, +0) = +0
    cast = _table("cast")
    nan_row = next(ln for ln in cast.splitlines() if ln.startswith("| NaN |")).split("|")
    header = [h.strip() for h in cast.splitlines()[4].split("|")]
    assert nan_row[header.index("bool")].strip() == "true"
    assert nan_row[header.index("int32")].strip() == "unspec."
    assert nan_row[header.index("float16")].strip() == "NaN"
    soft = _table("softmax")
    assert "| NaN, NaN, NaN, NaN | NaN, NaN, NaN, NaN |" in soft
    assert "| 1.5, 1.5, 1.5, 1.5 | 0.25, 0.25, 0.25, 0.25 |" in soft
    assert "## Special values" not in (SPEC / "ops" / "reshape.md").read_text()
    assert math.isclose(float(sweep_rows(DType.float32)[-1, 0]), 1.5)
