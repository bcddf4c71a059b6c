"""The run's shared hypothesis example database (``--conformance-db``, CONF-128).

``--conformance-db=DIR`` or ``--conformance-db=redis://host:port/N`` makes every hypothesis
profile of the run (``ci`` included, which keeps no database by default) save each failing
example to that database and replay what it holds first (hypothesis' *reuse* phase). A
database shared by CI hosts makes a failure found on one replayed first on all the others.
The database classes are hypothesis' own: ``DirectoryBasedExampleDatabase`` and
``hypothesis.extra.redis.RedisExampleDatabase`` (which needs the ``redis`` package, part of
the ``test`` extra). Examples are keyed by test id (``Harness.run``), so hosts with
different checkout paths share them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

__all__ = ["apply", "describe", "open_database", "restore"]

_PREVIOUS = pytest.StashKey[tuple[str, settings]]()
_DESCRIBED = pytest.StashKey[str]()


class ExampleDatabaseError(ValueError):
    """``--conformance-db`` names a database that cannot be opened."""


def open_database(where: str) -> tuple[ExampleDatabase, str]:
    """The database ``where`` names and a description of it for the header: a
    ``redis://`` / ``rediss://`` URL (a server that answers ``PING``) or a directory
    (created if missing)."""
    scheme = urlparse(where).scheme
    if scheme in ("redis", "rediss", "unix"):
        return _redis(where), f"redis {where}"
    if "://" in where:
        raise ExampleDatabaseError(f"--conformance-db={where}: unknown scheme {scheme!r} "
                                   "(a directory or a redis://host:port/N URL) [CONF-128]")
    path = Path(where).expanduser().resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ExampleDatabaseError(f"--conformance-db={where}: cannot create the "
                                   f"directory: {e} [CONF-128]") from None
    return DirectoryBasedExampleDatabase(str(path)), f"directory {path}"


def _redis(url: str) -> ExampleDatabase:
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError as e:
        raise ExampleDatabaseError(
            f"--conformance-db={url} needs the 'redis' package ({e}); install it with "
            "pip install redis, or the suite's test extra [CONF-128]") from None
    client: Any = redis.Redis.from_url(url, socket_connect_timeout=5)
    try:
        client.ping()
    except redis.RedisError as e:
        raise ExampleDatabaseError(f"--conformance-db={url}: the Redis server does not "
                                   f"answer: {e} [CONF-128]") from None
    return RedisExampleDatabase(client)


def apply(config: pytest.Config) -> None:
    """Give the loaded hypothesis profile the database of ``--conformance-db`` (if set);
    :func:`restore` puts the profile back at the end of the run."""
    where = config.getoption("conformance_db", None)
    if not where:
        return
    try:
        db, text = open_database(str(where))
    except ExampleDatabaseError as e:
        raise pytest.UsageError(str(e)) from None
    name = settings.get_current_profile_name()
    previous = settings.get_profile(name)
    config.stash[_PREVIOUS] = (name, previous)
    config.stash[_DESCRIBED] = text
    # a child of the profile: ``derandomize`` stays as the profile has it (the database is
    # replayed first, then the same derandomized search runs)
    settings.register_profile(name, settings(previous, database=db))
    settings.load_profile(name)


def restore(config: pytest.Config) -> None:
    """The profile as it was before :func:`apply` (an in-process run leaves no database)."""
    previous = config.stash.get(_PREVIOUS, None)
    if previous is not None:
        name, profile = previous
        settings.register_profile(name, profile)
        if settings.get_current_profile_name() == name:
            settings.load_profile(name)
        del config.stash[_PREVIOUS]


def describe(config: pytest.Config) -> str | None:
    """The database of this run, for the header; ``None`` without ``--conformance-db``."""
    return config.stash.get(_DESCRIBED, None)
