"""The replay guard's added cost: ``decode`` of a fresh valid token with no guard, a ``MemoryGuard``, Redis.

A guard refuses a replay, so every timed ``decode`` gets a token never seen
before: all tokens are minted before the clock starts. One sample decodes a
batch of fresh tokens in a loop (the garbage collector off, as ``timeit``
does); the cases of a group take one sample each per round, in rotating order,
as ``timing.measure_interleaved`` does. The groups, per mode (64 B state):

- sync: ``rs.decode`` with ``guard=None``, a ``MemoryGuard``, and a ``RedisGuard``;
- async: ``await Codec.adecode`` one call at a time, with ``guard=None`` and an
  ``AsyncRedisGuard``, in one event loop.

The added cost of a guard is its time minus the unguarded time of the same
group: best minus best, and median minus median. Redis is a throwaway
``redis-server`` on a free loopback port (no persistence), started and stopped
by scripts/redis_servers.py, as for the tests; with no ``redis-server`` on
``PATH``, or one that does not start, the Redis rows say why they were not measured.

Claims under load (``measure_claims``): ``RedisGuard.claim`` and
``AsyncRedisGuard.claim`` of fresh ids, on two setups that
scripts/redis_servers.py starts on loopback: one redis-server, and a Redis
Cluster of three masters. Sync claims run one after another; async
claims run ``ASYNC_CONCURRENCY`` at a time in one event loop. Each row gives
claims per second (claims over the wall time of all of them) and the p50 and
p99 of single claim latencies.

Memory per held id: ``tracemalloc`` of what a ``MemoryGuard`` keeps after
``decode`` claimed N fresh tokens (the tokens themselves were allocated before
tracing): its dict entry, heap entry and the 32-character id string it keeps alive.
"""

from __future__ import annotations

import asyncio
import gc
import math
import os
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import redis

import requeststate as rs
from requeststate._token_id import TOKEN_ID_BYTES, claim_id
from requeststate.redis import AsyncRedisGuard, RedisGuard
from scripts import redis_servers
from scripts.redis_servers import RedisUnavailable

from .cases import SUBJECT, TOOL, TTL, make_state

__all__ = [
    "ASYNC_CONCURRENCY",
    "CLAIM_SETUPS",
    "GUARD_MODES",
    "ClaimRow",
    "GuardMemory",
    "GuardResults",
    "GuardRow",
    "measure_claims",
    "measure_guard_memory",
    "measure_guards",
]

GUARD_MODES: Final[tuple[rs.ModeName, ...]] = ("encrypted", "signed")
STATE_SIZE: Final = 64
NONE: Final = "none"
MEMORY: Final = "MemoryGuard"
REDIS: Final = "RedisGuard"
ASYNC_REDIS: Final = "AsyncRedisGuard"
SYNC: Final = "decode"
ASYNC: Final = "adecode"

# Generous: a claim that times out is refused, and a refused claim is not a claim's cost.
_CLAIM_TIMEOUT: Final = 2.0
_WARM_UP_TOKENS: Final = 20
STANDALONE: Final = "standalone"
CLUSTER: Final = "cluster, 3 masters"
CLAIM_SETUPS: Final = (STANDALONE, CLUSTER)
SYNC_CLAIM: Final = "claim"
ASYNC_CLAIM: Final = "async claim"
ASYNC_CONCURRENCY: Final = 16


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


@dataclass(frozen=True)
class GuardMemory:
    """What a ``MemoryGuard`` keeps for ``ids`` ids claimed by ``decode``."""

    ids: int
    retained_bytes: int

    @property
    def bytes_per_id(self) -> float:
        """Traced bytes the guard keeps per held id."""
        return self.retained_bytes / self.ids


@dataclass(frozen=True)
class ClaimRow:
    """Claims of fresh ids on one Redis setup, sync or async, or why they were not measured."""

    setup: str
    path: str
    """``claim`` (one after another) or ``async claim`` (``ASYNC_CONCURRENCY`` at a time)."""
    claims: int = 0
    per_second: float | None = None
    p50_us: float | None = None
    p99_us: float | None = None
    unavailable: str | None = None


@dataclass
class GuardResults:
    """The guard measurements of one run."""

    rounds: int
    batch: int
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


# --- timing ---------------------------------------------------------------------------------------------

Decode = Callable[[str], object]
AsyncDecode = Callable[[str], Awaitable[object]]


@dataclass
class _Samples:
    per_call_us: list[float] = field(default_factory=list)
    refused: int = 0


def _mint(state: str, ring: rs.KeyRing, mode: rs.ModeName, count: int) -> list[str]:
    return [rs.encode(state, ring, mode=mode, subject=SUBJECT, tool=TOOL, ttl=TTL) for _ in range(count)]


