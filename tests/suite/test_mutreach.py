"""Mutation reach, bytes and layout (CONF-94..96, MUT-6, MUT-7, DT-6, DT-7): buffer cells
observe their buffers, NaN bytes and C-contiguity are checked where the spec fixes them,
random graphs interleave buffer accesses, and the broken executors of
``tests/suite/broken_executors.py`` are caught with the rule and the diagnosis class."""

from __future__ import annotations

import dataclasses
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from conformance.compare import same_bits
from conformance.diagnosis import CLASSES, diagnose, explained_by
from conformance.differential import check_case
from conformance.layout import byte_exact_buffers, byte_exact_values, layout_problem, nan_bytes
from conformance.strategies import (
    Case,
    RngArgSource,
    build_random_graph,
    case_from_call,
    graph_families,
    interleaved,
)
from interpreter.dtype import DType
from interpreter.executor import InterpreterExecutor
from interpreter.graph import ops
from interpreter.graph.core import BufferValue, Graph, TensorValue, Value
from interpreter.registry import REGISTRY
from interpreter.testing.sampling import RandomArgSource, nan_payloads
from interpreter.types import BufferType, TensorType
from tests.suite.broken_executors import (
    CanonicalNaNMoves,
    DeadStoreBeforeSliceStore,
    LoadHoistedAboveSliceStore,
    PooledScratchBuffers,
    StridedPermute,
)

REF = InterpreterExecutor()
F32 = np.float32


def _t(v: Value) -> TensorValue:
    assert isinstance(v, TensorValue)
    return v


def _b(v: Value) -> BufferValue:
    assert isinstance(v, BufferValue)
    return v


def _bits(a: np.ndarray) -> list[int]:
    return [int(x) for x in np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}").ravel()]


# -- inputs: NaNs with payloads -----------------------------------------------------------------
@pytest.mark.spec("CONF-95", "DT-6")
def test_nan_payloads_are_quiet_nans_other_than_the_canonical_one() -> None:
    assert _bits(nan_payloads(DType.float32)) == [0x7FC00001, 0xFFC00000, 0xFFC00001]
    assert _bits(nan_payloads(DType.bfloat16)) == [0x7FC1, 0xFFC0, 0xFFC1]
    assert _bits(nan_payloads(DType.float8_e4m3fn)) == [0xFF]  # S.1111.111 only
    assert _bits(nan_payloads(DType.float8_e5m2)) == [0x7F, 0xFE, 0xFF]
    assert nan_payloads(DType.int32).size == 0
    for d in DType:
        if d.is_float():
            v = nan_payloads(d)
            assert np.isnan(v.astype(np.float32)).all(), d


@pytest.mark.spec("CONF-95")
def test_random_values_carry_nan_payload_variety_without_other_changes() -> None:
    a = RandomArgSource(3, special_rate=0.9).values(DType.float32, (400,))
    nan = np.isnan(a)
    seen = set(_bits(a[nan]))
    assert {0x7FC00000, 0x7FC00001, 0xFFC00000, 0xFFC00001} <= seen, seen
    ints = RandomArgSource(3, special_rate=0.9).values(DType.int32, (50,))
    again = RandomArgSource(3, special_rate=0.9).values(DType.int32, (50,))
    assert (ints == again).all()  # positional: nothing more drawn from the generator


# -- buffer_create cells observe the buffer -------------------------------------------------------
@pytest.mark.spec("CONF-94", "MUT-4", "MUT-6")
def test_buffer_create_case_loads_stores_and_loads_its_buffer() -> None:
    op = REGISTRY["buffer_create"]
    assert op.sample is not None
    case = case_from_call(op, op.sample(RngArgSource(1, DType.float32, "general")))
    names = [n.op.name for n in case.graph.nodes]
    assert names == ["buffer_create", "buffer_load", "constant", "buffer_store", "buffer_load"]
    before, after = REF.execute(case.graph, [])
    assert before.dtype == F32 and not before.view(np.uint32).any()  # +0.0 bytes
    assert (after.ravel()[:8] == np.array([1, 2, 3, 4, 5, 6, 7, 1], F32)[:after.size]).all()
    v = check_case(dataclasses.replace(case), PooledScratchBuffers(), REF)
    assert v.ok  # a fresh pool: the first execution is right
    pool = PooledScratchBuffers()
    check_case(case, pool, REF)
    v = check_case(case, pool, REF)  # the second execution reuses the stored buffer
    assert not v.ok and "output 0 (buffer_load" in v.message
    assert [f.cls for f in diagnose(case.graph, [], v.expected, v.actual)] == ["stale-buffer"]


