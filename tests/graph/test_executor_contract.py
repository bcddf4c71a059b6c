"""The executor contract of spec/graph.md (GRAPH-20..23) holds on real staged graphs: what an
executor reads, the exact Python type of every attribute, the order of several results, and
the stable API (``__all__``) the conformance suite keeps to."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from conformance.strategies import Case, RngArgSource, case_from_call
from interpreter.dtype import DType
from interpreter.graph.core import Node
from interpreter.registry import REGISTRY, OpDef
from interpreter.registry.attrtypes import attr_type
from interpreter.types import BufferType, DeviceRef, TensorType

ROOT = Path(__file__).resolve().parents[2]
SEEDS = range(24)
MULTI_RESULT = {"split", "top_k", "bottom_k", "allgather", "allreduce_sum", "reducescatter_sum",
                "distributed_broadcast", "distributed_scatter"}


def _staged(op: OpDef) -> Iterator[tuple[Case, Node]]:
    """Graphs staged from ``op.sample`` (calls that do not stage are skipped) and the node
    of ``op`` in each."""
    assert op.sample is not None, f"{op.name} has no sample function"
    for seed in SEEDS:
        try:
            case = case_from_call(op, op.sample(RngArgSource(seed)))
        except Exception:
            continue
        yield case, next(n for n in case.graph.nodes if n.op.name == op.name)


@pytest.mark.spec("GRAPH-21")
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_attribute_types_hold_on_staged_graphs(name: str) -> None:
    op = REGISTRY[name]
    declared = {a: attr_type(name, a) for a in op.attrs}  # KeyError: an undeclared attribute
    staged = 0
    for _case, node in _staged(op):
        staged += 1
        assert type(node.attrs) is dict and set(node.attrs) == set(op.attrs), node.attrs
        for a, v in node.attrs.items():
            assert declared[a].check(v), f"{name}.{a} = {v!r} is not {declared[a].text}"
        if name == "constant":
            value, (result,) = node.attrs["value"], node.results
            assert value.dtype == result.type.dtype.to_numpy()
            assert value.shape == result.type.shape
    assert staged, f"no sampled call of {name} staged in {len(SEEDS)} seeds"


@pytest.mark.spec("GRAPH-21")
def test_attribute_checks_are_exact() -> None:
    """The declared types reject near misses an executor would trip over."""
    assert not attr_type("reduce_sum", "axis").check(np.int64(1))
    assert not attr_type("reduce_sum", "axis").check(True)
    assert not attr_type("reshape", "shape").check([2, 3])
    assert attr_type("slice", "slices").check(((None, 3, 1), (0, None, -2)))
    assert not attr_type("slice", "slices").check(((None, 3),))
    assert not attr_type("constant", "value").check(np.zeros(2))  # writeable
    assert attr_type("pad", "value").check(True)


@pytest.mark.spec("GRAPH-20", "GRAPH-22")
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_what_an_executor_reads(name: str) -> None:
    """The containers and types GRAPH-20 promises, and GRAPH-22's result orders."""
    for case, node in _staged(REGISTRY[name]):
        g = case.graph
        assert type(g.inputs) is list and type(g.nodes) is list and type(g.outputs) is list
        assert len(g.inputs) == len(case.inputs)
        for v, a in zip(g.inputs, case.inputs, strict=True):
            assert isinstance(v.type, TensorType | BufferType)
            assert v.type.shape == a.shape and v.type.dtype.to_numpy() == a.dtype
            assert type(v.type.shape) is tuple and isinstance(v.type.device, DeviceRef)
            assert v.type.device.device_type in ("cpu", "gpu") and type(v.type.device.id) is int
        assert type(node.operands) is tuple and type(node.results) is tuple
        assert isinstance(node.op.name, str) and REGISTRY[node.op.name] is node.op
        seen = set(g.inputs)
        for n in g.nodes:  # every operand is defined before use
            assert all(o in seen for o in n.operands)
            seen.update(n.results)
        assert all(isinstance(o.type, TensorType) for o in g.outputs or ())
        if len(node.results) > 1:
            assert name in MULTI_RESULT, f"{name} has several results; add it to GRAPH-22"
        if name == "top_k":
            assert [r.type.dtype for r in node.results][1] == DType.int64
        if name == "split":
            axis = node.attrs["axis"]
            assert [r.type.shape[axis] for r in node.results] == list(node.attrs["sizes"])
        if name in ("allgather", "allreduce_sum", "reducescatter_sum"):
            assert [r.type.device for r in node.results] == [o.type.device
                                                             for o in node.operands]
        if name in ("distributed_broadcast", "distributed_scatter"):
            assert tuple(r.type.device for r in node.results) == node.attrs["devices"]


def _public_modules() -> list[str]:
    out = []
    for p in sorted((ROOT / "interpreter").rglob("*.py")):
        parts = p.relative_to(ROOT).with_suffix("").parts
        if any(s.startswith("_") and s != "__init__" for s in parts):
            continue
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


@pytest.mark.spec("GRAPH-23")
def test_every_public_module_defines_all() -> None:
    missing = [m for m in _public_modules() if not hasattr(importlib.import_module(m), "__all__")]
    assert not missing, f"public modules without __all__: {missing}"
    for m in _public_modules():
        mod = importlib.import_module(m)
        absent = [n for n in mod.__all__ if not hasattr(mod, n)]
        assert not absent, f"{m}.__all__ names what it does not define: {absent}"


@pytest.mark.spec("GRAPH-23")
def test_conformance_suite_imports_only_public_names() -> None:
    """Every ``from interpreter... import name`` in ``conformance/*.py`` (functions' own
    imports included) names something in that module's ``__all__``."""
    private = []
    for p in sorted((ROOT / "conformance").glob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and node.module.split(".")[0] == "interpreter":
                public = getattr(importlib.import_module(node.module), "__all__", ())
                private += [f"{p.name}: from {node.module} import {a.name}"
                            for a in node.names if a.name not in public]
    assert not private, "the suite imports non-public names:\n" + "\n".join(private)
