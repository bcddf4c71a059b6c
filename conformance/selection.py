"""Selecting and listing the suite's tests by op: ``--conformance-ops`` (CONF-130),
``--conformance-max-examples`` (CONF-131, applied by ``run_profile``) and
``--conformance-list`` (CONF-132).

A test's *op* is its ``op_name`` parameter (``test_op``, the special-value sweeps, the
reach, constant and determinism tests, the protocol's per-op test); its *family* is that
op's registry category. Tests without one op (random graphs, models, hazards, state
sequences, the protocol's fixed graphs) have none.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["add_selection_options", "configure", "item_op", "print_list", "select_ops"]


def add_selection_options(group: Any) -> None:
    group.addoption("--conformance-ops", default=None, metavar="OP[,OP...]",
                    help="run only the tests of these registry ops, by exact name "
                         "(-k max also picks reduce_max and argmax)")
    group.addoption("--conformance-max-examples", type=int, default=None, metavar="N",
                    help="hypothesis examples per test, overriding the profile's "
                         "max_examples")
    group.addoption("--conformance-list", action="store_true", default=False,
                    help="print the selected tests' ops, op families and test kinds with "
                         "counts, and run nothing")


def requested_ops(config: pytest.Config) -> list[str] | None:
    """The op names of ``--conformance-ops`` (``None``: not given)."""
    raw = config.getoption("conformance_ops", None)
    if raw is None:
        return None
    return [name.strip() for name in str(raw).split(",") if name.strip()]


def configure(config: pytest.Config) -> None:
    """Check ``--conformance-ops`` against the registry; ``--conformance-list`` runs in
    this process (under ``-n`` the workers would collect, not the controller)."""
    from interpreter.registry import REGISTRY

    ops = requested_ops(config)
    if ops is not None:
        unknown = [name for name in ops if name not in REGISTRY]
        if not ops or unknown:
            hints = "; ".join(f"{name!r}: did you mean "
                              f"{', '.join(difflib.get_close_matches(name, REGISTRY, 3))}?"
                              for name in unknown
                              if difflib.get_close_matches(name, REGISTRY, 3))
            raise pytest.UsageError(
                f"--conformance-ops={config.getoption('conformance_ops')}: "
                + (f"not registry ops: {', '.join(unknown)}" if unknown else "no op named")
                + (f" ({hints})" if hints else "")
                + " (--conformance-list prints them) [CONF-130]")
    if config.getoption("conformance_list") and hasattr(config.option, "dist"):
        config.option.dist = "no"
        config.option.numprocesses = None


def item_op(item: pytest.Item) -> str | None:
    """The registry op a test checks, or ``None``."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    name = params.get("op_name")
    return name if isinstance(name, str) else None


def select_ops(config: pytest.Config, items: list[pytest.Item],
               in_suite: Callable[[pytest.Item], bool]) -> None:
    """Deselect the suite's tests of other ops and those of no single op (CONF-130)."""
    ops = requested_ops(config)
    if ops is None:
        return
    wanted = set(ops)
    dropped = [it for it in items if in_suite(it) and item_op(it) not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        gone = {id(it) for it in dropped}
        items[:] = [it for it in items if id(it) not in gone]


def print_list(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The selection by test kind, op family and op, with counts (CONF-132); with ``-v``
    every test id as well."""
    from interpreter.registry import REGISTRY

    write = _writer(config)
    kinds = Counter(getattr(it, "originalname", it.name) for it in items)
    by_op: dict[str, Counter[str]] = {}
    for it in items:
        op = item_op(it)
        if op is not None:
            by_op.setdefault(op, Counter())[getattr(it, "originalname", it.name)] += 1
    families: dict[str, Counter[str]] = {}
    for op, tests in by_op.items():
        fam = families.setdefault(REGISTRY[op].category if op in REGISTRY else "?", Counter())
        fam["ops"] += 1
        fam["tests"] += sum(tests.values())
    write(f"eager-conformance list: {len(items)} tests, {len(by_op)} ops, "
          f"{len(families)} op families, {sum(kinds.values()) - sum(map(_total, by_op.values()))}"
          " tests of no single op")
    write("test kinds (tests):")
    for kind, n in sorted(kinds.items()):
        write(f"  {kind}: {n}")
    write("op families (ops, tests):")
    for name, fam in sorted(families.items()):
        write(f"  {name}: {fam['ops']} ops, {fam['tests']} tests")
    write("ops (tests, by kind):")
    for op, tests in sorted(by_op.items()):
        parts = ", ".join(f"{k} {n}" for k, n in sorted(tests.items()))
        write(f"  {op}: {_total(tests)} ({parts})")
    if config.getoption("verbose") > 0:
        write("tests:")
        for it in items:
            write(f"  {it.nodeid}")


def _total(c: Counter[str]) -> int:
    return sum(c.values())


def _writer(config: pytest.Config) -> Callable[[str], None]:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return print
    return lambda line: reporter.write_line(line)
