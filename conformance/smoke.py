"""``--conformance-smoke`` (CONF-35): the coarse subset for pre-merge CI.

One ``test_op`` cell per (op family, dtype kind), plus one float32 and one integer cell per
op (CONF-100), ``general`` shape class first, every special-value sweep, one random-graph
test, one model cell (CONF-112), the smoke families of the state tests (CONF-93), per op its
float32 and one integer tier cell (CONF-151), one test per op family of the other per-op
families; the rest is deselected (``select``, called by
the plugin after ``-k``/``-m``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["select"]

_DROP = ("drop",)


def _smoke_op_key(item: pytest.Item) -> tuple[Any, ...] | None:
    """CONF-100: the per-op key of a ``test_op`` cell: one float32 cell and one integer
    cell (int32 first) per op; an op with neither keeps one cell of another dtype."""
    if getattr(item, "originalname", "") != "test_op":
        return None
    params = getattr(getattr(item, "callspec", None), "params", {})
    d = params["dtype"]
    kind = "float32" if d.value == "float32" else "int" if d.is_integral() else "other"
    return ("op-dtype", params["op_name"], kind)


def _smoke_rank(item: pytest.Item) -> tuple[int, int]:
    params = getattr(getattr(item, "callspec", None), "params", {})
    order = {"general": 0, "broadcast": 1, "scalar": 2, "empty": 3}
    d = params.get("dtype")
    prefer = 0 if getattr(d, "value", None) in ("float32", "int32") else 1
    return order.get(str(params.get("shape_class")), 4), prefer


def _smoke_key(item: pytest.Item) -> tuple[Any, ...] | None:
    """What a smoke run keeps one test of (None: keep every such test; ``_DROP``: none)."""
    from interpreter.registry import REGISTRY

    params = getattr(getattr(item, "callspec", None), "params", {})
    name = getattr(item, "originalname", "")
    if name == "test_op":
        d = params["dtype"]
        kind = ("bool" if d.value == "bool" else "float8" if d.is_float8() else "float"
                if d.is_float() else "signed" if d.is_signed() else "unsigned")
        return ("op", REGISTRY[params["op_name"]].category, kind)
    if name in ("test_special_sweep", "test_special_sweep_not_covered"):
        return None  # every sweep (CONF-100)
    if name == "test_graph":  # mixed-0 only
        return ("graph",) if (params["family"], params["chunk"]) == ("mixed", 0) else _DROP
    if name == "test_model":  # CONF-112: the decoder block in float32 only
        return (("model",) if (params["model"], params["dtype"].value) == ("decoder", "float32")
                else _DROP)
    if name == "test_state_sequence":  # CONF-93: the smoke families of the state tests
        from .sequences import SMOKE_FAMILIES

        return ("state", params["family"]) if params["family"] in SMOKE_FAMILIES else _DROP
    if name == "test_op_tier":  # CONF-151: per op float32, a signed and an unsigned cell
        return _tier_key(params)
    if params.get("op_name") in REGISTRY:  # other per-op families: one per op family
        return (name, REGISTRY[params["op_name"]].category)
    return None


def _tier_key(params: dict[str, Any]) -> tuple[Any, ...]:
    """CONF-151: an op's float32 tier cell, its first signed integer one
    (int32 first, by ``_smoke_rank``) and its widest unsigned one; an op with none of them
    keeps one cell of another dtype; a conversion (``cast``) keeps every tier cell."""
    from interpreter.registry import REGISTRY

    d, op = params["dtype"], params["op_name"]
    dtypes = REGISTRY[op].data_dtypes
    if "conversion" in REGISTRY[op].traits:  # every source dtype: its loop differs per
        # (source, target)
        return ("tier", op, d.value)
    if d.value == "float32":
        return ("tier", op, "float32")
    if d.is_unsigned():  # the widest: values past the signed range of its width
        widest = max((t for t in dtypes if t.is_unsigned()), key=lambda t: t.size_in_bytes)
        return ("tier", op, "uint") if d == widest else _DROP
    if d.is_integral():
        return ("tier", op, "int")
    kept = [t for t in dtypes if t.value == "float32" or t.is_integral()]
    return _DROP if kept else ("tier", op, "other")


def select(config: pytest.Config, items: list[pytest.Item],
           in_suite: Callable[[pytest.Item], bool]) -> None:
    """Keep the smoke subset of ``items`` (those ``in_suite``), deselect the rest."""
    ranked = sorted(items, key=_smoke_rank)
    keep: set[int] = set()
    seen: set[tuple[Any, ...]] = set()
    others: dict[tuple[str, str], int] = {}  # an op's cells of other dtypes (CONF-100)
    for item in ranked:
        key = _smoke_key(item) if in_suite(item) else None
        op_key = _smoke_op_key(item) if in_suite(item) else None
        if key is None or (key not in seen and key is not _DROP) or (
                op_key is not None and op_key[2] != "other" and op_key not in seen):
            keep.add(id(item))
            seen.update(k for k in (key, op_key) if k is not None)
        elif op_key is not None and op_key[2] == "other":
            others.setdefault(op_key[:2], id(item))
    covered = {k[:2] for k in seen if k[0] == "op-dtype"}
    keep.update(i for k, i in others.items() if k not in covered)
    dropped = [it for it in items if id(it) not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [it for it in items if id(it) in keep]
