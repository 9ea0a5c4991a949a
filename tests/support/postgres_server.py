"""The PostgreSQL tests' throwaway servers, skipped or failed as the Redis tests' are; and the race.

Under CI the PostgreSQL tests must run; elsewhere a missing server skips them, loudly (the rule
is the Redis tests': ``must_run``). The race claims the same ids from several spawned processes
at once.
"""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

import pytest

from requeststate.postgres import PostgresGuard
from scripts.postgres_servers import PASSWORD_ROLE, PostgresUnavailable, Server, Servers, postgres_servers
from tests.support.redis_server import must_run

__all__ = ["PASSWORD_ROLE", "Server", "Servers", "race", "servers_or_skip"]


@contextmanager
def servers_or_skip() -> Iterator[Servers]:
    """``postgres_servers()``; skip the test if PostgreSQL is missing, or fail it under CI (it must run)."""
    try:
        with postgres_servers() as servers:
            yield servers
    except PostgresUnavailable as error:
        if must_run():
            pytest.fail(f"the PostgreSQL tests must run under CI: {error}", pytrace=False)
        pytest.skip(str(error))


def claim_all(url: str, ids: list[str], now: int, start: Barrier, results: Queue[list[str] | str]) -> None:
    """The race's worker, run in its own process: claim every id, report the ones this process won."""
    guard = PostgresGuard.from_url(url)
    try:
        start.wait(timeout=60)
        guard.begin(now - 60)  # at once in every process: the first may find no table
        start.wait(timeout=60)
        results.put([token_id for token_id in ids if guard.claim(token_id, now + 300, now)])
    except Exception as error:  # reported, so that the test names it
        results.put(f"{type(error).__name__}: {error}")
    finally:
        guard.close()


def race(url: str, ids: list[str], *, now: int, processes: int, seconds: float = 120) -> list[str]:
    """Claim every id from each of ``processes`` spawned processes at once; the ids each won, together.

    Half the processes claim in reverse order, so that every id is contested from both ends.
    Each process begins its guard at once with the others: on a database with no tables yet,
    every one of them finds none.
    """
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(processes)
    results: Queue[list[str] | str] = context.Queue()
    workers = [
        context.Process(
            target=claim_all, args=(url, ids if index % 2 == 0 else ids[::-1], now, start, results)
        )
        for index in range(processes)
    ]
    for worker in workers:
        worker.start()
    won: list[list[str] | str] = []
    deadline = time.monotonic() + seconds
    try:
        while len(won) < processes and time.monotonic() < deadline:
            try:
                won.append(results.get(timeout=0.2))
            except queue.Empty:
                assert all(worker.exitcode in (None, 0) for worker in workers), "a worker process failed"
    finally:
        for worker in workers:
            worker.join(timeout=10)
            if worker.is_alive():
                worker.kill()
    assert len(won) == processes, f"only {len(won)} of {processes} workers reported in {seconds} s"
    errors = [report for report in won if isinstance(report, str)]
    assert errors == [], errors
    return [token_id for winner in won if isinstance(winner, list) for token_id in winner]
