"""``--conformance-report=PATH``: JSON at PATH and a self-contained HTML page next to it
(CONF-8..10, CONF-60..64).

Results are gathered from test *reports* (the plugin's ``pytest_runtest_logreport`` calls
:func:`add_result`) on the process that writes the terminal output: the only process in a
serial run, the controller under pytest-xdist (workers ship each report's
``user_properties``). A test contributes its verdict, its metadata ``("conformance", {"op",
"dtype", "shape_class", "rules", ...})`` (recorded by ``outcomes.record``; ``structures``,
``calls``, ``value_checks``, ``diagnosis``, ``deviations``, ``value_reach`` (CONF-102) and
``failure``, the structured verdict of a failure (``conformance.verdicts``, CONF-110), are
used when present) and the rule ids of its ``@pytest.mark.spec`` markers (copied into
``user_properties`` at collection as ``("conformance_spec", [...])``).

Every result is appended to ``PATH`` with suffix ``.jsonl`` as soon as it is known (one
flushed line per test, CONF-62), and JSON + HTML are rebuilt from it at most once a minute
while the run goes on and at the end, interrupted or not. A run killed before its end still
leaves the ``.jsonl``: ``python -m conformance.report PATH.jsonl -o report.html`` builds
the report of the tests that finished; ``python -m conformance.report merge`` builds one
report of a run's shards (``conformance.report_merge``, CONF-121). The JUnit XML
properties (CONF-64) are ``conformance.report_junit``'s; the run's metadata (CONF-122)
``conformance.run_meta``'s.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import IO, Any

import pytest

from .calls import SUITE_ERROR
from .outcomes import NOT_COVERED, REFUSED, SUITE_ERROR_OUTCOME
from .value_classes import SHAPE_CLASSES, VALUE_CLASSES
from .value_classes import gaps as reach_gaps
from .value_classes import merge as merge_reach

__all__ = ["VERDICTS", "build_report", "defined_rules", "load_results", "main",
           "render_html", "verdict_of", "write_report_files"]

#: Cell verdicts, worst first (a cell shows the worst verdict of its tests, CONF-8/60).
#: ``suite_error``: the suite's own code failed; nothing is known about the executor (CONF-22).
#: ``deviation``: every failure of the test was explained by a declared deviation class.
VERDICTS = (SUITE_ERROR_OUTCOME, "fail", "deviation", "xfail", "refused", "not_covered",
            "pass", "skip")
SPEC_PROP = "conformance_spec"
DEVIATION = "deviation"
#: an (op, dtype) pair with a cell that no test of this run ran (deselected, file not run)
NOT_RUN = "not_run"
#: the longest failure message kept in the report (the artifacts hold the full one)
MESSAGE_CHARS = 6000
#: seconds between two rebuilds of JSON/HTML while the run goes on (CONF-62)
REBUILD_EVERY = 60.0
_RULE = re.compile(r"^- \*\*([A-Za-z0-9_.\-]+)\*\*", re.M)
#: the line pytest-xdist puts before a worker's failure ("[gw0] linux -- Python 3.11.7 ...")
_WORKER_LINE = re.compile(r"\A\s*\[[\w.-]+\] \S+ -- Python \S+[^\n]*\n")
_RESULTS = pytest.StashKey[dict[str, dict[str, Any]]]()
_STATE = pytest.StashKey["_Incremental"]()


def verdict_of(report: pytest.TestReport) -> str:
    """pass / fail / deviation / refused / not_covered / xfail / skip (CONF-4),
    suite_error (CONF-22) or warning (CONF-133)."""
    if report.failed and _suite_error(report):
        return SUITE_ERROR_OUTCOME
    if hasattr(report, "wasxfail"):
        return "xfail" if report.skipped else "fail"  # strict XPASS is a failure
    if report.failed:
        return "fail"
    if report.skipped:
        reason = _skip_reason(report)
        if REFUSED in reason[:20]:
            return "refused"
        if NOT_COVERED in reason[:20]:
            return "not_covered"
        return "skip"
    meta = _meta(report)
    if meta.get("outcome") == "warning":
        return "warning"  # failed only provisional rules (CONF-133)
    if meta.get("outcome") == DEVIATION or meta.get("deviations"):
        return DEVIATION  # passed only because a declared class was accepted
    return "pass"


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
    if not isinstance(reason, str):
        return ""
    return reason.removeprefix("Skipped: ")


def _meta(report: pytest.TestReport) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key, value in report.user_properties:
        if key == "conformance" and isinstance(value, dict):
            meta.update(value)
    return meta


def _suite_error(report: pytest.TestReport) -> bool:
    if _meta(report).get("outcome") == SUITE_ERROR_OUTCOME:
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


def _spec_dir(config: pytest.Config | None) -> Path:
    """spec/ of the checkout, or the copy an install puts in ``<prefix>/share``."""
    installed = Path(sys.prefix) / "share" / "eager-conformance"
    bases = [Path(__file__).resolve().parent.parent, installed]
    if config is not None:
        bases.insert(0, config.rootpath)
    for base in bases:
        if (base / "spec").is_dir():
            return base / "spec"
    return bases[0] / "spec"


# -- one test's record ---------------------------------------------------------------------------
def record_of(report: pytest.TestReport) -> dict[str, Any]:
    """What the report keeps of one test report (plain JSON values)."""
    meta = _meta(report)
    rules: set[str] = set()
    for key, value in report.user_properties:
        if key == SPEC_PROP and isinstance(value, list | tuple):
            rules.update(str(v) for v in value)
    rules.update(meta.get("rules") or ())
    verdict = verdict_of(report)
    rec: dict[str, Any] = {"verdict": verdict, "op": meta.get("op"),
                           "dtype": _name(meta.get("dtype")),
                           "shape_class": meta.get("shape_class"),
                           "rules": sorted(rules), "duration": round(report.duration, 6)}
    if meta.get("not_covered"):  # why an (op, dtype) cannot be tested (CONF-21)
        rec["not_covered"] = str(meta["not_covered"])
    for key in ("structures", "calls", "value_checks", "examples", "deviations",
                "shrink_calls", "shrink_structures", "shrink_stopped",  # CONF-116
                "batches", "batch_stop"):  # CONF-136
        if meta.get(key) is not None:
            rec[key] = meta[key]
    if meta.get("value_reach"):  # CONF-102
        rec["value_reach"] = meta["value_reach"]
    if meta.get("diagnosis"):
        rec["diagnosis"] = [d if isinstance(d, dict) else {"class": str(d)}
                            for d in meta["diagnosis"]]
    if verdict in ("fail", SUITE_ERROR_OUTCOME, "xfail"):
        text = str(getattr(report, "wasxfail", "") or "") if verdict == "xfail" else ""
        text = text or _WORKER_LINE.sub("", report.longreprtext, count=1)
        rec["message"] = text[:MESSAGE_CHARS]
        failure = meta.get("failure") or {}  # the structured verdict (CONF-110)
        if failure.get("rules"):
            rec["failing_rules"] = list(failure["rules"])
        if failure.get("repro"):
            rec["repro"] = str(failure["repro"])
    elif verdict in ("refused", "not_covered", "skip"):
        rec["message"] = _skip_reason(report)[:MESSAGE_CHARS]
    return rec


def _name(v: Any) -> Any:
    return None if v is None else str(getattr(v, "value", v))


# -- collection and results (called by the plugin's hooks) --------------------------------------
def mark_spec_rules(items: list[pytest.Item]) -> None:
    """Copy each test's ``@pytest.mark.spec`` ids into its ``user_properties``."""
    for item in items:
        ids = sorted({str(a) for m in item.iter_markers("spec") for a in m.args})
        if ids:
            item.user_properties.append((SPEC_PROP, ids))


