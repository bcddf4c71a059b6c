"""The conformance report: HTML structure against the JSON, JUnit XML properties, and the
incremental results a killed run leaves (CONF-60..64)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from conformance import differential
from conformance.report import build_report, load_results, render_html, verdict_of
from tests.suite import suite_runner as runner

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conformance"
EXECUTOR = "tests.suite.report_executors:RoundsAwayRefusesArgmax"
SLICE = ("round-float32-general or round-float16-general or abs-float32-scalar "
         "or argmax-float32-general")


class Page(HTMLParser):
    """What the tests read of a report page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.external: list[str] = []
        self.scripts = 0
        self.chips: dict[str, int] = {}
        self.matrix_rows: list[str] = []
        self.cases: dict[str, dict[str, Any]] = {}
        self.stack: list[tuple[str, dict[str, str]]] = []
        self._case: str | None = None
        self._chip: str | None = None
        self._code: str | None = None
        self._text: list[str] = []
        self.feed(text)

    def _inside(self, tag: str, **attrs: str) -> bool:
        return any(t == tag and all(a.get(k) == v for k, v in attrs.items())
                   for t, a in self.stack)

    def handle_starttag(self, tag: str, attrs_list: list[tuple[str, str | None]]) -> None:
        attrs = {k: v or "" for k, v in attrs_list}
        if tag not in ("meta", "br", "link", "img"):
            self.stack.append((tag, attrs))
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag == "script":
            self.scripts += 1
        for key in ("src", "href"):
            if attrs.get(key) and not attrs[key].startswith("#"):
                self.external.append(attrs[key])
        if tag == "span" and "chip" in attrs.get("class", "") and self._inside(
                "section", id="summary"):
            self._chip = attrs["data-verdict"]
            self._text = []
        if tag == "tr" and self._inside("table", **{"class": "matrix"}) and self._inside(
                "tbody"):
            self.matrix_rows.append(attrs.get("data-op", ""))
        if tag == "details" and "case" in attrs.get("class", ""):
            self._case = attrs["data-test"]
            self.cases[self._case] = {"classes": attrs["class"].split(), "repro": None,
                                      "diagnosis": [], "worst": False}
        if self._case and tag == "code" and "repro" in attrs.get("class", ""):
            self._code = "repro"
            self._text = []
        if self._case and tag == "span" and attrs.get("class") == "diag":
            self._code = "diag"
            self._text = []
        if self._case and tag == "pre" and attrs.get("class") == "worst":
            self.cases[self._case]["worst"] = True

    def handle_endtag(self, tag: str) -> None:
        if self._chip and tag == "span":
            self.chips[self._chip] = int("".join(self._text).split()[-1])
            self._chip = None
        if self._code and self._case and tag in ("code", "span"):
            text = "".join(self._text)
            if self._code == "repro":
                self.cases[self._case]["repro"] = text
            else:
                self.cases[self._case]["diagnosis"].append(text)
            self._code = None
        if tag == "details" and self._case and self._inside("details") and sum(
                t == "details" for t, _ in self.stack) == 1:
            self._case = None
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag:
                break

    def handle_data(self, data: str) -> None:
        self._text.append(data)


def run_suite(tmp_path: Path, k: str, *extra: str) -> int:
    """``conformance/test_ops.py -k k`` in-process on the report test executor."""
    return runner.run_suite(tmp_path, EXECUTOR, ["test_ops.py"], k, *extra).code


@pytest.fixture(scope="module")
def slice_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    tmp = tmp_path_factory.mktemp("report")
    code = run_suite(tmp, SLICE, f"--conformance-report={tmp / 'r.json'}",
                     f"--junitxml={tmp / 'junit.xml'}")
    return tmp, code


