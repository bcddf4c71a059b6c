"""CompilingExecutor's native tier (generated C for fused groups, COMP-13..COMP-18)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.executor import InterpreterExecutor
from interpreter.graph import Graph, TensorType, ops
from reference_executors import compiling, compiling_native
from reference_executors.compiling import CompilingExecutor

from .graphs import chain16, chain_n

HAVE_CC = compiling_native.compiler() is not None
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no C compiler")
N = 515  # not a multiple of any vector width: the loop's remainder runs too

INTS = [DType.int8, DType.int16, DType.int32, DType.int64, DType.uint8, DType.uint16,
        DType.uint32, DType.uint64]
NATIVE = [DType.float32, DType.float64, *INTS, DType.bool]


def same(got: np.ndarray, ref: np.ndarray) -> bool:
    """Bit-identical, except that a NaN matches any NaN (TOL-4)."""
    if got.dtype != ref.dtype or got.shape != ref.shape:
        return False
    if got.dtype.kind == "f":
        nan = np.isnan(ref)
        return bool(np.array_equal(np.isnan(got), nan)
                    and got[~nan].tobytes() == ref[~nan].tobytes())
    return got.tobytes() == ref.tobytes()


def ulps(got: np.ndarray, ref: np.ndarray) -> int:
    """Largest distance in units in the last place between finite float64 results."""
    fin = np.isfinite(ref)
    assert np.array_equal(got[~fin], ref[~fin], equal_nan=True)
    return int(np.abs(got[fin].view(np.int64) - ref[fin].view(np.int64)).max(initial=0))


def operands(dtype: DType, seed: int) -> list[np.ndarray]:
    """x, y with the dtype's special values (every pair of them), z small and castable."""
    rng, npt = np.random.default_rng(seed), dtype.to_numpy()
    if dtype.is_float():
        sp = np.array([np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, 2.5,
                       np.finfo(npt).tiny / 4, -np.finfo(npt).tiny, np.finfo(npt).max,
                       88.7, 89.0, -103.9, -104.5, 709.7, 710.0, -745.0, -746.0], npt)
        x = (rng.standard_normal(N) * 30).astype(npt)
        y = (rng.standard_normal(N) * 30).astype(npt)
        x[:sp.size**2], y[:sp.size**2] = np.repeat(sp, sp.size), np.tile(sp, sp.size)
        y[-50:] = x[-50:]  # equal operands
        z = rng.uniform(0, 100, N).astype(npt)
    elif dtype is DType.bool:
        x, y, z = (rng.integers(0, 2, N).astype(bool) for _ in range(3))
    else:
        info = np.iinfo(npt)
        sp = np.array([info.min, info.max, 0, 1, info.max // 2 + 1, info.min + 1 if info.min
                       else 2], npt)
        x = rng.integers(info.min, info.max, N, dtype=npt, endpoint=True)
        y = rng.integers(info.min, info.max, N, dtype=npt, endpoint=True)
        x[:sp.size**2], y[:sp.size**2] = np.repeat(sp, sp.size), np.tile(sp, sp.size)
        z = rng.integers(0, min(int(info.max), 100), N, dtype=npt)
    return [x, y, z]


def all_ops(dtype: DType) -> Callable[[], Graph]:
    """Every native op on ``dtype`` in one graph (one fused group, many outputs)."""

    def build() -> Graph:
        with Graph(f"all_{dtype.value}", [TensorType(dtype, (N,))] * 3) as g:
            x, y, z = g.inputs
            outs = [ops.maximum(x, y), ops.minimum(x, y), ops.equal(x, y), ops.not_equal(x, y),
                    ops.greater(x, y), ops.greater_equal(x, y), ops.where(ops.greater(x, y), x,
                                                                          y)]
            outs += [ops.cast(z, d) for d in NATIVE]
            if dtype is DType.bool:
                outs += [ops.logical_and(x, y), ops.logical_or(x, y), ops.logical_xor(x, y),
                         ops.logical_not(x)]
            else:
                outs += [ops.add(x, y), ops.sub(x, y), ops.mul(x, y), ops.abs(x)]
            if dtype.is_float() or dtype.value.startswith("int"):
                outs.append(ops.negate(x))
            if dtype.is_float():
                outs += [ops.div(x, y), ops.sqrt(x), ops.exp(x), ops.cast(x, DType.bool)]
            g.output(*outs)
        return g

    return build


def run_both(build: Callable[[], Graph], inputs: list[np.ndarray], **kw: Any
             ) -> tuple[list[np.ndarray], list[np.ndarray], compiling.CompiledPlan]:
    ex = CompilingExecutor(**kw)
    g = build()
    plan = ex.compile(g)
    got = plan.run([a.copy() for a in inputs])
    ref = InterpreterExecutor().execute(build(), [a.copy() for a in inputs])
    return got, ref, plan


