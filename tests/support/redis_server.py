"""The Redis tests' servers: scripts/redis_servers.py's, skipped or failed by pytest's rule, and the races.

Under CI the Redis tests must run; elsewhere a missing redis-server skips them, loudly. The races
claim the same ids from several spawned processes at once.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TypeVar

import pytest

from requeststate import ClaimId
from requeststate.redis import RedisGuard
from scripts.redis_servers import (
    Cluster,
    Link,
    RedisUnavailable,
    Replicated,
    Server,
    free_loopback_port,
    loading_redis,
    promote,
    running_cluster,
    running_replicated,
    running_server,
    system_packages_skipped,
    wait_for_sync,
    wait_until,
)
from tests.support import races

__all__ = [
    "Cluster",
    "Link",
    "Replicated",
    "Server",
    "cluster_url",
    "free_loopback_port",
    "loading_redis",
    "must_run",
    "or_skip",
    "promote",
    "race",
    "running_cluster",
    "running_replicated",
    "running_server",
    "wait_for_sync",
    "wait_until",
]

T = TypeVar("T")


def must_run() -> bool:
    """Under CI the Redis tests must run, unless NO_SYSTEM_PACKAGES=1 turned their server's install off."""
    return os.environ.get("CI", "").lower() in {"true", "1", "yes"} and not system_packages_skipped()


@contextmanager
def or_skip(servers: AbstractContextManager[T]) -> Iterator[T]:
    """Enter ``servers``; skip the test if Redis is missing, or fail it under CI, where it must run."""
    try:
        with servers as running:
            yield running
    except RedisUnavailable as error:
        if must_run():
            pytest.fail(f"the Redis tests must run under CI: {error}", pytrace=False)
        pytest.skip(str(error))


def cluster_url(cluster: Cluster | Server) -> str:
    """The guard URL of a cluster, from the address of any of its nodes: the ``redis+cluster`` scheme."""
    return cluster.url.replace("redis://", "redis+cluster://", 1)


RACE_NOW = 2_000_000_000
"""When a Redis race's tokens were minted and are claimed."""


def race(url: str, namespace: str, ids: list[ClaimId], *, processes: int, seconds: float) -> list[ClaimId]:
    """``tests.support.races.race`` on Redis: ``url`` is a guard URL (``cluster_url`` for a cluster)."""
    open_guard = functools.partial(RedisGuard.from_url, url, timeout=5.0, namespace=namespace)
    racer = functools.partial(races.claim_all, open_guard, RACE_NOW)
    return races.race(racer, ids, processes=processes, seconds=seconds)
