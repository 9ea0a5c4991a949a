"""The replay guard's added cost: ``decode`` of a fresh valid token with no guard, a ``MemoryGuard``, Redis.

A guard refuses a replay, so every timed ``decode`` gets a token never seen
before: each sample's tokens are minted before its clock starts. The cases of
a group are timed by the package's harness (``requeststate.bench.measure``:
interleaved rounds of one sample each, within a budget). The groups, per mode
(64 B state):

- sync: ``rs.decode`` with ``guard=None``, a ``MemoryGuard``, and a ``RedisGuard``;
- async: ``await Codec.adecode`` one call at a time, with ``guard=None`` and an
  ``AsyncRedisGuard``, in one event loop.

The added cost of a guard is its time minus the unguarded time of the same
group: best minus best, and median minus median.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final

import requeststate as rs
from requeststate.bench import Batch, Timing, measure
from requeststate.redis import AsyncRedisGuard, RedisGuard

from .cases import SUBJECT, TOOL, TTL

__all__ = [
    "ASYNC",
    "ASYNC_REDIS",
    "MEMORY",
    "NONE",
    "REDIS",
    "SYNC",
    "GuardRow",
    "Minted",
    "measure_async_group",
    "measure_sync_group",
    "memory_guard",
    "redis_guards",
    "unavailable_rows",
    "wait_until",
]

NONE: Final = "none"
MEMORY: Final = "MemoryGuard"
REDIS: Final = "RedisGuard"
ASYNC_REDIS: Final = "AsyncRedisGuard"
SYNC: Final = "decode"
ASYNC: Final = "adecode"
# Generous: a claim that times out is refused, and a refused claim is not a claim's cost.
CLAIM_TIMEOUT: Final = 2.0
_CHECKED_TOKENS: Final = 20
# Room for every id a group claims at the least sample length: a full guard would refuse.
_MEMORY_CAPACITY: Final = 1_000_000


@dataclass(frozen=True)
class GuardRow:
    """µs per ``decode`` (or ``adecode``) of a fresh valid token with one guard, or why it was not timed."""

    mode: rs.ModeName
    path: str
    """``decode`` (sync) or ``adecode`` (awaited one call at a time)."""
    guard: str
    """``none``, ``MemoryGuard``, ``RedisGuard`` or ``AsyncRedisGuard``."""
    best_us: float | None = None
    median_us: float | None = None
    added_best_us: float | None = None
    """Best minus the best of the unguarded row of the same mode and path; 0 for that row."""
    added_median_us: float | None = None
    batch: int = 0
    """Decodes per sample, each of a fresh token."""
    samples: int = 0
    refused: int = 0
    """Valid tokens refused during the timed samples (a claim that timed out); 0 when all is well."""
    unavailable: str | None = None
    """Why the row was not measured; ``None`` if it was."""


def memory_guard(capacity: int = _MEMORY_CAPACITY) -> rs.MemoryGuard:
    """A ``MemoryGuard`` whose memory began before any token the benchmark mints (its clock read 0).

    A fresh token is claimed at once, as in a server that began its guard at start.
    """
    return rs.MemoryGuard(capacity, clock=lambda: 0)


def redis_guards(url: str, mode: rs.ModeName) -> tuple[RedisGuard, Callable[[], AsyncRedisGuard]]:
    """A sync guard on ``url``, and how to build its asyncio twin (in the loop that will use it)."""
    return (
        RedisGuard.from_url(url, namespace=f"bench-{mode}", timeout=CLAIM_TIMEOUT, clock_skew=0),
        lambda: AsyncRedisGuard.from_url(
            url, namespace=f"bench-async-{mode}", timeout=CLAIM_TIMEOUT, clock_skew=0
        ),
    )


def wait_until(ready: int) -> None:
    """Sleep until the unix second ``ready``: a guard begun on a new store accepts tokens from then."""
    time.sleep(max(0.0, ready - time.time()))


def unavailable_rows(mode: rs.ModeName, why: str) -> list[GuardRow]:
    """The Redis rows of ``mode``, each saying why it was not measured."""
    return [
        GuardRow(mode, SYNC, REDIS, unavailable=why),
        GuardRow(mode, ASYNC, NONE, unavailable=why),
        GuardRow(mode, ASYNC, ASYNC_REDIS, unavailable=why),
    ]


class Minted:
    """Fresh tokens of one mode, minted on demand, and the refusals counted per case."""

    def __init__(self, state: str, ring: rs.KeyRing, mode: rs.ModeName) -> None:
        self.state, self.ring, self.mode = state, ring, mode
        self.refused: dict[str, int] = {}

    def tokens(self, count: int) -> list[str]:
        return [
            rs.encode(self.state, self.ring, mode=self.mode, subject=SUBJECT, tool=TOOL, ttl=TTL)
            for _ in range(count)
        ]

    def check(self, name: str, first: object, second: object, guarded: bool) -> None:
        # Before timing: a fresh token decodes, and with a guard its replay is refused.
        if first != self.state:
            raise RuntimeError(f"{self.mode} {name}: a fresh valid token was refused")
        if guarded and second is not None:
            raise RuntimeError(f"{self.mode} {name}: the guard accepted a replay")

    def rows(self, path: str, timings: dict[str, Timing], *, strict: Sequence[str]) -> list[GuardRow]:
        for name in strict:
            if self.refused[name]:
                raise RuntimeError(
                    f"{self.mode} {path} with {name}: {self.refused[name]} valid tokens refused"
                )
        base = timings[NONE]
        return [
            GuardRow(
                self.mode,
                path,
                name,
                one.best_us,
                one.median_us,
                one.best_us - base.best_us,
                one.median_us - base.median_us,
                one.calls,
                one.samples,
                self.refused[name],
            )
            for name, one in timings.items()
        ]


def measure_sync_group(
    minted: Minted, guards: dict[str, rs.Guard | None], seconds: float, sample_seconds: float
) -> list[GuardRow]:
    """``rs.decode`` of fresh tokens with each of ``guards``, interleaved within ``seconds``."""

    def batch_of(name: str, guard: rs.Guard | None) -> Batch:
        minted.refused[name] = 0

        def decode(token: str) -> object:
            return rs.decode(token, minted.ring, mode=minted.mode, subject=SUBJECT, tool=TOOL, guard=guard)

        for token in minted.tokens(_CHECKED_TOKENS):
            minted.check(name, decode(token), decode(token), guard is not None)

        def batch(calls: int) -> int:
            tokens = minted.tokens(calls)
            began = time.perf_counter_ns()
            refused = sum(decode(token) is None for token in tokens)
            elapsed = time.perf_counter_ns() - began
            minted.refused[name] += refused
            return elapsed

        return batch

    batches = {name: batch_of(name, guard) for name, guard in guards.items()}
    timings = measure(batches, seconds=seconds, sample_seconds=sample_seconds)
    return minted.rows(SYNC, timings, strict=[name for name in guards if name != REDIS])


def measure_async_group(
    minted: Minted, build_guard: Callable[[], AsyncRedisGuard], seconds: float, sample_seconds: float
) -> list[GuardRow]:
    """``await Codec.adecode`` of fresh tokens, one at a time, with no guard and an asyncio Redis guard."""
    loop = asyncio.new_event_loop()
    try:
        redis_guard = build_guard()
        wait_until(loop.run_until_complete(redis_guard.begin()))
        try:
            guards: dict[str, rs.AsyncGuard | None] = {NONE: None, ASYNC_REDIS: redis_guard}
            batches = {name: _async_batch(loop, minted, name, guard) for name, guard in guards.items()}
            timings = measure(batches, seconds=seconds, sample_seconds=sample_seconds)
        finally:
            loop.run_until_complete(redis_guard.aclose())
    finally:
        loop.close()
    return minted.rows(ASYNC, timings, strict=[NONE])


def _async_batch(
    loop: asyncio.AbstractEventLoop, minted: Minted, name: str, guard: rs.AsyncGuard | None
) -> Batch:
    codec = rs.Codec(minted.ring, mode=minted.mode, guard=guard)
    minted.refused[name] = 0

    def adecode(token: str) -> Awaitable[object]:
        return codec.adecode(token, subject=SUBJECT, tool=TOOL)

    async def check() -> None:
        for token in minted.tokens(_CHECKED_TOKENS):
            minted.check(name, await adecode(token), await adecode(token), guard is not None)

    async def timed(tokens: list[str]) -> int:
        refused = 0
        began = time.perf_counter_ns()
        for token in tokens:
            if await adecode(token) is None:
                refused += 1
        elapsed = time.perf_counter_ns() - began
        minted.refused[name] += refused
        return elapsed

    loop.run_until_complete(check())
    return lambda calls: loop.run_until_complete(timed(minted.tokens(calls)))
