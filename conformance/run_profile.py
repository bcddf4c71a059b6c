"""Options that change the loaded hypothesis profile for one run: ``--conformance-db``
(CONF-128) and ``--conformance-max-examples`` (CONF-131).

:func:`apply` registers the loaded profile again as a child of itself with these settings
(so ``derandomize`` and the rest stay as the profile says); :func:`restore` puts it back at
the end of the run, so an in-process run leaves its caller's profiles as they were.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import settings

from .example_db import ExampleDatabaseError, open_database

__all__ = ["apply", "describe", "restore"]

_PREVIOUS = pytest.StashKey[tuple[str, settings]]()
_DESCRIBED = pytest.StashKey[list[str]]()


def apply(config: pytest.Config) -> None:
    """Give the loaded profile the run's database and example count, if set."""
    changes: dict[str, Any] = {}
    said: list[str] = []
    where = config.getoption("conformance_db", None)
    if where:
        try:
            changes["database"], text = open_database(str(where))
        except ExampleDatabaseError as e:
            raise pytest.UsageError(str(e)) from None
        said.append(f"example database: {text}")
    count = config.getoption("conformance_max_examples", None)
    if count is not None:
        if count < 1:
            raise pytest.UsageError(f"--conformance-max-examples={count}: expected a "
                                    "positive number of examples per test [CONF-131]")
        changes["max_examples"] = int(count)
        said.append(f"max_examples {count} (--conformance-max-examples)")
    if not changes:
        return
    name = settings.get_current_profile_name()
    previous = settings.get_profile(name)
    config.stash[_PREVIOUS] = (name, previous)
    config.stash[_DESCRIBED] = said
    settings.register_profile(name, settings(previous, **changes))
    settings.load_profile(name)


def restore(config: pytest.Config) -> None:
    """The profile as it was before :func:`apply`."""
    previous = config.stash.get(_PREVIOUS, None)
    if previous is not None:
        name, profile = previous
        settings.register_profile(name, profile)
        if settings.get_current_profile_name() == name:
            settings.load_profile(name)
        del config.stash[_PREVIOUS]


def describe(config: pytest.Config) -> list[str]:
    """What :func:`apply` changed, for the header."""
    said: list[str] = config.stash.get(_DESCRIBED, [])
    return list(said)
