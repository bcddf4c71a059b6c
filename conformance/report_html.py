"""The HTML page of the conformance report (CONF-8, CONF-61): one self-contained file.

Inline CSS only, no scripts, no external resources. Sections (element ids): ``summary``,
``failures``, ``suite-errors``, ``deviations``, ``refused``, ``not-covered``, ``matrix``
(one row per registry op, sticky headers), ``ops`` (per-op counts with ``<details>``),
``rules``, ``stale``, ``run``.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

__all__ = ["COLORS", "LABELS", "dtype_order", "first_line", "render", "short_dtype"]

COLORS = {"suite_error": "#000000", "fail": "#c62828", "deviation": "#e65100",
          "xfail": "#b8860b", "refused": "#6a1b9a", "not_covered": "#9e9e9e",
          "not_run": "#cfd8dc", "pass": "#2e7d32", "skip": "#78909c"}
LABELS = {"suite_error": "suite error", "fail": "fail", "deviation": "deviation",
          "xfail": "xfail", "refused": "refused", "not_covered": "not covered",
          "not_run": "not run", "pass": "pass", "skip": "skip"}
SHAPES = ("scalar", "empty", "broadcast", "general")
#: failures shown expanded; the rest start folded
OPEN_FAILURES = 5
_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0;
  color: #212121; background: #fafafa; }
header { background: #263238; color: #fff; padding: 12px 20px; }
header h1 { font-size: 20px; margin: 0 0 4px; }
header .sub { color: #cfd8dc; font-size: 13px; }
main { padding: 8px 20px 40px; max-width: 1500px; }
h2 { font-size: 17px; margin: 22px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 3px; }
.summary { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin: 12px 0; }
.chip { display: inline-block; color: #fff; border-radius: 12px; padding: 1px 9px;
  font-size: 13px; white-space: nowrap; }
.chip.zero { opacity: .35; }
.stat { color: #455a64; margin-left: 10px; white-space: nowrap; }
.warn { background: #fff3e0; border-left: 4px solid #e65100; padding: 6px 10px; }
.note { color: #546e7a; font-size: 13px; margin: 4px 0 8px; }
nav a { color: #b3e5fc; margin-right: 12px; font-size: 13px; }
details.case { background: #fff; border: 1px solid #e0e0e0; border-left: 4px solid #c62828;
  border-radius: 3px; margin: 6px 0; padding: 4px 10px; }
details.case.suite_error { border-left-color: #000; }
details.case.deviation { border-left-color: #e65100; }
details.case > summary { cursor: pointer; }
details.case code.id { color: #546e7a; font-size: 12px; }
.diag { display: inline-block; background: #fff3e0; color: #bf360c; border: 1px solid #ffcc80;
  border-radius: 3px; padding: 0 5px; margin: 0 3px; font-size: 12px; }
.diag.none { background: #eceff1; color: #546e7a; border-color: #cfd8dc; }
pre { background: #f5f5f5; padding: 6px 8px; overflow-x: auto; font-size: 12px; margin: 4px 0;
  white-space: pre-wrap; }
.repro { background: #e8f5e9; padding: 1px 5px; font-size: 12px; }
.scroll { max-height: 75vh; overflow: auto; border: 1px solid #ddd; background: #fff; }
table { border-collapse: collapse; font-size: 12px; }
td, th { border: 1px solid #e0e0e0; padding: 2px 5px; }
th { background: #eceff1; text-align: left; }
table.matrix thead th { position: sticky; top: 0; z-index: 2; text-align: center; }
table.matrix th.op { position: sticky; left: 0; z-index: 1; background: #eceff1;
  white-space: nowrap; }
table.matrix thead th.op { z-index: 3; }
table.matrix td { padding: 1px 2px; white-space: nowrap; text-align: center; }
table.matrix td.nodata { background: #fafafa; }
table.matrix td.nc { background: #eeeeee; color: #757575; font-size: 10px; }
.sq { display: inline-block; width: 11px; height: 13px; line-height: 13px; font-size: 9px;
  color: #fff; margin: 0 1px; border-radius: 2px; text-align: center; vertical-align: middle; }
.sq.absent { background: transparent; }
table.ops td.n { text-align: right; min-width: 2.2em; }
table.ops td.z { color: #bdbdbd; text-align: right; }
a { color: #1565c0; text-decoration: none; }
ul.reasons li { margin: 3px 0; }
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _chip(verdict: str, text: str | None = None, n: int | None = None) -> str:
    cls = "chip zero" if n == 0 else "chip"
    label = text if text is not None else LABELS.get(verdict, verdict)
    count = f" <b>{n}</b>" if n is not None else ""
    return (f'<span class="{cls}" data-verdict="{_e(verdict)}" '
            f'style="background:{COLORS.get(verdict, "#607d8b")}">{_e(label)}{count}</span>')


def short_dtype(d: str) -> str:
    """``float32`` -> ``f32``, ``bfloat16`` -> ``bf16``, ``float8_e4m3fn`` -> ``f8e4m3``."""
    if d.startswith("float8_"):
        return "f8" + d[7:].replace("fn", "")
    for long, short in (("bfloat", "bf"), ("float", "f"), ("uint", "u"), ("int", "i")):
        if d.startswith(long):
            return short + d[len(long):]
    return d


def dtype_order(d: str) -> tuple[int, int, str]:
    """bool, signed, unsigned, float8, bfloat16, float16..float64; by width within a kind."""
    kinds = ("bool", "int", "uint", "float8", "bfloat", "float")
    kind = next((i for i, k in reversed(list(enumerate(kinds))) if d.startswith(k)), 9)
    if d.startswith("float8"):
        kind = 3
    digits = "".join(ch for ch in d.split("_")[0] if ch.isdigit())
    return kind, int(digits or 0), d


def _diagnoses(item: dict[str, Any]) -> str:
    diags = item.get("diagnosis") or []
    if not diags:
        return '<span class="diag none">no diagnosis</span>'
    return "".join(f'<span class="diag" title="{_e(d.get("detail", ""))}">'
                   f'{_e(d.get("class", "?"))}'
                   f'{" [" + _e(d["rule"]) + "]" if d.get("rule") else ""}</span>'
                   for d in diags)


def first_line(message: str) -> str:
    """The line a folded failure shows (CONF-61, CONF-122): the first line of the message,
    the differing output's line for a value mismatch, the first ``E`` line of a pytest
    traceback; never the ``[gw0] linux -- Python ...`` line of an xdist worker."""
    lines = [x.strip() for x in message.strip().splitlines() if x.strip()]
    if lines and lines[0].startswith("[") and " -- Python " in lines[0]:
        lines = lines[1:]
    errors = [x[1:].strip() for x in lines if x.startswith("E ")]
    first = errors[0] if errors else lines[0] if lines else ""
    if len(lines) > 1 and first.endswith("differ from the reference"):
        first = lines[1]  # the output and the count of differing elements
    return first


def _case(item: dict[str, Any], index: int) -> str:
    verdict = item.get("verdict", "fail")
    where = (f'{_e(item.get("op") or "")} [{_e(item.get("dtype") or "")}, '
             f'{_e(item.get("shape_class") or "")}]' if item.get("op") else "")
    diag_rows = "".join(
        f'<li><b>{_e(d.get("class", "?"))}</b>'
        f'{" breaks " + _e(d["rule"]) if d.get("rule") else ""}'
        f'{": " + _e(d["detail"]) if d.get("detail") else ""}</li>'
        for d in item.get("diagnosis") or [])
    parts = [f'<ul class="diagnosis">{diag_rows}</ul>' if diag_rows else ""]
    if item.get("deviations"):
        parts.append("<p>declared deviations accepted: "
                     + ", ".join(f"<b>{_e(x)}</b>" for x in item["deviations"]) + "</p>")
    if item.get("failing_rules"):  # the rule ids of the verdict's findings (CONF-110)
        parts.append("<p>breaks: " + ", ".join(f"<b>{_e(r)}</b>" for r in item["failing_rules"])
                     + "</p>")
    if item.get("worst"):
        parts.append(f'<pre class="worst">{_e(chr(10).join(item["worst"]))}</pre>')
    if item.get("repro"):
        parts.append(f'<p>repro: <code class="repro">python {_e(item["repro"])}</code></p>')
    elif verdict in ("fail", "suite_error"):
        parts.append('<p class="note">no repro (this failure has no stored graph)</p>')
    message = item.get("message") or ""
    if message:
        parts.append(f'<details class="message"><summary>message: {_e(first_line(message)[:160])}'
                     f'</summary><pre>{_e(message)}</pre></details>')
    is_open = " open" if index < OPEN_FAILURES else ""
    return (f'<details class="case {_e(verdict)}" data-test="{_e(item["test"])}"{is_open}>'
            f'<summary>{_chip(verdict)} <b>{where}</b> {_diagnoses(item)} '
            f'<code class="id">{_e(item["test"])}</code></summary>{"".join(parts)}</details>')


def _summary(report: dict[str, Any]) -> str:
    s = report.get("summary") or {}
    totals = report["totals"]
    counts = {**totals, "not_covered": s.get("not_covered_pairs", len(report["not_covered"])),
              "not_run": s.get("not_run_pairs", len(report.get("not_run") or ()))}
    chips = [_chip(v, n=int(counts.get(v, 0)))
             for v in ("pass", "fail", "deviation", "xfail", "refused", "suite_error",
                       "not_covered", "not_run", "skip")]
    secs = s.get("seconds")
    def count(key: str, label: str) -> str:
        n = s.get(key)
        return (f'<span class="stat" data-stat="{key}">{label}: '
                f'{"not recorded" if n is None else n}</span>')

    stats = [f'<span class="stat" data-stat="tests">{s.get("tests", 0)} tests; not covered '
             f'and not run count op &times; dtype pairs</span>',
             count("structures", "distinct graphs"), count("calls", "executor calls"),
             count("value_checks", "value checks"),
             f'<span class="stat" data-stat="seconds">'
             f'{"?" if secs is None else f"{float(secs):.1f}"} s</span>']
    banner = ""
    if not s.get("complete", True):
        meta = report.get("meta") or {}
        of = f" of {meta['collected']} collected" if meta.get("collected") else ""
        banner = (f'<p class="warn" id="incomplete">This run did not finish (killed, '
                  f'interrupted or still running): the report lists the {s.get("tests", 0)} '
                  f'tests that finished{_e(of)}.</p>')
    return (f'<section id="summary">{banner}<div class="summary">{"".join(chips)}'
            f'{"".join(stats)}</div></section>')


def _matrix(report: dict[str, Any]) -> str:
    by_op: dict[str, dict[str, dict[str, dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(dict))
    for m in report["matrix"]:
        by_op[m["op"]][m["dtype"]][m["shape_class"]] = m
    reasons = {(nc["op"], nc["dtype"]): nc.get("reason", "") for nc in report["not_covered"]}
    not_run = {(nr["op"], nr["dtype"]) for nr in report.get("not_run") or ()}
    ops = [o["op"] for o in report.get("ops") or []] or sorted(by_op)
    dtypes = sorted({d for row in by_op.values() for d in row if d != "-"}
                    | {d for _, d in reasons} | {d for _, d in not_run}, key=dtype_order)
    rows = []
    for op in ops:
        tds = []
        for d in dtypes:
            cells = {sc: c for sc, c in by_op.get(op, {}).get(d, {}).items()
                     if c["verdict"] != "not_covered"}
            if not cells and (op, d) in reasons:
                tds.append(f'<td class="nc" title="{_e(op)} {_e(d)}: not covered: '
                           f'{_e(reasons[op, d])}">n/c</td>')
                continue
            if not cells and (op, d) in not_run:
                tds.append(f'<td class="nc" title="{_e(op)} {_e(d)}: not run: this run did '
                           f'not select its cells">n/r</td>')
                continue
            if not cells:
                tds.append('<td class="nodata"></td>')
                continue
            squares = []
            for sc in (*SHAPES, *sorted(set(cells) - set(SHAPES))):
                c = cells.get(sc)
                if c is None:
                    if sc in SHAPES:
                        squares.append('<span class="sq absent"></span>')
                    continue
                squares.append(
                    f'<span class="sq" data-verdict="{_e(c["verdict"])}" '
                    f'style="background:{COLORS.get(c["verdict"], "#607d8b")}" '
                    f'title="{_e(op)} {_e(d)} {_e(sc)}: {_e(LABELS.get(c["verdict"], ""))} '
                    f'{_e(json.dumps(c["counts"]))}">{_e(sc[:1])}</span>')
            tds.append(f'<td>{"".join(squares)}</td>')
        rows.append(f'<tr data-op="{_e(op)}"><th class="op"><a href="#op-{_e(op)}">{_e(op)}'
                    f'</a></th>{"".join(tds)}</tr>')
    head = "".join(f'<th title="{_e(d)}">{_e(short_dtype(d))}</th>' for d in dtypes)
    legend = " ".join(_chip(v) for v in COLORS)
    return (f'<section id="matrix"><h2>op &times; dtype matrix</h2>'
            f'<p class="note">Each cell holds one square per shape class '
            f'(s = scalar, e = empty, b = broadcast, g = general) coloured by the worst verdict '
            f'of its tests: {legend}. <b>n/c</b>: the op has this data dtype but no test '
            f'can run it (hover for the reason; all reasons are listed under '
            f'<a href="#not-covered">not covered</a>). <b>n/r</b>: not run, the op has '
            f'cells of this dtype but this run did not select them. An empty cell: not a '
            f'data dtype of the op. Op names link to their row of counts.</p>'
            f'<div class="scroll"><table class="matrix"><thead><tr><th class="op">op</th>'
            f'{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div></section>')


def _ops(report: dict[str, Any]) -> str:
    cols = ("pass", "fail", "deviation", "xfail", "refused", "suite_error", "not_covered",
            "not_run", "skip")
    nc_by_op: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for nc in report["not_covered"]:
        nc_by_op[nc["op"]].append((nc["dtype"], nc.get("reason", "")))
    tests_by_op: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for nodeid, rec in report["tests"].items():
        if rec.get("op"):
            tests_by_op[rec["op"]].append((nodeid, rec))
    messages = {x["test"]: x.get("message", "") for x in report.get("refused") or []}
    rows = []
    for o in report.get("ops") or []:
        counts = {**o["counts"], "not_covered": len(o.get("not_covered") or ()),
                  "not_run": len(o.get("not_run") or ())}
        nums = "".join(f'<td class="{"n" if counts.get(c) else "z"}" data-col="{c}">'
                       f'{counts.get(c, 0)}</td>' for c in cols)
        items = [f'<li>{_chip(rec["verdict"])} <code>{_e(nodeid.split("::")[-1])}</code>'
                 f'{" — " + _e(messages[nodeid]) if nodeid in messages else ""}</li>'
                 for nodeid, rec in sorted(tests_by_op.get(o["op"], []))]
        items += [f'<li>{_chip("not_covered")} {_e(d)}: {_e(r)}</li>'
                  for d, r in nc_by_op.get(o["op"], [])]
        detail = (f'<details><summary>{len(items)} entries</summary><ul>{"".join(items)}'
                  f'</ul></details>' if items else "")
        rows.append(f'<tr id="op-{_e(o["op"])}" data-op="{_e(o["op"])}"><th>{_e(o["op"])}</th>'
                    f'<td>{_e(o.get("category", ""))}</td><td>{_chip(o["verdict"])}</td>'
                    f'{nums}<td>{detail}</td></tr>')
    head = "".join(f"<th>{_e(LABELS[c])}</th>" for c in cols)
    return (f'<section id="ops"><h2>per op</h2><p class="note">Tests per verdict; '
            f'<i>not covered</i> counts the op\'s data dtypes no test can exercise or that '
            f'ended not covered, <i>not run</i> those whose cells this run did not run.</p>'
            f'<table class="ops"><thead><tr><th>op</th>'
            f'<th>category</th><th>verdict</th>{head}<th>tests</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></section>')


def _not_covered(report: dict[str, Any]) -> str:
    by_reason: dict[str, list[str]] = defaultdict(list)
    for nc in report["not_covered"]:
        by_reason[nc.get("reason", "")].append(f'{nc["op"]}[{nc["dtype"]}]')
    items = "".join(f'<li><b>{len(pairs)}</b> &times; {_e(reason)}<br><span class="note">'
                    f'{_e(", ".join(pairs[:60]))}{" …" if len(pairs) > 60 else ""}'
                    f'</span></li>' for reason, pairs in sorted(by_reason.items()))
    return (f'<section id="not-covered"><h2>not covered ({len(report["not_covered"])} '
            f'op &times; dtype pairs)</h2><p class="note">A registry op and data dtype that no '
            f'test exercised: the suite cannot generate it or its test ended without a result '
            f'(the reason says why). Not a pass: nothing is known about the executor there. '
            f'{len(report.get("not_run") or ())} more pairs were <i>not run</i>: they have '
            f'cells, which this run did not select (e.g. a <code>-k</code> selection).</p>'
            f'<ul class="reasons">{items or "<li>none</li>"}'
            f'</ul></section>')


def _refused(report: dict[str, Any]) -> str:
    rows = "".join(f'<li data-test="{_e(x["test"])}"><code>{_e(x["test"])}</code>: '
                   f'{_e(x.get("message", ""))}</li>' for x in report.get("refused") or [])
    return (f'<section id="refused"><h2>refused ({len(report.get("refused") or [])})</h2>'
            f'<p class="note">The executor raised <code>UnsupportedGraphError</code> for every '
            f'example of these tests (spec EXEC-2, CONF-5): allowed, counted apart, never a '
            f'pass. <code>--conformance-strict</code> makes a refusal a failure.</p>'
            f'<ul class="reasons">{rows or "<li>none</li>"}</ul></section>')


def _cases(report: dict[str, Any], key: str, sid: str, title: str, note: str) -> str:
    items = report.get(key) or []
    if not items:
        return f'<section id="{sid}" class="empty"><p><b>{_e(title)}</b>: none</p></section>'
    body = "".join(_case(x, i) for i, x in enumerate(items))
    kinds: dict[str, int] = defaultdict(int)
    for x in items:
        for name in [d.get("class", "?") for d in x.get("diagnosis") or []] or ["no diagnosis"]:
            kinds[str(name)] += 1
    tally = ", ".join(f"<b>{_e(k)}</b> {v}" for k, v in sorted(kinds.items(),
                                                                key=lambda kv: -kv[1]))
    note += f" By diagnosis: {tally}."
    return (f'<section id="{sid}"><h2>{_e(title)} ({len(items)})</h2>'
            f'<p class="note">{note}</p>{body}</section>')


def _rules(report: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{_e(r['id'])}</td><td>{_e(r['page'])}</td><td>{r['tests']}</td>"
        f"<td>{_e(', '.join(f'{k} {v}' for k, v in r['verdicts'].items()))}</td></tr>"
        for r in report["rules"])
    n = len(report["rules"])
    covered = n - len(report["rules_uncovered"])
    return (f'<section id="rules"><details><summary><h2 style="display:inline">spec rules '
            f'({covered} of {n} named by a test)</h2></summary><table><thead><tr><th>rule</th>'
            f'<th>page</th><th>tests</th><th>verdicts</th></tr></thead><tbody>{rows}</tbody>'
            f'</table></details></section>')


def _run_line(meta: dict[str, Any]) -> str:
    """The header's line of what ran (CONF-122): executor and versions, selection, seed."""
    version = f' {meta["executor_version"]}' if meta.get("executor_version") else ""
    sel = meta.get("selection") or {}
    picked = [f"-k {sel['k']!r}" if sel.get("k") else "", f"-m {sel['m']!r}" if sel.get(
        "m") else "", "smoke" if sel.get("smoke") else "",
        f"shard {sel['shard']}" if sel.get("shard") else ""]
    seed = meta.get("hypothesis_seed")
    parts = [f'executor <b>{_e(meta.get("executor", "?"))}</b>{_e(version)}',
             f'eager-conformance {_e(meta.get("suite_version") or "?")}',
             f'Python {_e(meta.get("python", "?"))}, numpy {_e(meta.get("numpy", "?"))}',
             f'profile {_e(meta.get("profile", "?"))}, seed '
             + _e(seed if seed is not None else "derandomized" if meta.get("derandomize")
                  else "random"),
             "selection " + _e(", ".join(x for x in picked if x) or "all"),
             f'expectations {_e(meta.get("expectations") or "none")}',
             f'workers {_e(meta.get("workers", 0))}', _e(meta.get("created", ""))]
    if meta.get("shards"):
        missing = meta.get("missing_shards") or []
        parts.insert(5, f'merged from {len(meta["shards"])} shards'
                     + (f' (<b>missing {_e(", ".join(missing))}</b>)' if missing else ""))
    return " · ".join(parts)


