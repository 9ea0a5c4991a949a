"""Claims under concurrency: fresh tokens decoded through one guard by 1, 8 and 64 threads or tasks.

A claim is measured as a server makes it: ``Codec.decode`` (threads) or
``await Codec.adecode`` (tasks in one event loop) of a token never decoded
before, so each one verifies the token and then claims its id. The tokens are
minted before the clock starts, and each thread or task first decodes one
untimed (its connection opened, as in a server that has been serving). Each
level runs until its share of the budget is spent or its tokens are, and gives
claims per second (the claims over the wall time of all of them), and the p50
and p99 of single claims' latencies.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from ._timing import percentile_us

__all__ = [
    "CONCURRENCY",
    "MAX_TOKENS",
    "RISE",
    "ClaimLevel",
    "claims_async",
    "claims_threads",
    "stops_rising_at",
    "tokens_for",
]

CONCURRENCY: Final = (1, 8, 64)
"""The threads (sync) or tasks (async) each guard is measured at."""
RISE: Final = 1.10
"""A level adds throughput when it claims at least 10% more per second than the one before."""
MAX_TOKENS: Final = 30_000
"""The most tokens one level mints: three levels stay within a ``MemoryGuard()``'s 100,000 ids."""
_MIN_TOKENS_PER_WORKER: Final = 20


@dataclass(frozen=True)
class ClaimLevel:
    """Claims of fresh tokens through one guard at one concurrency."""

    concurrency: int
    claims: int
    """Tokens decoded (each one a claim), refused ones included."""
    refused: int
    """Of those, refused: a claim that failed (a store that did not answer in time); 0 when all is well."""
    seconds: float
    """The wall time of all the claims, from the first started to the last finished."""
    p50_us: float
    p99_us: float

    @property
    def claims_per_second(self) -> float:
        """Claims over the wall time of all of them."""
        return self.claims / self.seconds


def tokens_for(rate_hint: float, seconds: float, concurrency: int) -> int:
    """Tokens to mint for a level expected to claim ``rate_hint`` per second for ``seconds``, with margin."""
    wanted = math.ceil(rate_hint * seconds * 1.3)
    # Each worker's untimed first decode comes on top.
    return min(MAX_TOKENS, max(wanted, concurrency * _MIN_TOKENS_PER_WORKER)) + concurrency


def stops_rising_at(levels: Sequence[ClaimLevel]) -> int | None:
    """The concurrency past which the next level adds under 10% claims/s; ``None`` if every one added more."""
    for lower, higher in itertools.pairwise(levels):
        if higher.claims_per_second < lower.claims_per_second * RISE:
            return lower.concurrency
    return None


def _level(concurrency: int, latencies: list[list[int]], refused: list[int], elapsed_ns: int) -> ClaimLevel:
    ordered = sorted(latency for worker in latencies for latency in worker)
    if not ordered:
        raise RuntimeError("a level measured no claim")
    return ClaimLevel(
        concurrency,
        len(ordered),
        sum(refused),
        elapsed_ns / 1e9,
        percentile_us(ordered, 0.5),
        percentile_us(ordered, 0.99),
    )


def claims_threads(
    decode: Callable[[str], object], tokens: Sequence[str], concurrency: int, seconds: float
) -> ClaimLevel:
    """``decode`` (``None``: refused) of ``tokens`` by ``concurrency`` threads, for at most ``seconds``."""
    supply: Iterator[str] = iter(tokens)  # shared: a list iterator hands each token to one thread
    latencies: list[list[int]] = [[] for _ in range(concurrency)]
    refused = [0] * concurrency
    deadline_ns = [0]
    start = threading.Barrier(concurrency + 1)

    def worker(index: int) -> None:
        own, clock = latencies[index], time.perf_counter_ns
        decode(next(supply))  # untimed: opens this thread's connection
        start.wait()
        deadline = deadline_ns[0]
        for token in supply:
            began = clock()
            if decode(token) is None:
                refused[index] += 1
            ended = clock()
            own.append(ended - began)
            if ended >= deadline:
                break

    threads = [threading.Thread(target=worker, args=(index,), daemon=True) for index in range(concurrency)]
    for thread in threads:
        thread.start()
    deadline_ns[0] = time.perf_counter_ns() + int(seconds * 1e9)
    began = time.perf_counter_ns()
    start.wait()
    for thread in threads:
        thread.join()
    return _level(concurrency, latencies, refused, time.perf_counter_ns() - began)


async def claims_async(
    adecode: Callable[[str], Awaitable[object]], tokens: Sequence[str], concurrency: int, seconds: float
) -> ClaimLevel:
    """``await adecode`` (``None``: refused) of ``tokens`` by ``concurrency`` tasks, for up to ``seconds``."""
    supply: Iterator[str] = iter(tokens)
    latencies: list[list[int]] = [[] for _ in range(concurrency)]
    refused = [0] * concurrency
    clock = time.perf_counter_ns

    async def warm_up() -> None:
        await adecode(next(supply))  # untimed: opens this task's connection

    async def worker(index: int) -> None:
        own = latencies[index]
        for token in supply:
            began = clock()
            if await adecode(token) is None:
                refused[index] += 1
            ended = clock()
            own.append(ended - began)
            if ended >= deadline:
                break

    await asyncio.gather(*(warm_up() for _ in range(concurrency)))
    began = clock()
    deadline = began + int(seconds * 1e9)
    await asyncio.gather(*(worker(index) for index in range(concurrency)))
    return _level(concurrency, latencies, refused, clock() - began)