@pytest.mark.spec("CONF-60", "CONF-61", "CONF-8")
def test_html_page_matches_the_json(slice_run: tuple[Path, int]) -> None:
    """Required sections, summary counts equal to the JSON, one matrix row per registry op,
    every failure with its repro path and worst elements, nothing external."""
    from interpreter.registry import REGISTRY

    tmp, code = slice_run
    assert code == pytest.ExitCode.TESTS_FAILED
    data = json.loads((tmp / "r.json").read_text())
    page = Page((tmp / "r.html").read_text(encoding="utf-8"))
    for section in ("summary", "failures", "suite-errors", "deviations", "matrix", "refused",
                    "not-covered", "ops", "rules", "stale"):
        assert section in page.ids, f"section {section!r} missing from the page"
    assert not page.external and not page.scripts, page.external
    assert data["totals"]["fail"] == 2 and data["totals"]["refused"] == 1
    assert data["totals"]["pass"] == 1 and data["summary"]["complete"] is True
    expected = {**data["totals"], "not_covered": data["summary"]["not_covered_pairs"],
                "not_run": data["summary"]["not_run_pairs"]}
    assert page.chips == {v: expected[v] for v in page.chips} and len(page.chips) == 9
    assert page.matrix_rows == sorted(REGISTRY)
    assert [o["op"] for o in data["ops"]] == sorted(REGISTRY)
    failing = sorted(k for k, v in data["tests"].items() if v["verdict"] == "fail")
    assert sorted(page.cases) == failing == [f["test"] for f in data["failures"]]
    for f in data["failures"]:
        case = page.cases[f["test"]]
        assert f["repro"].endswith("repro.py") and Path(f["repro"]).is_file(), f
        assert case["repro"] == f"python {f['repro']}", case
        assert case["worst"] and f["worst"], f
    rebuilt = tmp / "rebuilt.html"  # the same from the results file (CONF-63)
    assert subprocess.run([sys.executable, "-m", "conformance.report", str(tmp / "r.jsonl"),
                           "-o", str(rebuilt)], cwd=ROOT, timeout=120).returncode == 0
    again = json.loads(rebuilt.with_suffix(".json").read_text())
    assert again["tests"] == data["tests"] and again["summary"]["complete"] is True
    refused = data["refused"]
    assert [r["test"] for r in refused] == [
        "conformance/test_ops.py::test_op[argmax-float32-general]"]
    assert "argmax is not supported" in refused[0]["message"]
    assert refused[0]["message"].startswith("REFUSED:")


@pytest.mark.spec("CONF-80", "CONF-21")
def test_deselected_pairs_are_not_run_not_uncovered(slice_run: tuple[Path, int]) -> None:
    """A ``-k`` slice leaves most (op, dtype) pairs unrun: they have cells, so the report
    lists them as *not run*, never as *not covered* (no cell can test them)."""
    from conformance.strategies import feasible_cells
    from interpreter.registry import REGISTRY

    tmp, _ = slice_run
    data = json.loads((tmp / "r.json").read_text())
    not_run = {(e["op"], e["dtype"]) for e in data["not_run"]}
    not_covered = {(e["op"], e["dtype"]) for e in data["not_covered"]}
    with_cells = {(name, d.value) for name, op in REGISTRY.items()
                  for d, _ in feasible_cells(op)}
    ran = {("round", "float32"), ("round", "float16"), ("abs", "float32"),
           ("argmax", "float32")}
    assert not_run == with_cells - ran and not not_run & not_covered
    assert ("round", "float64") in not_run and ("add", "int8") in not_run
    assert all(e["reason"] != "no test exercised it in this run" for e in data["not_covered"])
    assert data["summary"]["not_run_pairs"] == len(not_run)
    ops = {o["op"]: o for o in data["ops"]}
    assert ops["round"]["not_run"] == ["bfloat16", "float64"] and not ops["round"]["not_covered"]
    assert ops["add"]["verdict"] == "not_run"
    page = (tmp / "r.html").read_text(encoding="utf-8")
    assert 'title="round float64: not run: this run did not select its cells">n/r</td>' in page


