"""Replay guards: remember which token ids were redeemed, so each token is accepted once.

A guard is asked only after a token passed every other check. ``claim`` records
the token's id until the token can no longer verify (its ``exp`` plus the
verifier's leeway) and says whether this was the first claim. A guard that
cannot tell raises ``GuardUnavailable``, and the token is refused: a guard
fails closed.
"""

from __future__ import annotations

import heapq
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Final, Protocol, final

from ._bounds import check_int
from ._errors import InvalidToken, Reason

__all__ = [
    "ASYNC_GUARD_NEEDS_AWAIT",
    "DEFAULT_CAPACITY",
    "AsyncGuard",
    "Guard",
    "GuardUnavailable",
    "MemoryGuard",
    "aclaim",
    "check_claim_window",
    "check_guard",
    "claim",
    "is_async_guard",
    "tell_lifetime",
]

DEFAULT_CAPACITY: Final = 100_000
ASYNC_GUARD_NEEDS_AWAIT: Final = "an async guard needs averify() or adecode()"
"""What a sync call with an async guard raises (``TypeError``), up front or at the claim."""
# How much faster than the monotonic clock MemoryGuard's purge clock may run to
# catch up with a wall clock that stepped forward: 1 s per 64 s.
PURGE_CATCH_UP: Final = 1 / 64


class GuardUnavailable(Exception):
    """The guard could not tell whether the id was claimed (store down, slow, or full): fail closed.

    The message names the cause (a full guard, a store that did not answer),
    never a token id.
    """

    __module__ = "requeststate"  # as InvalidToken's: tracebacks and logs name no private module


class Guard(Protocol):
    """Records redeemed token ids: the first claim of an id wins, every later one is a replay.

    A guard may also define ``learn_lifetime(seconds)``: each ``Codec`` built with
    the guard calls it once with its ``ttl + leeway``, the longest its tokens live,
    and the guard raises ``ValueError`` there if it cannot serve such tokens.
    """

    def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        """Atomically record ``token_id`` as redeemed until ``expires_at`` (unix seconds).

        ``expires_at`` is the token's ``exp`` plus the verifier's leeway: the id
        stays claimed while ``now <= expires_at``. ``now`` is the verifier's clock.

        Returns:
            ``True`` if this call is the first claim, ``False`` if the id was
            already claimed (a replay).

        Raises:
            GuardUnavailable: the guard cannot decide; refuse the token.
        """
        ...


class AsyncGuard(Protocol):
    """``Guard`` for asyncio servers: ``claim`` is a coroutine with the same contract."""

    async def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        """Atomically record ``token_id`` as redeemed until ``expires_at``; see ``Guard.claim``."""
        ...


def check_claim_window(expires_at: int, now: int) -> None:
    """Refuse a claim whose window is already over: the caller verified an expired token."""
    if expires_at < now:
        raise ValueError("expires_at is before now: an expired token has nothing to claim")


def check_guard(guard: object) -> None:
    """Refuse what cannot be a replay guard: a class, or an object with no callable ``claim``."""
    if guard is None:
        return
    if isinstance(guard, type):
        raise TypeError(f"guard must be an instance, such as {guard.__name__}(), not the class itself")
    if not callable(getattr(guard, "claim", None)):
        raise TypeError(
            f"guard must have a claim(token_id, expires_at, now) method; a {type(guard).__name__} has none"
        )


def is_async_guard(guard: object) -> bool:
    """Whether ``guard.claim`` is a coroutine function (an ``AsyncGuard``)."""
    return inspect.iscoroutinefunction(getattr(guard, "claim", None))


def tell_lifetime(guard: object, lifetime: int) -> None:
    """Tell ``guard`` how long a codec's tokens live (``ttl + leeway``), if it has ``learn_lifetime``."""
    learn = getattr(guard, "learn_lifetime", None)
    if callable(learn):
        learn(lifetime)


def _settle(claimed: object) -> None:
    if claimed is True:
        return
    if claimed is False:
        raise InvalidToken(Reason.REPLAYED)
    if isinstance(claimed, Coroutine):
        claimed.close()  # never awaited: close it, so no warning names the guard
        raise TypeError(ASYNC_GUARD_NEEDS_AWAIT)
    raise TypeError(f"Guard.claim must return a bool, not {claimed.__class__.__name__}")


def claim(guard: Guard | AsyncGuard, token_id: str | None, expires_at: int, now: int) -> None:
    """Claim a verified token's id in ``guard``: return on its first claim, else raise why it is refused.

    A token with no id (another writer's: mcp.d mints none) cannot be made
    single-use, and is refused as ``malformed`` wherever a guard is in use.

    Raises:
        InvalidToken: ``replayed``, ``guard_unavailable`` or ``malformed``.
        TypeError: the guard is async (it needs ``aclaim``), or answered no bool.
    """
    if token_id is None:
        raise InvalidToken(Reason.MALFORMED)
    try:
        claimed = guard.claim(token_id, expires_at, now)
    except GuardUnavailable:
        raise InvalidToken(Reason.GUARD_UNAVAILABLE) from None
    _settle(claimed)