def render(report: dict[str, Any], extra: Sequence[tuple[str, str, str]] = ()) -> str:
    """The whole page; ``extra`` sections ``(element id, nav title, html)`` follow the
    matrix."""
    meta = report.get("meta") or {}
    stale = "".join(f"<li>{_e(s.get('selector', ''))}: {_e(s.get('why', ''))}</li>"
                    for s in report["stale_expectations"]) or "<li>none</li>"
    suite_errors = _cases(
        report, "suite_error_details", "suite-errors", "suite errors",
        "Bugs of the conformance suite, not of the executor (CONF-22): nothing is known "
        "about the executor in these tests. Please report them.")
    failures = _cases(report, "failures", "failures", "failures",
                      "Each failure with its diagnosis (the kind of divergence and the spec "
                      "rule it breaks, when the suite could tell), its worst elements and a "
                      "standalone repro.")
    deviations = _cases(report, "deviations", "deviations", "deviations",
                        "Failures fully explained by a deviation class declared in the "
                        "expectations file: counted and listed, not passes.")
    nav = " ".join(f'<a href="#{s}">{t}</a>' for s, t in (
        ("failures", "failures"), ("suite-errors", "suite errors"),
        ("deviations", "deviations"), ("refused", "refused"), ("not-covered", "not covered"),
        ("matrix", "matrix"), *((sid, t) for sid, t, _ in extra), ("ops", "per op"),
        ("rules", "rules"), ("run", "run")))
    sub = _run_line(meta)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>eager-conformance report: {_e(meta.get("executor", ""))}</title>
<style>{_CSS}</style></head><body>
<header><h1>eager-conformance report</h1><div class="sub">{sub}</div><nav>{nav}</nav></header>
<main>
{_summary(report)}
{failures}
{suite_errors}
{deviations}
{_matrix(report)}
{"".join(body for _, _, body in extra)}
{_refused(report)}
{_not_covered(report)}
{_ops(report)}
{_rules(report)}
<section id="stale"><h2>stale expectations</h2><ul>{stale}</ul></section>
<section id="run"><h2>run</h2><pre>{_e(json.dumps(meta, indent=1, default=str))}</pre>
</section>
</main></body></html>
"""
