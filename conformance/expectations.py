"""The expectations file and the *refused* outcome (CONF-5..7).

``--conformance-xfails=FILE`` is TOML::

    [[xfail]]
    test = "conformance/test_ops.py::test_op[round-*]"   # glob on the node id
    op = "round"                                         # test metadata / parameters
    dtype = "float16"
    reason = "rounds halves away from zero (ticket 123)"
    example = ".conformance/test_op_round-float16"        # optional: pinned repro directory
    strict = false                                       # optional: XPASS fails the test

Every selector given must match. Matching happens where the test runs (also on xdist
workers): a failing matched test becomes *xfail* with the entry's reason, and the report
carries ``("conformance_xfail", {...})`` in its ``user_properties`` so the controller can tell,
at the end, which entries are *stale*: matching no test, matched only by passing tests, or
pinned to an ``example`` that no longer fails when replayed. Stale entries are listed in the
terminal summary (and in the report); they change the exit status only when ``strict``.

Refusals (skips whose reason starts with ``REFUSED:``, from ``outcomes.refused``) get their own
status (``R`` / ``REFUSED``; ``N refused`` in the summary line).

Declared deviations (CONF-41, CONF-42) name diagnosis classes (``conformance/diagnosis.py``)
instead of whole cells::

    deviations = ["ftz"]                    # everywhere

    [[deviation]]
    class = "fma"                           # or classes = ["fma", "excess-precision"]
    op = "add"                              # optional selectors, as for [[xfail]]
    dtype = "float64"
    reason = "the compiler contracts a*b+c"
    dtypes = ["float32", "float64"]         # optional scope of the variant (CONF-141)
    ops = ["add", "mul"]

A deviation excuses elements (CONF-140): an example whose every differing element the
variant of the declared classes explains is a *deviation* (the test goes on with the next
example); an example with unexplained elements fails on those. A test that saw deviations
and no failure reports ``D`` / ``DEVIATION``.
"""

from __future__ import annotations

import fnmatch
import io
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .outcomes import REFUSED

__all__ = ["Deviation", "Entry", "declared_deviations", "declared_scoped", "load",
           "load_deviations",
           "stale_entries"]

KEYS = frozenset({"test", "op", "dtype", "reason", "example", "strict"})
SELECTORS = ("test", "op", "dtype")
_ENTRIES = pytest.StashKey[list["Entry"]]()
_STALE = pytest.StashKey[list[dict[str, Any]]]()
_DEVIATIONS = pytest.StashKey[list["Deviation"]]()
_SEEN = pytest.StashKey[dict[str, int]]()
PROP = "conformance_xfail"
TOP_KEYS = frozenset({"xfail", "deviations", "deviation"})
DEVIATION_KEYS = frozenset({"class", "classes", "test", "op", "dtype", "reason", "dtypes",
                            "ops"})


@dataclass
class Entry:
    """One ``[[xfail]]`` table."""

    index: int
    reason: str
    test: str | None = None
    op: str | None = None
    dtype: str | None = None
    example: str | None = None
    strict: bool = False
    outcomes: list[str] = field(default_factory=list)  # filled on the controller

    def describe(self) -> str:
        sel = ", ".join(f"{k}={getattr(self, k)!r}" for k in SELECTORS if getattr(self, k))
        return f"entry {self.index} ({sel})"

    def matches(self, nodeid: str, op: str | None, dtype: str | None,
                params: dict[str, str]) -> bool:
        if self.test is not None and not fnmatch.fnmatchcase(nodeid, self.test):
            return False
        for key, want in (("op", self.op), ("dtype", self.dtype)):
            if want is None:
                continue
            have = {op if key == "op" else dtype, params.get(key), params.get(f"{key}_name")}
            if want not in have:
                return False
        return True


