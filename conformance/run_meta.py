"""What a run was (CONF-122): the metadata of its report, and the header lines a quiet run
still prints (CONF-123).

The report's ``meta`` (the first line of the ``.jsonl``, the JSON's ``meta``, the HTML's
header and *run* section) names the executor and its module's version, the suite's
version, Python and numpy, the selection (``-k``, ``-m``, smoke, shard), the expectations
file and the hypothesis seed and profile: enough to rerun it, and to tell two reports apart.
"""

from __future__ import annotations

import importlib.metadata
import platform
import time
from typing import Any

import numpy as np
import pytest

from .executors import REFERENCE_SPEC, executor_names, module_version
from .version import SPEC_VERSION, __version__

__all__ = ["executor_version", "metadata", "quiet_header", "seed_line", "selection",
           "suite_version"]

#: the distribution of the suite
DISTRIBUTION = "eager-conformance"


def suite_version() -> str | None:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def executor_version(spec: str | None) -> str | None:
    """``__version__`` of the executor's module or its top package (else its distribution's
    version); None when it has none."""
    spec = spec or REFERENCE_SPEC
    if ":" not in spec:
        spec = executor_names().get(spec.strip().lower(), spec)
    version = module_version(spec.partition(":")[0])
    return None if version == "version unknown" else version


def selection(config: pytest.Config) -> dict[str, Any]:
    """How this run selected its tests (only what was given)."""
    got = {"k": config.getoption("keyword", None) or None,
           "m": config.getoption("markexpr", None) or None,
           "smoke": bool(config.getoption("conformance_smoke", False)) or None,
           "ops": config.getoption("conformance_ops", None),
           "shard": config.getoption("conformance_shard", None),
           "durations": config.getoption("conformance_durations", None),
           "args": [str(a) for a in config.args] or None}
    return {k: v for k, v in got.items() if v is not None}


def _seed(config: pytest.Config) -> Any:
    return config.getoption("hypothesis_seed", None)


def metadata(config: pytest.Config, started: float) -> dict[str, Any]:
    """The report's ``meta`` of this run (plain JSON values)."""
    from hypothesis import settings

    spec = config.getoption("executor", None) or REFERENCE_SPEC
    profile = settings.get_current_profile_name()
    return {"executor": spec, "executor_version": executor_version(spec),
            "suite_version": suite_version() or __version__, "spec_version": SPEC_VERSION,
            "python": platform.python_version(), "numpy": np.__version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
            "started": started, "selection": selection(config),
            "expectations": config.getoption("conformance_xfails", None),
            "hypothesis_seed": _seed(config), "profile": profile,
            "derandomize": bool(settings.get_profile(profile).derandomize),
            "workers": getattr(config.option, "numprocesses", None) or 0,
            "tx": getattr(config.option, "tx", None) or None}


def seed_line(config: pytest.Config) -> str:
    """The hypothesis seed of this run, as the header prints it."""
    from hypothesis import settings

    seed = _seed(config)
    if seed is not None:
        return f"eager-conformance: hypothesis seed {seed} (--hypothesis-seed)"
    if settings().derandomize:
        return ("eager-conformance: hypothesis seed: derandomized (each test's seed follows "
                "from its id; profile "
                f"{settings.get_current_profile_name()!r})")
    return ("eager-conformance: hypothesis seed: random (rerun a run with "
            "--hypothesis-seed=N to fix it)")


def quiet_header(config: pytest.Config, lines: list[str]) -> None:
    """Under ``-q`` pytest prints no header: write the suite's own lines anyway
    (the controller only)."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is None or hasattr(config, "workerinput") or tr.verbosity >= 0 or tr.no_header:
        return
    for line in lines:
        tr.write_line(line)
