"""Reading spec/: op sections, executable examples and rule ids."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec"
RULE_DEF = re.compile(r"\*\*([A-Z][A-Z0-9]*-\d+|[a-z_0-9]+\.C\d+)\*\*")
RULE_CITE = re.compile(r"\[([A-Z][A-Z0-9]*-\d+|[a-z_0-9]+\.C\d+)\]")
FENCE = re.compile(r"```python\n(.*?)```", re.S)


def op_sections() -> dict[str, Path]:
    return {p.stem: p for p in sorted((SPEC / "ops").glob("*.md"))}


def examples(path: Path) -> list[str]:
    """The ```python blocks of the '## Examples' section of a spec page."""
    text = path.read_text()
    m = re.search(r"^## Examples\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    return FENCE.findall(m.group(1)) if m else []


def all_examples() -> list[tuple[str, int, str]]:
    """(page, index, code) for every executable example anywhere under spec/."""
    out = []
    for p in sorted(SPEC.rglob("*.md")):
        for i, code in enumerate(FENCE.findall(p.read_text())):
            out.append((str(p.relative_to(SPEC)), i, code))
    return out


def defined_rules() -> dict[str, str]:
    """rule id -> page where it is defined (bold ``**ID**``)."""
    rules: dict[str, str] = {}
    for p in sorted(SPEC.rglob("*.md")):
        for rid in RULE_DEF.findall(p.read_text()):
            rules.setdefault(rid, str(p.relative_to(SPEC)))
    return rules


def cited_rules_in_source() -> dict[str, str]:
    """rule id -> file, for every ``[ID]`` cited in the interpreter's source."""
    cites: dict[str, str] = {}
    for p in sorted((ROOT / "interpreter").rglob("*.py")):
        for rid in RULE_CITE.findall(p.read_text()):
            cites.setdefault(rid, str(p.relative_to(ROOT)))
    return cites
