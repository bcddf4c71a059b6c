"""Every peer's op table (``peers/table.py``): registry ops only, each mapped or refused
with a reason, mapped for registry dtypes; and the shared refusal walk (EXEC-2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from interpreter.dtype import DType
from interpreter.graph import Graph, TensorType, lowered, ops
from interpreter.registry import REGISTRY
from interpreter.types import DeviceRef
from peers import max_engine, onnx_graph
from peers.table import data_dtypes, table_refusal

pytestmark = pytest.mark.peer

TABLES = {"max": (max_engine.OPS, max_engine.UNMAPPED),
          "onnxruntime": (onnx_graph.OPS, onnx_graph.UNMAPPED)}


@pytest.fixture(params=sorted(TABLES))
def table(request: pytest.FixtureRequest) -> tuple[Mapping[str, Any], Mapping[str, str]]:
    return TABLES[request.param]


def test_op_table_names_are_registry_ops(table: tuple[Mapping[str, Any], Any]) -> None:
    mapped, unmapped = table
    assert sorted(set(mapped) - set(REGISTRY)) == []
    assert sorted(set(unmapped) - set(REGISTRY)) == []
    assert set(mapped).isdisjoint(unmapped)


def test_every_registry_op_is_mapped_or_refused_with_a_reason(
        table: tuple[Mapping[str, Any], Mapping[str, str]]) -> None:
    mapped, unmapped = table
    assert sorted(set(REGISTRY) - set(mapped) - set(unmapped)) == []
    assert all(unmapped.values())


def test_mapped_dtypes_are_registry_dtypes(table: tuple[Mapping[str, Any], Any]) -> None:
    names = {d.name for d in DType}
    for name, row in table[0].items():
        assert row.dtypes <= names, name


@pytest.mark.spec("EXEC-2")
def test_table_refusal_names_the_first_reason() -> None:
    with Graph("g", input_types=[TensorType(DType.int32, (3,))]) as g:
        g.output(ops.cast(ops.exp(ops.cast(g.inputs[0], DType.float32)), DType.float16))
    low = lowered(g)
    assert data_dtypes(low.nodes[0]) == {"int32", "float32"}  # a cast: both dtypes
    assert data_dtypes(low.nodes[1]) == {"float32"}
    row = max_engine.OPS["exp"]
    assert table_refusal(low, "P", {"cast": max_engine.OPS["cast"], "exp": row}, {}) is None
    assert table_refusal(low, "P", {"cast": max_engine.OPS["cast"]}, {"exp": "why"}) == (
        "node 1: op 'exp' is not mapped (why)")
    narrow = {"cast": max_engine.OPS["cast"], "exp": onnx_graph.OPS["exp"]}
    assert table_refusal(low, "P", narrow, {}, more=lambda n, r: f"no {n.op.name}") == (
        "node 0: cast: no cast")
    with Graph("d", input_types=[TensorType(DType.float32, (3,), DeviceRef.GPU())]) as gd:
        gd.output(ops.exp(gd.inputs[0]))
    assert table_refusal(lowered(gd), "P", {"exp": row}, {}) == (
        "input on gpu:0 (the P peer serves cpu:0 only)")
