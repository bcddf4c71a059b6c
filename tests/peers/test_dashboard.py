"""The peers dashboard (``peers/dashboard.py``): the committed table in ``peers/README.md``
is the one the committed reports give, and the counting is right on a small report set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peers import dashboard

pytestmark = pytest.mark.peer


def test_committed_dashboard_is_current() -> None:
    readme = dashboard.README.read_text()
    assert dashboard.rewrite(readme, dashboard.render(dashboard.load_peers())) == readme
    assert dashboard.main(["--check"]) == 0


def _report(path: Path, tests: dict[str, tuple[str | None, str]]) -> None:
    path.write_text(json.dumps({"tests": {
        name: ({"op": op} if op else {}) | {"verdict": verdict}
        for name, (op, verdict) in tests.items()}}))


def test_families_parts_and_unknown_peers(tmp_path: Path) -> None:
    _report(tmp_path / "max-compiling.json", {
        "a": ("add", "pass"), "b": ("add", "fail"), "c": ("exp", "deviation"),
        "d": ("exp", "refused"), "e": (None, "pass")})
    _report(tmp_path / "max-compiling-2.json", {"f": ("add", "pass"), "g": ("exp", "skip")})
    _report(tmp_path / "max-compiling-old.json", {"h": ("add", "fail")})  # another run
    _report(tmp_path / "tvm.json", {"i": ("matmul", "not_covered"), "j": ("matmul", "pass")})
    peers = dashboard.load_peers(tmp_path)
    assert [(p.name, p.files) for p in peers] == [
        ("MAX 26.7 compiler", ["max-compiling.json", "max-compiling-2.json"]),
        ("tvm", ["tvm.json"])]
    rows = {line.split(" | ")[0].lstrip("| "): line.rstrip(" |").split(" | ")[1:]
            for line in dashboard.render(peers).splitlines() if line.startswith("| ")}
    assert rows["elementwise-binary"] == ["2 / 3 (67%)", "-"]
    assert rows["elementwise-unary"] == ["0 / 1 (0%)", "-"]
    assert rows["linalg"] == ["-", "1 / 1 (100%)"]
    assert rows["graphs/protocol"] == ["1 / 1 (100%)", "-"]
    assert rows["**total**"] == ["**3 / 5 (60%)**", "**1 / 1 (100%)**"]
    assert rows["refused (not judged)"] == ["1", "0"]
    assert rows["not covered (not judged)"] == ["0", "1"]
    assert rows["other: skip, xfail, suite error (not judged)"] == ["1", "0"]


def test_rewrite_replaces_only_between_the_markers() -> None:
    text = f"head\n{dashboard.BEGIN}\nold\n{dashboard.END}\ntail\n"
    assert dashboard.rewrite(text, "new\n") == (
        f"head\n{dashboard.BEGIN}\nnew\n{dashboard.END}\ntail\n")
    with pytest.raises(ValueError, match="markers"):
        dashboard.rewrite("no markers", "x")
