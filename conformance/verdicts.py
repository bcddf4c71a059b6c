"""The structured verdict of a failed conformance test, and its one renderer (CONF-110).

A failure is one :class:`Failure`: a title, its findings (each a text with the spec rule
ids it breaks), the diagnosis (CONF-40), the artifact directory and ``repro.py`` (CONF-11)
and notes (minimisation, history, the first diverging node's repro). Everything a vendor
reads about it renders from that one object:

- :meth:`Failure.render`: the terminal message (and the ``failure.txt`` of the artifacts);
- :meth:`Failure.as_dict`: the ``failure`` entry of the test's report metadata, from which
  the JSON/HTML report and the JUnit properties take the rule ids, the diagnosis and the
  repro (``conformance.report``), never by parsing the message;
- :meth:`Failure.fail`: records it on the test and ends the test failed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from _pytest.outcomes import Failed

__all__ = ["Failure", "Finding", "indent", "render_findings", "rules_in"]

_BRACKETS = re.compile(r"\[([^\[\]\n]+)\]")
_RULE_ID = re.compile(r"[A-Z][A-Z0-9]*-\d+[a-z]?|[a-z][a-z0-9_]*\.C\d+")


def rules_in(text: str) -> tuple[str, ...]:
    """The spec rule ids ``text`` cites in brackets (``[EXEC-4, DT-2]``), first first."""
    found: list[str] = []
    for group in _BRACKETS.findall(text):
        parts = [p.strip() for p in group.split(",")]
        if all(_RULE_ID.fullmatch(p) for p in parts):
            found += [p for p in parts if p not in found]
    return tuple(found)


def indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


@dataclass(frozen=True)
class Finding:
    """One thing wrong, with the rule ids it breaks (default: those ``text`` cites)."""

    text: str
    rules: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.rules:
            object.__setattr__(self, "rules", rules_in(self.text))

    def as_dict(self) -> dict[str, Any]:
        return {"rules": list(self.rules), "text": self.text}


def render_findings(title: str, findings: Sequence[Finding]) -> str:
    """``title`` and each finding below it, indented: a comparison's message."""
    return "\n".join([title, *(indent(f.text) for f in findings)])


@dataclass
class Failure:
    """A failed test's verdict (see the module docstring). ``suite_error``: the suite's own
    code failed (CONF-22), nothing is known about the executor."""

    title: str
    findings: list[Finding] = field(default_factory=list)
    diagnosis: str = ""  # the ``diagnosis:`` block (CONF-40)
    diagnosed: list[dict[str, str]] = field(default_factory=list)  # {"class","rule","detail"}
    artifacts: Path | None = None
    repro: Path | None = None
    notes: list[str] = field(default_factory=list)
    suite_error: bool = False

    def note(self, text: str) -> None:
        """Add a note (text the suite's helpers return with a leading newline)."""
        text = text.removeprefix("\n")
        if text:
            self.notes.append(text)

    def rules(self) -> list[str]:
        """The rule ids of the title, the findings and the diagnosis, first first."""
        out = list(rules_in(self.title))
        for rule in [r for f in self.findings for r in f.rules] + [
                d["rule"] for d in self.diagnosed if d.get("rule")]:
            if rule not in out:
                out.append(rule)
        return out

    def render(self) -> str:
        """The failure message."""
        lines = [render_findings(self.title, self.findings)]
        if self.diagnosis:
            lines.append(self.diagnosis)
        if self.artifacts is not None:
            lines.append(f"artifacts: {self.artifacts}")
        if self.repro is not None:
            lines.append(f"repro: python {self.repro}")
        return "\n".join(lines + self.notes)

    def as_dict(self) -> dict[str, Any]:
        """The report metadata entry ``failure`` (plain JSON values)."""
        out: dict[str, Any] = {"rules": self.rules(),
                               "findings": [f.as_dict() for f in self.findings]}
        if self.suite_error:
            out["suite_error"] = True
        if self.artifacts is not None:
            out["artifacts"] = str(self.artifacts)
        if self.repro is not None:
            out["repro"] = str(self.repro)
        return out

    def fail(self, request_or_node: Any, exc: type[Failed] | None = None) -> NoReturn:
        """Record the verdict on the test (report metadata ``failure``; the diagnosis as
        ``diagnosis``) and end it failed with the rendered message (``exc``: a ``Failed``
        subclass taking the message)."""
        from .outcomes import attach

        attach(request_or_node, failure=self.as_dict(),
               **({"diagnosis": self.diagnosed} if self.diagnosed else {}))
        message = self.render()
        if exc is not None:
            raise exc(message) from None
        raise Failed(message, pytrace=False) from None