async def aclaim(guard: AsyncGuard | Guard, token_id: str | None, expires_at: int, now: int) -> None:
    """``claim``, awaiting an async guard's answer; a sync guard is called inline."""
    if token_id is None:
        raise InvalidToken(Reason.MALFORMED)
    try:
        claimed = guard.claim(token_id, expires_at, now)
        if isinstance(claimed, Awaitable):
            claimed = await claimed
    except GuardUnavailable:
        raise InvalidToken(Reason.GUARD_UNAVAILABLE) from None
    _settle(claimed)


@final
class MemoryGuard:
    """A replay guard in this process's memory, for a server that runs as one process.

    Thread-safe (one lock) and bounded: it holds at most ``capacity`` live ids.
    Expired ids are purged on each ``claim``, oldest first, in amortised
    ``O(log n)`` time, with no background thread.

    Sizing: it holds the id of every token redeemed within one TTL plus leeway,
    about 220 bytes each. Only tokens that passed every other check reach it,
    so filling it takes that many tokens the server minted for authenticated
    users: a client that can mint and redeem without limit can fill it. When
    full of live ids it raises ``GuardUnavailable`` (every redemption is then
    refused) rather than forget one, which would let that token be replayed,
    and logs one warning each time it fills. Size ``capacity`` for the peak
    redemptions in one TTL, and rate-limit minting per user, which is what
    protects it.

    The clock: ids are purged by the verifier's ``now``, but never faster than
    a monotonic clock allows. After the wall clock steps forward, the purge
    clock catches up at 1 s per 64 s, so a clock that steps forward and back
    cannot empty the guard of ids whose tokens are still valid; a step
    backward is followed at once. (Ids are then held longer, never shorter.)

    Its ids die with the process, and other processes do not see them: behind
    several workers or hosts, use ``requeststate.redis.RedisGuard``.
    """

    __slots__ = ("_capacity", "_full", "_heap", "_held", "_lock", "_monotonic", "_purged_to")

    def __init__(
        self, capacity: int = DEFAULT_CAPACITY, *, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        """Make an empty guard that holds at most ``capacity`` live ids (a positive ``int``).

        ``monotonic`` is the clock that bounds purging (tests inject one).
        """
        check_int("capacity", capacity, 1)
        if not callable(monotonic):
            raise TypeError("monotonic must be a callable returning seconds")
        self._capacity: Final = capacity
        self._monotonic: Final = monotonic
        self._lock: Final = threading.Lock()
        # Each held id is in both: the set answers "claimed?", the heap finds the
        # next to expire. An id enters once and leaves once, so they stay in step.
        self._held: Final[set[str]] = set()
        self._heap: Final[list[tuple[int, str]]] = []
        # (purge clock, monotonic reading) at the last claim; None before the first.
        self._purged_to: tuple[float, float] | None = None
        self._full = False

    @property
    def capacity(self) -> int:
        """The most live ids this guard holds before it fails closed."""
        return self._capacity

    def _purge_clock(self, now: int) -> float:
        """The time to purge up to: ``now``, unless that runs ahead of the monotonic clock."""
        elapsed = self._monotonic()
        if self._purged_to is None:
            clock = float(now)
        else:
            last, then = self._purged_to
            clock = min(float(now), last + max(0.0, elapsed - then) * (1 + PURGE_CATCH_UP))
        self._purged_to = (clock, elapsed)
        return clock

    def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        """Record ``token_id`` until ``expires_at``; ``True`` on its first claim, ``False`` on a replay.

        Raises:
            GuardUnavailable: the guard is full of ids that have not expired.
            ValueError: ``expires_at`` is before ``now``.
        """
        check_claim_window(expires_at, now)
        with self._lock:
            heap = self._heap
            clock = self._purge_clock(now)
            while heap and heap[0][0] < clock:
                self._held.remove(heapq.heappop(heap)[1])
            if token_id in self._held:
                return False
            if len(self._held) >= self._capacity:
                if not self._full:
                    self._full = True
                    import logging  # here: a rare warning is not worth 8 ms of `import requeststate`

                    logging.getLogger("requeststate").warning(
                        "MemoryGuard is full (%d live ids): every redemption is refused until ids "
                        "expire; raise its capacity or rate-limit minting per user",
                        self._capacity,
                    )
                raise GuardUnavailable(
                    f"MemoryGuard is full: {self._capacity} ids have not expired yet (raise its capacity)"
                )
            self._full = False
            self._held.add(token_id)
            heapq.heappush(heap, (expires_at, token_id))
            return True

    def __len__(self) -> int:
        """The number of ids held, including expired ones not purged yet."""
        return len(self._held)

    def __repr__(self) -> str:
        return f"MemoryGuard(capacity={self._capacity}, size={len(self._held)})"
