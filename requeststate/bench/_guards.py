"""The ``RedisGuard`` that ``--redis`` measures: on a namespace of its own, begun, and its keys deleted after.

The user's Redis may be a live one: the guard writes only under a random
namespace (``requeststate-bench-<hex>``), never under the namespace a server's
guards use, and the run deletes every key of that namespace when it ends.
``requeststate.redis`` is imported only here, when ``--redis`` is given: the
redis extra is optional.
"""

from __future__ import annotations

import itertools
import os
import sys
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import requeststate as rs

from ._options import ConfigError

if TYPE_CHECKING:
    from requeststate.redis import RedisGuard

__all__ = ["NAMESPACE_PREFIX", "NEEDS_EXTRA", "BenchRedis", "bench_redis", "claim_keys", "shown_url"]

NAMESPACE_PREFIX: Final = "requeststate-bench-"
NEEDS_EXTRA: Final = "--redis needs the redis extra: pip install 'requeststate[redis]'"


@dataclass(frozen=True)
class BenchRedis:
    """A begun guard on the user's Redis, and the first unix second whose tokens it accepts."""

    guard: RedisGuard
    first_second: int


def shown_url(url: str) -> str:
    """``url`` without its user, password and query (a password may be there), for reports and errors."""
    netloc = urllib.parse.urlsplit(url).netloc
    address = netloc.rpartition("@")[2]
    # Cut, not rebuilt: urlunsplit would drop the empty authority of unix:///path.
    return url.partition("?")[0].partition("#")[0].replace(netloc, address, 1)


def claim_keys(namespace: str, buckets: int) -> set[str]:
    """Every key a guard of ``buckets`` buckets writes under ``namespace``: the sorted sets of its claims.

    Found through ``claim_location`` (each bucket's marker lives in its set), so
    that the run deletes what the guard wrote without scanning the user's Redis.
    """
    from requeststate.redis import claim_location

    keys: set[str] = set()
    ids = itertools.count()
    while len(keys) < buckets:
        keys.add(claim_location(namespace, str(next(ids)), buckets).key)
    return keys


@contextmanager
def bench_redis(url: str, *, cluster: bool) -> Iterator[BenchRedis]:
    """A ``RedisGuard`` on ``url`` (``from_url``'s defaults), begun; its keys deleted on the way out.

    Raises:
        ConfigError: the redis extra is missing, the URL cannot be used, or Redis
            did not answer (or may evict claims).
    """
    try:
        import redis.exceptions

        from requeststate.redis import CLUSTER_BUCKETS, RedisGuard
    except ImportError:
        raise ConfigError(NEEDS_EXTRA) from None
    shown = shown_url(url)
    namespace = f"{NAMESPACE_PREFIX}{os.urandom(8).hex()}"
    try:
        guard = RedisGuard.from_url(url, cluster=cluster, namespace=namespace)
    except (ValueError, redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as error:
        # A cluster client connects at once; a URL redis-py cannot read raises ValueError.
        raise ConfigError(f"--redis {shown}: {error}") from None
    keys = claim_keys(namespace, CLUSTER_BUCKETS if cluster else 1)
    try:
        try:
            first_second = guard.begin()
        except rs.GuardUnavailable as error:
            _delete(guard, namespace, keys, warn=False)  # the masters that answered may hold a marker
            cause = "" if error.__cause__ is None else f": {error.__cause__}"
            raise ConfigError(f"--redis {shown}: {error}{cause}") from None
        try:
            yield BenchRedis(guard, first_second)
        finally:
            _delete(guard, namespace, keys, warn=True)
    finally:
        guard.close()


def _delete(guard: RedisGuard, namespace: str, keys: set[str], *, warn: bool) -> None:
    import redis.exceptions

    try:
        # One DEL a key, sent as a plain command: the cluster client's delete() goes through its
        # pipeline(), which warns on redis-py 6.0 (its own deprecated argument).
        for key in keys:
            guard.client.execute_command("DEL", key)  # type: ignore[no-untyped-call]  # untyped in redis-py
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as error:
        if warn:
            print(
                f"warning: the bench's keys under {namespace}:* were not deleted ({type(error).__name__})",
                file=sys.stderr,
            )
