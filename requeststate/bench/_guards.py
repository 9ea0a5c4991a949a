"""The guards ``--guard URL`` names: built from the URL, begun, and what they wrote deleted after.

A ``--guard`` is a ``REQUESTSTATE_GUARD`` URL (``requeststate.guard_from_url``):
``memory``, ``redis://``/``rediss://``, ``redis+cluster://`` (a node of a Redis
Cluster) and ``sqlite:////absolute/path.db``, with ``?namespace=NAME``.

The user's store may be a live one: each Redis or SQLite guard claims only
under a namespace of the run's own (``requeststate-bench-`` and random hex),
never the one a server's guards use; the run deletes every Redis key of it
when it ends (an SQLite file keeps its rows: name a scratch file). A store's
integration is imported only for its URL: the redis extra is optional.
"""

from __future__ import annotations

import inspect
import itertools
import os
import sys
import time
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final

import requeststate as rs

from ._options import MEMORY_URL, ConfigError

__all__ = [
    "CLUSTER_SCHEME",
    "NAMESPACE_PREFIX",
    "NEEDS_EXTRA",
    "BenchGuard",
    "bench_guard",
    "claim_keys",
    "guard_from_url",
    "shown_url",
]

CLUSTER_SCHEME: Final = "redis+cluster"
_REDIS_SCHEMES: Final = frozenset({"redis", "rediss", "unix", CLUSTER_SCHEME})
NAMESPACE_PREFIX: Final = "requeststate-bench-"
NEEDS_EXTRA: Final = "a Redis --guard needs the redis extra: pip install 'requeststate[redis]'"
_CLUSTER_SCHEMES: Final = (f"{CLUSTER_SCHEME}:", "rediss+cluster:")


def shown_url(url: str) -> str:
    """``url`` without its user, password and query (a password may be there), for reports and errors."""
    netloc = urllib.parse.urlsplit(url).netloc
    address = netloc.rpartition("@")[2]
    # Cut, not rebuilt: urlunsplit would drop the empty authority of sqlite:////path.
    return url.partition("?")[0].partition("#")[0].replace(netloc, address, 1)


def guard_from_url(url: str, *, asyncio: bool = False) -> rs.Guard | rs.AsyncGuard:
    """The guard ``url`` names (``requeststate.guard_from_url``), sync, or its asyncio twin.

    Raises:
        ConfigError: a URL no guard takes (its words, which name ``REQUESTSTATE_GUARD``), or
            the store's extra missing.
    """
    try:
        return rs.guard_from_url(url, asyncio=asyncio)
    except ValueError as refused:
        raise ConfigError(f"--guard {shown_url(url)}: {refused}") from None
    except ImportError:
        raise ConfigError(NEEDS_EXTRA) from None


def claim_keys(namespace: str, buckets: int) -> set[str]:
    """Every key a Redis guard of ``buckets`` buckets writes under ``namespace``: its claims' sorted sets.

    Found through ``claim_location`` (each bucket's marker lives in its set), so
    that the run deletes what the guard wrote without scanning the user's Redis.
    """
    from requeststate.redis import claim_location

    keys: set[str] = set()
    ids = itertools.count()
    while len(keys) < buckets:
        keys.add(claim_location(namespace, str(next(ids)), buckets).key)
    return keys


@dataclass(frozen=True)
class BenchGuard:
    """A begun guard of one ``--guard`` URL, sync or asyncio, and the first unix second it accepts."""

    url: str
    """The URL as given: ``shown_url`` prints it."""
    guard: rs.Guard | rs.AsyncGuard
    first_second: int

    @property
    def kind(self) -> str:
        """The guard's class: ``MemoryGuard``, ``RedisGuard``, ``AsyncRedisGuard``."""
        return type(self.guard).__name__


@asynccontextmanager
async def bench_guard(url: str, *, asyncio: bool) -> AsyncIterator[BenchGuard]:
    """The guard ``url`` names, on a namespace of the run's own, begun; closed, and its keys deleted, after.

    A sync guard is built, begun and closed from the event loop too: its calls
    block the loop, and no task runs meanwhile.

    Raises:
        ConfigError: the URL cannot be used, the extra is missing, or the store
            did not answer.
    """
    shown = shown_url(url)
    namespace = f"{NAMESPACE_PREFIX}{os.urandom(8).hex()}"
    shared = url != MEMORY_URL
    is_redis = url.startswith(("redis", "rediss"))
    try:
        guard = guard_from_url(_with_namespace(url, namespace) if shared else url, asyncio=asyncio)
    except ConfigError:
        raise
    except Exception as error:  # redis-py's errors, and ValueError for a URL it cannot read
        raise ConfigError(f"--guard {shown}: {type(error).__name__}: {error}") from None
    cluster = url.startswith(_CLUSTER_SCHEMES)
    try:
        first_second = await _begin(guard)
    except rs.GuardUnavailable as error:
        try:
            if is_redis:  # the masters that answered may hold a marker
                await _delete(guard, namespace, cluster, warn=False)
        finally:
            await _close(guard)
        cause = "" if error.__cause__ is None else f": {error.__cause__}"
        raise ConfigError(f"--guard {shown}: {error}{cause}") from None
    try:
        yield BenchGuard(url, guard, first_second)
    finally:
        try:
            if is_redis:
                await _delete(guard, namespace, cluster, warn=True)
        finally:
            await _close(guard)


def _with_namespace(url: str, namespace: str) -> str:
    # Cut, not rebuilt: urlunsplit would make sqlite:////path a relative sqlite://path.
    base, _, query = url.partition("?")
    kept = [(name, value) for name, value in urllib.parse.parse_qsl(query) if name != "namespace"]
    return f"{base}?{urllib.parse.urlencode([*kept, ('namespace', namespace)])}"


async def _begin(guard: object) -> int:
    # Every guard of the package has begin(); a user's own may not, and accepts every token
    # minted from now on.
    begin = getattr(guard, "begin", None)
    if begin is None:
        return int(time.time())
    begun = begin()
    first_second: int = await begun if inspect.isawaitable(begun) else begun
    return first_second


async def _close(guard: object) -> None:
    close = getattr(guard, "aclose", None) or getattr(guard, "close", None)
    if close is not None:
        closed = close()
        if inspect.isawaitable(closed):
            await closed


async def _delete(guard: object, namespace: str, cluster: bool, *, warn: bool) -> None:
    import redis.exceptions

    from requeststate.redis import CLUSTER_BUCKETS, AsyncRedisGuard, RedisGuard

    if not isinstance(guard, RedisGuard | AsyncRedisGuard):
        raise TypeError(f"no Redis guard: {guard!r}")
    try:
        # One DEL a key, sent as a plain command: the cluster client's delete() goes through its
        # pipeline(), which warns on redis-py 6.0 (its own deprecated argument).
        for key in claim_keys(namespace, CLUSTER_BUCKETS if cluster else 1):
            deleted = guard.client.execute_command("DEL", key)
            if inspect.isawaitable(deleted):
                await deleted
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as error:
        if warn:
            print(
                f"warning: the bench's keys under {namespace}:* were not deleted ({type(error).__name__})",
                file=sys.stderr,
            )
