"""The Redis tests' servers: scripts/redis_servers.py's, skipped or failed by pytest's rule, and the races.

Under CI the Redis tests must run; elsewhere a missing redis-server skips them, loudly. The races
claim the same ids from several spawned processes at once.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import TypeVar

import pytest

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

__all__ = [
    "Cluster",
    "Link",
    "Replicated",
    "Server",
    "claim_all",
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


def claim_all(
    url: str, namespace: str, ids: list[str], now: int, start: Barrier, results: Queue[list[str]]
) -> None:
    """The race's worker, run in its own process: claim every id, report the ones this process won."""
    guard = RedisGuard.from_url(url, timeout=5.0, namespace=namespace)
    try:
        guard.begin(now - 60)
        start.wait(timeout=30)
        results.put([token_id for token_id in ids if guard.claim(token_id, now + 300, now)])
    finally:
        guard.close()


def race(url: str, namespace: str, ids: list[str], *, processes: int, seconds: float) -> list[str]:
    """Claim every id from each of ``processes`` spawned processes at once; the ids each won, together.

    ``url`` is a guard URL (``cluster_url`` for a cluster). Half the processes claim in
    reverse order, so that every id is contested from both ends. Fails the test if a
    worker dies or all do not report within ``seconds``.
    """
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(processes)
    results = context.Queue()
    now = 2_000_000_000
    workers = [
        context.Process(
            target=claim_all,
            args=(url, namespace, ids if index % 2 == 0 else ids[::-1], now, start, results),
        )
        for index in range(processes)
    ]
    for worker in workers:
        worker.start()
    won: list[list[str]] = []
    deadline = time.monotonic() + seconds
    try:
        while len(won) < processes and time.monotonic() < deadline:
            try:
                won.append(results.get(timeout=0.2))
            except queue.Empty:
                # A worker that died will never report: fail now, not at the deadline.
                assert all(worker.exitcode in (None, 0) for worker in workers), "a worker process failed"
    finally:
        for worker in workers:
            worker.join(timeout=10)
            if worker.is_alive():
                worker.kill()
    assert len(won) == processes, f"only {len(won)} of {processes} workers reported in {seconds} s"
    assert [worker.exitcode for worker in workers] == [0] * processes
    return [token_id for winner in won for token_id in winner]
