"""The run's shared hypothesis example database (``--conformance-db``, CONF-128).

``--conformance-db=DIR`` or ``--conformance-db=redis://host:port/N`` makes every hypothesis
profile of the run (``ci`` included, which keeps no database by default; applied by
``run_profile.apply``) save each failing example to that database and replay what it
holds first (hypothesis' *reuse* phase). A database shared by CI hosts makes a failure
found on one replayed first on all the others.
The database classes are hypothesis' own: ``DirectoryBasedExampleDatabase`` and
``hypothesis.extra.redis.RedisExampleDatabase`` (which needs the ``redis`` package, part of
the ``test`` extra). Examples are keyed by test id (``Harness.run``), so hosts with
different checkout paths share them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

__all__ = ["ExampleDatabaseError", "open_database"]

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