# -- bytes ----------------------------------------------------------------------------------------
def _payload_case(dtype: Any = F32) -> tuple[Graph, list[np.ndarray]]:
    t = TensorType(DType.from_numpy(np.dtype(dtype)), (2, 3))
    with Graph("bytes", input_types=[t]) as g:
        v = _t(g.inputs[0])
        g.output(ops.permute(v, (1, 0)), ops.exp(v), ops.reshape(ops.exp(v), (3, 2)))
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype)
    x.reshape(-1)[[1, 4]] = nan_payloads(DType.from_numpy(np.dtype(dtype)))[:2]
    return g, [x]


@pytest.mark.spec("DT-6", "CONF-95")
def test_byte_exact_values_are_byte_copies_of_inputs_only() -> None:
    g, _ = _payload_case()
    perm, exp, reshaped = g.outputs or []
    exact = byte_exact_values(g)
    assert perm in exact and exp not in exact and reshaped not in exact
    b = BufferType(DType.float32, (3,))
    with Graph("bufs", input_types=[b, b, TensorType(DType.float32, (3,))]) as g2:
        p, q, x = _b(g2.inputs[0]), _b(g2.inputs[1]), _t(g2.inputs[2])
        ops.buffer_store(p, ops.slice_tensor(x, slice(None)))
        ops.buffer_store(q, ops.exp(x))
        g2.output(ops.buffer_load(q))
    assert byte_exact_buffers(g2) == {p}
    assert not byte_exact_values(g2) & set(g2.outputs or [])


@pytest.mark.spec("DT-6", "CONF-95")
def test_nan_bytes_compares_payload_and_sign_of_nans_only() -> None:
    e = np.array([np.nan, 1.0, -0.0], F32)
    e.view(np.uint32)[0] = 0xFFC00001
    g = np.array([np.nan, 1.0, -0.0], F32)
    assert same_bits(e, g).all()  # the value comparison matches any NaN with any NaN
    m = nan_bytes(e, g, "output 0 (permute)")
    assert m is not None and m.kind == "bytes" and "[DT-6]" in m.message
    assert "0xffc00001 -> 0x7fc00000" in m.message
    assert nan_bytes(e, e.copy(), "x") is None
    assert nan_bytes(e, g, "x", mask=np.array([True, False, False])) is None
    bf = np.array([np.nan], ml_dtypes.bfloat16)
    assert nan_bytes(nan_payloads(DType.bfloat16)[:1], bf, "x") is not None


@pytest.mark.spec("DT-6", "CONF-95")
def test_canonicalised_nan_copies_fail_with_dt6_and_nan_payload() -> None:
    g, inputs = _payload_case()
    v = check_case(Case(g, inputs), CanonicalNaNMoves(), REF)
    assert not v.ok and "[DT-6]" in v.message and "output 0 (permute)" in v.message
    assert "output 1" not in v.message and "output 2" not in v.message  # exp: not fixed
    found = diagnose(g, inputs, v.expected, v.actual)
    assert [f.cls for f in found] == ["nan-payload"]
    assert not explained_by(g, inputs, v.actual, ["ftz"])  # no deviation explains bytes
    assert check_case(Case(g, inputs), REF, REF).ok


# -- layout ---------------------------------------------------------------------------------------
@pytest.mark.spec("DT-2", "DT-7", "CONF-95")
def test_fortran_ordered_output_fails_with_dt2() -> None:
    a = np.zeros((2, 3), F32)
    assert layout_problem(a, "output 0") is None
    m = layout_problem(np.copy(a.T), "output 0")  # np.copy keeps the view's order ("K")
    assert m is not None and "Fortran-ordered" in m.message and "[DT-2]" in m.message
    assert layout_problem(a[:, ::2], "output 0") is not None
    g, inputs = _payload_case()
    v = check_case(Case(g, inputs), StridedPermute(), REF)
    assert not v.ok and "output 0: a Fortran-ordered array" in v.message
    assert [f.cls for f in diagnose(g, inputs, v.expected, v.actual)] == ["layout"]
    assert not explained_by(g, inputs, v.actual, ["ftz"])