def load(path: str | Path) -> list[Entry]:
    """Parse the expectations file; any problem is a ``pytest.UsageError`` naming it."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise pytest.UsageError(f"--conformance-xfails={path}: {e}") from None
    unknown_top = set(data) - TOP_KEYS
    if unknown_top:
        raise pytest.UsageError(f"--conformance-xfails={path}: unknown top-level keys "
                                f"{sorted(unknown_top)}; expected [[xfail]] tables, "
                                "'deviations' or [[deviation]] tables [CONF-6, CONF-41]")
    tables = data.get("xfail", [])
    if not isinstance(tables, list):
        raise pytest.UsageError(f"--conformance-xfails={path}: 'xfail' must be an array of "
                                "tables ([[xfail]]) [CONF-6]")
    entries = []
    for i, t in enumerate(tables):
        where = f"--conformance-xfails={path}: entry {i}"
        if not isinstance(t, dict):
            raise pytest.UsageError(f"{where} is not a table [CONF-6]")
        bad = set(t) - KEYS
        if bad:
            raise pytest.UsageError(f"{where}: unknown keys {sorted(bad)}; allowed "
                                    f"{sorted(KEYS)} [CONF-6]")
        if not isinstance(t.get("reason"), str) or not t["reason"].strip():
            raise pytest.UsageError(f"{where}: 'reason' (a non-empty string) is required "
                                    "[CONF-6]")
        if not any(k in t for k in SELECTORS):
            raise pytest.UsageError(f"{where}: give at least one of test, op, dtype [CONF-6]")
        for k in (*SELECTORS, "example"):
            if k in t and not isinstance(t[k], str):
                raise pytest.UsageError(f"{where}: '{k}' must be a string [CONF-6]")
        if "strict" in t and not isinstance(t["strict"], bool):
            raise pytest.UsageError(f"{where}: 'strict' must be true or false [CONF-6]")
        example = t.get("example")
        if example is not None and not Path(example).is_absolute():
            example = str((p.parent / example).resolve())
        entries.append(Entry(i, t["reason"], t.get("test"), t.get("op"), t.get("dtype"),
                             example, bool(t.get("strict", False))))
    return entries


@dataclass
class Deviation:
    """Declared diagnosis classes, optionally limited by test/op/dtype selectors (CONF-41)."""

    classes: list[str]
    reason: str = ""
    test: str | None = None
    op: str | None = None
    dtype: str | None = None
    #: the variant's scope (CONF-141): where the platform does it; None: everywhere
    dtypes: list[str] | None = None
    ops: list[str] | None = None

    def scoped(self) -> list[Any]:
        """The classes as :class:`conformance.diagnosis.Scoped` (CONF-141)."""
        from .diagnosis import Scoped

        return [Scoped(c, None if self.dtypes is None else frozenset(self.dtypes),
                       None if self.ops is None else frozenset(self.ops))
                for c in self.classes]

    def matches(self, nodeid: str, op: str | None, dtype: str | None) -> bool:
        if self.test is not None and not fnmatch.fnmatchcase(nodeid, self.test):
            return False
        return ((self.op is None or self.op == op)
                and (self.dtype is None or self.dtype == dtype))


def _classes(value: Any, where: str) -> list[str]:
    from .diagnosis import CLASSES

    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(c, str) for c in value):
        raise pytest.UsageError(f"{where}: deviation classes must be a non-empty list of "
                                f"strings [CONF-41]")
    bad = [c for c in value if c not in CLASSES]
    if bad:
        raise pytest.UsageError(f"{where}: unknown deviation classes {bad}; known: "
                                f"{', '.join(CLASSES)} [CONF-41]")
    return list(value)


def load_deviations(path: str | Path) -> list[Deviation]:
    """The declared deviations of the expectations file (``load`` checks its syntax)."""
    data = tomllib.loads(Path(path).read_text())
    where = f"--conformance-xfails={path}"
    out: list[Deviation] = []
    if "deviations" in data:
        out.append(Deviation(_classes(data["deviations"], f"{where}: 'deviations'"),
                             "declared for every test"))
    tables = data.get("deviation", [])
    if not isinstance(tables, list):
        raise pytest.UsageError(f"{where}: 'deviation' must be an array of tables "
                                "([[deviation]]) [CONF-41]")
    for i, t in enumerate(tables):
        w = f"{where}: deviation {i}"
        if not isinstance(t, dict):
            raise pytest.UsageError(f"{w} is not a table [CONF-41]")
        bad = set(t) - DEVIATION_KEYS
        if bad or ("class" in t) == ("classes" in t):
            raise pytest.UsageError(f"{w}: give exactly one of 'class', 'classes'; allowed "
                                    f"keys {sorted(DEVIATION_KEYS)} [CONF-41]")
        for k in ("test", "op", "dtype", "reason"):
            if k in t and not isinstance(t[k], str):
                raise pytest.UsageError(f"{w}: '{k}' must be a string [CONF-41]")
        out.append(Deviation(_classes(t.get("class", t.get("classes")), w),
                             t.get("reason", ""), t.get("test"), t.get("op"), t.get("dtype"),
                             _scope(t, "dtypes", w), _scope(t, "ops", w)))
    return out


def _scope(table: dict[str, Any], key: str, where: str) -> list[str] | None:
    """A ``dtypes``/``ops`` scope: a non-empty list of known dtype (op) names (CONF-141)."""
    from interpreter.dtype import DType
    from interpreter.registry import REGISTRY

    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise pytest.UsageError(f"{where}: '{key}' must be a non-empty list of "
                                f"{'dtype' if key == 'dtypes' else 'op'} names [CONF-141]")
    known = [d.value for d in DType] if key == "dtypes" else sorted(REGISTRY)
    bad = [v for v in value if v not in known]
    if bad:
        raise pytest.UsageError(f"{where}: unknown {key} {bad}; known: {', '.join(known)} "
                                f"[CONF-141]")
    return list(value)


def _matching(request: Any, op: str | None, dtype: str | None) -> list[Deviation]:
    """The declared deviations (CONF-41) that match this test, in declaration order."""
    node = getattr(request, "node", request)
    config = getattr(node, "config", None)
    if config is None:
        return []
    nodeid = str(getattr(node, "nodeid", ""))
    return [d for d in config.stash.get(_DEVIATIONS, []) if d.matches(nodeid, op, dtype)]


def declared_deviations(request: Any, op: str | None, dtype: str | None) -> list[str]:
    """The diagnosis classes declared for this test (CONF-41), in declaration order."""
    found: list[str] = []
    for d in _matching(request, op, dtype):
        found += [c for c in d.classes if c not in found]
    return found


def declared_scoped(request: Any, op: str | None, dtype: str | None) -> list[Any]:
    """The classes declared for this test with their scopes (CONF-141), as
    :class:`conformance.diagnosis.Scoped`, in declaration order."""
    found: list[Any] = []
    for d in _matching(request, op, dtype):
        found += [c for c in d.scoped() if c not in found]
    return found


# -- running side -------------------------------------------------------------------------------
def _metadata(item: pytest.Item) -> tuple[str | None, str | None, dict[str, str]]:
    op = dtype = None
    for key, value in item.user_properties:
        if key == "conformance" and isinstance(value, dict):
            op = value.get("op") or op
            dtype = value.get("dtype") or dtype
    params: dict[str, str] = {}
    callspec = getattr(item, "callspec", None)
    for k, v in (callspec.params.items() if callspec is not None else ()):
        params[k] = str(getattr(v, "value", v))
    if dtype is not None:
        dtype = str(getattr(dtype, "value", dtype))
    return op, dtype, params


def configure(config: pytest.Config) -> None:
    """Load the expectations file (``--conformance-xfails``)."""
    path = config.getoption("conformance_xfails", None)
    config.stash[_ENTRIES] = load(path) if path else []
    config.stash[_DEVIATIONS] = load_deviations(path) if path else []
    config.stash[_STALE] = []
    config.stash[_SEEN] = {}


def apply(item: pytest.Item, rep: pytest.TestReport) -> None:
    """An expected failure becomes xfailed, a strict entry's pass a failure (CONF-6/7)."""
    entries = item.config.stash.get(_ENTRIES, [])
    if not entries or rep.when != "call":
        return
    op, dtype, params = _metadata(item)
    entry = next((e for e in entries if e.matches(item.nodeid, op, dtype, params)), None)
    if entry is None:
        return
    outcome = "failed" if rep.failed else "passed" if rep.passed else "skipped"
    if rep.failed and any(k == "conformance" and isinstance(v, dict)
                          and v.get("outcome") == "suite_error" for k, v in rep.user_properties):
        return  # a suite error is never an expected failure of the executor (CONF-22)
    rep.user_properties.append((PROP, {"entry": entry.index, "outcome": outcome}))
    if rep.failed:
        rep.outcome = "skipped"
        rep.wasxfail = f"[xfails {entry.describe()}] {entry.reason}"
    elif rep.passed and entry.strict:
        rep.outcome = "failed"
        rep.longrepr = (f"XPASS(strict): {entry.describe()} expects this test to fail "
                        f"({entry.reason}) but it passed [CONF-7]")


