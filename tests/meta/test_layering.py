"""Layering of ``interpreter/``: every module imports alone, no import cycle exists, and
nothing in it refers to ``reference_executors/`` (SEL-8, JIT-13); no shipped package
imports the developer packages ``tools/`` and ``tests/``.

An import cycle is a module that imports (directly or through others; at module level or
inside a function) a module that imports it back. Imports under ``if TYPE_CHECKING:`` are
annotations only and do not count. A package's ``__init__`` importing its own submodules is
no cycle unless a submodule imports the package back by name.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "interpreter"


def module_files() -> dict[str, tuple[Path, str]]:
    """module name -> (file, the package its relative imports resolve against)."""
    out: dict[str, tuple[Path, str]] = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
            package = ".".join(parts)
        else:
            package = ".".join(parts[:-1])
        out[".".join(parts)] = (p, package)
    return out


MODULES = module_files()


def _is_type_checking(test: ast.expr) -> bool:
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def imported_modules(name: str) -> set[str]:
    """The modules of ``interpreter`` that ``name`` imports anywhere at run time."""
    path, package = MODULES[name]
    found: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if _is_type_checking(node.test):
                for n in node.orelse:
                    self.visit(n)
            else:
                self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            found.update(a.name for a in node.names)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                base_name = ".".join(base + ([node.module] if node.module else []))
            else:
                base_name = node.module or ""
            for a in node.names:
                sub = f"{base_name}.{a.name}"
                found.add(sub if sub in MODULES else base_name)

    Visitor().visit(ast.parse(path.read_text(), str(path)))
    return {m for m in found if m in MODULES and m != name}


def test_import_graph_scanner_sees_function_level_and_relative_imports() -> None:
    """The scanner itself: a local ``from .x import y`` inside a function counts."""
    deps = imported_modules("interpreter.experimental.random")
    assert "interpreter.experimental.staging" in deps
    assert "interpreter.graph.ops" in deps
    assert "interpreter.experimental.tensor" in deps


def test_no_module_imports_a_module_that_imports_it_back() -> None:
    graph = {m: imported_modules(m) for m in MODULES}

    def reachable(start: str) -> dict[str, str]:
        via: dict[str, str] = {}
        todo = [start]
        while todo:
            m = todo.pop()
            for n in graph[m]:
                if n not in via:
                    via[n] = m
                    todo.append(n)
        return via

    cycles = []
    for m in MODULES:
        via = reachable(m)
        if m in via:
            path, cur = [m], via[m]
            while cur != m:
                path.append(cur)
                cur = via[cur]
            cycles.append(" <- ".join([m, *reversed(path[1:]), m]))
    assert cycles == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_imports_alone_in_a_fresh_process(name: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAX_", "EAGER_"))}
    r = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


def test_functional_lists_every_graph_op_explicitly() -> None:
    """``F`` has no generated namespace: each op of ``interpreter.graph.ops`` is listed."""
    import interpreter.experimental.functional as F
    from interpreter.graph import ops

    missing = [n for n in ops.__all__ if n not in F.__all__ or not callable(getattr(F, n))]
    assert missing == []
    assert not hasattr(F, "__getattr__")


def registered_targets() -> set[str]:
    """The modules and attributes this project registers as executors (``pyproject.toml``,
    SEL-8), with the packages above those modules: what ``interpreter/`` must not name."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names: set[str] = set()
    for value in project["entry-points"]["eager_conformance.executors"].values():
        module, _, attr = value.partition(":")
        parts = module.split(".")
        names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        names.add(attr.split(".")[0])
    return {n for n in names if not n.startswith("interpreter")}


def upward_references(source: str, names: set[str]) -> list[str]:
    """Imports of a module in ``names`` (or below it) and string literals containing one of
    ``names``, as ``line: what`` (imports inside functions and ``TYPE_CHECKING`` count)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            mods = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            hits = sorted(n for n in names if n in node.value)
            if hits:
                found.append(f"{node.lineno}: string naming {', '.join(hits)}")
            continue
        else:
            continue
        for m in mods:
            if m.split(".")[0] in names:
                found.append(f"{node.lineno}: import {m}")
    return found


def test_the_upward_reference_scanner_sees_imports_and_strings() -> None:
    source = ("import numpy\n"
              "def f():\n"
              "    from reference_executors.jit import JitExecutor\n"
              "    import reference_executors\n"
              "    return 'reference_executors.compiling:CompilingExecutor', 'compile'\n")
    names = registered_targets()
    assert {"reference_executors", "reference_executors.jit", "JitExecutor",
            "CompilingExecutor", "CupyExecutor"} <= names
    assert upward_references(source, names) == [
        "3: import reference_executors.jit", "4: import reference_executors",
        "5: string naming CompilingExecutor, reference_executors, "
        "reference_executors.compiling"]


@pytest.mark.spec("SEL-8", "JIT-13")
def test_interpreter_neither_imports_nor_names_reference_executors() -> None:
    """``interpreter/`` sits below the executors it can select: it finds them through the
    entry point group, never by an import or a string (a module path or a class name)."""
    names = registered_targets()
    found = [f"{path.relative_to(ROOT)}:{hit}" for path, _ in MODULES.values()
             for hit in upward_references(path.read_text(), names)]
    assert found == []


def imported_top_levels(source: str) -> set[str]:
    """The top-level packages a module imports anywhere (functions, ``TYPE_CHECKING``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_shipped_packages_import_neither_tools_nor_tests() -> None:
    """``tools/`` (the spec and golden generators) and ``tests/`` are not installed
    (``pyproject.toml`` ships ``interpreter``, ``conformance``, ``reference_executors``): a
    shipped module that imported them would break every installed copy."""
    assert imported_top_levels("def f():\n    from tools.spec import SPEC\n") == {"tools"}
    found = [f"{p.relative_to(ROOT)}: imports {', '.join(sorted(dev))}"
             for top in ("interpreter", "conformance", "reference_executors")
             for p in sorted((ROOT / top).rglob("*.py"))
             if (dev := imported_top_levels(p.read_text()) & {"tools", "tests"})]
    assert found == []