@pytest.mark.spec("DT-7", "EXEC-4")
def test_reference_outputs_are_c_contiguous_and_dtype_failures_name_the_rule() -> None:
    t = TensorType(DType.float32, (2, 3, 4))
    with Graph("views", input_types=[t]) as g:
        x = _t(g.inputs[0])
        g.output(ops.permute(x, (2, 0, 1)), ops.slice_tensor(x, (Ellipsis, slice(None, None, 2))),
                 ops.broadcast_to(ops.slice_tensor(x, (0, 0, slice(0, 1))), (3, 1)))
    outs = REF.execute(g, [np.ones((2, 3, 4), F32)])
    assert all(o.flags.c_contiguous for o in outs)

    class Float64Out(InterpreterExecutor):
        def execute(self, graph: Graph, inputs: Any) -> list[np.ndarray]:
            return [o.astype(np.float64) for o in super().execute(graph, inputs)]

    v = check_case(Case(g, [np.ones((2, 3, 4), F32)]), Float64Out(), REF)
    assert not v.ok and "dtype float64 != expected float32" in v.message
    assert "[EXEC-4, DT-2]" in v.message


# -- store order ----------------------------------------------------------------------------------
def _store_graph() -> tuple[Graph, list[np.ndarray]]:
    b = BufferType(DType.int32, (4,))
    x = TensorType(DType.int32, (4,))
    with Graph("order", input_types=[b, x]) as g:
        buf, src = _b(g.inputs[0]), _t(g.inputs[1])
        ops.buffer_store(buf, src)
        ops.buffer_store_slice(buf, ops.constant(np.array([7, 7], np.int32)),
                               slice(1, 3))
        loaded = ops.buffer_load(buf)
        g.output(ops.add(loaded, loaded))
    return g, [np.zeros(4, np.int32), np.array([1, 2, 3, 4], np.int32)]


@pytest.mark.spec("MUT-7", "CONF-96")
@pytest.mark.parametrize(("broken", "what"), [
    (LoadHoistedAboveSliceStore, "node #3 buffer_load run before node #2 buffer_store_slice"),
    (DeadStoreBeforeSliceStore, "node #0 buffer_store not run"),
])
def test_store_order_bugs_are_value_failures_diagnosed_store_order(broken: Any, what: str
                                                                     ) -> None:
    g, inputs = _store_graph()
    v = check_case(Case(g, inputs), broken(), REF)
    assert not v.ok
    found = diagnose(g, inputs, v.expected, v.actual)
    assert [f.cls for f in found] == ["store-order"], found
    assert what in found[0].detail and found[0].rule == "MUT-7"
    assert check_case(Case(g, inputs), REF, REF).ok
    assert {"store-order", "stale-buffer", "nan-payload", "layout"} <= set(CLASSES)


@pytest.mark.spec("CONF-96")
def test_a_quarter_of_random_graphs_interleave_accesses_of_one_buffer() -> None:
    seeds = range(400)
    share = sum(map(interleaved, seeds)) / len(seeds)
    assert 0.18 < share < 0.32, share
    mixed = graph_families()["mixed"]
    pattern = 0
    for seed in [s for s in seeds if interleaved(s)][:20]:
        case = build_random_graph(seed, 8, mixed)
        names = [n.op.name for n in case.graph.nodes]
        pattern += any(a == "buffer_store_slice" and "buffer_load" in names[i + 1:]
                       for i, a in enumerate(names))
        small = build_random_graph(seed, 5, mixed)  # prefixes stay prefixes
        assert [n.op.name for n in small.graph.nodes] == names[:len(small.graph.nodes)]
    assert pattern >= 10, pattern
    plain = next(s for s in seeds if not interleaved(s))
    shape = build_random_graph(plain, 8, graph_families()["shape"])
    assert not any(n.op.name.startswith("buffer_") for n in shape.graph.nodes)


@pytest.mark.spec("CONF-96", "MUT-7")
def test_random_graphs_catch_store_order_bugs_and_not_the_reference() -> None:
    mixed = graph_families()["mixed"]
    caught: dict[str, int] = {}
    for seed in [s for s in range(200) if interleaved(s)][:25]:
        case = build_random_graph(seed, 10, mixed, input_sets=2)
        for inputs in [case.inputs, *case.extra_inputs]:
            c = dataclasses.replace(case, inputs=inputs, extra_inputs=[])
            assert check_case(c, REF, REF).ok
            for broken in (LoadHoistedAboveSliceStore, DeadStoreBeforeSliceStore):
                v = check_case(c, broken(), REF, locate=False)
                if not v.ok and "store-order" in [
                        f.cls for f in diagnose(c.graph, c.inputs, v.expected, v.actual)]:
                    caught[broken.__name__] = caught.get(broken.__name__, 0) + 1
    assert caught.get("LoadHoistedAboveSliceStore", 0) >= 2, caught
    assert caught.get("DeadStoreBeforeSliceStore", 0) >= 1, caught
