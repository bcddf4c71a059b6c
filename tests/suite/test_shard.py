"""Sharding a run across CI jobs or machines and merging the shards' reports (CONF-120,
CONF-121, CONF-124)."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conformance.report import load_results
from conformance.report_merge import MergeError, merge
from conformance.shard import assign, parse_shard
from tests.suite import suite_runner as runner

ROOT = Path(__file__).resolve().parents[2]
EXECUTOR = "tests.suite.report_executors:RoundsAwayRefusesArgmax"
#: twelve cells: failures (round), refusals (argmax), passes (abs)
K = "test_op and (round-float32 or round-float16-general or abs-float32 or argmax-float32)"
N = 12
SHARDS = 4


@pytest.mark.spec("CONF-120")
def test_shard_syntax() -> None:
    assert parse_shard("2/4") == (2, 4) and parse_shard("1/1") == (1, 1)
    for bad in ("0/4", "5/4", "4", "a/b", "1/0", "-1/2"):
        with pytest.raises(ValueError, match="expected I/N"):
            parse_shard(bad)


@pytest.mark.spec("CONF-120")
def test_the_split_is_a_balanced_function_of_ids_and_durations() -> None:
    ids = [f"t{i}" for i in range(7)]
    # without durations: the sorted ids dealt round-robin, whatever their order
    plain = {"t0": 0, "t1": 1, "t2": 2, "t3": 0, "t4": 1, "t5": 2, "t6": 0}
    assert assign(ids, 3) == assign(list(reversed(ids)), 3) == plain
    # with durations: decreasing cost, each to the least loaded shard (lowest on a tie);
    # t5 and t6 are not listed and cost the mean of the listed ones (2.0)
    durations = {"t0": 6.0, "t1": 1.0, "t2": 1.0, "t3": 1.0, "t4": 1.0}
    # order: t0 6 -> s0; t5 2 -> s1; t6 2 -> s2; t1 1 -> s1 (2 < 6, tie with s2: lower);
    # t2 1 -> s2; t3 1 -> s1 (3 = 3: lower); t4 1 -> s2 -> totals 6, 4, 4
    assert assign(ids, 3, durations) == {"t0": 0, "t5": 1, "t6": 2, "t1": 1, "t2": 2,
                                         "t3": 1, "t4": 2}
    assert assign(ids, 1, durations) == dict.fromkeys(ids, 0)


def _suite(tmp: Path, *extra: str) -> runner.SuiteRun:
    return runner.run_suite(tmp, EXECUTOR, ["test_ops.py"], K,
                            f"--conformance-report={tmp / 'r.json'}", *extra)


def _verdicts(path: Path) -> dict[str, str]:
    return {k: v["verdict"] for k, v in load_results(path)[1].items()}


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The selection run whole (storing its durations), then as four shards balanced by
    them."""
    tmp = tmp_path_factory.mktemp("shards")
    durations = tmp / "durations.json"
    whole = _suite(tmp / "whole", f"--conformance-store-durations={durations}")
    shards = [_suite(tmp / f"s{i}", f"--conformance-shard={i}/{SHARDS}",
                     f"--conformance-durations={durations}") for i in range(1, SHARDS + 1)]
    return {"tmp": tmp, "whole": whole, "shards": shards, "durations": durations}


