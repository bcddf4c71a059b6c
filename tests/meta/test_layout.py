"""The tests mirror the packages they test (issue 18): every test module lives in one of seven
folders, each a package, and nothing else sits at the top of ``tests/``.

- ``graph/``: the IR (graph, memo, copy, retarget, structural key, text form, dtypes and
  promotion, validators, fp, the executor-facing graph contract);
- ``ops/``: the registry's op kernels, their accuracy oracle, tolerance bounds and cells;
- ``frontend/``: ``interpreter/experimental`` (tensors, contexts, selection, random);
- ``executors/``: the executor protocol, the reference interpreter executor and the shipped
  executors of ``reference_executors/`` (with their golden C sources under ``golden/``);
- ``suite/``: the conformance suite itself, with the executors it must judge (broken,
  vendor-style, simulated device);
- ``meta/``: lint, layering, the executed spec, REG-1, this layout;
- ``peers/``: the adapters of ``peers/`` that run external engines (marker ``peer``).
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
FOLDERS = ("graph", "ops", "frontend", "executors", "suite", "meta", "peers")


def test_every_test_module_lives_in_one_of_the_seven_folders() -> None:
    misplaced = [str(p.relative_to(TESTS)) for p in sorted(TESTS.rglob("*.py"))
                 if p.parent != TESTS and p.relative_to(TESTS).parts[0] not in FOLDERS]
    top = sorted(p.name for p in TESTS.iterdir()
                 if p.name not in (*FOLDERS, "__init__.py", "conftest.py", "__pycache__"))
    assert misplaced == [] and top == [], f"outside {FOLDERS}: {misplaced + top}"


def test_each_folder_is_a_package() -> None:
    missing = [f for f in FOLDERS if not (TESTS / f / "__init__.py").is_file()]
    assert missing == []
