"""A worker process of the nemesis: it mints and redeems through its own guard, on its own clock, and
records every redemption."""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import logging
import multiprocessing
import queue
import random
import time
from multiprocessing.sharedctypes import Synchronized

import requeststate as rs
from requeststate import DEFAULT_CLOCK_SKEW
from requeststate.postgres import PostgresGuard
from requeststate.redis import RedisGuard
from requeststate.sqlite import SQLiteGuard
from scripts.nemesis.history import ACCEPTED, Redemption

__all__ = [
    "IN_FLIGHT",
    "IN_FLIGHT_SECONDS",
    "KEY",
    "MISMATCHED",
    "OFFSET",
    "TTL",
    "guard_for",
    "mint_token",
    "quiet_logs",
    "record_redemption",
    "worker",
]

KEY = bytes.fromhex("9c1f3a7e5b2d4c6f8a0e1b3d5f7a9c2e4b6d8f0a1c3e5a7b9d0f2e4c6a8b1d3f")
TTL = 20
# Each worker's clock runs within +-OFFSET of the wall clock: two of them differ by at most
# 2 * OFFSET, inside the guard's clock_skew.
OFFSET = DEFAULT_CLOCK_SKEW / 2 - 0.5
# A share of the tokens minted is redeemed a while later, as a client's next call carries it: the
# tokens in flight when a fault strikes, whose refusals after it the report counts per fault.
IN_FLIGHT = 0.2
IN_FLIGHT_SECONDS = (0.5, 3.0)
# The history's worker number of the verifiers whose settings differ from the namespace's.
MISMATCHED = -1


def worker(
    index: int,
    url: str,
    deadline: float,
    offset: Synchronized[float],
    frozen: Synchronized[float],
    serving: Synchronized[int],
    shared: multiprocessing.Queue[tuple[str, str]],
    history: multiprocessing.Queue[list[Redemption]],
    seed: int,
) -> None:
    """Mint and redeem until ``deadline`` on a clock ``offset`` from the wall clock; report the history.

    While ``frozen`` is not 0, the worker's clock reads it: the time it read before it was paused.
    ``serving`` counts the workers whose tokens are accepted from now on.
    """
    chance = random.Random(seed)
    quiet_logs()
    guard = guard_for(url)
    codec = rs.Codec(
        KEY, mode="encrypted", ttl=TTL, guard=guard, clock=lambda: frozen.value or time.time() + offset.value
    )
    # A server begins its guard's memory at start, and serves once the tokens it mints (on its own
    # clock, which may run behind) are accepted: else its first flows are refused, and counted as
    # collateral of no fault.
    with contextlib.suppress(rs.GuardUnavailable):
        time.sleep(max(0.0, guard.begin() - (time.time() + offset.value)))
    with serving.get_lock():
        serving.value += 1
    records: list[Redemption] = []
    mine: list[tuple[str, str, float]] = []  # (token, id, minted) this worker redeemed
    in_flight: list[tuple[float, str, str, float]] = []  # a heap of (due, token, id, minted)

    def redeem(token: str, token_id: str, minted: float, first: bool) -> bool:
        return record_redemption(codec, records, index, token, token_id, minted, first)

    def redeem_first(token: str, token_id: str, minted: float) -> None:
        if redeem(token, token_id, minted, first=True):
            mine.append((token, token_id, minted))
            if chance.random() < 0.3:
                with contextlib.suppress(queue.Full):
                    shared.put_nowait((token, json.dumps([token_id, minted])))

    while time.time() < deadline:
        minted = time.time()
        token, token_id = mint_token(codec, index, len(records))
        if chance.random() < IN_FLIGHT:
            heapq.heappush(in_flight, (minted + chance.uniform(*IN_FLIGHT_SECONDS), token, token_id, minted))
        else:
            redeem_first(token, token_id, minted)
        while in_flight and in_flight[0][0] <= time.time():
            _, token, token_id, minted = heapq.heappop(in_flight)
            redeem_first(token, token_id, minted)
        if mine and chance.random() < 0.5:
            redeem(*chance.choice(mine[-500:]), first=False)
        with contextlib.suppress(queue.Empty):
            other, about = shared.get_nowait()
            other_id, other_minted = json.loads(about)
            redeem(other, other_id, other_minted, first=False)
        time.sleep(chance.random() * 0.004)  # the client's answer, a few milliseconds
    guard.close()
    history.put(records)


def quiet_logs() -> None:
    """Each loss's warning (once per guard) and each broken connection's (the PostgreSQL pool's): quiet."""
    logging.getLogger("requeststate").setLevel(logging.ERROR)
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)


def guard_for(url: str, clock_skew: int = DEFAULT_CLOCK_SKEW) -> RedisGuard | SQLiteGuard | PostgresGuard:
    """A worker's guard on the topology's store, from its guard URL: its Redis (``redis+cluster`` for
    a cluster), its SQLite file or its PostgreSQL database, with 0.5 s timeouts."""
    scheme = url.split(":", 1)[0]
    if scheme == "sqlite":
        return SQLiteGuard.from_url(url, timeout=0.5, clock_skew=clock_skew)
    if scheme == "postgresql":
        return PostgresGuard.from_url(url, timeout=0.5, clock_skew=clock_skew)
    return RedisGuard.from_url(url, timeout=0.5, clock_skew=clock_skew)


def mint_token(codec: rs.Codec, worker: int, step: int) -> tuple[str, str]:
    """A fresh token, and the history's name for it."""
    token = codec.encode({"worker": worker, "step": step})
    return token, hashlib.sha256(token.encode()).hexdigest()[:24]


def record_redemption(
    codec: rs.Codec,
    records: list[Redemption],
    worker: int,
    token: str,
    token_id: str,
    minted: float,
    first: bool,
) -> bool:
    """Redeem ``token`` through ``codec``, record it in ``records``; whether it was accepted."""
    try:
        codec.verify(token)
        outcome = ACCEPTED
    except rs.InvalidToken as refused:
        outcome = refused.reason.value
    records.append(Redemption(token_id, worker, first, minted, time.time(), outcome))
    return outcome == ACCEPTED