@pytest.mark.spec("CONF-64")
def test_junit_xml_carries_the_verdicts(slice_run: tuple[Path, int]) -> None:
    """pytest's own ``--junitxml``: each testcase has op/dtype/outcome properties; a failure
    has its repro, a refusal is skipped with the REFUSED reason."""
    tmp, _ = slice_run
    cases = {c.get("name"): c for c in ET.parse(tmp / "junit.xml").iter("testcase")}
    assert sorted(cases) == sorted(
        f"test_op[{c}]" for c in ("abs-float32-scalar", "argmax-float32-general",
                                  "round-float16-general", "round-float32-general"))

    def props(name: str) -> dict[str, str]:
        return {p.get("name", ""): p.get("value", "")
                for p in cases[name].iter("property")}

    fail = props("test_op[round-float32-general]")
    assert fail["op"] == "round" and fail["dtype"] == "float32"
    assert fail["shape_class"] == "general" and fail["outcome"] == "fail"
    assert fail["repro"].endswith("repro.py")
    assert cases["test_op[round-float32-general]"].find("failure") is not None
    refused = cases["test_op[argmax-float32-general]"]
    skipped = refused.find("skipped")
    assert skipped is not None and "REFUSED:" in skipped.get("message", "")
    assert props("test_op[argmax-float32-general]")["outcome"] == "refused"
    assert props("test_op[abs-float32-scalar]")["outcome"] == "pass"


@pytest.mark.spec("CONF-110", "CONF-64", "CONF-60")
def test_failures_render_from_their_structured_verdict(slice_run: tuple[Path, int]) -> None:
    """Each failing test recorded one verdict (``failure``: rule ids, findings, repro); the
    JSON, the HTML page, JUnit and the terminal message all show that verdict's rule ids
    and repro."""
    tmp, _ = slice_run
    data = json.loads((tmp / "r.json").read_text())
    page = (tmp / "r.html").read_text(encoding="utf-8")
    cases = {c.get("name"): c for c in ET.parse(tmp / "junit.xml").iter("testcase")}
    assert len(data["failures"]) == 2
    for f in data["failures"]:
        # a value mismatch (TOL-1) that rounding halves away from zero explains (NUM-3)
        assert f["failing_rules"] == ["TOL-1", "NUM-3"], f
        assert f"repro: python {f['repro']}" in f["message"]
        assert "breaks: <b>TOL-1</b>, <b>NUM-3</b>" in page
        props = {p.get("name"): p.get("value")
                 for p in cases[f["test"].split("::")[-1]].iter("property")}
        assert props["failing_rules"] == "TOL-1, NUM-3" and props["repro"] == f["repro"]


@pytest.mark.spec("CONF-110")
def test_a_failure_renders_its_findings_and_rule_ids() -> None:
    from conformance.verdicts import Failure, Finding, rules_in

    assert rules_in("shape [3, 2] -> [2, 3] [EXEC-4, DT-2]; broke reshape.C1 [reshape.C1]"
                    ) == ("EXEC-4", "DT-2", "reshape.C1")
    f = Failure("add: the executor's results differ from the reference",
                [Finding("output 0: 1 of 4 compared elements differ\n  worst: ...", ("TOL-1",)),
                 Finding("first diverging node: #1 mul [NUM-12]")],
                diagnosis="diagnosis:\n  fma: ... [NUM-12]",
                diagnosed=[{"class": "fma", "rule": "NUM-12", "detail": "..."}],
                artifacts=Path("/a/b"), repro=Path("/a/b/repro.py"))
    f.note("\nminimised: 3 -> 2 nodes")
    assert f.render() == (
        "add: the executor's results differ from the reference\n"
        "  output 0: 1 of 4 compared elements differ\n    worst: ...\n"
        "  first diverging node: #1 mul [NUM-12]\n"
        "diagnosis:\n  fma: ... [NUM-12]\n"
        "artifacts: /a/b\nrepro: python /a/b/repro.py\nminimised: 3 -> 2 nodes")
    assert f.rules() == ["TOL-1", "NUM-12"]
    assert f.as_dict() == {"rules": ["TOL-1", "NUM-12"], "artifacts": "/a/b",
                           "repro": "/a/b/repro.py", "findings": [
                               {"rules": ["TOL-1"], "text": f.findings[0].text},
                               {"rules": ["NUM-12"], "text": f.findings[1].text}]}


