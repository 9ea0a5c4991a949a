"""The replay guards' figures of one run: added cost per call, a ``MemoryGuard``'s memory, claims under load.

- the added cost per call (``guard_cost``): ``decode`` of fresh tokens with no
  guard, a ``MemoryGuard`` and Redis, sync and async;
- memory per held id: ``tracemalloc`` of what a ``MemoryGuard`` keeps after
  ``decode`` claimed N fresh tokens (the tokens themselves were allocated before
  tracing): its dict entry, heap entry and the 32-character id string it keeps alive;
- claims under load on Redis (``guard_claims``), through the package's harness.

Redis is a throwaway ``redis-server`` on a free loopback port (no persistence),
started and stopped by scripts/redis_servers.py, as for the tests; with no
``redis-server`` on ``PATH``, or one that does not start, the Redis rows say
why they were not measured.
"""

from __future__ import annotations

import gc
import os
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

import redis

import requeststate as rs
from scripts import redis_servers
from scripts.redis_servers import RedisUnavailable

from .cases import SUBJECT, TOOL, TTL, make_state
from .guard_claims import ClaimRow, measure_claims
from .guard_cost import (
    MEMORY,
    NONE,
    REDIS,
    GuardRow,
    Minted,
    measure_async_group,
    measure_sync_group,
    memory_guard,
    redis_guards,
    unavailable_rows,
    wait_until,
)

__all__ = [
    "GUARD_MODES",
    "STATE_SIZE",
    "GuardMemory",
    "GuardResults",
    "measure_guard_memory",
    "measure_guards",
]

GUARD_MODES: Final[tuple[rs.ModeName, ...]] = ("encrypted", "signed")
STATE_SIZE: Final = 64


@dataclass(frozen=True)
class GuardMemory:
    """What a ``MemoryGuard`` keeps for ``ids`` ids claimed by ``decode``."""

    ids: int
    retained_bytes: int

    @property
    def bytes_per_id(self) -> float:
        """Traced bytes the guard keeps per held id."""
        return self.retained_bytes / self.ids


@dataclass
class GuardResults:
    """The guard measurements of one run."""

    seconds: float
    """The budget of each group of cases (``requeststate.bench.measure``)."""
    redis: str
    """The ``redis-server`` and redis-py measured, or ``not available: <why>``."""
    rows: list[GuardRow] = field(default_factory=list)
    memory: GuardMemory | None = None
    claims: list[ClaimRow] = field(default_factory=list)
    """Claims under load per Redis setup; empty when not measured."""

    def row(self, mode: rs.ModeName, path: str, guard: str) -> GuardRow | None:
        """The row of one guard, if there is one."""
        for row in self.rows:
            if (row.mode, row.path, row.guard) == (mode, path, guard):
                return row
        return None


def measure_guard_memory(ids: int, ring: rs.KeyRing | None = None) -> GuardMemory:
    """Traced bytes a ``MemoryGuard`` keeps after ``decode`` claimed ``ids`` fresh encrypted tokens."""
    ring = ring or rs.KeyRing(os.urandom(32))
    state = make_state(STATE_SIZE)
    tokens = [
        rs.encode(state, ring, mode="encrypted", subject=SUBJECT, tool=TOOL, ttl=TTL) for _ in range(ids)
    ]
    guard = memory_guard(max(ids, 1))
    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        for token in tokens:
            if rs.decode(token, ring, mode="encrypted", subject=SUBJECT, tool=TOOL, guard=guard) is None:
                raise RuntimeError("a fresh valid token was refused while filling the MemoryGuard")
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    if len(guard) != ids:
        raise RuntimeError(f"the MemoryGuard holds {len(guard)} ids, not {ids}")
    return GuardMemory(ids, retained)


def measure_guards(
    *,
    seconds: float,
    sample_seconds: float,
    memory_ids: int,
    redis: bool = True,
    modes: Sequence[rs.ModeName] = GUARD_MODES,
    claim_seconds: float = 0.0,
    progress: Callable[[str], None] = lambda line: None,
) -> GuardResults:
    """Time ``decode`` of fresh 64 B tokens with no guard, a ``MemoryGuard`` and Redis; trace its memory.

    Each group of cases shares ``seconds``; ``redis=False`` skips Redis (its rows
    say so). A missing or failing Redis never raises: its rows say why they were
    not measured, and the other rows are measured without it. ``claim_seconds``
    > 0 (and ``redis``) also measures claims under load, that long a level
    (``guard_claims.measure_claims``).
    """
    ring = rs.KeyRing(os.urandom(32))
    state = make_state(STATE_SIZE)
    results = GuardResults(seconds=seconds, redis="not measured (turned off)")
    if redis:
        results.rows += _measure_with_redis(results, state, ring, modes, seconds, sample_seconds, progress)
    for mode in modes:
        if any(row.mode == mode for row in results.rows):
            continue
        progress(f"replay guards, {mode}: none and MemoryGuard (Redis {results.redis})")
        guards: dict[str, rs.Guard | None] = {NONE: None, MEMORY: memory_guard()}
        results.rows += measure_sync_group(Minted(state, ring, mode), guards, seconds, sample_seconds)
        results.rows += unavailable_rows(mode, results.redis)
    order = {mode: index for index, mode in enumerate(modes)}
    results.rows.sort(key=lambda row: order[row.mode])
    progress(f"replay guards: MemoryGuard memory over {memory_ids:,} ids")
    results.memory = measure_guard_memory(memory_ids, ring)
    if redis and claim_seconds:
        results.claims = measure_claims(claim_seconds, progress=progress)
    return results


def _measure_with_redis(
    results: GuardResults,
    state: str,
    ring: rs.KeyRing,
    modes: Sequence[rs.ModeName],
    seconds: float,
    sample_seconds: float,
    progress: Callable[[str], None],
) -> list[GuardRow]:
    # Every row of every mode, measured with Redis; none if Redis failed (the caller measures without it).
    rows: list[GuardRow] = []
    try:
        with redis_servers.running_server() as server:
            results.redis = f"redis-server {server.version()} on loopback, redis-py {redis.__version__}"
            for mode in modes:
                progress(f"replay guards, {mode}: decode, none, MemoryGuard and RedisGuard")
                minted = Minted(state, ring, mode)
                redis_guard, build_async = redis_guards(server.url, mode)
                wait_until(redis_guard.begin())
                try:
                    guards: dict[str, rs.Guard | None] = {
                        NONE: None,
                        MEMORY: memory_guard(),
                        REDIS: redis_guard,
                    }
                    mode_rows = measure_sync_group(minted, guards, seconds, sample_seconds)
                finally:
                    redis_guard.close()
                progress(f"replay guards, {mode}: adecode one at a time, none and AsyncRedisGuard")
                mode_rows += measure_async_group(minted, build_async, seconds, sample_seconds)
                rows += mode_rows
    except Exception as error:
        # A missing or failing Redis is reported, never fatal; its partial rows are dropped, so that
        # every mode's rows come from one setting.
        why = str(error) if isinstance(error, RedisUnavailable) else f"{type(error).__name__}: {error}"
        results.redis = f"not available: {why}"
        progress(f"replay guards: Redis {results.redis}")
        return []
    return rows
