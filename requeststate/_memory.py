"""``MemoryGuard``: the replay guard in one process's memory, on the rules all guards share (``_ledger``)."""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable
from typing import Final, final

from ._bounds import check_int
from ._errors import InvalidToken, Reason
from ._guard import GuardUnavailable
from ._ledger import DEFAULT_CLOCK_SKEW, Ledger, checked_answer, member_of, request_of, retried
from ._token_id import ClaimId

__all__ = ["DEFAULT_CAPACITY", "MemoryGuard"]

DEFAULT_CAPACITY: Final = 100_000
"""The most live ids a ``MemoryGuard`` holds unless ``capacity=`` says otherwise."""
# How much faster than the monotonic clock the purge clock may run to catch up with a wall
# clock that stepped forward: 1 s per 64 s.
PURGE_CATCH_UP: Final = 1 / 64


@final
class MemoryGuard:
    """A replay guard in this process's memory, for a server that runs as one process.

    Thread-safe (one lock) and bounded: it holds at most ``capacity`` live ids.
    Expired ids are purged on each ``claim``, oldest first, in amortised
    ``O(log n)`` time, with no background thread.

    Its memory begins when it is built. Every ``Codec`` built with it tells it of each
    token it mints (``minted_here``), and those it accepts from its first second. Any
    other token minted by then (plus ``clock_skew``) is refused as ``outside_memory``:
    it may have been redeemed by the process this one replaced (a restart with the same
    keys), or by this process before the guard existed. ``clock_skew`` also covers a
    restart after the wall clock stepped back: by up to ``clock_skew`` seconds, no token
    of the process replaced is accepted (a step back of more lets the tokens of its last
    seconds through, beyond that step). It costs this process's own tokens nothing.

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

    Other processes do not see its ids: behind several workers, use
    ``requeststate.sqlite.SQLiteGuard`` (one host) or ``requeststate.redis.RedisGuard``.
    """

    __slots__ = (
        "_capacity",
        "_full",
        "_heap",
        "_held",
        "_ledger",
        "_lock",
        "_minted_here",
        "_monotonic",
        "_purged_to",
        "_since",
    )

    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        *,
        clock_skew: int = DEFAULT_CLOCK_SKEW,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """Make an empty guard that holds at most ``capacity`` live ids (a positive ``int``).

        ``clock_skew``: seconds by which the clocks of the hosts that mint its tokens may
        run ahead of this one's, and by which this host's clock may step back across a
        restart (default ``requeststate.DEFAULT_CLOCK_SKEW``; the tokens of its own codecs
        never wait for it). ``clock`` dates when its memory began (unix seconds, read
        once, here); ``monotonic`` bounds purging (tests inject both).
        """
        check_int("capacity", capacity, 1)
        for name, given in (("clock", clock), ("monotonic", monotonic)):
            if not callable(given):
                raise TypeError(f"{name} must be a callable returning seconds")
        self._ledger: Final = Ledger("memory", clock_skew, log="requeststate", describe="MemoryGuard")
        self._since: Final = int(clock())
        self._capacity: Final = capacity
        self._monotonic: Final = monotonic
        self._lock: Final = threading.Lock()
        # Each held id is in both: the dict answers "claimed?", the heap finds the next to
        # expire. An id enters once and leaves once, so they stay in step. The dict holds, for an
        # exactly-once claim, its record: [its request's digest, its lease, the answer kept ("" until
        # then)]; None for a claim of single use. The record leaves with its id.
        self._held: Final[dict[str, list[str | int] | None]] = {}
        self._heap: Final[list[tuple[int, str]]] = []
        # The ids its codecs minted by the time its memory began plus clock_skew: accepted all
        # the same, as they were minted after it began. At most ``capacity`` (then refused).
        self._minted_here: Final[set[str]] = set()
        # (purge clock, monotonic reading) at the last claim; None before the first.
        self._purged_to: tuple[float, float] | None = None
        self._full = False

    @property
    def clock_skew(self) -> int:
        """Seconds that the clocks of the hosts that mint may run ahead of this one, or step back."""
        return self._ledger.clock_skew

    @property
    def capacity(self) -> int:
        """The most live ids this guard holds before it fails closed."""
        return self._capacity

    def learn_leeway(self, leeway: int) -> None:
        """Called by each ``Codec`` built with this guard; ``ValueError`` for a second, different leeway."""
        self._ledger.learn_leeway(leeway)

    def minted_here(self, claimed: ClaimId, /) -> None:
        """Called by each ``Codec`` built with this guard with the ``ClaimId`` of each token it mints: a
        token minted after the guard was built is accepted at its first claim, however close to the
        guard's first second."""
        if self._ledger.postdates(claimed.minted, self._since):
            return  # accepted anyway
        with self._lock:
            if len(self._minted_here) < self._capacity:
                self._minted_here.add(claimed.token_id)

    def begin(self, now: int | None = None) -> int:
        """The first unix second from which this guard accepts the tokens of its own codecs: at once.

        A token minted elsewhere (another process with the same keys) is accepted if it was
        minted more than ``clock_skew`` after the guard was built. ``now`` is accepted for
        the ``begin`` every guard has, and not needed: this guard's memory began when it was built.
        """
        del now
        return self._since

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

    def claim(self, claimed: ClaimId, expires_at: int, now: int, /) -> bool:
        """Record ``claimed`` until ``expires_at``; ``True`` on its first claim, ``False`` on a replay.

        Raises:
            GuardUnavailable: the guard is full of ids that have not expired.
            InvalidToken: ``outside_memory``: the token was minted by the time the guard
                was built (plus ``clock_skew``) and not by one of its codecs, or after
                ``now`` plus ``clock_skew``.
            ValueError: ``expires_at`` is before ``now``.
        """
        minted = self._ledger.dated(claimed, expires_at, now)
        with self._lock:
            return self._add(claimed.token_id, expires_at, now, minted, None)

    def redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int, /
    ) -> str | None:
        """Claim ``claimed`` for ``request``, exactly once: ``None`` on its first claim, else the answer kept
        for an identical retry (``requeststate.KeepingGuard.redeem``); raises as ``claim`` does, and
        ``InvalidToken`` (``replayed``, ``in_progress``, ``outcome_unknown``) for a retry."""
        minted = self._ledger.dated(claimed, expires_at, now)
        digest = request_of(request, lease_until, now)
        with self._lock:
            if self._add(claimed.token_id, expires_at, now, minted, [digest, lease_until, ""]):
                return None
            first, lease, kept = self._held[claimed.token_id] or ("", 0, "")
        return retried(digest, now, first, lease, kept)  # type: ignore[arg-type]

    def keep(self, claimed: ClaimId, request: str, answer: str, /) -> None:
        """Keep ``answer`` for the identical retries of ``claimed``'s first call for ``request``
        (``requeststate.KeepingGuard.keep``): only into its record, while held, and only once."""
        digest, answer = member_of(request), checked_answer(answer)
        with self._lock:
            record = self._held.get(claimed.token_id)
            if record is not None and record[0] == digest and not record[2]:
                record[2] = answer

    def _add(
        self, token_id: str, expires_at: int, now: int, minted: int, record: list[str | int] | None
    ) -> bool:
        """Hold ``token_id`` and its exactly-once ``record`` (under the lock); ``True`` if it was new.

        Held by the token's id alone: its 128 random bits name one token. An id minted twice (by a
        minter of its own with the deployment's keys) is refused the second time, never accepted twice.
        """
        heap = self._heap
        clock = self._purge_clock(now - self._ledger.clock_skew)
        while heap and heap[0][0] < clock:
            del self._held[heapq.heappop(heap)[1]]
        if token_id in self._held:
            return False
        if not self._ledger.postdates(minted, self._since) and token_id not in self._minted_here:
            raise InvalidToken(Reason.OUTSIDE_MEMORY)
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
        self._minted_here.discard(token_id)
        self._held[token_id] = record
        heapq.heappush(heap, (expires_at, token_id))
        return True

    def __len__(self) -> int:
        """The number of ids held, including expired ones not purged yet."""
        return len(self._held)

    def __repr__(self) -> str:
        return f"MemoryGuard(capacity={self._capacity}, size={len(self._held)})"