@needs_cc
@pytest.mark.spec("COMP-13", "COMP-15", "COMP-16")
@pytest.mark.parametrize("dtype", NATIVE, ids=lambda d: d.value)
def test_every_native_op_and_dtype_matches_the_reference(dtype: DType) -> None:
    """One C kernel per dtype computes every supported op bit-identically to the reference
    (NaN, signed zeros, subnormals, integer wrap-around, casts); float64 ``exp`` within
    1 ulp of numpy's (its budget is ulp(2))."""
    build = all_ops(dtype)
    got, ref, plan = run_both(build, operands(dtype, 1), native=True)
    assert (plan.kernel_count, plan.native_kernel_count) == (1, 1)
    names = [n.op.name for n in plan.graph.nodes]
    for i, (a, b) in enumerate(zip(got, ref, strict=True)):
        op = plan.graph.nodes[names.index("exp")] if dtype is DType.float64 else None
        if op is not None and plan.graph.outputs[i] is op.results[0]:
            assert ulps(a, b) <= 1, "float64 exp"
            continue
        assert same(a, b), f"output {i} ({plan.graph.outputs[i]}) of {dtype.value}"


@needs_cc
@pytest.mark.spec("COMP-16")
def test_float32_exp_is_correctly_rounded_on_dense_ranges() -> None:
    """Every float32 in ranges around 1, overflow, underflow to subnormals and 0: the C
    ``exp`` equals the reference's float64 exp rounded once (no double-rounding case here)."""
    starts = [0x3F000000, 0x42B00000, 0xC2AE0000, 0xC2CE0000, 0x33000000, 0xB3000000]
    u = np.concatenate([np.arange(s, s + (1 << 16), dtype=np.uint32) for s in starts])
    u = np.concatenate([u, np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001,
                                     0x80000000], np.uint32)])
    x = u.view(np.float32)

    def build() -> Graph:
        with Graph("exp32", [TensorType(DType.float32, x.shape)]) as g:
            g.output(ops.exp(g.inputs[0]))
        return g

    got, ref, plan = run_both(build, [x], native=True)
    assert plan.native_kernel_count == 1
    assert same(got[0], ref[0])


@needs_cc
@pytest.mark.spec("COMP-13", "COMP-16")
@pytest.mark.parametrize("dtype", [DType.float32, DType.float64], ids=lambda d: d.value)
def test_the_chain_is_one_native_kernel_matching_the_reference(dtype: DType) -> None:
    n = 40000
    rng = np.random.default_rng(3)
    ins = [(rng.standard_normal(n) * 4).astype(dtype.to_numpy()) for _ in range(2)]
    ins[0][:6], ins[1][:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-39], [0.0] * 6
    got, ref, plan = run_both(lambda: chain16(n, dtype), ins)  # "auto": n >= NATIVE_MIN
    assert (plan.kernel_count, plan.native_kernel_count) == (1, 1)
    if dtype is DType.float32:
        assert same(got[0], ref[0])
    else:
        assert ulps(got[0], ref[0]) <= 1


