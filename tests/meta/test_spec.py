"""The spec is executable: every example runs, every op has a section, every cited rule exists,
and its generated parts are current (``python -m tools.spec`` rewrites them)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import interpreter.graph.core as core
from interpreter.dtype import DType
from interpreter.graph import BufferType, DeviceRef, Graph, TensorType, ops
from interpreter.registry import REGISTRY
from interpreter.testing import Buf, assert_same, build, run
from tools.spec import ROOT, SPEC, defined_rules, op_sections

RULE_CITE = re.compile(r"\[([A-Z][A-Z0-9]*-\d+|[a-z_0-9]+\.C\d+)\]")
FENCE = re.compile(r"```python\n(.*?)```", re.S)


def examples(path: Path) -> list[str]:
    """The ```python blocks of the '## Examples' section of a spec page."""
    m = re.search(r"^## Examples\n(.*?)(?=^## |\Z)", path.read_text(), re.S | re.M)
    return FENCE.findall(m.group(1)) if m else []


def all_examples() -> list[tuple[str, int, str]]:
    """(page, index, code) for every executable example anywhere under spec/."""
    return [(str(p.relative_to(SPEC)), i, code) for p in sorted(SPEC.rglob("*.md"))
            for i, code in enumerate(FENCE.findall(p.read_text()))]


def cited_rules_in_source() -> dict[str, str]:
    """rule id -> file, for every ``[ID]`` cited in the interpreter's source."""
    cites: dict[str, str] = {}
    for p in sorted((ROOT / "interpreter").rglob("*.py")):
        for rid in RULE_CITE.findall(p.read_text()):
            cites.setdefault(rid, str(p.relative_to(ROOT)))
    return cites


EXAMPLES = all_examples()


def namespace() -> dict[str, Any]:
    return {"np": np, "ops": ops, "DType": DType, "DeviceRef": DeviceRef, "Graph": Graph,
            "TensorType": TensorType, "BufferType": BufferType, "run": run, "build": build,
            "Buf": Buf, "assert_same": assert_same, "raises": pytest.raises}


@pytest.fixture
def staged_ops(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    seen: set[str] = set()
    for method in ("stage", "append"):  # every node is appended by one of the two
        original = getattr(core.Graph, method)

        def spy(self: Graph, op: Any, *args: Any, original: Any = original) -> Any:
            seen.add(op.name)
            return original(self, op, *args)

        monkeypatch.setattr(core.Graph, method, spy)
    return seen


@pytest.mark.spec("SPEC-1")
@pytest.mark.parametrize(("page", "index", "code"), EXAMPLES,
                         ids=[f"{p}#{i}" for p, i, _ in EXAMPLES])
def test_spec_example_runs(page: str, index: int, code: str, staged_ops: set[str]) -> None:
    exec(compile(code, f"spec/{page}#example{index}", "exec"), namespace())


@pytest.mark.spec("SPEC-2")
def test_every_registry_op_has_a_section_and_every_section_names_an_op() -> None:
    sections = set(op_sections())
    missing = sorted(set(REGISTRY) - sections)
    orphans = sorted(sections - set(REGISTRY))
    assert not missing, f"registry ops without spec/ops/<op>.md: {missing}"
    assert not orphans, f"spec/ops pages naming no registry op: {orphans}"


@pytest.mark.spec("SPEC-2")
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_op_has_an_executed_example(name: str, staged_ops: set[str]) -> None:
    path = op_sections().get(name)
    assert path is not None, f"no spec section for {name}"
    blocks = examples(path)
    assert blocks, f"spec/ops/{name}.md has no ```python example under '## Examples'"
    for code in blocks:
        exec(compile(code, str(path), "exec"), namespace())
    assert name in staged_ops, f"the examples of spec/ops/{name}.md never stage {name!r}"


@pytest.mark.spec("SPEC-3")
def test_every_rule_cited_by_an_error_is_defined_in_the_spec() -> None:
    defined = defined_rules()
    missing = {rid: f for rid, f in cited_rules_in_source().items() if rid not in defined}
    assert not missing, f"rule ids cited in errors but not defined in spec/: {missing}"


@pytest.mark.spec("SPEC-3")
def test_rule_ids_are_unique() -> None:
    from tools.spec import RULE_DEF

    seen: dict[str, str] = {}
    dups = []
    for p in sorted(SPEC.rglob("*.md")):
        for line in p.read_text().splitlines():
            m = re.match(r"\s*[-*]?\s*" + RULE_DEF.pattern, line)
            if m:
                rid = m.group(1)
                if rid in seen:
                    dups.append((rid, seen[rid], p.name))
                seen[rid] = p.name
    assert not dups, f"rule ids defined twice: {dups}"


@pytest.mark.spec("SPEC-4")
def test_generated_indexes_are_up_to_date() -> None:
    from tools.spec import render_op_index, render_rule_index

    for path, text in ((SPEC / "ops" / "README.md", render_op_index()),
                       (SPEC / "RULES.md", render_rule_index())):
        assert path.exists() and path.read_text() == text, \
            f"{path.relative_to(SPEC.parent)} is stale: run `python -m tools.spec`"


@pytest.mark.spec("SPEC-4", "TOL-1", "REDUCE-6", "OPDT-1")
def test_generated_tolerance_and_dtype_headers_are_up_to_date() -> None:
    """The REDUCE-6 table and each op page's dtype/tolerance header come from the registry."""
    from tools.spec import GEN_BEGIN, generated_pages

    stale = [str(path.relative_to(SPEC.parent)) for path, text in generated_pages().items()
             if GEN_BEGIN not in path.read_text() or path.read_text() != text]
    assert not stale, f"stale generated parts in {stale}: run `python -m tools.spec`"


def test_readme_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's ```python blocks are run too, so the front page never rots."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})
    assert "buffer_store" in capsys.readouterr().out
