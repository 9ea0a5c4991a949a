"""The PostgreSQL tests' throwaway servers, skipped or failed as the Redis tests' are; and the race.

Under CI the PostgreSQL tests must run; elsewhere a missing server skips them, loudly (the rule
is the Redis tests': ``must_run``). The race claims the same ids from several spawned processes
at once.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager

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


def race(url: str, ids: list[ClaimId], *, now: int, processes: int, seconds: float = 120) -> list[ClaimId]:
    """``tests.support.races.race`` on PostgreSQL: each process begins its guard at once with the
    others, so that on a database with no tables yet every one of them finds none."""
    racer = functools.partial(races.claim_all, functools.partial(PostgresGuard.from_url, url), now)
    return races.race(racer, ids, processes=processes, seconds=seconds)