@pytest.mark.spec("COMP-14")
def test_auto_serves_only_large_groups_and_small_graphs_never_call_the_compiler(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Below ``NATIVE_MIN_FUSED`` elements, below ``NATIVE_MIN`` with fewer than
    ``NATIVE_MIN_OPS`` ops, or above ``NATIVE_MAX_OPS`` ops ``auto`` keeps the numpy path
    without looking for a compiler (the conformance suite's graphs compile as fast as
    before); ``False`` never uses C; other values are a ``ValueError``."""
    def boom(*a: Any) -> None:
        raise AssertionError("compiler called")

    monkeypatch.setattr(compiling_native, "build", boom)
    plan = CompilingExecutor().compile(chain16(compiling.NATIVE_MIN_FUSED - 1))
    assert (plan.kernel_count, plan.native_kernel_count) == (1, 0)
    few = chain_n(compiling.NATIVE_MIN_OPS - 1, compiling.NATIVE_MIN - 1)
    assert CompilingExecutor().compile(few).native_kernel_count == 0
    plan = CompilingExecutor(native=False).compile(chain16(compiling.NATIVE_MIN))
    assert plan.native_kernel_count == 0
    long = chain_n(compiling.NATIVE_MAX_OPS + 1, compiling.NATIVE_MIN)  # gcc would take ~1 s
    assert CompilingExecutor().compile(long).native_kernel_count == 0
    with pytest.raises(ValueError, match=r"native='yes'.*\[COMP-13\]"):
        CompilingExecutor(native="yes")


@needs_cc
@pytest.mark.spec("COMP-14", "COMP-15")
def test_auto_compiles_a_group_of_several_ops_from_native_min_fused_with_scalars_in_place(
        ) -> None:
    """From ``NATIVE_MIN_FUSED`` elements a group of ``NATIVE_MIN_OPS`` or more ops is one C
    loop; its weak scalars (splat constants) are read as one element each, not copied to
    full arrays, and the result is the reference's, byte for byte."""
    n = compiling.NATIVE_MIN_FUSED

    def build() -> Any:
        with Graph("scalars", [TensorType(DType.float32, (n,))]) as g:
            (x,) = g.inputs
            g.output(ops.div(ops.sub(ops.mul(ops.add(x, 1.5), x), -0.0), 3.0))
        return g

    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    got, ref, plan = run_both(build, [x])
    assert (plan.kernel_count, plan.native_kernel_count) == (1, 1)
    assert plan.source.count("contig(") == 1  # x only: the 4 scalars go by address
    assert same(got[0], ref[0])


@pytest.mark.spec("COMP-17")
@pytest.mark.parametrize("why", ["no compiler", "compile fails"])
def test_without_a_working_compiler_groups_keep_the_numpy_path(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, why: str) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(compiling_native, "_loaded", {})
    if why == "no compiler":
        monkeypatch.setattr(compiling_native, "_cc", [None])
    else:
        monkeypatch.setattr(compiling_native, "CFLAGS", ("--no-such-flag-ec",))
    rng = np.random.default_rng(0)
    ins = [rng.standard_normal(600).astype(np.float32) for _ in range(2)]
    got, ref, plan = run_both(lambda: chain16(600), ins, native=True)
    assert (plan.kernel_count, plan.native_kernel_count) == (1, 0)
    assert same(got[0], ref[0])
    assert not list((tmp_path / "eager-conformance" / "native").glob("*"))  # no leftovers


@needs_cc
@pytest.mark.spec("COMP-18")
def test_shared_objects_are_cached_on_disk_by_source_hash(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A compile leaves exactly one ``.so`` (atomic rename, no temporaries); a process with
    an empty memory cache loads it without compiling."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(compiling_native, "_loaded", {})
    src = compiling_native.group_source  # a tiny kernel of its own: never in another cache
    with Graph("c", [TensorType(DType.int16, (4,))] * 2) as g:
        g.output(ops.mul(ops.add(*g.inputs), g.inputs[0]))
    got = src(g.nodes, [0, 1], {g.nodes[0].results[0], g.nodes[1].results[0]},
              [g.nodes[1].results[0]], 4)
    assert got is not None
    source = got[0] + "/* cache test */\n"
    assert compiling_native.build(source, 3) is not None
    files = sorted(p.name for p in (tmp_path / "eager-conformance" / "native").iterdir())
    assert len(files) == 1 and files[0].endswith(".so")
    monkeypatch.setattr(compiling_native, "_loaded", {})
    monkeypatch.setattr(compiling_native, "_compile_so", lambda *a: pytest.fail("compiled"))
    kernel = compiling_native.build(source, 3)
    assert kernel is not None
    x, y, out = (np.array([1, -2, 300, 32767], np.int16), np.array([2, 5, 300, 1], np.int16),
                 np.zeros(4, np.int16))
    kernel(0, 4, x.ctypes.data, y.ctypes.data, out.ctypes.data)
    assert out.tolist() == [3, -6, (600 * 300 + 32768) % 65536 - 32768, -32768]


@needs_cc
@pytest.mark.spec("COMP-15")
def test_scalar_operands_are_native_and_row_broadcasts_keep_numpy() -> None:
    """An operand broadcast from one element is read once per kernel call; any other
    broadcast (a bias row) keeps the numpy block path. Strided inputs are fine."""
    n = 2048

    def scalar() -> Graph:  # strided inputs are copied for the call: copies outlive it
        with Graph("s", [TensorType(DType.float32, (n,))] * 2) as g:
            x, y = g.inputs
            c, d = ops.constant(np.float32(2.5)), ops.constant(np.float32(9.0))
            g.output(ops.sqrt(ops.add(ops.mul(x, c), ops.mul(y, d))))
        return g

    def rows() -> Graph:
        with Graph("r", [TensorType(DType.float32, (64, 32)),
                         TensorType(DType.float32, (32,))]) as g:
            x, b = g.inputs
            g.output(ops.exp(ops.add(x, ops.broadcast_to(b, (64, 32)))))
        return g

    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((2, 2 * n)).astype(np.float32)[:, ::2]  # not contiguous
    got, ref, plan = run_both(scalar, [x, y], native=True)
    assert plan.native_kernel_count == 1 and same(got[0], ref[0])
    assert same(plan.run([x, y])[0], ref[0])  # run_both passes contiguous copies
    ins = [rng.standard_normal((64, 32)).astype(np.float32),
           rng.standard_normal(32).astype(np.float32)]
    got, ref, plan = run_both(rows, ins, native=True)
    assert (plan.kernel_count, plan.native_kernel_count) == (1, 0) and same(got[0], ref[0])


@needs_cc
@pytest.mark.spec("COMP-15")
def test_groups_with_unsupported_ops_or_dtypes_keep_numpy() -> None:
    for dtype, fn in [(DType.float16, ops.exp), (DType.float32, ops.tanh)]:
        def build(dtype: DType = dtype, fn: Any = fn) -> Graph:
            with Graph("u", [TensorType(dtype, (N,))]) as g:
                g.output(fn(ops.add(g.inputs[0], g.inputs[0])))
            return g

        x = np.linspace(-3, 3, N).astype(dtype.to_numpy())
        got, ref, plan = run_both(build, [x], native=True)
        assert (plan.kernel_count, plan.native_kernel_count) == (1, 0) and same(got[0], ref[0])


@needs_cc
@pytest.mark.spec("COMP-16")
def test_gcc_vectorizes_the_chain_loop() -> None:
    """The chain's loop body has no libm call: gcc reports the loop vectorized."""
    cc = compiling_native.compiler()
    assert cc is not None
    if "clang" in cc[1].lower():
        pytest.skip("the system compiler is clang (-fopt-info-vec is gcc's)")
    g = chain16(compiling.NATIVE_MIN)
    CompilingExecutor().compile(g)  # lowers g
    plan = compiling.plan_graph(g)
    (group,) = plan.groups
    got = compiling_native.group_source(g.nodes, group.members, group.values, group.outputs,
                                        compiling.NATIVE_MIN)
    assert got is not None
    done = subprocess.run([cc[0], *compiling_native.cflags(), "-fopt-info-vec", "-x", "c", "-",
                           "-o", "/dev/null"], input=got[0], capture_output=True, text=True,
                          check=True)
    assert "loop vectorized" in done.stderr


@needs_cc
@pytest.mark.spec("COMP-19")
def test_large_native_calls_split_across_threads_give_the_same_bytes() -> None:
    """From ``PARALLEL_MIN`` elements a native call is split into ``threads`` disjoint
    ranges (an uneven size, so the last range is short); the bytes equal one whole call
    and the reference. Below it, and with ``threads=1``, the call is not split."""
    n = compiling_native.PARALLEL_MIN + 12345
    rng = np.random.default_rng(5)
    ins = [(rng.standard_normal(n) * 4).astype(np.float32) for _ in range(2)]
    ins[0][-6:] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-39]
    ref = InterpreterExecutor().execute(chain16(n), ins)[0]
    got = {}
    for threads in (1, 3):
        plan = CompilingExecutor(threads=threads).compile(chain16(n))
        assert ("parallel(nk0" in plan.source) == (threads > 1)
        got[threads] = plan.run(ins)[0]
    assert same(got[1], ref) and got[3].tobytes() == got[1].tobytes()
    small = CompilingExecutor(threads=3).compile(chain16(compiling_native.PARALLEL_MIN - 1))
    assert "parallel(" not in small.source and small.native_kernel_count == 1
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(ValueError, match=r"threads=.*\[COMP-19\]"):
            CompilingExecutor(threads=bad)  # type: ignore[arg-type]


@needs_cc
@pytest.mark.spec("COMP-19")
def test_split_calls_work_in_a_forked_child() -> None:
    """A child forked after the thread pool exists gets its own pool (the parent's threads
    are not in the child: submitting there would wait forever)."""
    import multiprocessing

    n = compiling_native.PARALLEL_MIN
    ins = [np.full(n, 0.5, np.float32), np.full(n, 0.25, np.float32)]
    plan = CompilingExecutor(threads=2).compile(chain16(n))
    expected = plan.run(ins)[0]  # the parent's pool now exists
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=lambda: queue.put(plan.run(ins)[0].tobytes()))
    child.start()  # fork: the target is not pickled
    try:
        got = queue.get(timeout=60)
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()
    assert got == expected.tobytes()


@pytest.mark.spec("COMP-13")
def test_kernel_arguments_are_the_arrays_addresses_writable_or_not() -> None:
    a = np.arange(6, dtype=np.float32)
    ro = a.copy()
    ro.flags.writeable = False
    empty = np.empty(0, np.float32)
    for x in (a, ro, empty):
        assert compiling_native.address(x) == x.ctypes.data
