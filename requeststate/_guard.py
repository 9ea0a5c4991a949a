"""Replay guards: remember which token ids were redeemed, so each token is accepted once.

A guard is asked only after a token passed every other check. ``claim`` records
the token's id until the token can no longer verify (its ``exp`` plus the
verifier's leeway) and says whether this was the first claim. A guard that
cannot tell raises ``GuardUnavailable``, and the token is refused: a guard
fails closed.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Final, Protocol

from ._errors import InvalidToken, Reason
from ._token_id import ClaimId

__all__ = [
    "ASYNC_GUARD_NEEDS_AWAIT",
    "AsyncGuard",
    "AsyncKeepingGuard",
    "Guard",
    "GuardUnavailable",
    "KeepingGuard",
    "aclaim",
    "aredeem",
    "check_claim_window",
    "check_guard",
    "claim",
    "is_async_guard",
    "keeps_answers",
    "mint_note",
    "redeem",
    "tell_leeway",
]

ASYNC_GUARD_NEEDS_AWAIT: Final = "an async guard needs averify() or adecode()"
"""What a sync call with an async guard raises (``TypeError``), up front or at the claim."""


class GuardUnavailable(Exception):
    """The guard could not tell whether the id was claimed (store down, slow, or full): fail closed.

    The message names the cause (a full guard, a store that did not answer),
    never a token id.
    """

    __module__ = "requeststate"  # as InvalidToken's: tracebacks and logs name no private module


class Guard(Protocol):
    """Records redeemed token ids: the first claim of an id wins, every later one is a replay.

    The id claimed is a ``ClaimId``: the token's id and when it was minted, so that a guard
    whose store lost its memory can refuse every token minted before the loss, with
    ``InvalidToken(Reason.OUTSIDE_MEMORY)``.
    A guard may also define ``learn_leeway(seconds)``: each ``Codec`` built with the guard
    calls it once with its ``leeway``, and the guard raises ``ValueError`` there if it
    cannot serve tokens held that long; ``minted_here(claimed)``, which each such ``Codec``
    calls with the ``ClaimId`` of every token it mints, for a guard that
    serves its own process's tokens from its first second (``MemoryGuard``); and
    ``begin(now=None)``, which ``requeststate.mcp.protect`` calls when the server starts,
    returning the first unix second whose tokens it accepts.
    """

    def claim(self, claimed: ClaimId, expires_at: int, now: int, /) -> bool:
        """Atomically record ``claimed`` as redeemed until ``expires_at`` (unix seconds).

        ``expires_at`` is the token's ``exp`` plus the verifier's leeway: the id
        stays claimed while ``now <= expires_at``. ``now`` is the verifier's clock.

        Returns:
            ``True`` if this call is the first claim, ``False`` if the id was
            already claimed (a replay).

        Raises:
            GuardUnavailable: the guard cannot decide (its store did not answer); refuse the token.
            InvalidToken: ``outside_memory``: the token was minted before the guard's memory
                began, or in the verifier's future; no retry can succeed.
        """
        ...


class AsyncGuard(Protocol):
    """``Guard`` for asyncio servers: ``claim`` is a coroutine with the same contract."""

    async def claim(self, claimed: ClaimId, expires_at: int, now: int, /) -> bool:
        """Atomically record ``claimed`` as redeemed until ``expires_at``; see ``Guard.claim``."""
        ...


class KeepingGuard(Guard, Protocol):
    """A ``Guard`` that also serves exactly-once redemptions (``Codec.redeem``): it keeps the answer of
    each first call, atomically with its claim's record, for the identical retries of its token.

    Every guard of requeststate is one (docs/exactly-once.md).
    """

    def redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int, /
    ) -> str | None:
        """Claim ``claimed`` for ``request``, as ``claim`` does, its first call holding the action until
        ``lease_until``.

        ``request`` is what makes a retry identical (the guard holds its digest only).

        Returns:
            ``None`` on the first claim (the caller runs the action, then ``keep`` its answer);
            the answer kept for it, on an identical retry.

        Raises:
            InvalidToken: ``replayed`` (another request, or the id was claimed for single use),
                ``in_progress`` (no answer kept yet, within the lease), ``outcome_unknown`` (none,
                past it), ``outside_memory`` (as ``claim``).
            GuardUnavailable: as ``claim``.
        """
        ...

    def keep(self, claimed: ClaimId, request: str, answer: str, /) -> None:
        """Keep ``answer`` (a sealed token) for the retries of ``claimed``'s first call for ``request``.

        Nothing is kept if the claim's record is gone (a loss: its token is refused anyway), holds
        another request, or holds an answer already (the first kept stays).

        Raises:
            GuardUnavailable: the store did not answer: the answer may not be kept.
        """
        ...


class AsyncKeepingGuard(AsyncGuard, Protocol):
    """``KeepingGuard`` for asyncio servers: ``redeem`` and ``keep`` are coroutines with the same contract."""

    async def redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int, /
    ) -> str | None:
        """See ``KeepingGuard.redeem``."""
        ...

    async def keep(self, claimed: ClaimId, request: str, answer: str, /) -> None:
        """See ``KeepingGuard.keep``."""
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
            f"guard must have a claim(claimed, expires_at, now) method; a {type(guard).__name__} has none"
        )


def is_async_guard(guard: object) -> bool:
    """Whether ``guard.claim`` is a coroutine function (an ``AsyncGuard``)."""
    return inspect.iscoroutinefunction(getattr(guard, "claim", None))


def keeps_answers(guard: object) -> bool:
    """Whether ``guard`` serves exactly-once redemptions: it has ``redeem`` and ``keep``."""
    return callable(getattr(guard, "redeem", None)) and callable(getattr(guard, "keep", None))


def tell_leeway(guard: object, leeway: int) -> None:
    """Tell ``guard`` a codec's ``leeway``, if it has ``learn_leeway``."""
    learn = getattr(guard, "learn_leeway", None)
    if callable(learn):
        learn(leeway)


