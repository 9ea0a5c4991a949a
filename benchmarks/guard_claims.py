"""Claims under load on Redis: the package's ``requeststate.bench.measure_guard``, on setups started here.

``requeststate bench --guard URL`` measures claims of fresh tokens through a
guard URL, sync (``Codec.decode`` from threads) and async (``await
Codec.adecode`` from tasks), at each concurrency. The benchmark runs the same
measurement on two setups that scripts/redis_servers.py starts on loopback: one
redis-server, and a Redis Cluster of three masters. Each row gives claims per
second (claims over the wall time of all of them) and the p50 and p99 of single
claims' latencies.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Final

import requeststate as rs
from requeststate.bench import ASYNC, SYNC, measure_guard
from scripts import redis_servers

from .cases import make_state

__all__ = ["CLAIM_CONCURRENCY", "CLAIM_SETUPS", "CLUSTER", "STANDALONE", "ClaimRow", "measure_claims"]

STANDALONE: Final = "standalone"
CLUSTER: Final = "cluster, 3 masters"
CLAIM_SETUPS: Final = (STANDALONE, CLUSTER)
CLAIM_CONCURRENCY: Final = (1, 16)
"""The threads (sync) and tasks (async) each setup is measured at."""
_RATE_HINT: Final = 5_000.0
"""Claims per second to mint tokens for at the first level: above what one loopback Redis answers."""


@dataclass(frozen=True)
class ClaimRow:
    """Claims of fresh tokens on one Redis setup, on one path and concurrency, or why not measured."""

    setup: str
    path: str
    """``sync`` (threads) or ``async`` (tasks)."""
    concurrency: int = 0
    claims: int = 0
    per_second: float | None = None
    p50_us: float | None = None
    p99_us: float | None = None
    unavailable: str | None = None


def _setups() -> dict[str, Callable[[], AbstractContextManager[str]]]:
    # Each setup: a context that starts its servers and yields the guard URL for them.
    @contextmanager
    def standalone() -> Iterator[str]:
        with redis_servers.running_server() as server:
            yield f"{server.url}?timeout=2"

    @contextmanager
    def cluster() -> Iterator[str]:
        with redis_servers.running_cluster(masters=3) as running:
            yield f"{running.url.replace('redis://', 'redis+cluster://')}?timeout=2"

    return {STANDALONE: standalone, CLUSTER: cluster}


def measure_claims(
    level_seconds: float, *, progress: Callable[[str], None] = lambda line: None
) -> list[ClaimRow]:
    """Claims on each setup of ``CLAIM_SETUPS``, sync and async, for ``level_seconds`` a level.

    A setup that cannot start (no redis-server or redis-cli, a failing server)
    never raises: its rows say why they were not measured.
    """
    minting = rs.Codec(rs.KeyRing(os.urandom(32)), mode="encrypted")
    state = make_state(64)
    rows: list[ClaimRow] = []
    for setup, start in _setups().items():
        progress(f"replay guards: claims, sync and async, on {setup}")
        try:
            with start() as url:
                measured = [
                    asyncio.run(
                        measure_guard(url, path, state, minting, level_seconds, _RATE_HINT, CLAIM_CONCURRENCY)
                    )
                    for path in (SYNC, ASYNC)
                ]
            rows += [
                ClaimRow(
                    setup,
                    guard.path,
                    level.concurrency,
                    level.claims,
                    level.claims_per_second,
                    level.p50_us,
                    level.p99_us,
                )
                for guard in measured
                for level in guard.levels
            ]
        except Exception as error:
            # A setup that failed is reported, never fatal, like the Redis rows of the guard cost.
            why = f"{type(error).__name__}: {error}"
            progress(f"replay guards: {setup} not available: {why}")
            rows += [ClaimRow(setup, path, unavailable=why) for path in (SYNC, ASYNC)]
    return rows
