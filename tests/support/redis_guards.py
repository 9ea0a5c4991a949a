"""RedisGuard and AsyncRedisGuard behind one sync face, so that one test checks both; and claim outcomes.

``build("sync" | "async", url, **options)`` makes a guard from a URL; the async one runs
on an event loop of its own, kept for the guard's life (its connections belong to it).
A guard remembers the claims Redis answered to it and refuses their replays itself: a test
whose replay must reach Redis replays through another guard.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Protocol

from requeststate import ClaimId, GuardUnavailable, InvalidToken, Reason
from requeststate._token_id import TOKEN_ID_BYTES
from requeststate.redis import AsyncRedisGuard, RedisGuard

__all__ = ["FLAVOURS", "OUTSIDE_MEMORY", "AsyncOnALoop", "Claimer", "build", "minted", "outcome"]

FLAVOURS = ("sync", "async")
OUTSIDE_MEMORY = Reason.OUTSIDE_MEMORY
"""What ``outcome`` gives for a token minted before Redis's memory began (or undated, or ahead)."""


class Claimer(Protocol):
    """A guard that tests call without awaiting."""

    def claim(self, claimed: ClaimId, expires_at: int, now: int, /) -> bool: ...

    def begin(self, now: int | None = None) -> int: ...

    def redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int, /
    ) -> str | None: ...

    def keep(self, claimed: ClaimId, request: str, answer: str, /) -> None: ...

    def learn_leeway(self, leeway: int) -> None: ...

    def close(self) -> None: ...


class AsyncOnALoop:
    """An ``AsyncRedisGuard`` called from sync code, on an event loop of its own."""

    def __init__(self, guard: AsyncRedisGuard) -> None:
        self.guard = guard
        self._loop = asyncio.new_event_loop()

    def claim(self, claimed: ClaimId, expires_at: int, now: int, /) -> bool:
        return self._loop.run_until_complete(self.guard.claim(claimed, expires_at, now))

    def begin(self, now: int | None = None) -> int:
        return self._loop.run_until_complete(self.guard.begin(now))

    def redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int, /
    ) -> str | None:
        return self._loop.run_until_complete(
            self.guard.redeem(claimed, expires_at, now, request, lease_until)
        )

    def keep(self, claimed: ClaimId, request: str, answer: str, /) -> None:
        self._loop.run_until_complete(self.guard.keep(claimed, request, answer))

    def learn_leeway(self, leeway: int) -> None:
        self.guard.learn_leeway(leeway)

    def close(self) -> None:
        self._loop.run_until_complete(self.guard.aclose())
        self._loop.close()


def build(flavour: str, url: str, **options: Any) -> Claimer:
    """``RedisGuard.from_url`` (``flavour="sync"``) or ``AsyncRedisGuard.from_url`` on a loop of its own."""
    if flavour == "sync":
        return RedisGuard.from_url(url, **options)
    return AsyncOnALoop(AsyncRedisGuard.from_url(url, **options))


def outcome(guard: Claimer, claimed: ClaimId, expires_at: int, now: int) -> bool | str:
    """The claim's answer; else ``GuardUnavailable``'s message (an outage), or ``InvalidToken``'s reason
    (``OUTSIDE_MEMORY``: no retry of the token can succeed)."""
    try:
        return guard.claim(claimed, expires_at, now)
    except GuardUnavailable as error:
        return str(error)
    except InvalidToken as refused:
        return refused.reason


def minted(at: int) -> ClaimId:
    """What a ``Codec`` claims for a fresh token minted at unix second ``at``."""
    return ClaimId(os.urandom(TOKEN_ID_BYTES).hex(), at)
