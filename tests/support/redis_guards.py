"""RedisGuard and AsyncRedisGuard behind one sync face, so that one test checks both; and claim outcomes.

``build("sync" | "async", url, **options)`` makes a guard from a URL; the async one runs
on an event loop of its own, kept for the guard's life (its connections belong to it).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from requeststate import GuardUnavailable
from requeststate.redis import AsyncRedisGuard, RedisGuard

__all__ = ["FLAVOURS", "AsyncOnALoop", "Claimer", "build", "lost_by", "outcome"]

FLAVOURS = ("sync", "async")


class Claimer(Protocol):
    """A guard that tests call without awaiting."""

    def claim(self, token_id: str, expires_at: int, now: int, /) -> bool: ...

    def close(self) -> None: ...


class AsyncOnALoop:
    """An ``AsyncRedisGuard`` called from sync code, on an event loop of its own."""

    def __init__(self, guard: AsyncRedisGuard) -> None:
        self.guard = guard
        self._loop = asyncio.new_event_loop()

    def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        return self._loop.run_until_complete(self.guard.claim(token_id, expires_at, now))

    def close(self) -> None:
        self._loop.run_until_complete(self.guard.aclose())
        self._loop.close()


def build(flavour: str, url: str, **options: Any) -> Claimer:
    """``RedisGuard.from_url`` (``flavour="sync"``) or ``AsyncRedisGuard.from_url`` on a loop of its own."""
    if flavour == "sync":
        return RedisGuard.from_url(url, **options)
    return AsyncOnALoop(AsyncRedisGuard.from_url(url, **options))


def outcome(guard: Claimer, token_id: str, expires_at: int, now: int) -> bool | str:
    """The claim's answer, or ``GuardUnavailable``'s message: a refusal that is not a replay."""
    try:
        return guard.claim(token_id, expires_at, now)
    except GuardUnavailable as error:
        return str(error)


def lost_by(expires_through: int) -> str:
    """What a claim is refused with in the loss window that ends at ``expires_through``."""
    return (
        f"Redis lost the guard's claims: a token that expires by {expires_through} may have been "
        "redeemed before the loss, and is refused"
    )
