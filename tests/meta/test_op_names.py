"""REG-1: an op's name is written in its registry entry, its builder and its C expression.

For every registry op, the non-test modules under ``interpreter/``, ``conformance/`` and
``reference_executors/`` whose source has a string constant equal to the op's name (outside
``__all__``, which lists Python functions) must be among: its registry module
``interpreter/registry/<family>.py``, its builder module ``interpreter/graph/ops/<family>.py``
and, for an op the C emitter writes code for (a ``fusable`` op or a random op),
``reference_executors/c_emitter.py``. Test modules
(``tests/``, ``benchmarks/``, ``conformance/test_*.py``) may name ops freely.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from interpreter.registry import REGISTRY, OpDef

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("interpreter", "conformance", "reference_executors")
C_EMITTER = "reference_executors/c_emitter.py"

#: (module, string) pairs where the string is not the op: each with why it stays.
ALLOWED: dict[tuple[str, str], str] = {
    ("conformance/mutation_ops.py", "range"):
        "Python's builtin range(), whose calls the loop-bound mutation rewrites",
    ("conformance/constants.py", "constant"):
        "the constant-reach cells' shape class and graph-name tag (CONF-88); the op itself "
        "is staged through ops.constant",
    ("interpreter/registry/padding.py", "constant"): "pad's mode (MAX's name for it)",
    ("interpreter/graph/ops/shape.py", "constant"): "pad's default mode (MAX's name for it)",
}


def is_test_module(rel: str) -> bool:
    parts = rel.split("/")
    return parts[0] in ("tests", "benchmarks") or (
        parts[0] == "conformance" and parts[-1].startswith("test_"))


def string_constants(source: str) -> set[str]:
    """The string constants of ``source`` outside ``__all__`` assignments."""
    tree = ast.parse(source)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign | ast.AugAssign)
                   else [])
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            skipped.update(id(n) for n in ast.walk(node))
    return {n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skipped}


@functools.cache
def naming_modules() -> dict[str, frozenset[str]]:
    """op name -> the non-test modules with a string constant equal to it."""
    found: dict[str, set[str]] = {name: set() for name in REGISTRY}
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if is_test_module(rel):
                continue
            for name in string_constants(path.read_text()) & found.keys():
                if (rel, name) not in ALLOWED:
                    found[name].add(rel)
    return {name: frozenset(mods) for name, mods in found.items()}


def own_modules(op: OpDef) -> tuple[str, str]:
    """(registry module, builder module) of ``op``'s family (CONTRIBUTING, "How to add an
    op")."""
    family = op.category.split("-")[0]
    return f"interpreter/registry/{family}.py", f"interpreter/graph/ops/{family}.py"


def is_emitted(op: OpDef) -> bool:
    """The C emitter writes code for the op: a fused expression, or a Philox kernel."""
    return "fusable" in op.traits or op.category == "random"


@pytest.mark.spec("REG-1")
def test_scanner_skips_all_and_sees_every_other_string() -> None:
    source = ('__all__ = ["add", "mul"]\n__all__ += ["sub"]\nTABLE = {"max": 1}\n'
              'def f(x: str = "exp") -> str:\n    return f"{x}-neg" + "abs"\n')
    assert string_constants(source) == {"max", "exp", "-neg", "abs"}
    assert is_test_module("conformance/test_ops.py") and is_test_module("tests/ops/oracle.py")
    assert not is_test_module("conformance/strategies.py")


@pytest.mark.spec("REG-1")
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_op_name_is_written_only_in_its_entry_builder_and_c_expression(name: str) -> None:
    op = REGISTRY[name]
    registry, builder = own_modules(op)
    allowed = {registry, builder} | ({C_EMITTER} if is_emitted(op) else set())
    found = naming_modules()[name]
    assert registry in found and builder in found, (
        f"the scan finds {name!r} in {sorted(found)}, not in its registry module {registry} "
        f"and builder module {builder}")
    extra = sorted(found - allowed)
    assert not extra, (
        f"op {name!r} is named by {', '.join(extra)}, besides its own modules "
        f"({', '.join(sorted(allowed))}) [REG-1]: read the fact from its registry entry (a "
        "field, or a trait in TRAITS), refer to its builder function, or, for a string that "
        "is not the op, rename it or list it in ALLOWED with the reason")


@pytest.mark.spec("REG-1")
@pytest.mark.parametrize(("module", "name"), sorted(ALLOWED))
def test_allowed_strings_are_still_there(module: str, name: str) -> None:
    """An allow-list entry whose string is gone is removed, not kept 'just in case'."""
    assert name in REGISTRY, f"{name!r} is no op: its ALLOWED entry is not needed"
    assert name in string_constants((ROOT / module).read_text()), (
        f"{module} no longer has the string {name!r}: remove its ALLOWED entry")
