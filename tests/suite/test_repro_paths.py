"""``repro.py`` replays a vendor module imported from anywhere, without PYTHONPATH, and
prints the diagnosis (CONF-135)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.suite.suite_runner import run_suite

_VENDOR = '''\
"""A vendor executor whose sigmoid overflows (exp(x) / (1 + exp(x)))."""
from tests.suite.broken_executors import OverflowingSigmoid as VendorExecutor
'''


@pytest.mark.spec("CONF-135", "CONF-11", "CONF-40")
def test_repro_imports_the_vendor_module_from_where_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vendor = tmp_path / "vendor_pkg"
    (vendor / "acme_exec").mkdir(parents=True)
    (vendor / "acme_exec" / "__init__.py").write_text("")
    (vendor / "acme_exec" / "backend.py").write_text(_VENDOR)
    monkeypatch.syspath_prepend(str(vendor))  # as the vendor's PYTHONPATH would
    run = run_suite(tmp_path / "run", "acme_exec.backend:VendorExecutor", ["test_ops.py"],
                    None, "--conformance-ops=sigmoid", "-k", "float32-general")
    assert run.failed(), run.outcomes
    assert run.artifacts is not None
    (repro,) = [p for p in run.artifacts.rglob("repro.py") if p.parent.parent == run.artifacts]
    assert repr(str(vendor)) in repro.read_text()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p = subprocess.run([sys.executable, str(repro)], cwd=elsewhere, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout.startswith("FAIL:") and "diagnosis:" in p.stdout, p.stdout