def mint_note(guard: object) -> Callable[[ClaimId], None] | None:
    """``guard.minted_here``, which a codec calls with each token it mints, if the guard has it."""
    note = getattr(guard, "minted_here", None)
    return note if callable(note) else None


def _settle(first: object) -> None:
    if first is True:
        return
    if first is False:
        raise InvalidToken(Reason.REPLAYED)
    if isinstance(first, Coroutine):
        first.close()  # never awaited: close it, so no warning names the guard
        raise TypeError(ASYNC_GUARD_NEEDS_AWAIT)
    raise TypeError(f"Guard.claim must return a bool, not {first.__class__.__name__}")


def claim(guard: Guard | AsyncGuard, claimed: ClaimId | None, expires_at: int, now: int) -> None:
    """Claim a verified token in ``guard``: return on its first claim, else raise why it is refused.

    A token with no id (another writer's: mcp.d mints none) or no ``iat`` (requeststate
    0.3's) cannot be made single-use (``claim_id`` gives ``None``), and is refused as
    ``malformed`` wherever a guard is in use.

    Raises:
        InvalidToken: ``replayed``, ``guard_unavailable``, ``outside_memory`` or ``malformed``.
        TypeError: the guard is async (it needs ``aclaim``), or answered no bool.
    """
    if claimed is None:
        raise InvalidToken(Reason.MALFORMED)
    try:
        first = guard.claim(claimed, expires_at, now)
    except GuardUnavailable:
        raise InvalidToken(Reason.GUARD_UNAVAILABLE) from None
    _settle(first)


async def aclaim(guard: AsyncGuard | Guard, claimed: ClaimId | None, expires_at: int, now: int) -> None:
    """``claim``, awaiting an async guard's answer; a sync guard is called inline."""
    if claimed is None:
        raise InvalidToken(Reason.MALFORMED)
    try:
        first = guard.claim(claimed, expires_at, now)
        if isinstance(first, Awaitable):
            first = await first
    except GuardUnavailable:
        raise InvalidToken(Reason.GUARD_UNAVAILABLE) from None
    _settle(first)


def _kept(kept: object) -> str | None:
    if kept is None or isinstance(kept, str):
        return kept
    if isinstance(kept, Coroutine):
        kept.close()  # never awaited: close it, so no warning names the guard
        raise TypeError(ASYNC_GUARD_NEEDS_AWAIT)
    raise TypeError(f"Guard.redeem must return a str or None, not {kept.__class__.__name__}")


def redeem(
    guard: KeepingGuard, claimed: ClaimId | None, expires_at: int, now: int, request: str, lease_until: int
) -> str | None:
    """Redeem a verified token's id in ``guard`` for ``request``: ``None`` on its first claim, else the kept
    answer; raises as ``claim`` does, and with ``KeepingGuard.redeem``'s reasons."""
    if claimed is None:
        raise InvalidToken(Reason.MALFORMED)
    try:
        kept = guard.redeem(claimed, expires_at, now, request, lease_until)
    except GuardUnavailable:
        raise InvalidToken(Reason.GUARD_UNAVAILABLE) from None
    return _kept(kept)


async def aredeem(
    guard: KeepingGuard | AsyncKeepingGuard,
    claimed: ClaimId | None,
    expires_at: int,
    now: int,
    request: str,
    lease_until: int,
) -> str | None:
    """``redeem``, awaiting an async guard's answer; a sync guard is called inline."""
    if claimed is None:
        raise InvalidToken(Reason.MALFORMED)
    try:
        kept = guard.redeem(claimed, expires_at, now, request, lease_until)
        if isinstance(kept, Awaitable):
            kept = await kept
    except GuardUnavailable:
        raise InvalidToken(Reason.GUARD_UNAVAILABLE) from None
    return _kept(kept)