@pytest.mark.spec("CONF-120", "CONF-121", "CONF-124", "CONF-10")
def test_four_shards_merged_equal_the_unsharded_run(sharded: dict[str, Any]) -> None:
    tmp, whole = sharded["tmp"], sharded["whole"]
    assert len(whole.selected) == N
    stored = json.loads(sharded["durations"].read_text())
    assert sorted(stored) == sorted(whole.selected) and all(v > 0 for v in stored.values())
    parts = [set(s.selected) for s in sharded["shards"]]
    assert all(parts) and sum(map(len, parts)) == N and set().union(*parts) == set(
        whole.selected)  # each test in exactly one shard
    split = assign(stored, SHARDS, stored)  # the shards followed the stored durations
    assert all(split[n] == i for i, part in enumerate(parts) for n in part)
    files = [str(tmp / f"s{i}" / "r.jsonl") for i in range(1, SHARDS + 1)]
    out, junit, costs = tmp / "merged.html", tmp / "merged.xml", tmp / "costs.json"
    costs.write_text('{"conformance/test_ops.py::gone": 3.0}')  # kept by the update
    p = subprocess.run([sys.executable, "-m", "conformance.report", "merge", *files, "-o",
                        str(out), "--junit", str(junit), "--store-durations", str(costs)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    merged = json.loads(out.with_suffix(".json").read_text())
    unsharded = _verdicts(tmp / "whole" / "r.jsonl")
    assert {k: v["verdict"] for k, v in merged["tests"].items()} == unsharded
    assert {"fail", "refused", "pass"} <= set(unsharded.values())
    assert merged["summary"]["complete"] is True and merged["meta"]["missing_shards"] == []
    assert merged["meta"]["selection"]["k"] == K and "shard" not in merged["meta"]["selection"]
    assert sorted(s["shard"] for s in merged["meta"]["shards"]) == [
        f"{i}/{SHARDS}" for i in range(1, SHARDS + 1)]
    whole_report = json.loads((tmp / "whole" / "r.json").read_text())
    assert merged["matrix"] == whole_report["matrix"]
    assert merged["totals"] == whole_report["totals"]
    cases = list(ET.parse(junit).iter("testcase"))
    assert len(cases) == N
    for case in cases:
        props = {q.get("name"): q.get("value") or "" for q in case.iter("property")}
        record = json.loads(props["conformance"])
        nodeid = f"conformance/test_ops.py::{case.get('name')}"
        assert record["verdict"] == props["outcome"] == unsharded[nodeid]
        assert (case.find("failure") is not None) == (unsharded[nodeid] == "fail")
    assert "merged from 4 shards" in out.read_text(encoding="utf-8")
    recorded = {k: round(v["duration"], 4) for f in files
                for k, v in load_results(Path(f))[1].items()}
    assert json.loads(costs.read_text()) == {**recorded, "conformance/test_ops.py::gone": 3.0}


@pytest.mark.spec("CONF-121")
def test_a_missing_shard_leaves_the_merge_incomplete(sharded: dict[str, Any]) -> None:
    tmp = sharded["tmp"]
    loaded = [(p, *load_results(p)) for p in (tmp / f"s{i}" / "r.jsonl" for i in (1, 2, 4))]
    meta, results = merge(loaded)
    assert meta["missing_shards"] == [f"3/{SHARDS}"] and meta["complete"] is False
    assert set(results) == set(sharded["whole"].selected) - set(sharded["shards"][2].selected)
    other = dict(loaded[0][1], executor="somebody.else:Executor")
    with pytest.raises(MergeError, match="different executors"):
        merge([loaded[0], (Path("x.jsonl"), other, {})])


@pytest.mark.spec("CONF-120")
def test_a_bad_shard_or_cost_file_stops_the_run(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "durations.json"
    bad.write_text('{"conformance/test_ops.py::test_op[abs-float32-scalar]": "slow"}')
    half = "--conformance-shard=1/2"
    for options, said in (((f"--conformance-shard={SHARDS + 1}/{SHARDS}",), "expected I/N"),
                          ((half, f"--conformance-durations={bad}"), "node id -> seconds"),
                          ((half, f"--conformance-durations={tmp_path / 'no.json'}"),
                           "no.json")):
        run = runner.run_suite(tmp_path, EXECUTOR, ["test_ops.py"], "abs-float32-scalar",
                               *options)
        assert run.code == pytest.ExitCode.USAGE_ERROR and not run.outcomes, options
        assert said in capsys.readouterr().err, options