@pytest.mark.spec("CONF-64", "CONF-22")
def test_junit_xml_suite_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected fault in the suite")

    monkeypatch.setattr(differential, "compare_arrays", boom)
    code = run_suite(tmp_path, "abs-float32-scalar", f"--junitxml={tmp_path / 'j.xml'}")
    assert code == pytest.ExitCode.TESTS_FAILED
    (case,) = ET.parse(tmp_path / "j.xml").iter("testcase")
    failure = case.find("failure")
    assert failure is not None and "SUITE ERROR" in (failure.get("message", "")
                                                     + (failure.text or ""))
    assert {p.get("name"): p.get("value") for p in case.iter("property")}[
        "outcome"] == "suite_error"


def _report(tests: dict[str, dict[str, Any]], meta: dict[str, Any] | None = None
            ) -> dict[str, Any]:
    full = {k: {"op": None, "dtype": None, "shape_class": None, "rules": [], **v}
            for k, v in tests.items()}
    return build_report(full, {"TOL-1": "executor.md", "NUM-12": "numerics.md"}, [],
                        {"executor": "x:Y", "complete": True, **(meta or {})})


@pytest.mark.spec("CONF-60", "CONF-61")
def test_diagnosis_and_deviations_are_shown() -> None:
    """Metadata recorded by the diagnosis (``diagnosis``, ``deviations``) and generation
    (``structures``, ``calls``, ``value_checks``) parts of the suite reach JSON and HTML."""
    message = ("add [float32, general]: the executor's results differ from the reference\n"
               "  output 0: 1 of 4 compared elements differ\n"
               "    worst elements (index: expected -> got, ULP distance):\n"
               "      [2]: 1.4e-45 -> 0.0  (1 ulp)\n"
               "artifacts: /a/b\nrepro: python /a/b/repro.py\n")
    diag = [{"class": "ftz", "rule": "NUM-12", "detail": "subnormal results flushed to 0"}]
    report = _report({
        "t::f": {"verdict": "fail", "op": "add", "dtype": "float32", "shape_class": "general",
                 "diagnosis": diag, "message": message, "repro": "/a/b/repro.py",
                 "structures": 3, "calls": 30, "value_checks": 120},
        "t::d": {"verdict": "deviation", "op": "mul", "dtype": "float32",
                 "shape_class": "scalar", "deviations": ["ftz"], "diagnosis": diag,
                 "structures": 2, "calls": 20, "value_checks": 80},
        "t::p": {"verdict": "pass", "op": "mul", "dtype": "float64", "shape_class": "scalar"},
    })
    s = report["summary"]
    assert (s["fail"], s["deviation"], s["pass"]) == (1, 1, 1)
    assert (s["structures"], s["calls"], s["value_checks"]) == (5, 50, 200)
    assert report["failures"][0]["worst"] == [
        "worst elements (index: expected -> got, ULP distance):", "[2]: 1.4e-45 -> 0.0  (1 ulp)"]
    mul = next(o for o in report["ops"] if o["op"] == "mul")
    assert mul["verdict"] == "deviation" and mul["counts"] == {"deviation": 1, "pass": 1}
    page = Page(render_html(report))
    assert page.cases["t::f"]["diagnosis"] == ["ftz [NUM-12]"]
    assert page.cases["t::f"]["repro"] == "python /a/b/repro.py"
    assert "deviation" in page.cases["t::d"]["classes"]
    assert page.chips["deviation"] == 1 and page.chips["fail"] == 1


