"""Verdict helpers shared by every test family (spec/conformance.md, CONF-4/5).

* :func:`refused` ends a test as *refused* (a skip whose reason starts with ``REFUSED:``), or
  as a failure under ``--conformance-strict``.
* :func:`not_covered` ends a test as *not covered* (a skip whose reason starts with
  ``NOT COVERED:``), e.g. for a registry op without a ``sample`` function.
* :func:`record` attaches the report metadata ``("conformance", {...})`` to the test's
  ``user_properties`` (which pytest-xdist ships to the controller).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NoReturn

import pytest

__all__ = ["NOT_COVERED", "REFUSED", "SUITE_ERROR_OUTCOME", "attach", "is_strict",
           "mark_outcome", "not_covered", "record", "refused"]

REFUSED = "REFUSED:"
#: ``outcome`` of a test whose failure is the suite's own exception (CONF-22)
SUITE_ERROR_OUTCOME = "suite_error"
NOT_COVERED = "NOT COVERED:"

#: ``--conformance-strict`` of the active pytest sessions (a stack: in-process nested runs).
_STRICT: list[bool] = []


def push_strict(strict: bool) -> None:
    """Called by the plugin in ``pytest_configure``."""
    _STRICT.append(strict)


def pop_strict() -> None:
    """Called by the plugin in ``pytest_unconfigure``."""
    if _STRICT:
        _STRICT.pop()


def is_strict() -> bool:
    return bool(_STRICT and _STRICT[-1])


def refused(reason: str) -> NoReturn:
    """The executor refused a graph the test needs (``UnsupportedGraphError``, CONF-5)."""
    if is_strict():
        pytest.fail(f"{REFUSED} {reason} (--conformance-strict makes a refusal a failure)",
                    pytrace=False)
    pytest.skip(f"{REFUSED} {reason}")


def not_covered(reason: str) -> NoReturn:
    """Nothing of this cell can be tested (CONF-4: *not covered*)."""
    pytest.skip(f"{NOT_COVERED} {reason}")


def record(request_or_node: Any, *, op: str | None = None, dtype: str | None = None,
           shape_class: str | None = None, rules: Iterable[str] = (), **extra: Any) -> None:
    """Attach report metadata to the running test (CONF-8/9); call once per test.

    ``request_or_node`` is the ``request`` fixture or an item. Extra keys (plain JSON values)
    are kept, e.g. ``examples=12`` or ``refused_examples=3``.
    """
    node = getattr(request_or_node, "node", request_or_node)
    meta: dict[str, Any] = {"op": op, "dtype": dtype, "shape_class": shape_class,
                            "rules": sorted(set(rules)), **extra}
    props = node.user_properties
    for i, (key, value) in enumerate(props):
        if key == "conformance":  # update in place: the last call wins
            props[i] = ("conformance", {**value, **meta})
            return
    props.append(("conformance", meta))


def attach(request_or_node: Any, **extra: Any) -> None:
    """Add ``extra`` keys to the test's report metadata, keeping the rest."""
    props = getattr(request_or_node, "node", request_or_node).user_properties
    for i, (key, value) in enumerate(props):
        if key == "conformance":
            props[i] = ("conformance", {**value, **extra})
            return
    props.append(("conformance", dict(extra)))


def mark_outcome(node: Any, outcome: str) -> None:
    """Add ``outcome`` (e.g. ``suite_error``) to the test's report metadata, keeping the rest."""
    attach(node, outcome=outcome)
