"""``--conformance-report=PATH``: JSON at PATH and a self-contained HTML page next to it
(CONF-8..10).

Results are gathered from test *reports* in ``pytest_runtest_logreport`` on the process that
writes the terminal output: the only process in a serial run, the controller under
pytest-xdist (workers ship each report's ``user_properties``). A test contributes its
verdict, its metadata ``("conformance", {"op", "dtype", "shape_class", "rules"})`` (recorded
by ``outcomes.record``) and the rule ids of its ``@pytest.mark.spec`` markers (copied into
``user_properties`` at collection as ``("conformance_spec", [...])``). Only the controller
writes, in ``pytest_sessionfinish``.
"""

from __future__ import annotations

import html
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from .calls import SUITE_ERROR
from .outcomes import NOT_COVERED, REFUSED, SUITE_ERROR_OUTCOME

__all__ = ["VERDICTS", "build_report", "defined_rules", "verdict_of"]

#: Cell verdicts, worst first (a cell shows the worst verdict of its tests, CONF-8).
#: ``suite_error``: the suite's own code failed; nothing is known about the executor (CONF-22).
VERDICTS = (SUITE_ERROR_OUTCOME, "fail", "xfail", "refused", "pass", "skip")
SPEC_PROP = "conformance_spec"
_RULE = re.compile(r"^- \*\*([A-Za-z0-9_.\-]+)\*\*", re.M)
_RESULTS = pytest.StashKey[dict[str, dict[str, Any]]]()


def verdict_of(report: pytest.TestReport) -> str:
    """pass / fail / refused / xfail / skip (CONF-4), or suite_error (CONF-22)."""
    if report.failed and _suite_error(report):
        return SUITE_ERROR_OUTCOME
    if hasattr(report, "wasxfail"):
        return "xfail" if report.skipped else "fail"  # strict XPASS is a failure
    if report.failed:
        return "fail"
    if report.skipped:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
        if isinstance(reason, str) and REFUSED in reason[:20]:
            return "refused"
        return "skip"
    return "pass"


def _suite_error(report: pytest.TestReport) -> bool:
    for key, value in report.user_properties:
        if key == "conformance" and isinstance(value, dict) and (
                value.get("outcome") == SUITE_ERROR_OUTCOME):
            return True
    return report.longreprtext.lstrip().startswith(SUITE_ERROR)


def defined_rules(spec_dir: Path) -> dict[str, str]:
    """Every rule id defined in ``spec_dir`` (``- **ID** ...``) -> the page defining it."""
    rules: dict[str, str] = {}
    if spec_dir.is_dir():
        for page in sorted(spec_dir.rglob("*.md")):
            for m in _RULE.finditer(page.read_text(encoding="utf-8")):
                rules.setdefault(m.group(1), str(page.relative_to(spec_dir)))
    return rules


def _spec_dir(config: pytest.Config) -> Path:
    """spec/ of the checkout, or the copy an install puts in ``<prefix>/share``."""
    installed = Path(sys.prefix) / "share" / "eager-conformance"
    for base in (config.rootpath, Path(__file__).resolve().parent.parent, installed):
        if (base / "spec").is_dir():
            return base / "spec"
    return config.rootpath / "spec"


# -- collection -------------------------------------------------------------------------------
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        ids = sorted({str(a) for m in item.iter_markers("spec") for a in m.args})
        if ids:
            item.user_properties.append((SPEC_PROP, ids))


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_RESULTS] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    config = _CONFIG[-1] if _CONFIG else None
    if config is None or not config.getoption("conformance_report", None):
        return
    results = config.stash.setdefault(_RESULTS, {})
    rec = results.get(report.nodeid)
    if report.when == "call" or rec is None or (report.when == "setup" and not report.passed):
        if report.when == "teardown" and report.passed:
            return
        meta: dict[str, Any] = {}
        rules: set[str] = set()
        for key, value in report.user_properties:
            if key == "conformance" and isinstance(value, dict):
                meta.update(value)
            elif key == SPEC_PROP and isinstance(value, list | tuple):
                rules.update(str(v) for v in value)
        rules.update(meta.get("rules") or ())
        verdict = verdict_of(report)
        if rec is not None and report.when == "teardown" and verdict != "fail":
            return
        results[report.nodeid] = {"verdict": verdict, "op": meta.get("op"),
                                  "dtype": _name(meta.get("dtype")),
                                  "shape_class": meta.get("shape_class"),
                                  "rules": sorted(rules), "duration": report.duration}
        if meta.get("not_covered"):  # why an (op, dtype) cannot be tested (CONF-21)
            results[report.nodeid]["not_covered"] = str(meta["not_covered"])