@pytest.mark.spec("CONF-60")
def test_verdict_of_deviation_and_not_covered() -> None:
    def rep(outcome: str, props: list[tuple[str, Any]], longrepr: Any = None
            ) -> pytest.TestReport:
        return pytest.TestReport("t::x", ("t", 0, "x"), {}, outcome, longrepr, "call",
                                 user_properties=props)

    assert verdict_of(rep("passed", [("conformance", {"deviations": ["ftz"]})])) == "deviation"
    assert verdict_of(rep("passed", [("conformance", {"deviations": []})])) == "pass"
    assert verdict_of(rep("skipped", [], ("f", 1, "Skipped: NOT COVERED: add [int8]: x"))
                      ) == "not_covered"
    assert verdict_of(rep("skipped", [], ("f", 1, "REFUSED: add [int8]: no"))) == "refused"


def _test_lines(path: Path) -> int:
    if not path.exists():
        return 0
    return sum('"kind": "test"' in line for line in path.read_text().splitlines())


@pytest.mark.spec("CONF-62", "CONF-63")
def test_killed_run_leaves_a_buildable_partial_report(tmp_path: Path) -> None:
    """SIGKILL in the middle of a run (a hanging ``sub``): the ``.jsonl`` results file holds
    the tests that finished, and ``python -m conformance.report`` builds JSON + HTML from it
    that list exactly those and say the run did not finish."""
    jsonl = tmp_path / "r.jsonl"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
           "-W", "ignore", "--hypothesis-profile=ci", str(CONF / "test_ops.py"),
           f"--conformance-artifacts={tmp_path / 'art'}", "-k",
           "abs-float32-scalar or abs-float32-empty or sub-float32-scalar",
           "--executor=tests.suite.broken_executors:HangingExecutor",
           f"--conformance-report={tmp_path / 'r.json'}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while _test_lines(jsonl) < 2 and time.monotonic() < deadline:
            time.sleep(0.3)
        time.sleep(1.0)  # the hanging sub test is running now
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    meta, results = load_results(jsonl)
    assert meta["executor"] == "tests.suite.broken_executors:HangingExecutor"
    assert sorted(results) == [f"conformance/test_ops.py::test_op[abs-float32-{c}]"
                               for c in ("empty", "scalar")], results
    with jsonl.open("a") as f:
        f.write('{"kind": "test", "nodeid": "cut sho')  # a line cut by the kill
    out = tmp_path / "partial" / "report.html"
    p = subprocess.run([sys.executable, "-m", "conformance.report", str(jsonl), "-o",
                        str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    data = json.loads(out.with_suffix(".json").read_text())
    assert sorted(data["tests"]) == sorted(results)
    assert data["summary"]["complete"] is False and data["totals"]["pass"] == 2
    assert data["meta"]["executor"] == "tests.suite.broken_executors:HangingExecutor"
    page = Page(out.read_text(encoding="utf-8"))
    assert "incomplete" in page.ids and page.chips["pass"] == 2


@pytest.mark.spec("CONF-62")
def test_terminated_run_writes_its_report(tmp_path: Path) -> None:
    """SIGTERM (a CI timeout) ends the run like Ctrl-C: the JSON/HTML report of the tests
    that finished is written, marked as not complete."""
    jsonl = tmp_path / "r.jsonl"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
           "-W", "ignore", "--hypothesis-profile=ci", str(CONF / "test_ops.py"),
           f"--conformance-artifacts={tmp_path / 'art'}", "-k",
           "abs-float32-scalar or sub-float32-scalar",
           "--executor=tests.suite.broken_executors:HangingExecutor",
           f"--conformance-report={tmp_path / 'r.json'}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while _test_lines(jsonl) < 1 and time.monotonic() < deadline:
            time.sleep(0.3)
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    data = json.loads((tmp_path / "r.json").read_text())
    assert list(data["tests"]) == ["conformance/test_ops.py::test_op[abs-float32-scalar]"]
    assert data["summary"]["complete"] is False
    assert "incomplete" in Page((tmp_path / "r.html").read_text(encoding="utf-8")).ids