def status(report: pytest.TestReport) -> tuple[str, str, str] | None:
    """Refusals are their own outcome (CONF-5); so are deviations (CONF-42)."""
    if report.passed and report.when == "call" and _deviated(report):
        return "deviation", "D", "DEVIATION"
    if report.skipped and not hasattr(report, "wasxfail"):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
        if isinstance(reason, str) and reason.startswith(("Skipped: " + REFUSED, REFUSED)):
            return "refused", "R", "REFUSED"
    return None


def _deviated(report: pytest.TestReport) -> list[str]:
    for key, value in getattr(report, "user_properties", ()):
        if key == "conformance" and isinstance(value, dict):
            return list(value.get("deviations") or [])
    return []


# -- controller side -----------------------------------------------------------------------------
def add_result(config: pytest.Config, report: pytest.TestReport) -> None:
    """Count the declared deviations met and each entry's outcomes."""
    if report.when == "call":
        seen = config.stash.get(_SEEN, {})
        for c in _deviated(report):
            seen[c] = seen.get(c, 0) + 1
    entries = config.stash.get(_ENTRIES, [])
    for key, value in getattr(report, "user_properties", ()):
        if key == PROP and isinstance(value, dict) and 0 <= value.get("entry", -1) < len(entries):
            entries[value["entry"]].outcomes.append(value["outcome"])


