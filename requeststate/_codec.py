"""The codec: ``Codec`` holds validated options; ``encode``/``verify``/``decode`` are functions over it.

``Codec`` is built once per configuration, as ``msgspec.json.Decoder`` is:
keys, modes, lifetime, size cap, guard and clock are checked at construction,
and every call does only the token's own work, in the strict core
(``_core.Core``), which returns a refusal's reason instead of raising it.
Then the guard's claim, last. ``verify`` raises ``InvalidToken(reason)``;
``decode`` is the thin adapter that turns every refusal into ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from functools import lru_cache
from typing import Any, Final, TypeVar, cast, final, overload

from ._core import Core
from ._envelope import Payload
from ._errors import InvalidToken, Reason
from ._guard import ASYNC_GUARD_NEEDS_AWAIT, AsyncGuard, Guard, aclaim, claim
from ._keys import KeyRing
from ._modes import Mode, Modes, wire_modes
from ._options import Keys, check_clock, check_guard, check_int, guard_is_async, key_ring

__all__ = [
    "DEFAULT_MAX_TOKEN_BYTES",
    "DEFAULT_TTL",
    "Codec",
    "adecode",
    "averify",
    "decode",
    "encode",
    "verify",
]

T = TypeVar("T")

DEFAULT_TTL: Final = 300
DEFAULT_MAX_TOKEN_BYTES: Final = 64 * 1024


@final
class Codec:
    """Mints and verifies ``requestState`` tokens under options fixed and checked once.

    ::

        codec = rs.Codec(rs.KeyRing.from_env(), mode="encrypted", ttl=300)
        token = codec.encode(state, subject=user, tool="book")
        state = codec.decode(token, subject=user, tool="book")   # None if refused

    Args:
        keys: a ``KeyRing`` (its first key mints, every key verifies), or one
            raw secret of at least 32 bytes.
        mode: ``"signed"`` (the client can read the state, not change it),
            ``"encrypted"`` (neither) or ``"xchacha"`` (encrypted, with no
            per-key budget), or a ``Mode``; or a tuple of them while migrating:
            the first mints, all are accepted. A token of any other mode is
            refused: the server chooses the mode, never the token.
        ttl: lifetime of a minted token, in whole seconds (at least 1).
        leeway: seconds of clock skew tolerated after a token's expiry.
        max_token_bytes: refuse a longer token before decoding anything, and
            refuse to mint one.
        guard: a replay guard (``MemoryGuard()``, ``RedisGuard``, any ``Guard``
            or ``AsyncGuard`` instance) that makes every token single-use: its
            id is claimed once every other check has passed.
        clock: unix seconds, read on each call without ``now=``; the system
            clock when ``None``.

    Raises:
        TypeError, ValueError: a bad option, stating the requirement.

    A codec is immutable in use and safe to share between threads. Its repr
    names the minting key's fingerprint, never key bytes.
    """

    __slots__ = (
        "_core",
        "_guard",
        "_guard_is_async",
        "_keys",
        "_modes",
    )

    def __init__(
        self,
        keys: Keys,
        /,
        *,
        mode: Modes,
        ttl: int = DEFAULT_TTL,
        leeway: int = 0,
        max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
        guard: Guard | AsyncGuard | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._keys: Final = key_ring(keys)
        self._modes, wires = wire_modes(mode)
        ttl = check_int("ttl", ttl, 1)
        leeway = check_int("leeway", leeway, 0)
        max_token_bytes = check_int("max_token_bytes", max_token_bytes, 1)
        check_guard(guard)
        self._guard: Final = guard
        self._guard_is_async: Final = guard_is_async(guard)
        # The options the token's work reads are held there, once.
        self._core: Final = Core(self._keys, wires, ttl, leeway, max_token_bytes, check_clock(clock))

    @property
    def keys(self) -> KeyRing:
        """The key ring: the first key mints, every key verifies."""
        return self._keys

    @property
    def modes(self) -> tuple[Mode, ...]:
        """The accepted modes, in order; the first mints."""
        return self._modes

    @property
    def ttl(self) -> int:
        """Seconds a minted token lives."""
        return self._core.ttl

    @property
    def leeway(self) -> int:
        """Seconds of clock skew tolerated after expiry."""
        return self._core.leeway

    @property
    def max_token_bytes(self) -> int:
        """The longest token minted or read."""
        return self._core.max_token_bytes

    @property
    def guard(self) -> Guard | AsyncGuard | None:
        """The replay guard, or ``None`` (tokens may be redeemed until they expire)."""
        return self._guard

    def __repr__(self) -> str:
        modes = ",".join(self._modes)
        guard = "" if self._guard is None else f", guard={type(self._guard).__name__}"
        return f"Codec(keys={self._keys!r}, mode={modes}, ttl={self._core.ttl}{guard})"

    def encode(
        self, state: object, /, *, subject: str = "", tool: str | None = None, now: int | None = None
    ) -> str:
        """Mint a token that carries ``state`` for ``ttl`` seconds, bound to ``subject`` and ``tool``.

        Args:
            state: a ``str``, carried as is, or any value msgspec can encode,
                carried as its JSON text (read it back with ``type=``).
            subject: the authenticated user, from the server's auth context
                (never from the request); ``""`` for none.
            tool: the tool, prompt or resource the state belongs to; ``None``
                binds the subject alone.
            now: unix seconds to mint at; the codec's clock when ``None``.

        Every token carries a random 128-bit id, so a guard can make it single-use.

        Raises:
            TypeError, ValueError: an invalid identity (not a ``str``, U+0000, a
                lone surrogate, or a subject alone that reads as a JSON object),
                a state msgspec cannot encode, or a token over ``max_token_bytes``.
            KeyBudgetExhausted: the minting key has sealed its AES-GCM limit.
        """
        return self._core.encode(state, subject, tool, now)

    def _claim(self, verified: tuple[Any, Payload, int]) -> Reason | None:
        # The guard's claim, last: None when the token is accepted.
        if self._guard is None:
            return None
        _, payload, moment = verified
        return claim(self._guard, payload.id, payload.exp + self._core.leeway, moment)

    async def _aclaim(self, verified: tuple[Any, Payload, int]) -> Reason | None:
        if self._guard is None:
            return None
        _, payload, moment = verified
        return await aclaim(self._guard, payload.id, payload.exp + self._core.leeway, moment)

    @overload
    def verify(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: None = None,
    ) -> str: ...
    @overload
    def verify(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: type[T],
    ) -> T: ...
    def verify(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: Any = None,
    ) -> Any:
        """Return the state a token carries, or raise ``InvalidToken`` saying why not.

        The checks run in this order, and authentication comes before any claim
        is read: type and size, prefix against the modes accepted, the
        identity's validity (no decoding yet), framing, MAC or AEAD tag (under
        each key of the ring), payload, expiry, binding, ``type``, and last the
        guard's claim.

        Args:
            token: the echoed ``requestState``, as the client sent it (any type).
            subject, tool: the identity the token must be bound to, as at ``encode``.
                An invalid identity (of any type) is a refusal, never an error.
            now: unix seconds to verify at; the codec's clock when ``None``.
            type: decode the state's JSON text as this type (msgspec, strict).

        Raises:
            InvalidToken: the token is refused; ``.reason`` is for logs only.
            TypeError: the codec's guard is async (use ``averify``), or ``now``
                is not an ``int``.
        """
        if self._guard_is_async:
            raise TypeError(ASYNC_GUARD_NEEDS_AWAIT)
        verified = self._core.verified(token, subject, tool, now, type)
        if isinstance(verified, tuple):
            refused = self._claim(verified)
            if refused is None:
                return verified[0]
        else:
            refused = verified
        raise InvalidToken(refused)

    @overload
    def decode(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: None = None,
    ) -> str | None: ...
    @overload
    def decode(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: type[T],
    ) -> T | None: ...
    def decode(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: Any = None,
    ) -> Any:
        """Return the state a token carries, or ``None`` if it is refused for any reason.

        ``verify`` without the reason: whatever the client sent as the token, and
        whatever the identity, this never raises for it. Use ``verify`` where the
        log should say why a token was refused.
        """
        if self._guard_is_async:
            raise TypeError(ASYNC_GUARD_NEEDS_AWAIT)
        verified = self._core.verified(token, subject, tool, now, type)
        if not isinstance(verified, tuple):
            return None
        return verified[0] if self._guard is None or self._claim(verified) is None else None

    @overload
    async def averify(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: None = None,
    ) -> str: ...
    @overload
    async def averify(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: type[T],
    ) -> T: ...
    async def averify(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: Any = None,
    ) -> Any:
        """``verify`` for asyncio servers: the same checks, then awaits an async guard's claim.

        The cryptography runs inline (it takes microseconds); only the claim, a
        network round trip for ``AsyncRedisGuard``, is awaited. A sync guard is
        called inline.
        """
        verified = self._core.verified(token, subject, tool, now, type)
        if isinstance(verified, tuple):
            refused = await self._aclaim(verified)
            if refused is None:
                return verified[0]
        else:
            refused = verified
        raise InvalidToken(refused)

    @overload
    async def adecode(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: None = None,
    ) -> str | None: ...
    @overload
    async def adecode(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: type[T],
    ) -> T | None: ...
    async def adecode(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: Any = None,
    ) -> Any:
        """``decode`` for asyncio servers: awaits an async guard; ``None`` for every refusal."""
        verified = self._core.verified(token, subject, tool, now, type)
        if not isinstance(verified, tuple):
            return None
        return verified[0] if await self._aclaim(verified) is None else None


# The functions: one Codec per distinct set of options, built on first use.
# typed: True == 1 and hashes alike, and must not pass as a validated ttl of 1.
@lru_cache(maxsize=64, typed=True)
def _cached_codec(
    keys: Keys, mode: Modes, ttl: int, leeway: int, max_token_bytes: int, guard: Hashable
) -> Codec:
    # The Guard protocols promise no hash; most guards hash by identity, and
    # one that cannot is built uncached by _codec.
    return Codec(
        keys,
        mode=mode,
        ttl=ttl,
        leeway=leeway,
        max_token_bytes=max_token_bytes,
        guard=cast("Guard | None", guard),
    )


def _codec(
    keys: Keys, mode: Modes, ttl: int, leeway: int, max_token_bytes: int, guard: Guard | AsyncGuard | None
) -> Codec:
    try:
        return _cached_codec(keys, mode, ttl, leeway, max_token_bytes, cast("Hashable", guard))
    except TypeError:  # an unhashable option: build it uncached, and let Codec say what is wrong
        return Codec(keys, mode=mode, ttl=ttl, leeway=leeway, max_token_bytes=max_token_bytes, guard=guard)


def encode(
    state: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    ttl: int = DEFAULT_TTL,
    now: int | None = None,
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
) -> str:
    """Mint a token: ``Codec(keys, mode=mode, ttl=ttl, ...).encode(state, ...)``, the codec cached.

    ``mode`` here names the one mode to mint in. See ``Codec`` and ``Codec.encode``.
    """
    return _codec(keys, mode, ttl, 0, max_token_bytes, None).encode(
        state, subject=subject, tool=tool, now=now
    )


@overload
def verify(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: None = None,
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: Guard | None = None,
) -> str: ...
@overload
def verify(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: type[T],
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: Guard | None = None,
) -> T: ...
def verify(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: Any = None,
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: Guard | None = None,
) -> Any:
    """Return a token's state or raise ``InvalidToken``: ``Codec(keys, ...).verify(token, ...)``, cached.

    See ``Codec.verify`` for the checks and their order.
    """
    codec = _codec(keys, mode, DEFAULT_TTL, leeway, max_token_bytes, guard)
    return codec.verify(token, subject=subject, tool=tool, now=now, type=type)


@overload
def decode(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: None = None,
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: Guard | None = None,
) -> str | None: ...
@overload
def decode(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: type[T],
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: Guard | None = None,
) -> T | None: ...
def decode(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: Any = None,
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: Guard | None = None,
) -> Any:
    """Return a token's state, or ``None`` for every refusal: ``Codec(keys, ...).decode(token, ...)``, cached.

    Never raises for the token or the identity; only a bad option raises.
    """
    codec = _codec(keys, mode, DEFAULT_TTL, leeway, max_token_bytes, guard)
    return codec.decode(token, subject=subject, tool=tool, now=now, type=type)


@overload
async def averify(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: None = None,
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: AsyncGuard | Guard | None = None,
) -> str: ...
@overload
async def averify(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: type[T],
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: AsyncGuard | Guard | None = None,
) -> T: ...
async def averify(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: Any = None,
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: AsyncGuard | Guard | None = None,
) -> Any:
    """``verify`` for asyncio servers: ``Codec(keys, ...).averify(token, ...)``, cached."""
    codec = _codec(keys, mode, DEFAULT_TTL, leeway, max_token_bytes, guard)
    return await codec.averify(token, subject=subject, tool=tool, now=now, type=type)


@overload
async def adecode(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: None = None,
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: AsyncGuard | Guard | None = None,
) -> str | None: ...
@overload
async def adecode(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: type[T],
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: AsyncGuard | Guard | None = None,
) -> T | None: ...
async def adecode(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    leeway: int = 0,
    now: int | None = None,
    type: Any = None,
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    guard: AsyncGuard | Guard | None = None,
) -> Any:
    """``decode`` for asyncio servers: ``Codec(keys, ...).adecode(token, ...)``, cached."""
    codec = _codec(keys, mode, DEFAULT_TTL, leeway, max_token_bytes, guard)
    return await codec.adecode(token, subject=subject, tool=tool, now=now, type=type)