def _batches(tokens: list[str], batch: int) -> Iterator[list[str]]:
    return (tokens[start : start + batch] for start in range(0, len(tokens), batch))


def _time_batch(decode: Decode, batch: Sequence[str]) -> tuple[float, int]:
    refused = 0
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        began = time.perf_counter_ns()
        for token in batch:
            if decode(token) is None:
                refused += 1
        elapsed = time.perf_counter_ns() - began
    finally:
        if gc_was_enabled:
            gc.enable()
    return elapsed / len(batch) / 1e3, refused


async def _atime_batch(decode: AsyncDecode, batch: Sequence[str]) -> tuple[float, int]:
    refused = 0
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        began = time.perf_counter_ns()
        for token in batch:
            if await decode(token) is None:
                refused += 1
        elapsed = time.perf_counter_ns() - began
    finally:
        if gc_was_enabled:
            gc.enable()
    return elapsed / len(batch) / 1e3, refused


def _check_single_use(name: str, first: object, second: object, state: str, guarded: bool) -> None:
    # Before timing: a fresh token decodes, and with a guard its replay is refused.
    if first != state:
        raise RuntimeError(f"{name}: a fresh valid token was refused")
    if guarded and second is not None:
        raise RuntimeError(f"{name}: the guard accepted a replay")


def _rows(
    mode: rs.ModeName, path: str, samples: dict[str, _Samples], batch: int, *, strict: Sequence[str]
) -> list[GuardRow]:
    for name in strict:
        if samples[name].refused:
            raise RuntimeError(
                f"{mode} {path} with {name}: {samples[name].refused} valid tokens were refused"
            )
    base = samples[NONE].per_call_us
    base_best, base_median = min(base), statistics.median(base)
    rows = []
    for name, one in samples.items():
        best, median = min(one.per_call_us), statistics.median(one.per_call_us)
        rows.append(
            GuardRow(
                mode,
                path,
                name,
                best,
                median,
                best - base_best,
                median - base_median,
                batch,
                len(one.per_call_us),
                one.refused,
            )
        )
    return rows


def _decoder(ring: rs.KeyRing, mode: rs.ModeName, guard: rs.Guard | None) -> Decode:
    def decode(token: str) -> object:
        return rs.decode(token, ring, mode=mode, subject=SUBJECT, tool=TOOL, guard=guard)

    return decode


def _adecoder(ring: rs.KeyRing, mode: rs.ModeName, guard: rs.AsyncGuard | None) -> AsyncDecode:
    codec = rs.Codec(ring, mode=mode, guard=guard)

    async def adecode(token: str) -> object:
        return await codec.adecode(token, subject=SUBJECT, tool=TOOL)

    return adecode


