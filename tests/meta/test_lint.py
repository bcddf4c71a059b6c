"""ruff and mypy are part of the test suite (CONTRIBUTING.md, "Checks": lint and type clean)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str) -> list[str]:
    exe = Path(sys.executable).with_name(name)
    if exe.exists():
        return [str(exe)]
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; install with pip install -e '.[test]'")
    return [found]


def test_ruff_clean() -> None:
    proc = subprocess.run([*_tool("ruff"), "check", "--no-cache", "."], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_clean() -> None:
    proc = subprocess.run([*_tool("mypy"), "--no-incremental", "--cache-dir=/dev/null"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_merge_conflict_markers() -> None:
    """A merge left ``<<<<<<<``/``>>>>>>>`` lines in spec/conformance.md once, and every
    other check passed; no tracked text file may contain one again."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if files.returncode != 0:
        pytest.skip("not a git checkout")
    markers = ("<" * 7 + " ", ">" * 7 + " ")
    found = []
    for name in files.stdout.splitlines():
        path = ROOT / name
        if path.suffix not in {".py", ".md", ".toml", ".txt", ".cfg", ".sh", ".cu"}:
            continue
        for no, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if line.startswith(markers):
                found.append(f"{name}:{no}: {line[:40]}")
    assert not found, "merge-conflict markers:\n" + "\n".join(found)