def _replay(entry: Entry, config: pytest.Config) -> str | None:
    """Why a pinned example makes the entry stale (it passes now), else None."""
    from .artifacts import replay

    spec = config.getoption("executor", None) or "interpreter.executor:InterpreterExecutor"
    if entry.example is None:
        return None
    if not Path(entry.example, "graph.txt").exists():
        return f"its pinned example {entry.example} has no graph.txt"
    out = io.StringIO()
    try:
        code = replay(entry.example, spec, out=out)
    except Exception as e:
        return f"its pinned example {entry.example} cannot be replayed: {type(e).__name__}: {e}"
    return f"its pinned example {entry.example} passes now" if code == 0 else None


def finish(session: pytest.Session) -> None:
    """The stale entries (CONF-7); a strict one fails the run."""
    config = session.config
    if hasattr(config, "workerinput"):
        return  # xdist worker: the controller decides
    stale: list[dict[str, Any]] = []
    for e in config.stash.get(_ENTRIES, []):
        why = None
        if e.example is not None:
            why = _replay(e, config)
        elif not e.outcomes:
            why = "it matches no test that ran"
        elif "failed" not in e.outcomes:
            why = f"every test it matches passes now ({len(e.outcomes)} matched)"
        if why:
            stale.append({"entry": e.index, "selector": e.describe(), "reason": e.reason,
                          "why": why, "strict": e.strict})
            if e.strict:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
    config.stash[_STALE] = stale


def stale_entries(config: pytest.Config) -> list[dict[str, Any]]:
    """The stale entries of this run (after ``pytest_sessionfinish``; controller only)."""
    stale: list[dict[str, Any]] = config.stash.get(_STALE, [])
    return list(stale)


def summary(terminalreporter: Any, config: pytest.Config) -> None:
    entries = config.stash.get(_ENTRIES, [])
    deviations = config.stash.get(_DEVIATIONS, [])
    if not (entries or deviations) or hasattr(config, "workerinput"):
        return
    stale = stale_entries(config)
    tr = terminalreporter
    tr.section("conformance expectations")
    seen = config.stash.get(_SEEN, {})
    for d in deviations:
        for c in d.classes:
            tr.write_line(f"deviation {c}: seen in {seen.get(c, 0)} tests"
                          + (f" ({d.reason})" if d.reason else "") + " [CONF-42]")
    if not entries:
        return
    used = len(entries) - len(stale)
    tr.write_line(f"{len(entries)} entries in {config.getoption('conformance_xfails')}: "
                  f"{used} still expected, {len(stale)} stale")
    for s in stale:
        tr.write_line(f"STALE {s['selector']}: {s['why']} -- reason was: {s['reason']}"
                      + (" (strict: the run fails)" if s["strict"] else ""))