def _measure_sync(
    mode: rs.ModeName,
    state: str,
    ring: rs.KeyRing,
    guards: dict[str, rs.Guard | None],
    rounds: int,
    batch: int,
) -> list[GuardRow]:
    names = list(guards)
    decoders = {name: _decoder(ring, mode, guard) for name, guard in guards.items()}
    for name, decode in decoders.items():
        for token in _mint(state, ring, mode, _WARM_UP_TOKENS):
            _check_single_use(f"{mode} {name}", decode(token), decode(token), state, guards[name] is not None)
    tokens = {name: _batches(_mint(state, ring, mode, rounds * batch), batch) for name in names}
    samples = {name: _Samples() for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            per_call, refused = _time_batch(decoders[name], next(tokens[name]))
            samples[name].per_call_us.append(per_call)
            samples[name].refused += refused
    return _rows(mode, SYNC, samples, batch, strict=[name for name in names if name != REDIS])


async def _measure_async(
    mode: rs.ModeName, state: str, ring: rs.KeyRing, url: str, rounds: int, batch: int
) -> list[GuardRow]:
    redis_guard = AsyncRedisGuard.from_url(
        url, timeout=_CLAIM_TIMEOUT, namespace=f"bench-async-{mode}", clock_skew=0
    )
    try:
        _wait_until(await redis_guard.begin())
        guards: dict[str, rs.AsyncGuard | None] = {NONE: None, ASYNC_REDIS: redis_guard}
        names = list(guards)
        decoders = {name: _adecoder(ring, mode, guard) for name, guard in guards.items()}
        for name, decode in decoders.items():
            for token in _mint(state, ring, mode, _WARM_UP_TOKENS):
                first, second = await decode(token), await decode(token)
                _check_single_use(f"{mode} async {name}", first, second, state, guards[name] is not None)
        tokens = {name: _batches(_mint(state, ring, mode, rounds * batch), batch) for name in names}
        samples = {name: _Samples() for name in names}
        for round_index in range(rounds):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                per_call, refused = await _atime_batch(decoders[name], next(tokens[name]))
                samples[name].per_call_us.append(per_call)
                samples[name].refused += refused
        return _rows(mode, ASYNC, samples, batch, strict=[NONE])
    finally:
        await redis_guard.aclose()


def measure_guard_memory(ids: int, ring: rs.KeyRing | None = None) -> GuardMemory:
    """Traced bytes a ``MemoryGuard`` keeps after ``decode`` claimed ``ids`` fresh encrypted tokens."""
    ring = ring or rs.KeyRing(os.urandom(32))
    state = make_state(STATE_SIZE)
    tokens = _mint(state, ring, "encrypted", ids)
    guard = _memory_guard(max(ids, 1))
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


def _memory_guard(capacity: int) -> rs.MemoryGuard:
    # Its memory began before any token the benchmark mints (its clock read 0 when it was built):
    # a fresh token is claimed at once, as in a server that began its guard at start.
    return rs.MemoryGuard(capacity, clock=lambda: 0)


def _guard_capacity(rounds: int, batch: int) -> int:
    # Room for every id one group claims: a full guard would refuse, and a refusal is not a claim's cost.
    return max(rs.MemoryGuard().capacity, rounds * batch + 2 * _WARM_UP_TOKENS)


def measure_guards(
    *,
    rounds: int,
    batch: int,
    memory_ids: int,
    redis: bool = True,
    modes: Sequence[rs.ModeName] = GUARD_MODES,
    claims: int = 0,
    progress: Callable[[str], None] = lambda line: None,
) -> GuardResults:
    """Time ``decode`` of fresh 64 B tokens with no guard, a ``MemoryGuard`` and Redis; trace its memory.

    ``rounds`` samples of ``batch`` decodes per case; ``redis=False`` skips Redis
    (its rows say so). A missing or failing Redis never raises: its rows say
    why they were not measured, and the other rows are measured without it.
    ``claims`` > 0 (and ``redis``) also measures that many claims per setup
    and path (``measure_claims``).
    """
    ring = rs.KeyRing(os.urandom(32))
    state = make_state(STATE_SIZE)
    results = GuardResults(rounds=rounds, batch=batch, redis="not measured (turned off)")
    if redis:
        results.rows += _measure_with_redis(results, state, ring, modes, rounds, batch, progress)
    for mode in modes:
        if any(row.mode == mode for row in results.rows):
            continue
        progress(f"replay guards, {mode}: none and MemoryGuard (Redis {results.redis})")
        guards: dict[str, rs.Guard | None] = {
            NONE: None,
            MEMORY: _memory_guard(_guard_capacity(rounds, batch)),
        }
        results.rows += _measure_sync(mode, state, ring, guards, rounds, batch)
        results.rows += [
            GuardRow(mode, SYNC, REDIS, unavailable=results.redis),
            GuardRow(mode, ASYNC, NONE, unavailable=results.redis),
            GuardRow(mode, ASYNC, ASYNC_REDIS, unavailable=results.redis),
        ]
    order = {mode: index for index, mode in enumerate(modes)}
    results.rows.sort(key=lambda row: order[row.mode])
    progress(f"replay guards: MemoryGuard memory over {memory_ids:,} ids")
    results.memory = measure_guard_memory(memory_ids, ring)
    if redis and claims:
        results.claims = measure_claims(claims, progress=progress)
    return results


def _measure_with_redis(
    results: GuardResults,
    state: str,
    ring: rs.KeyRing,
    modes: Sequence[rs.ModeName],
    rounds: int,
    batch: int,
    progress: Callable[[str], None],
) -> list[GuardRow]:
    # Every row of every mode, measured with Redis; none if Redis failed (the caller measures without it).
    rows: list[GuardRow] = []
    try:
        with redis_servers.running_server() as server:
            url = server.url
            results.redis = f"redis-server {server.version()} on loopback, redis-py {redis.__version__}"
            for mode in modes:
                progress(f"replay guards, {mode}: decode, none, MemoryGuard and RedisGuard")
                redis_guard = RedisGuard.from_url(
                    url, timeout=_CLAIM_TIMEOUT, namespace=f"bench-{mode}", clock_skew=0
                )
                _wait_until(redis_guard.begin())
                try:
                    guards: dict[str, rs.Guard | None] = {
                        NONE: None,
                        MEMORY: _memory_guard(_guard_capacity(rounds, batch)),
                        REDIS: redis_guard,
                    }
                    mode_rows = _measure_sync(mode, state, ring, guards, rounds, batch)
                finally:
                    redis_guard.close()
                progress(f"replay guards, {mode}: adecode one at a time, none and AsyncRedisGuard")
                mode_rows += asyncio.run(_measure_async(mode, state, ring, url, rounds, batch))
                rows += mode_rows
    except Exception as error:
        # A missing or failing Redis is reported, never fatal; its partial rows are dropped, so that
        # every mode's rows come from one setting.
        why = str(error) if isinstance(error, RedisUnavailable) else f"{type(error).__name__}: {error}"
        results.redis = f"not available: {why}"
        progress(f"replay guards: Redis {results.redis}")
        return []
    return rows


# --- claims under load ----------------------------------------------------------------------------------


def _percentile(ordered: Sequence[float], share: float) -> float:
    # The nearest-rank percentile: the smallest value with at least `share` of all at or below it.
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _claim_row(setup: str, path: str, seconds: float, latencies_ns: list[int]) -> ClaimRow:
    ordered = sorted(latency / 1e3 for latency in latencies_ns)
    count = len(ordered)
    return ClaimRow(
        setup, path, count, count / seconds, _percentile(ordered, 0.5), _percentile(ordered, 0.99)
    )


def _fresh(count: int) -> list[str]:
    """What a ``Codec`` claims for tokens minted now."""
    now = int(time.time())
    return [str(claim_id(os.urandom(TOKEN_ID_BYTES).hex(), now)) for _ in range(count)]


def _wait_until(ready: int) -> None:
    # A guard on a new Redis accepts the tokens minted from the second its begin() returns, as a
    # server that serves once its guard began: with clock_skew=0 (one host), within a second.
    time.sleep(max(0.0, ready - time.time()))


def _time_sync_claims(guard: Any, setup: str, count: int) -> ClaimRow:
    ids, now = _fresh(count), int(time.time())
    latencies: list[int] = []
    began = time.perf_counter_ns()
    for token_id in ids:
        start = time.perf_counter_ns()
        claimed = guard.claim(token_id, now + TTL, now)
        latencies.append(time.perf_counter_ns() - start)
        if claimed is not True:
            raise RuntimeError(f"{setup}: a fresh id was refused")
    return _claim_row(setup, SYNC_CLAIM, (time.perf_counter_ns() - began) / 1e9, latencies)


async def _time_async_claims(guard: Any, setup: str, count: int) -> ClaimRow:
    latencies: list[int] = []

    async def claimer(share: list[str]) -> None:
        for token_id in share:
            start = time.perf_counter_ns()
            claimed = await guard.claim(token_id, now + TTL, now)
            latencies.append(time.perf_counter_ns() - start)
            if claimed is not True:
                raise RuntimeError(f"{setup}: a fresh id was refused")

    try:
        _wait_until(await guard.begin())  # connects (and reads a cluster's slot map)
        ids, now = _fresh(count), int(time.time())
        began = time.perf_counter_ns()
        await asyncio.gather(*(claimer(ids[index::ASYNC_CONCURRENCY]) for index in range(ASYNC_CONCURRENCY)))
        seconds = (time.perf_counter_ns() - began) / 1e9
    finally:
        await guard.aclose()
    return _claim_row(setup, ASYNC_CLAIM, seconds, latencies)


def _setups() -> dict[str, Callable[[], AbstractContextManager[str]]]:
    # Each setup: a context that starts its servers and yields the guard URL for them.
    @contextmanager
    def standalone() -> Iterator[str]:
        with redis_servers.running_server() as server:
            yield server.url

    @contextmanager
    def cluster() -> Iterator[str]:
        with redis_servers.running_cluster(masters=3) as running:
            yield running.url.replace("redis://", "redis+cluster://", 1)

    return {STANDALONE: standalone, CLUSTER: cluster}


def measure_claims(count: int, *, progress: Callable[[str], None] = lambda line: None) -> list[ClaimRow]:
    """Time ``count`` sync and ``count`` async claims of fresh ids on each setup of ``CLAIM_SETUPS``.

    A setup that cannot start (no redis-server or redis-cli, a failing server)
    never raises: its rows say why they were not measured.
    """
    rows: list[ClaimRow] = []
    for setup, start in _setups().items():
        progress(f"replay guards: {count:,} claims, sync and async, on {setup}")
        try:
            with start() as url:
                guard = RedisGuard.from_url(
                    url, timeout=_CLAIM_TIMEOUT, namespace="bench-claims", clock_skew=0
                )
                _wait_until(guard.begin())
                try:
                    setup_rows = [_time_sync_claims(guard, setup, count)]
                finally:
                    guard.close()
                async_guard = AsyncRedisGuard.from_url(
                    url, timeout=_CLAIM_TIMEOUT, namespace="bench-async-claims", clock_skew=0
                )
                setup_rows.append(asyncio.run(_time_async_claims(async_guard, setup, count)))
            rows += setup_rows
        except Exception as error:
            # A setup that failed is reported, never fatal, like the Redis rows above.
            why = f"{type(error).__name__}: {error}"
            progress(f"replay guards: {setup} not available: {why}")
            rows += [ClaimRow(setup, path, unavailable=why) for path in (SYNC_CLAIM, ASYNC_CLAIM)]
    return rows
