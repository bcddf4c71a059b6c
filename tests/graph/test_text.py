"""The graph text form: exact round trip, numbering, attribute encodings, parse errors and
the structural hash (spec/text-form.md, TEXT-1..7)."""

from __future__ import annotations

import hashlib
import math
import re
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interpreter.dtype import DType
from interpreter.errors import GraphParseError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import BufferType, DeviceRef, Graph, TensorType, ops
from interpreter.graph.core import TensorValue, Value
from interpreter.graph.lowering import lowered
from interpreter.graph.text import format_attr, parse, parse_attr, structural_hash, to_text
from interpreter.registry import EXACT, REGISTRY, OpDef, get_op
from interpreter.registry.dtypesets import ALL
from interpreter.testing import Buf, assert_same, build
from interpreter.testing.sampling import RandomArgSource

FAST = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CPU = DeviceRef.CPU()


# -- helpers ----------------------------------------------------------------------------
def same_attr(a: Any, b: Any) -> bool:
    """Exact equality of attribute values: same Python type, same bits (NaN payloads, -0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return (a.dtype == b.dtype and a.shape == b.shape
                and a.tobytes() == b.tobytes())
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(same_attr(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def same_bits(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.tobytes() == w.tobytes(), f"{g!r} != {w!r}"


def execute(graph: Graph, inputs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[Any]]:
    """Outputs and the final contents of the inputs (the graph runs on copies)."""
    arrays = [np.array(a, copy=True) for a in inputs]
    return InterpreterExecutor().execute(graph, arrays), arrays


def assert_round_trip(g: Graph) -> Graph:
    text = to_text(g)
    parsed = parse(text)
    assert to_text(parsed) == text
    assert parsed.name == g.name
    assert parsed.needs_lowering == g.needs_lowering
    assert structural_hash(parsed) == structural_hash(g)
    assert (parsed.outputs is None) == (g.outputs is None)
    for n1, n2 in zip(g.nodes, parsed.nodes, strict=True):
        assert n1.op is n2.op
        assert sorted(n1.attrs) == sorted(n2.attrs)
        for k in n1.attrs:
            assert same_attr(n2.attrs[k], n1.attrs[k]), k
            if isinstance(n2.attrs[k], np.ndarray):
                assert not n2.attrs[k].flags.writeable
    return parsed


def assert_same_execution(g: Graph, parsed: Graph, inputs: Sequence[np.ndarray]) -> None:
    try:
        want = execute(g, inputs)
    except Exception as e:  # the parsed graph must fail the same way
        with pytest.raises(type(e)) as info:
            execute(parsed, inputs)
        assert str(info.value) == str(e).replace(repr(g.name), repr(parsed.name))
        return
    got = execute(parsed, inputs)
    same_bits(got[0], want[0])
    same_bits(got[1], want[1])


def _echo_infer(op: OpDef, types: Sequence[Any], attrs: Any) -> tuple[Any, ...]:
    return (op.check_tensor(types, 0),)


def _pair_infer(op: OpDef, types: Sequence[Any], attrs: Any) -> tuple[Any, ...]:
    t = op.check_tensor(types, 0)
    return (t, t.with_(dtype=DType.bool))


#: Test-only ops (registered temporarily): any attributes; and two results.
ECHO = OpDef("test_echo", summary="identity with arbitrary attributes", category="test",
             operands=("x",), attrs=(), infer=_echo_infer,
             kernel=lambda *args, **_: args[0].copy(), dtypes=ALL, tolerance=EXACT)
PAIR = OpDef("test_pair", summary="x and isnan(x)", category="test", operands=("x",), attrs=(),
             infer=_pair_infer, kernel=lambda x, **_: (x.copy(), np.isnan(x.astype(np.float64))),
             dtypes=ALL, tolerance=EXACT)


@contextmanager
def registered(*defs: OpDef) -> Iterator[None]:
    for op in defs:
        REGISTRY[op.name] = op
    try:
        yield
    finally:
        for op in defs:
            REGISTRY.pop(op.name, None)


def bf16(*bits: int) -> np.ndarray:
    return np.array(bits, np.uint16).view(ml_dtypes.bfloat16)


# -- strategies -------------------------------------------------------------------------
DTYPES = st.sampled_from(list(DType))
SHAPES = st.lists(st.integers(0, 3), max_size=3).map(tuple)
DEVICES = st.builds(DeviceRef, st.sampled_from(["cpu", "gpu"]), st.integers(0, 9))


@st.composite
def raw_arrays(draw: st.DrawFn, shape: st.SearchStrategy[tuple[int, ...]] = SHAPES
               ) -> np.ndarray:
    """Arrays with arbitrary bits (NaN payloads, -0.0, subnormals), read-only."""
    dtype, dims = draw(DTYPES), draw(shape)
    n = math.prod(dims) * dtype.size_in_bytes
    data = bytearray(draw(st.binary(min_size=n, max_size=n)))
    if dtype is DType.bool:
        data = bytearray(b & 1 for b in data)
    arr = np.frombuffer(bytes(data), dtype.to_numpy()).reshape(dims)
    arr.flags.writeable = False
    return arr


ANY_FLOAT = st.one_of(
    st.floats(), st.sampled_from([-0.0, math.inf, -math.inf, math.nan, 5e-324, 1e16]),
    st.integers(0, 2**64 - 1).map(lambda b: struct.unpack("<d", struct.pack("<Q", b))[0]))
LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(-(2**130), 2**130), ANY_FLOAT,
    st.text(max_size=8), DTYPES, DEVICES,
    st.builds(TensorType, DTYPES, SHAPES, DEVICES), st.builds(BufferType, DTYPES, SHAPES, DEVICES),
    raw_arrays(), raw_arrays(st.just(())).map(lambda a: a[()]))
ATTRS = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=3).map(tuple), st.lists(inner, max_size=3)), max_leaves=8)
ATTR_NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)


# -- TEXT-4: attribute encodings --------------------------------------------------------
@pytest.mark.spec("TEXT-4")
@FAST
@given(ATTRS)
def test_every_attribute_value_round_trips_exactly(value: Any) -> None:
    text = format_attr(value)
    assert "\n" not in text and text.isascii()
    back = parse_attr(text)
    assert same_attr(back, value), (text, back, value)


@pytest.mark.spec("TEXT-4")
@pytest.mark.parametrize(("value", "text"), [
    (True, "true"), (False, "false"), (None, "none"), (0, "0"), (-7, "-7"),
    (2**100, "1267650600228229401496703205376"), (1.0, "1.0"), (-0.0, "-0.0"),
    (1e16, "1e+16"), (math.inf, "inf"), (-math.inf, "-inf"), (math.nan, "nan"),
    (-math.nan, "nan:0xfff8000000000000"), ('a"b\\c\nd\té', '"a\\"b\\\\c\\nd\\t\\u00e9"'),
    ((), "()"), ((1,), "(1,)"), (((0, None, -1), (2, 5, 1)), "((0, none, -1), (2, 5, 1))"),
    ([1, (2.5,)], "[1, (2.5,)]"), (DType.bfloat16, "bf16"), (DType.bool, "i1"),
    (DeviceRef.GPU(1), "gpu:1"), (TensorType(DType.float32, (2, 3), CPU),
                                  "tensor<f32[2,3] cpu:0>"),
    (BufferType(DType.int64, (), CPU), "buffer<si64[] cpu:0>"),
    (np.array([1.0, -2.0], np.float32), "array<f32[2] 0x0000803f000000c0>"),
    (bf16(0x7FC1, 0x8000), "array<bf16[2] 0xc17f0080>"),
    (np.zeros((0, 3), np.float64), "array<f64[0,3] 0x>"),
    (np.array(True), "array<i1[] 0x01>"), (np.int16(-2), "scalar<si16 0xfeff>"),
])
def test_attribute_encoding_is_the_documented_text(value: Any, text: str) -> None:
    assert format_attr(value) == text
    assert same_attr(parse_attr(text), value)


@pytest.mark.spec("TEXT-4")
def test_floats_stay_distinguishable_from_ints_and_arrays_are_read_only() -> None:
    assert type(parse_attr("1")) is int and type(parse_attr("1.0")) is float
    assert type(parse_attr("1e+16")) is float
    arr = parse_attr("array<f32[2] 0x0000803f000000c0>")
    assert not arr.flags.writeable
    assert arr.tolist() == [1.0, -2.0]


# -- TEXT-1..3: layout, numbering and exact round trip ----------------------------------
@pytest.mark.spec("TEXT-2", "TEXT-3")
def test_text_of_a_small_graph_is_exactly_as_documented() -> None:
    def fn(x: TensorValue, b: Any) -> Any:
        y = ops.reshape(x, (3, 2))
        c = ops.constant(np.array([1.0, -2.0], np.float32))
        (s,) = y.graph.stage(get_op("slice"), (y,), {"slices": ((0, 1, 1), (None, None, 1))})
        assert isinstance(s, TensorValue)
        ops.buffer_store(b, ops.cast(ops.reshape(s, (2,)), DType.int64))
        return y, c

    g = build(fn, np.zeros((2, 3), np.float32), Buf(np.zeros(2, np.int64)), name="g")
    assert to_text(g) == (
        "graph @g(%0: tensor<f32[2,3] cpu:0>, %1: buffer<si64[2] cpu:0>) {\n"
        "  %2 = reshape(%0) {shape = (3, 2)} : tensor<f32[3,2] cpu:0>\n"
        "  %3 = constant() {device = cpu:0, value = array<f32[2] 0x0000803f000000c0>}"
        " : tensor<f32[2] cpu:0>\n"
        "  %4 = slice(%2) {slices = ((0, 1, 1), (none, none, 1))} : tensor<f32[1,2] cpu:0>\n"
        "  %5 = reshape(%4) {shape = (2,)} : tensor<f32[2] cpu:0>\n"
        "  %6 = cast(%5) {dtype = si64} : tensor<si64[2] cpu:0>\n"
        "  buffer_store(%1, %6)\n"
        "  output(%2, %3)\n"
        "}\n")
    assert_round_trip(g)


@pytest.mark.spec("TEXT-1", "TEXT-4")
def test_special_constants_round_trip_bit_exactly() -> None:
    values = [
        bf16(0x7FC1, 0xFFC0, 0x8000, 0x7F80, 0x0001),  # NaN payloads, -0, inf, subnormal
        np.array([-0.0, 0.0, np.nan], np.float32),
        np.array([-0.0], np.float64),
        np.array([0x7F, 0xFF, 0x80], np.uint8).view(ml_dtypes.float8_e4m3fn),
        np.array([0x7E, 0xFD], np.uint8).view(ml_dtypes.float8_e5m2),
        np.zeros((0, 3), np.float16), np.zeros((2, 0), np.bool_),
        np.array(-1.5, np.float32), np.array([True, False]),
        np.array([np.iinfo(np.int64).min, -1], np.int64),
        np.array([np.iinfo(np.uint64).max], np.uint64),
    ]

    def fn() -> tuple[TensorValue, ...]:
        return tuple(ops.constant(v) for v in values)

    g = build(fn)
    text = to_text(g)
    assert "array<bf16[5] 0xc17fc0ff0080807f0100>" in text
    assert "array<f8e4m3fn[3] 0x7fff80>" in text
    parsed = assert_round_trip(g)
    outs, _ = execute(parsed, [])
    same_bits(outs, values)


@pytest.mark.spec("TEXT-1", "TEXT-4")
def test_slices_with_none_and_negative_steps_and_buffers() -> None:
    x = np.arange(12, dtype=np.int32).reshape(3, 4)

    def fn(x: TensorValue, b: Any) -> Value:
        g = x.graph
        (s,) = g.stage(get_op("slice"), (x,), {"slices": ((None, None, -1), (1, None, 2))})
        src = ops.constant(np.array([[7, 8]], np.int32))
        g.stage(get_op("buffer_store_slice"), (b, src), {"slices": ((2, None, -3),
                                                                    (None, 2, 1))})
        return s

    g = build(fn, x, Buf(np.zeros((3, 4), np.int32)))
    text = to_text(g)
    assert "slices = ((none, none, -1), (1, none, 2))" in text
    assert "buffer_store_slice(%1, %3) {slices = ((2, none, -3), (none, 2, 1))}\n" in text
    parsed = assert_round_trip(g)
    buf = np.zeros((3, 4), np.int32)
    (out,) = InterpreterExecutor().execute(parsed, [x, buf])
    assert_same(out, np.array([[9, 11], [5, 7], [1, 3]], np.int32))
    assert_same(buf, np.array([[0, 0, 0, 0], [0, 0, 0, 0], [7, 8, 0, 0]], np.int32))


@pytest.mark.spec("TEXT-1", "TEXT-4")
def test_every_attribute_kind_round_trips_through_a_graph() -> None:
    attrs = {"s": 'quote " backslash \\ newline \n tab \t unicode é 😀', "n": None,
             "big": -(2**70), "f": -0.0, "nan": -math.nan, "inf": -math.inf,
             "t": ((0, None, -1), ((None,), ()), [1.5, "x"]), "d": DType.float8_e5m2,
             "dev": DeviceRef.GPU(3), "ty": BufferType(DType.uint16, (0, 2), CPU),
             "a": bf16(0x7FC1), "z": np.float16(-0.0), "b": True}
    with registered(ECHO):
        g = Graph("attrs", [TensorType(DType.float32, (2,), CPU)])
        (y,) = g.stage(ECHO, g.inputs, attrs)
        g.output(y)
        text = to_text(g)
        assert '"quote \\" backslash \\\\ newline \\n tab \\t unicode \\u00e9 \\ud83d\\ude00"' \
            in text
        assert len(text.splitlines()) == 4
        parsed = assert_round_trip(g)
        assert list(parsed.nodes[0].attrs) == sorted(attrs)


@pytest.mark.spec("TEXT-1", "TEXT-4")
@FAST
@given(st.dictionaries(ATTR_NAMES, ATTRS, max_size=4), raw_arrays())
def test_random_attributes_and_constants_round_trip(attrs: dict[str, Any],
                                                    value: np.ndarray) -> None:
    with registered(ECHO):
        g = Graph("random_attrs")
        (c,) = g.stage(get_op("constant"), (), {"value": value, "device": CPU})
        (y,) = g.stage(ECHO, (c,), attrs)
        g.output(y, c)
        parsed = assert_round_trip(g)
        outs, _ = execute(parsed, [])
        same_bits(outs, [value, value])


@pytest.mark.spec("TEXT-1", "TEXT-2")
def test_multi_result_ops_round_trip_and_execute() -> None:
    x = np.array([1.0, np.nan], np.float32)
    with registered(PAIR):
        g = Graph("pair", [TensorType(DType.float32, (2,), CPU)])
        a, m = g.stage(PAIR, g.inputs, {})
        g.output(m, a)
        text = to_text(g)
        assert "  %1, %2 = test_pair(%0) : tensor<f32[2] cpu:0>, tensor<i1[2] cpu:0>\n" in text
        assert "  output(%2, %1)\n" in text
        parsed = assert_round_trip(g)
        m_out, a_out = InterpreterExecutor().execute(parsed, [x])
        assert_same(m_out, np.array([False, True]))
        assert_same(a_out, x)


@pytest.mark.spec("TEXT-3")
def test_graphs_without_outputs_and_with_empty_outputs() -> None:
    g = Graph("open", [TensorType(DType.int8, (), CPU)])
    g.stage(get_op("negate"), g.inputs, {})
    text = to_text(g)
    assert "output" not in text
    assert parse(text).outputs is None
    assert_round_trip(g)
    g.output()
    assert to_text(g).endswith("  output()\n}\n")
    assert parse(to_text(g)).outputs == []


@pytest.mark.spec("TEXT-5")
def test_graphs_needing_lowering_round_trip_as_such() -> None:
    a = np.array([[1.5], [-2.0]], np.float32)
    b = np.array([1.0, 2.0, 3.0], np.float64)
    g = build(lambda a, b: a * b + 1, a, b)
    assert g.needs_lowering
    text = to_text(g)
    parsed = assert_round_trip(g)
    assert parsed.needs_lowering
    (out,) = InterpreterExecutor().execute(parsed, [a, b])
    want = a.astype(np.float64) * b + 1.0
    assert_same(out, want)
    assert to_text(parsed) == text  # the executor ran a lowered copy (EXEC-15)
    lowered_text = to_text(lowered(parsed))
    assert "broadcast_to" in lowered_text and "cast" in lowered_text
    assert parse(lowered_text).needs_lowering is False


@pytest.mark.spec("TEXT-3")
def test_location_comments_and_quoted_graph_names() -> None:
    g = build(lambda x: ops.abs(x), np.zeros(2, np.int32), name='my "graph"\nv2')
    with_locs = to_text(g, locations=True)
    assert re.search(r"  %1 = abs\(%0\) : tensor<si32\[2\] cpu:0>  // .*test_text\.py:\d+\n",
                     with_locs)
    assert with_locs.startswith('graph @"my \\"graph\\"\\nv2"(')
    parsed = parse(with_locs)
    assert parsed.name == 'my "graph"\nv2'
    assert to_text(parsed) == to_text(g)
    assert parsed.nodes[0].location is None


@pytest.mark.spec("TEXT-2")
def test_parser_accepts_any_value_names_and_prints_them_renumbered() -> None:
    text = ("graph @g(%x: tensor<f32[2] cpu:0>) {\n"
            "  %sum = add(%x, %x) : tensor<f32[2] cpu:0>  // a comment\n"
            "  output(%sum, %x)\n}")
    g = parse(text)
    assert to_text(g) == ("graph @g(%0: tensor<f32[2] cpu:0>) {\n"
                          "  %1 = add(%0, %0) : tensor<f32[2] cpu:0>\n"
                          "  output(%1, %0)\n}\n")


# -- TEXT-1: random graphs from the registry's sample functions --------------------------
SAMPLED = sorted(name for name, op in REGISTRY.items() if op.sample is not None)


def random_graph(seed: int, names: Sequence[str]) -> tuple[Graph, list[np.ndarray]]:
    """Stage one sampled call per name; operands are inputs, constants or earlier values."""
    src = RandomArgSource(seed)
    g = Graph(f"random_{seed}")
    inputs: list[np.ndarray] = []
    values: list[Value] = []
    for name in names:
        op = REGISTRY[name]
        assert op.sample is not None
        call = op.sample(src)
        operands: list[Value] = []
        for i, arr in enumerate(call.operands):
            t = TensorType(DType.from_numpy(arr.dtype), arr.shape, CPU)
            reuse = [v for v in values if v.type == t]
            mode = src.integer(0, 2)
            if i in call.buffers:
                v = g.add_input(t.as_buffer())
                inputs.append(arr)
            elif mode == 0 and reuse:
                v = src.choice(reuse)
            elif mode == 1:
                const = np.array(arr, copy=True)
                const.flags.writeable = False
                (v,) = g.stage(get_op("constant"), (), {"value": const, "device": CPU})
            else:
                v = g.add_input(t)
                inputs.append(arr)
            operands.append(v)
        values.extend(r for r in g.stage(op, operands, call.attrs)
                      if isinstance(r, TensorValue))
    g.output(*[v for v in values if src.boolean()])
    return g, inputs


def check_random_graph(seed: int, names: Sequence[str]) -> None:
    g, inputs = random_graph(seed, names)
    parsed = assert_round_trip(g)
    if all(REGISTRY[n].deterministic for n in names):
        assert_same_execution(g, parsed, inputs)


@pytest.mark.spec("TEXT-1", "TEXT-5")
@pytest.mark.skipif(not SAMPLED, reason="no registry op has a sample function yet")
@FAST
@given(st.integers(0, 2**32 - 1),
       st.lists(st.sampled_from(SAMPLED or ["<none>"]), min_size=1, max_size=6))
def test_random_registry_graphs_round_trip_and_execute_identically(
        seed: int, names: list[str]) -> None:
    check_random_graph(seed, names)


@pytest.mark.spec("TEXT-1")
@pytest.mark.parametrize("name", SAMPLED)
def test_every_sampled_op_round_trips(name: str) -> None:
    for seed in range(3):
        check_random_graph(seed, [name, name])


# -- TEXT-7: structural hash ------------------------------------------------------------
def _two_ins(a_dtype: Any = np.float32, dev: DeviceRef = CPU) -> list[TensorType]:
    return [TensorType(DType.from_numpy(a_dtype), (2,), dev),
            TensorType(DType.float32, (2,), dev)]


def _graph(name: str = "g", op: str = "add", types: list[TensorType] | None = None,
           shape: tuple[int, ...] = (2, 1), const: float = 0.0, swap_inputs: bool = False,
           swap_outputs: bool = False) -> Graph:
    types = types or _two_ins()
    g = Graph(name, types[::-1] if swap_inputs else types)
    a, b = g.inputs[::-1] if swap_inputs else g.inputs
    (s,) = g.stage(get_op(op), (a, b), {})
    (r,) = g.stage(get_op("reshape"), (s,), {"shape": shape})
    (c,) = g.stage(get_op("constant"), (), {"value": np.array(const, np.float32),
                                            "device": CPU})
    g.output(*((c, r) if swap_outputs else (r, c)))
    return g


@pytest.mark.spec("TEXT-7")
def test_hash_ignores_the_name_and_is_sha256_of_the_text() -> None:
    g1, g2 = _graph("first"), _graph("second")
    assert structural_hash(g1) == structural_hash(g2) == g1.structural_hash()
    assert re.fullmatch(r"[0-9a-f]{64}", structural_hash(g1))
    nameless = to_text(g1).replace("graph @first(", 'graph @""(', 1)
    assert structural_hash(g1) == hashlib.sha256(nameless.encode()).hexdigest()
    assert structural_hash(parse(to_text(g1))) == structural_hash(g1)
    # locations do not count
    assert structural_hash(build(lambda x: -x, np.zeros(1, np.int8))) == \
        structural_hash(build(lambda y: -y, np.zeros(1, np.int8)))


@pytest.mark.spec("TEXT-7")
@pytest.mark.parametrize("change", [
    {"op": "sub"}, {"shape": (1, 2)}, {"const": -0.0}, {"const": math.nan},
    {"types": _two_ins(np.float64)}, {"types": _two_ins(dev=DeviceRef.CPU(1))},
    {"swap_inputs": True}, {"swap_outputs": True},
], ids=["op", "attr", "neg-zero-constant", "nan-constant", "dtype", "device",
        "input-order", "output-order"])
def test_any_structural_change_changes_the_hash(change: dict[str, Any]) -> None:
    assert structural_hash(_graph(**change)) != structural_hash(_graph())


@pytest.mark.spec("TEXT-7")
def test_nan_payloads_change_the_hash() -> None:
    def g(bits: int) -> Graph:
        return build(lambda: ops.constant(bf16(bits)))

    assert structural_hash(g(0x7FC0)) == structural_hash(g(0x7FC0))
    assert structural_hash(g(0x7FC0)) != structural_hash(g(0x7FC1))


# -- TEXT-6: parse errors ---------------------------------------------------------------
GOOD = ("graph @g(%0: tensor<f32[2] cpu:0>, %1: buffer<f32[2] cpu:0>) {\n"
        "  %2 = add(%0, %0) : tensor<f32[2] cpu:0>\n"
        "  buffer_store(%1, %2)\n"
        "  output(%2)\n"
        "}\n")


def line_with(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.spec("TEXT-6")
@pytest.mark.parametrize(("text", "where", "expected", "found"), [
    ("", "line 1, col 1", "'graph'", "end of input"),
    ("  \n// only a comment\n", "line 3, col 1", "'graph'", "end of input"),
    (GOOD[:80], "line 2, col 18", "')'", "end of input"),
    (line_with(GOOD, "%2 = add(%0, %0) :", "%2 = frobnicate(%0, %0) :"), "line 2, col 8",
     "a registered op name", "'frobnicate'"),
    (line_with(GOOD, "%0: tensor<f32[2]", "%0: tensor<f33[2]"), "line 1, col 21",
     "a dtype", "'f33'"),
    (line_with(GOOD, "%0: tensor", "%0: tensr"), "line 1, col 14", "a type", "'tensr'"),
    (line_with(GOOD, "tensor<f32[2] cpu:0>,", "tensor<f32[-2] cpu:0>,"), "line 1, col 25",
     "a dimension", "'-2'"),
    (line_with(GOOD, "add(%0, %0)", "add(%0, %9)"), "line 2, col 16", "a defined value",
     "'%9'"),
    (line_with(GOOD, "buffer_store(%1, %2)", "%1 = negate(%2) : tensor<f32[2] cpu:0>"),
     "line 3, col 3", "a new value name", "'%1'"),
    (line_with(GOOD, ") : tensor<f32[2] cpu:0>\n  buffer", ") : tensor<f64[2] cpu:0>\n  buffer"),
     "line 2, col 22", "result types tensor<f32[2] cpu:0> (inferred by add)",
     "'tensor'"),
    (line_with(GOOD, "add(%0, %0) :", "add(%0, %0 {"), "line 2, col 19", "')'", "'{'"),
    (GOOD + "trailing", "line 6, col 1", "end of input", "'trailing'"),
    (line_with(GOOD, "add(%0, %0)", "add(%0, %1)"), "line 2, col 8",
     "operands and attributes valid for op 'add'", "'add'"),
    (line_with(GOOD, "output(%2)", "output(%1)"), "line 4, col 3", "tensor outputs",
     "'output'"),
    (line_with(GOOD, "%2 = add", "add"), "line 2, col 3", "1 result name(s) for op 'add'",
     "'add'"),
    (line_with(GOOD, "add(%0, %0) :", 'add(%0, %0) {x = "open} :'), "line 2, col 25",
     "a token", "'\"'"),
    (line_with(GOOD, "add(%0, %0) :", "add(%0, %0) {x = (1)} :"), "line 2, col 27",
     "',' after the single item of a 1-tuple", "')'"),
    (line_with(GOOD, "add(%0, %0) :", "add(%0, %0) {x = 1, x = 2} :"), "line 2, col 28",
     "a new attribute name", "'x'"),
    (line_with(GOOD, "add(%0, %0) :", "add(%0, %0) {x = array<f32[2] 0x00>} :"),
     "line 2, col 38", "16 hex digits (8 bytes of f32[2])", "'0x00'"),
    (line_with(GOOD, "add(%0, %0) :", "add(%0, %0) {x = nan:0x7ff0000000000000} :"),
     "line 2, col 29", "NaN bits", "'0x7ff0000000000000'"),
    (line_with(GOOD, "add(%0, %0) :", "add(%0, %0) {x = $} :"), "line 2, col 25",
     "a token", "'$'"),
    (line_with(GOOD, "add(%0, %0) :", "add(%0, %0) {x = foo} :"), "line 2, col 25",
     "an attribute value", "'foo'"),
    (line_with(GOOD, "cpu:0>,", "tpu:0>,"), "line 1, col 28", "a device", "'tpu'"),
    (line_with(GOOD, "graph @g", "graph g"), "line 1, col 7", "a graph name", "'g'"),
    (line_with(GOOD, "  output(%2)\n", "  output(%2)\n  output(%2)\n"), "line 5, col 3",
     "'}'", "'output'"),
])
def test_parse_errors_name_line_column_expected_and_found(
        text: str, where: str, expected: str, found: str) -> None:
    with pytest.raises(GraphParseError) as info:
        parse(text)
    msg = str(info.value)
    assert msg.startswith(f"{where}: expected {expected}"), msg
    assert f" but found {found}" in msg, msg


@pytest.mark.spec("TEXT-6")
def test_type_rule_failures_are_reported_with_the_rule() -> None:
    text = line_with(GOOD, "%2 = add(%0, %0) : tensor<f32[2] cpu:0>",
                     "%2 = reshape(%0) {shape = (3,)} : tensor<f32[3] cpu:0>")
    with pytest.raises(GraphParseError, match=r"^line 2, col 8: .*\[reshape\.C1\]"):
        parse(text)
    with pytest.raises(GraphParseError, match=r"^line 1, col \d+: expected less deeply nested"):
        parse_attr("(" * 100_000)
    with pytest.raises(GraphParseError, match=r"line 1, col 1: expected the text form"):
        parse(b"graph")  # type: ignore[arg-type]


@pytest.mark.spec("TEXT-6")
@FAST
@given(st.data())
def test_truncated_or_mutated_text_raises_only_graph_parse_errors(data: st.DataObject) -> None:
    with registered(ECHO):
        g = Graph("m", [TensorType(DType.bfloat16, (2,), CPU)])
        (y,) = g.stage(ECHO, g.inputs, {"s": "a\"b", "t": ((1, None, -1),), "f": -0.0})
        g.output(y)
        text = to_text(g).rstrip()
        cut = data.draw(st.integers(0, len(text) - 1))
        with pytest.raises(GraphParseError, match=r"^line \d+, col \d+: expected "):
            parse(text[:cut])
        pos = data.draw(st.integers(0, len(text) - 1))
        char = data.draw(st.sampled_from(list("%@(){}[]<>,=:-\"0x9a_ \n")))
        try:
            parse(text[:pos] + char + text[pos + 1:])
        except GraphParseError as e:
            assert re.match(r"line \d+, col \d+: expected .* but found ", str(e)), str(e)