def configure(config: pytest.Config) -> None:
    config.stash[_RESULTS] = {}


def add_result(config: pytest.Config, report: pytest.TestReport) -> None:
    """Keep the result of a finished test (and append it to the ``.jsonl``, CONF-62)."""
    if not config.getoption("conformance_report", None):
        return
    if report.when == "setup" and report.passed:
        return  # the call's report follows; until then the test has not finished
    results = config.stash.setdefault(_RESULTS, {})
    rec = results.get(report.nodeid)
    if report.when == "call" or rec is None or (report.when == "setup" and not report.passed):
        if report.when == "teardown" and report.passed:
            return
        new = record_of(report)
        if rec is not None and report.when == "teardown" and new["verdict"] != "fail":
            return
        results[report.nodeid] = new
        state = config.stash.get(_STATE, None)
        if state is not None:
            state.add(report.nodeid, new)


def start(config: pytest.Config) -> None:
    """At the session's start: the controller opens the ``.jsonl`` (CONF-62)."""
    path = config.getoption("conformance_report", None)
    if path and not hasattr(config, "workerinput"):
        config.stash[_STATE] = _Incremental(config, _out_path(config, path))


def close(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None:
        state.close()


def collected(config: pytest.Config, count: int) -> None:
    """The number of tests collected (by this process or an xdist worker)."""
    state = config.stash.get(_STATE, None)
    if state is not None and not hasattr(config, "workerinput"):
        state.collected = max(state.collected, count)


# -- incremental results (CONF-62) --------------------------------------------------------------
class _Incremental:
    """The controller's ``.jsonl`` of results, flushed per test, and periodic rebuilds."""

    def __init__(self, config: pytest.Config, out: Path) -> None:
        self.config = config
        self.out = out
        self.collected = 0
        self.started = time.time()
        self.last_build = time.monotonic()
        out.parent.mkdir(parents=True, exist_ok=True)
        self.file: IO[str] | None = jsonl_path(out).open("w", encoding="utf-8")
        self._line({"kind": "meta", **_meta_of(config, self.started)})
        self._previous_term = _catch_sigterm()

    def _line(self, obj: dict[str, Any]) -> None:
        if self.file is not None:
            self.file.write(json.dumps(obj, default=str) + "\n")
            self.file.flush()

    def add(self, nodeid: str, rec: dict[str, Any]) -> None:
        self._line({"kind": "test", "nodeid": nodeid, "at": round(time.time(), 3), **rec})
        if time.monotonic() - self.last_build >= REBUILD_EVERY:
            self.last_build = time.monotonic()
            try:  # a partial report; a fault here is reported by the final build
                _write_report(self.config, self.out, None)
            except Exception:
                pass

    def end(self, exitstatus: int) -> None:
        """The last line: how the run ended (absent when it was killed)."""
        self._line({"kind": "end", "exit_status": int(exitstatus), "at": round(time.time(), 3),
                    "complete": exitstatus != pytest.ExitCode.INTERRUPTED})

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
        _restore_sigterm(self._previous_term)


def _catch_sigterm() -> Any:
    """SIGTERM (``timeout``, CI cancellation) ends the run like Ctrl-C, so the report of
    what finished is still written; only where nobody else handles it."""
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            return signal.signal(signal.SIGTERM, _sigterm)
    except (ValueError, OSError):  # not the main thread
        pass
    return None


def _sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _restore_sigterm(previous: Any) -> None:
    if previous is not None and signal.getsignal(signal.SIGTERM) is _sigterm:
        try:
            signal.signal(signal.SIGTERM, previous)
        except (ValueError, OSError):
            pass


def jsonl_path(out: Path) -> Path:
    """The incremental results file of the report at ``out``."""
    return out.with_suffix(".jsonl")


def _meta_of(config: pytest.Config, started: float) -> dict[str, Any]:
    from .run_meta import metadata

    return metadata(config, started)


def load_results(path: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(meta, results by node id) from a ``.jsonl`` results file; a last line cut short by a
    kill is ignored, a later line for the same test replaces an earlier one."""
    meta: dict[str, Any] = {}
    results: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = obj.pop("kind", None)
        if kind == "meta":
            meta = obj
        elif kind == "end":
            meta.update(complete=bool(obj.get("complete")), exit_status=obj.get("exit_status"),
                        last_result_at=obj.get("at", meta.get("last_result_at")))
        elif kind == "test" and "nodeid" in obj:
            at = obj.pop("at", None)
            if isinstance(at, int | float):
                meta["last_result_at"] = max(at, meta.get("last_result_at", at))
            results[obj.pop("nodeid")] = obj
    return meta, results


# -- building ----------------------------------------------------------------------------------
def _worst(message: str) -> list[str]:
    """The 'worst elements' lines of a comparison failure message."""
    lines = message.splitlines()
    for i, line in enumerate(lines):
        if "worst elements" in line or "first differing elements" in line:
            out = [line.strip()]
            for more in lines[i + 1:]:
                if not more.startswith("    "):
                    break
                out.append(more.strip())
            return out[:9]
    return []


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
    exercised = {(m["op"], m["dtype"]) for m in matrix
                 if m["verdict"] not in ("skip", "not_covered")}
    why = {(rec["op"], rec["dtype"]): rec["not_covered"] for rec in results.values()
           if rec.get("not_covered")}
    ran = {(rec["op"], rec["dtype"]) for rec in results.values() if rec["op"]}
    not_covered, not_run = [], []
    for name, opdef in sorted(REGISTRY.items()):
        for d in sorted(opdef.data_dtypes, key=lambda d: d.value):
            pair = (name, d.value)
            if pair in exercised:
                continue
            gap = None if pair in ran else _cell_gap(opdef, d)
            if gap is None and pair not in ran:  # a cell exists; this run did not run it
                not_run.append({"op": name, "dtype": d.value})
            else:
                not_covered.append({"op": name, "dtype": d.value, "reason": why.get(
                    pair, gap or "no test exercised it in this run")})
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
    per_op: dict[str, Counter[str]] = defaultdict(Counter)
    for rec in results.values():
        if rec["op"]:
            per_op[rec["op"]][rec["verdict"]] += 1
    ops = [{"op": name, "category": op.category,
            "verdict": next((v for v in VERDICTS if per_op[name][v]), "not_covered"),
            "counts": dict(sorted(per_op[name].items())),
            "not_covered": [nc["dtype"] for nc in not_covered if nc["op"] == name],
            "not_run": [nr["dtype"] for nr in not_run if nr["op"] == name]}
           for name, op in sorted(REGISTRY.items())]
    for o in ops:
        if not o["counts"] and o["not_run"] and not o["not_covered"]:
            o["verdict"] = NOT_RUN
    ops += [{"op": name, "category": "-", "counts": dict(sorted(c.items())),
             "verdict": next(v for v in VERDICTS if c[v]), "not_covered": [], "not_run": []}
            for name, c in sorted(per_op.items()) if name not in REGISTRY]

    def listed(verdicts: tuple[str, ...]) -> list[dict[str, Any]]:
        out = []
        for nodeid, rec in sorted(results.items()):
            if rec["verdict"] in verdicts:
                item = {"test": nodeid, **{k: rec.get(k) for k in (
                    "verdict", "op", "dtype", "shape_class", "diagnosis", "deviations",
                    "failing_rules", "message", "repro") if rec.get(k) is not None}}
                if rec["verdict"] in ("fail", SUITE_ERROR_OUTCOME, "xfail"):
                    item["worst"] = _worst(rec.get("message", ""))
                out.append(item)
        return out

    def total(key: str) -> int | None:
        """Sum of a recorded count; None where no test recorded it."""
        if not any(key in rec for rec in results.values()):
            return None
        return sum(int(rec.get(key) or 0) for rec in results.values())

    reach = merge_reach(e for rec in results.values() for e in rec.get("value_reach") or ())
    seconds = meta.get("seconds")
    summary = {**{v: totals.get(v, 0) for v in VERDICTS}, "tests": len(results),
               "not_covered_pairs": len(not_covered), "not_run_pairs": len(not_run),
               "structures": total("structures"),
               "calls": total("calls"), "value_checks": total("value_checks"),
               "shrink_calls": total("shrink_calls"),
               "shrink_structures": total("shrink_structures"),
               "seconds": seconds, "complete": bool(meta.get("complete", False))}
    return {
        "meta": meta,
        "summary": summary,
        "totals": {v: totals.get(v, 0) for v in VERDICTS},
        "tests": {k: {kk: vv for kk, vv in v.items()
                      if kk not in ("duration", "message", "repro", "value_reach")}
                  for k, v in sorted(results.items())},
        "failures": listed(("fail",)),
        "deviations": listed((DEVIATION,)),
        "xfails": listed(("xfail",)),
        "refused": listed(("refused",)),
        "matrix": matrix,
        "ops": ops,
        "suite_errors": sorted(k for k, v in results.items()
                               if v["verdict"] == SUITE_ERROR_OUTCOME),
        "suite_error_details": listed((SUITE_ERROR_OUTCOME,)),
        "not_covered": not_covered,
        "not_run": not_run,
        "rules": rules,
        "rules_uncovered": [r["id"] for r in rules if not r["tests"]],
        "rules_cited_but_undefined": undefined,
        "stale_expectations": stale,
        "value_reach": {"classes": list(VALUE_CLASSES + SHAPE_CLASSES), "rows": reach,
                        "gaps": len(reach_gaps(reach))},
    }


def _cell_gap(op: Any, dtype: Any) -> str | None:
    """Why no cell of ``op`` has data dtype ``dtype`` (CONF-21); None when one exists."""
    from .strategies import cell_gaps

    try:
        return cell_gaps(op).get(dtype)
    except Exception as e:  # a registry the suite cannot probe: say so, per pair
        return f"cells could not be probed: {type(e).__name__}: {e}"


def render_html(report: dict[str, Any]) -> str:
    """One self-contained page (see :mod:`conformance.report_html`), with the value-reach
    matrix (:mod:`conformance.report_reach`, CONF-104)."""
    from .report_html import render
    from .report_reach import section

    return render(report, extra=[("value-reach", "value reach", section(report))])


def write_report_files(report: dict[str, Any], out: Path) -> Path:
    """JSON at ``out`` and HTML next to it; returns the HTML path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    page = out.with_suffix(".html")
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(report, indent=1, default=str))
    tmp.replace(out)
    tmp = out.with_suffix(".html.tmp")
    tmp.write_text(render_html(report), encoding="utf-8")
    tmp.replace(page)
    return page


def finish(session: pytest.Session, exitstatus: int) -> None:
    """At the session's end: the controller writes JSON and HTML (CONF-10)."""
    config = session.config
    path = config.getoption("conformance_report", None)
    if not path or hasattr(config, "workerinput"):
        return  # only the controller (or a serial run) writes (CONF-10)
    try:
        _write_report(config, _out_path(config, path), exitstatus)
    except Exception as e:  # the suite's own failure, said so (CONF-22)
        from .calls import suite_error_message

        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        tr = config.pluginmanager.get_plugin("terminalreporter")
        text = suite_error_message(e, f"writing the conformance report {path}")
        if tr is not None:
            tr.write_line(text, red=True)
        else:
            print(text, file=sys.stderr)


def _out_path(config: pytest.Config, path: str) -> Path:
    out = Path(path)
    return out if out.is_absolute() else Path(config.invocation_params.dir) / out


def _write_report(config: pytest.Config, out: Path, exitstatus: int | None) -> None:
    """Build JSON + HTML from this run's results; ``exitstatus`` None: the run goes on."""
    from .expectations import stale_entries

    state = config.stash.get(_STATE, None)
    if state is not None and exitstatus is not None:
        state.end(exitstatus)
    started = state.started if state is not None else time.time()
    meta = {**_meta_of(config, started), "seconds": round(time.time() - started, 1),
            "collected": state.collected if state is not None else None,
            "complete": exitstatus is not None and exitstatus != pytest.ExitCode.INTERRUPTED,
            "exit_status": None if exitstatus is None else int(exitstatus)}
    meta.pop("started", None)
    report = build_report(config.stash.get(_RESULTS, {}), defined_rules(_spec_dir(config)),
                          stale_entries(config) if exitstatus is not None else [], meta)
    page = write_report_files(report, out)
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None and exitstatus is not None:
        tr.write_line(f"conformance report: {out} and {page}")


# -- command line (CONF-63, CONF-121) -----------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """``python -m conformance.report RESULTS.jsonl [-o report.html]``: the report of the
    tests a run finished, from its incremental results file (e.g. after a kill);
    ``python -m conformance.report merge A.jsonl B.jsonl ... -o report.html [--junit
    junit.xml] [--store-durations durations.json]``: one report of a run's shards."""
    argv = list(sys.argv[1:] if argv is None else argv)
    merging = bool(argv) and argv[0] == "merge"
    ap = argparse.ArgumentParser(prog="python -m conformance.report" + (
        " merge" if merging else ""), description=main.__doc__)
    ap.add_argument("results", type=Path, nargs="+" if merging else None,
                    help="the .jsonl file(s) written next to the report(s)")
    ap.add_argument("-o", "--output", type=Path, default=None,
                    help="HTML page to write (JSON next to it; default: next to RESULTS)")
    if merging:
        ap.add_argument("--junit", type=Path, default=None, help="also write JUnit XML")
        ap.add_argument("--store-durations", type=Path, default=None, metavar="PATH",
                        help="write (update) the per-test cost file of the shards' tests")
    args = ap.parse_args(argv[1:] if merging else argv)
    if merging:
        return _merge(args)
    meta, results = load_results(args.results)
    started, last = meta.pop("started", None), meta.pop("last_result_at", None)
    if isinstance(started, int | float) and isinstance(last, int | float):
        meta["seconds"] = round(last - started, 1)  # up to the last finished test
    meta.setdefault("complete", False)  # no end line: the run was killed
    meta["rebuilt_from"] = str(args.results)
    report = build_report(results, defined_rules(_spec_dir(None)), [], meta)
    out = (args.output or args.results).with_suffix(".json")
    page = write_report_files(report, out)
    print(f"conformance report of {len(results)} finished tests: {out} and {page}")
    return 0


def _merge(args: argparse.Namespace) -> int:
    from .report_merge import MergeError, merge, write_junit
    from .shard import write_durations

    try:
        meta, results = merge([(p, *load_results(p)) for p in args.results])
    except (MergeError, OSError) as e:
        print(f"python -m conformance.report merge: {e}", file=sys.stderr)
        return 2
    report = build_report(results, defined_rules(_spec_dir(None)), [], meta)
    out = (args.output or args.results[0].with_name("merged")).with_suffix(".json")
    page = write_report_files(report, out)
    if args.junit is not None:
        write_junit(results, meta, args.junit)
    if args.store_durations is not None:
        write_durations(args.store_durations, {k: float(r.get("duration") or 0.0)
                                               for k, r in results.items()})
    totals = ", ".join(f"{n} {v}" for v, n in report["totals"].items() if n)
    missing = f"; missing shards {', '.join(meta['missing_shards'])}" if meta[
        "missing_shards"] else ""
    print(f"conformance report of {len(results)} tests from {len(args.results)} files "
          f"({totals}{missing}): {out} and {page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
