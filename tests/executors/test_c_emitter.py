"""The one C emitter (COMP-22): its entries, its two dialects, their golden sources, and the
backends around it, which name no op."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import reference_executors
from interpreter.dtype import DType
from interpreter.graph import Graph, TensorType, ops
from interpreter.graph.lowering import lower
from interpreter.registry import REGISTRY
from reference_executors.c_emitter import CUDA, ENTRIES, HOST, expression, numpy_out
from tools.golden import DIR, PATTERNS, expected_files, host_source, op_graphs

#: COMP-15's list: the ops the native tier computes.
NATIVE_OPS = {"add", "sub", "mul", "div", "max", "min", "equal", "not_equal", "greater",
              "greater_equal", "logical_and", "logical_or", "logical_xor", "logical_not",
              "select", "cast", "negate", "abs", "sqrt", "exp", "broadcast_to", "relu"}
#: modules that must reach ops only through their OpDef or their emitter entry
BACKENDS = ("compiling.py", "compiling_native.py", "compiling_plan.py", "cuda_codegen.py",
            "c_preludes.py")


@pytest.mark.spec("GPU-17", "COMP-22")
@pytest.mark.parametrize("name", sorted(expected_files()))
def test_golden_source_is_current(name: str) -> None:
    """The generated C equals the reviewed file; after a deliberate change run
    ``python -m tools.golden --update`` and review the diff."""
    text = expected_files()[name]
    path = DIR / name
    assert path.exists() and path.read_text() == text, (
        f"{path} is stale: run `python -m tools.golden --update` and "
        "review the diff")


@pytest.mark.spec("GPU-17", "COMP-22")
def test_no_golden_file_is_left_over() -> None:
    files = {str(p.relative_to(DIR)) for pattern in PATTERNS for p in DIR.glob(pattern)}
    assert files == set(expected_files())
    assert {f.split("/")[0] for f in files} == {"cuda", "host"}


@pytest.mark.spec("COMP-2", "COMP-22")
def test_the_entries_are_exactly_the_fusable_ops() -> None:
    fusable = {n for n, op in REGISTRY.items() if "fusable" in op.traits}
    elementwise = {n for n, op in REGISTRY.items()
                   if op.category in ("elementwise-unary", "elementwise-binary")}
    assert fusable == elementwise | {"select", "broadcast_to"}
    assert set(ENTRIES) == fusable
    assert {n for n, op in REGISTRY.items() if "broadcast-view" in op.traits} == {"broadcast_to"}
    assert {n for n, op in REGISTRY.items() if "compile-time" in op.traits} == {"constant"}


@pytest.mark.spec("COMP-15", "COMP-22")
def test_the_host_dialect_serves_exactly_the_native_ops_on_every_native_dtype() -> None:
    assert HOST.dtypes == {DType.bool, DType.int8, DType.int16, DType.int32, DType.int64,
                           DType.uint8, DType.uint16, DType.uint32, DType.uint64,
                           DType.float32, DType.float64}
    served = {}
    for name in sorted(ENTRIES):
        got = [host_source(g) is not None for _, g in op_graphs(name, HOST)]
        assert all(got) or not any(got), f"{name}: served on some native dtypes only"
        served[name] = all(got)
    assert {n for n, ok in served.items() if ok} == NATIVE_OPS


@pytest.mark.spec("COMP-15", "GPU-3")
def test_float16_is_cuda_only() -> None:
    with Graph("h", [TensorType(DType.float16, (4,))] * 2) as g:
        g.output(ops.add(*g.inputs))
    (node,) = lower(g).nodes
    assert expression(HOST, node, ["a", "b"]) is None
    assert expression(CUDA, node, ["a", "b"]) == "ec_rh(a + b)"


@pytest.mark.spec("COMP-22")
@pytest.mark.parametrize("name", sorted(NATIVE_OPS - {"exp", "sqrt"}))
def test_the_dialects_differ_only_in_spelling(name: str) -> None:
    """Every op the host serves is the CUDA expression once the host dialect takes CUDA's
    spellings (``exp`` and ``sqrt`` excepted: the host computes them in the dtype, equal to
    CUDA's double route rounded once, COMP-16)."""
    assert HOST.functions is not None
    respelled = dataclasses.replace(HOST, bool_type=CUDA.bool_type, bit_casts=CUDA.bit_casts,
                                    functions={f: f for f in HOST.functions})
    for label, g in op_graphs(name, HOST):
        node = g.nodes[-1]
        args = [f"v{i}" for i in range(len(node.operands))]
        host = expression(HOST, node, args)
        assert host is not None
        assert expression(respelled, node, args) == expression(CUDA, node, args), label


@pytest.mark.spec("COMP-6", "NUM-8")
def test_numpy_out_forms_are_those_of_non_ufunc_kernels() -> None:
    with_form = {n for n in ENTRIES if numpy_out(n) is not None}
    assert with_form == {"select", "max", "min"}
    assert numpy_out("transfer") is None  # no entry


def _string_constants(path: Path) -> set[str]:
    """Every string literal of a module, except the names listed in ``__all__``."""
    tree = ast.parse(path.read_text())
    exported: set[int] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                  for t in node.targets)):
            exported |= {id(c) for c in ast.walk(node.value)}
    return {c.value for c in ast.walk(tree) if isinstance(c, ast.Constant)
            and isinstance(c.value, str) and id(c) not in exported}


@pytest.mark.spec("COMP-22")
@pytest.mark.parametrize("module", BACKENDS)
def test_backends_name_no_op(module: str) -> None:
    """What a backend knows about an op comes from its ``OpDef`` or its emitter entry."""
    path = Path(reference_executors.__file__).parent / module
    named = _string_constants(path) & set(REGISTRY)
    assert not named, f"{module} names ops {sorted(named)}"
