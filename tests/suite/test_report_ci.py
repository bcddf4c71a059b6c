"""The report where CI reads it: a run through two pytest-xdist gateways (CONF-126) gives a
serial run's verdicts, each failure's first line (CONF-125), the run's metadata
(CONF-122), the header and seed under ``-q`` (CONF-123) and JUnit properties as JSON
(CONF-124)."""

from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conformance.report import load_results
from conformance.report_html import first_line
from tests.suite import suite_runner as runner

ROOT = Path(__file__).resolve().parents[2]
EXECUTOR = "tests.suite.report_executors:RoundsAwayRefusesArgmax"
SLICE = ("round-float32-general or round-float16-general or abs-float32-scalar "
         "or argmax-float32-general")
SEED = 1234
EXPECTED = {"round-float32-general": "fail", "round-float16-general": "fail",
            "abs-float32-scalar": "pass", "argmax-float32-general": "refused"}


@pytest.mark.spec("CONF-125", "CONF-61")
def test_the_first_line_of_a_failure() -> None:
    worker = "[gw0] linux -- Python 3.11.7 /usr/bin/python3\n"
    mismatch = ("round [float32, general]: the executor's results differ from the reference\n"
                "  output 0 (round [float32]): 1 of 2 compared elements differ\n")
    assert first_line(worker + mismatch) == first_line(mismatch) == (
        "output 0 (round [float32]): 1 of 2 compared elements differ")
    traceback = ("    def test_x():\n>       assert f() == 2\nE       assert 1 == 2\n"
                 "E        +  where 1 = f()\n\ntests/x.py:3: AssertionError\n")
    assert first_line(worker + traceback) == "assert 1 == 2"
    assert first_line("SUITE ERROR: boom\nTraceback ...") == "SUITE ERROR: boom"


@pytest.fixture(scope="module")
def gateways(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The slice run through two local ``popen`` gateways under ``-q``, and serially."""
    tmp = tmp_path_factory.mktemp("tx")
    xfails = tmp / "xfails.toml"
    xfails.write_text('[[xfail]]\ntest = "no-such-test*"\nreason = "matches nothing"\n')
    common = [f"--executor={EXECUTOR}", "--hypothesis-profile=ci", f"--hypothesis-seed={SEED}",
              f"--conformance-xfails={xfails}"]
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "conformance/test_ops.py", "-q", "-k", SLICE,
         "-p", "no:cacheprovider", "--dist=load", "--tx", f"popen//python={sys.executable}",
         "--tx", f"popen//python={sys.executable}", f"--conformance-artifacts={tmp / 'art'}",
         f"--conformance-report={tmp / 'r.json'}", f"--junitxml={tmp / 'junit.xml'}",
         *common], cwd=ROOT, capture_output=True, text=True, timeout=600)
    serial = runner.run_suite(tmp / "serial", EXECUTOR, ["test_ops.py"], SLICE, *common[1:],
                              shrink=True)
    return {"tmp": tmp, "proc": p, "serial": serial, "xfails": xfails}


@pytest.mark.spec("CONF-126", "CONF-10")
def test_two_popen_gateways_give_the_serial_verdicts(gateways: dict[str, Any]) -> None:
    p, tmp = gateways["proc"], gateways["tmp"]
    assert p.returncode == pytest.ExitCode.TESTS_FAILED, p.stdout[-3000:] + p.stderr[-2000:]
    verdicts = {k.split("[", 1)[1].rstrip("]"): v["verdict"]
                for k, v in load_results(tmp / "r.jsonl")[1].items()}
    assert verdicts == EXPECTED
    serial = {k.split("[", 1)[1].rstrip("]"): v for k, v in gateways["serial"].outcomes.items()}
    assert serial == {k: {"fail": "failed", "pass": "passed", "refused": "skipped"}[v]
                      for k, v in EXPECTED.items()}
    data = json.loads((tmp / "r.json").read_text())
    assert data["meta"]["tx"] == [f"popen//python={sys.executable}"] * 2


@pytest.mark.spec("CONF-125", "CONF-61")
def test_each_failure_shows_its_first_line_under_xdist(gateways: dict[str, Any]) -> None:
    tmp = gateways["tmp"]
    data = json.loads((tmp / "r.json").read_text())
    assert len(data["failures"]) == 2
    for f in data["failures"]:
        assert f["message"].startswith(f"round [{f['dtype']}, general]: the executor's"), f
    page = (tmp / "r.html").read_text(encoding="utf-8")
    shown = re.findall(r'<details class="message"><summary>message: ([^<]*)</summary>', page)
    pattern = r"output 0 \(round \[(float16|float32)\]\): 1 of \d+ compared elements differ"
    assert sorted(re.match(pattern, x).group(1) for x in shown  # type: ignore[union-attr]
                  ) == ["float16", "float32"], shown
    assert "-- Python" not in "".join(shown)


@pytest.mark.spec("CONF-122")
def test_the_report_says_what_ran(gateways: dict[str, Any]) -> None:
    tmp = gateways["tmp"]
    meta = json.loads((tmp / "r.json").read_text())["meta"]
    assert meta["executor"] == EXECUTOR and meta["executor_version"] is None
    assert meta["suite_version"] == version("eager-conformance")
    assert meta["python"] == platform.python_version() and meta["numpy"] == np.__version__
    assert meta["selection"]["k"] == SLICE and "shard" not in meta["selection"]
    assert meta["expectations"] == str(gateways["xfails"])
    assert str(meta["hypothesis_seed"]) == str(SEED) and meta["profile"] == "ci"
    assert meta["derandomize"] is True
    page = (tmp / "r.html").read_text(encoding="utf-8")
    assert f"eager-conformance {version('eager-conformance')}" in page
    assert f"seed {SEED}" in page and f"numpy {np.__version__}" in page


@pytest.mark.spec("CONF-123")
def test_the_header_and_the_seed_are_printed_under_q(gateways: dict[str, Any]) -> None:
    lines = gateways["proc"].stdout.splitlines()
    assert lines[0].startswith(f"eager-conformance executor: {EXECUTOR} -> "), lines[:5]
    assert f"eager-conformance: hypothesis seed {SEED} (--hypothesis-seed)" in lines[:5]


@pytest.mark.spec("CONF-124", "CONF-64")
def test_junit_properties_are_json(gateways: dict[str, Any]) -> None:
    tmp = gateways["tmp"]
    cases = list(ET.parse(tmp / "junit.xml").iter("testcase"))
    assert len(cases) == 4
    for case in cases:
        props = {q.get("name"): q.get("value") or "" for q in case.iter("property")}
        meta = json.loads(props["conformance"])
        assert isinstance(meta, dict) and meta["op"] == props["op"]
        assert json.loads(props["conformance_spec"]) == ["EXEC-4", "TOL-1", "TOL-2"]
        assert props["outcome"] == EXPECTED[case.get("name", "").split("[")[1].rstrip("]")]