def _name(v: Any) -> Any:
    return None if v is None else str(getattr(v, "value", v))


_CONFIG: list[pytest.Config] = []


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _CONFIG.append(session.config)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _CONFIG and _CONFIG[-1] is config:
        _CONFIG.pop()


# -- building ----------------------------------------------------------------------------------
def build_report(results: dict[str, dict[str, Any]], rules_defined: dict[str, str],
                 stale: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    """The report as plain JSON data (deterministic order; independent of xdist)."""
    from interpreter.registry import REGISTRY

    cells: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for rec in results.values():
        if rec["op"]:
            key = (rec["op"], rec["dtype"] or "-", rec["shape_class"] or "-")
            cells[key][rec["verdict"]] += 1
    matrix = []
    for (op, dtype, sc), counts in sorted(cells.items()):
        verdict = next(v for v in VERDICTS if counts[v]) if counts else "skip"
        matrix.append({"op": op, "dtype": dtype, "shape_class": sc, "verdict": verdict,
                       "counts": dict(sorted(counts.items()))})
    exercised = {(m["op"], m["dtype"]) for m in matrix if m["verdict"] != "skip"}
    why = {(rec["op"], rec["dtype"]): rec["not_covered"] for rec in results.values()
           if rec.get("not_covered")}
    not_covered = [{"op": name, "dtype": d.value,
                    "reason": why.get((name, d.value), "no test exercised it in this run")}
                   for name, op in sorted(REGISTRY.items())
                   for d in sorted(op.data_dtypes, key=lambda d: d.value)
                   if (name, d.value) not in exercised]
    tested: dict[str, list[str]] = defaultdict(list)
    for nodeid, rec in sorted(results.items()):
        for r in rec["rules"]:
            tested[r].append(nodeid)
    rules = [{"id": r, "page": page, "tests": len(tested.get(r, [])),
              "verdicts": dict(sorted(Counter(results[n]["verdict"]
                                              for n in tested.get(r, [])).items()))}
             for r, page in sorted(rules_defined.items())]
    undefined = sorted(set(tested) - set(rules_defined))
    totals = Counter(rec["verdict"] for rec in results.values())
    return {
        "meta": meta,
        "totals": {v: totals.get(v, 0) for v in VERDICTS},
        "tests": {k: {kk: vv for kk, vv in v.items() if kk != "duration"}
                  for k, v in sorted(results.items())},
        "matrix": matrix,
        "suite_errors": sorted(k for k, v in results.items()
                               if v["verdict"] == SUITE_ERROR_OUTCOME),
        "not_covered": not_covered,
        "rules": rules,
        "rules_uncovered": [r["id"] for r in rules if not r["tests"]],
        "rules_cited_but_undefined": undefined,
        "stale_expectations": stale,
    }


_COLORS = {SUITE_ERROR_OUTCOME: "#000000",
           "fail": "#e74c3c", "xfail": "#f39c12", "refused": "#8e44ad", "pass": "#27ae60",
           "skip": "#95a5a6", "not covered": "#dddddd"}


def render_html(report: dict[str, Any]) -> str:
    """One self-contained page (inline CSS, no scripts or external resources)."""
    e = html.escape
    by_op: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for m in report["matrix"]:
        by_op[m["op"]][m["dtype"]].append(m)
    reasons: dict[tuple[str, str], str] = {}
    for nc in report["not_covered"]:
        by_op[nc["op"]].setdefault(nc["dtype"], [])
        reasons[nc["op"], nc["dtype"]] = nc.get("reason", "")
    dtypes = sorted({d for row in by_op.values() for d in row})
    rows = []
    for op in sorted(by_op):
        tds = []
        for d in dtypes:
            if d not in by_op[op]:
                tds.append("<td></td>")
                continue
            cells = by_op[op][d]
            if not cells:
                tds.append(f'<td class="c" style="background:{_COLORS["not covered"]}" '
                           f'title="{e(op)} {e(d)}: not covered: {e(reasons.get((op, d), ""))}"'
                           '>&middot;</td>')
                continue
            spans = "".join(
                f'<span style="background:{_COLORS[c["verdict"]]}" title="{e(op)} {e(d)} '
                f'{e(c["shape_class"])}: {e(c["verdict"])} {e(json.dumps(c["counts"]))}">'
                f'{e(c["shape_class"][:2])}</span>' for c in cells)
            tds.append(f'<td class="c">{spans}</td>')
        rows.append(f"<tr><th>{e(op)}</th>{''.join(tds)}</tr>")
    head = "".join(f"<th>{e(d)}</th>" for d in dtypes)
    totals = " ".join(f'<span style="background:{_COLORS[k]}">{e(k)}: {v}</span>'
                      for k, v in report["totals"].items())
    rule_rows = "".join(
        f"<tr><td>{e(r['id'])}</td><td>{e(r['page'])}</td><td>{r['tests']}</td>"
        f"<td>{e(json.dumps(r['verdicts']))}</td></tr>" for r in report["rules"])
    stale = "".join(f"<li>{e(s['selector'])}: {e(s['why'])}</li>"
                    for s in report["stale_expectations"]) or "<li>none</li>"
    fails = "".join(f"<li><code>{e(k)}</code></li>" for k, v in report["tests"].items()
                    if v["verdict"] == "fail") or "<li>none</li>"
    suite_errors = "".join(f"<li><code>{e(k)}</code></li>" for k in report["suite_errors"])
    if suite_errors:
        suite_errors = ("<h2>suite errors (bugs of the conformance suite, not of the "
                        f"executor: please report them)</h2><ul>{suite_errors}</ul>")
    meta = e(json.dumps(report["meta"], indent=1))
    legend = " ".join(f'<span style="background:{c}">{e(k)}</span>'
                      for k, c in _COLORS.items())
    n_rules = len(report["rules"])
    covered = n_rules - len(report["rules_uncovered"])
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>eager-conformance report</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; }}
table {{ border-collapse: collapse; font-size: 12px; }}
td, th {{ border: 1px solid #ccc; padding: 2px 4px; }}
td.c span, p span {{ display: inline-block; color: white; padding: 0 3px; margin: 1px;
  border-radius: 3px; }}
td.c {{ white-space: nowrap; }}
pre {{ background: #f4f4f4; padding: .5em; }}
</style></head><body>
<h1>eager-conformance report</h1>
<pre>{meta}</pre>
<p>{totals}</p>
{suite_errors}
<h2>fails</h2><ul>{fails}</ul>
<h2>op &times; dtype &times; shape class</h2>
<p>legend: {legend}; shape classes: sc=scalar, em=empty, br=broadcast, ge=general</p>
<table><tr><th>op</th>{head}</tr>{''.join(rows)}</table>
<h2>spec rules ({covered} of {n_rules} named by a test)</h2>
<table><tr><th>rule</th><th>page</th><th>tests</th><th>verdicts</th></tr>{rule_rows}</table>
<h2>stale expectations</h2><ul>{stale}</ul>
</body></html>
"""


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    path = config.getoption("conformance_report", None)
    if not path or hasattr(config, "workerinput"):
        return  # only the controller (or a serial run) writes (CONF-10)
    try:
        _write_report(session, config, Path(path), exitstatus)
    except Exception as e:  # the suite's own failure, said so (CONF-22)
        from .calls import suite_error_message

        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        tr = config.pluginmanager.get_plugin("terminalreporter")
        text = suite_error_message(e, f"writing the conformance report {path}")
        if tr is not None:
            tr.write_line(text, red=True)
        else:
            print(text, file=sys.stderr)


def _write_report(session: pytest.Session, config: pytest.Config, out: Path,
                  exitstatus: int) -> None:
    from .expectations import stale_entries

    meta = {"executor": config.getoption("executor", None) or
            "interpreter.executor:InterpreterExecutor",
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "workers": getattr(config.option, "numprocesses", None) or 0,
            "exit_status": int(exitstatus)}
    report = build_report(config.stash.get(_RESULTS, {}), defined_rules(_spec_dir(config)),
                          stale_entries(config), meta)
    if not out.is_absolute():
        out = Path(config.invocation_params.dir) / out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, default=str))
    out.with_suffix(".html").write_text(render_html(report), encoding="utf-8")
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line(f"conformance report: {out} and {out.with_suffix('.html')}")


_ = NOT_COVERED
