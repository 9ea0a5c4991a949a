"""The PostgreSQL tests' throwaway servers, skipped or failed as the Redis tests' are; and the race.

Under CI the PostgreSQL tests must run; elsewhere a missing server skips them, loudly (the rule
is the Redis tests': ``must_run``). The race claims the same ids from several spawned processes
at once.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

import pytest

from requeststate import ClaimId
from requeststate.postgres import PostgresGuard
from scripts.postgres_servers import PASSWORD_ROLE, PostgresUnavailable, Server, Servers, postgres_servers
from tests.support import races
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


def claim_all(
    url: str, now: int, ids: list[ClaimId], start: Barrier, results: Queue[list[ClaimId] | str]
) -> None:
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


def race(url: str, ids: list[ClaimId], *, now: int, processes: int, seconds: float = 120) -> list[ClaimId]:
    """``tests.support.races.race`` on PostgreSQL: each process begins its guard at once with the
    others, so that on a database with no tables yet every one of them finds none."""
    return races.race(functools.partial(claim_all, url, now), ids, processes=processes, seconds=seconds)
