"""``Codec``: the options, clock, CSPRNG and guard around the strict core (``_envelope``), and functions.

``verify`` raises the core's ``InvalidToken(reason)``, then claims the token in
the guard, last; ``decode`` is the thin adapter that turns any refusal into ``None``.
"""

from __future__ import annotations

import os
import time
import typing
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final, Unpack, final

from ._envelope import TOKEN_ID_BYTES, open_token, seal_token
from ._errors import InvalidToken
from ._guard import ASYNC_GUARD_NEEDS_AWAIT, AsyncGuard, Guard, aclaim, claim
from ._keys import KeyRing, Keys, as_key_ring
from ._modes import Mode, Modes, wire_modes
from ._options import INT64_MIN, CodecOptions, check_int, check_options, guard_is_async
from ._payload import Payload, read_state

__all__ = ["Codec", "decode", "encode", "verify"]

if TYPE_CHECKING:  # a TypeVar default (PEP 696): typing's own TypeVar takes one from Python 3.13
    from typing_extensions import TypeVar

    T = TypeVar("T", default=str)  # the state's type: its text, a str, unless type= names another
else:
    T = typing.TypeVar("T")


@final
class Codec:
    """Mints and verifies ``requestState`` tokens under options fixed and checked once.

    ::

        codec = rs.Codec(rs.KeyRing.from_env(), mode="encrypted", ttl=300)
        token = codec.encode(state, subject=user, tool="book")
        state = codec.decode(token, subject=user, tool="book")   # None if refused

    Args:
        keys: a ``KeyRing`` (its first key mints, every key verifies), or one raw secret.
        mode: ``"signed"`` (the client can read the state, not change it),
            ``"encrypted"`` (neither) or ``"xchacha"`` (encrypted, with no per-key
            budget), a ``Mode``, or a tuple of them while migrating (the first
            mints). A token of any other mode is refused: the server chooses.
        **options: ``ttl``, ``leeway``, ``max_token_bytes``, ``guard``, ``clock``: see ``CodecOptions``.

    Raises:
        TypeError, ValueError: a bad option, stating the requirement.

    Immutable and safe to share between threads; its repr never shows key bytes.
    """

    def __init__(self, keys: Keys, /, *, mode: Modes, **options: Unpack[CodecOptions]) -> None:
        self._keys: Final = as_key_ring(keys)
        self._modes, self._wires = wire_modes(mode)
        self._ttl, self._leeway, self._max_token_bytes, self._guard, self._clock = check_options(options)
        self._guard_is_async: Final = guard_is_async(self._guard)
        # One read of the CSPRNG per token: the minting mode's nonce, then the token id.
        self._random_bytes: Final = self._wires[0].nonce_bytes + TOKEN_ID_BYTES

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
        return self._ttl

    @property
    def leeway(self) -> int:
        """Seconds of clock skew tolerated after expiry."""
        return self._leeway

    @property
    def max_token_bytes(self) -> int:
        """The longest token minted or read."""
        return self._max_token_bytes

    @property
    def guard(self) -> Guard | AsyncGuard | None:
        """The replay guard, or ``None`` (tokens may be redeemed until they expire)."""
        return self._guard

    def __repr__(self) -> str:
        guard = "" if self._guard is None else f", guard={type(self._guard).__name__}"
        return f"Codec(keys={self._keys!r}, mode={','.join(self._modes)}, ttl={self._ttl}{guard})"

    def _now(self, now: object) -> int:
        # time.time is looked up per call, so a test's patched clock (freezegun) is seen.
        if now is None:
            return int(time.time() if self._clock is None else self._clock())
        return check_int("now", now, INT64_MIN)

    def encode(
        self, state: object, /, *, subject: str = "", tool: str | None = None, now: int | None = None
    ) -> str:
        """Mint a token that carries ``state`` for ``ttl`` seconds, bound to ``subject`` and ``tool``.

        Each token has a random 128-bit id, which a guard claims to make it single-use.

        Args:
            state: a ``str``, carried as is, or any value msgspec can encode,
                carried as its JSON text (read it back with ``type=``).
            subject: the authenticated user, from the server's auth context
                (never from the request); ``""`` for none.
            tool: the tool, prompt or resource the state belongs to; ``None``
                binds the subject alone.
            now: unix seconds to mint at; the codec's clock when ``None``.

        Raises:
            TypeError, ValueError: an invalid identity (not a ``str``, U+0000, a
                lone surrogate, or a subject alone that reads as a JSON object), a
                state msgspec cannot encode, a token over ``max_token_bytes``, or a
                ``now`` that is not an int whose expiry fits in a signed 64-bit int.
            KeyBudgetExhausted: the minting key has sealed its AES-GCM limit.
        """
        exp = self._now(now) + self._ttl
        random = os.urandom(self._random_bytes)
        return seal_token(
            state, self._wires[0], self._keys, subject, tool, exp, random, self._max_token_bytes
        )

    def _verified(
        self, token: object, subject: object, tool: object, now: object, type: Any
    ) -> tuple[Any, Payload, int]:
        # Every check but the guard's: (state, payload, the time checked at), or InvalidToken.
        moment = self._now(now)
        payload = open_token(
            token, self._wires, self._keys, subject, tool, moment, self._leeway, self._max_token_bytes
        )
        return payload.s if type is None else read_state(payload.s, type), payload, moment

    def verify(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: type[T] | None = None,
    ) -> T:
        """Return the state a token carries, or raise ``InvalidToken`` saying why not.

        The checks run in the order ``open_token`` documents (authentication
        before any claim is read), then ``type``, and last the guard's claim.

        Args:
            token: the echoed ``requestState``, as the client sent it (any type).
            subject, tool: the identity the token must be bound to, as at ``encode``.
                An invalid identity (of any type) is a refusal, never an error.
            now: unix seconds to verify at; the codec's clock when ``None``.
            type: decode the state's JSON text as this type (msgspec, strict);
                without it, the state is its text, a ``str``.

        Raises:
            InvalidToken: the token is refused; ``.reason`` is for logs only.
            TypeError: the codec's guard is async (use ``averify``), or ``now``
                is not an ``int``.
            ValueError: ``now`` is outside -2**63 to 2**63-1.
        """
        if self._guard_is_async:
            raise TypeError(ASYNC_GUARD_NEEDS_AWAIT)
        state, payload, moment = self._verified(token, subject, tool, now, type)
        if self._guard is not None:
            claim(self._guard, payload.id, payload.exp + self._leeway, moment)
        return state  # type: ignore[no-any-return]

    def decode(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: type[T] | None = None,
    ) -> T | None:
        """Return the state a token carries, or ``None`` if it is refused for any reason.

        ``verify`` without the reason: it never raises for what the client sent,
        only for the caller's own mistakes (an async guard, a bad ``now``).
        """
        if self._guard_is_async:
            raise TypeError(ASYNC_GUARD_NEEDS_AWAIT)
        try:
            state, payload, moment = self._verified(token, subject, tool, now, type)
            if self._guard is not None:
                claim(self._guard, payload.id, payload.exp + self._leeway, moment)
        except InvalidToken:
            return None
        return state  # type: ignore[no-any-return]

    async def averify(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: type[T] | None = None,
    ) -> T:
        """``verify`` for asyncio servers: the same checks, then awaits an async guard's claim.

        The cryptography runs inline (it takes microseconds); only the claim, a
        network round trip for ``AsyncRedisGuard``, is awaited. A sync guard is
        called inline.
        """
        state, payload, moment = self._verified(token, subject, tool, now, type)
        if self._guard is not None:
            await aclaim(self._guard, payload.id, payload.exp + self._leeway, moment)
        return state  # type: ignore[no-any-return]

    async def adecode(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: type[T] | None = None,
    ) -> T | None:
        """``decode`` for asyncio servers: awaits an async guard; ``None`` for every refusal."""
        try:
            return await self.averify(token, subject=subject, tool=tool, now=now, type=type)
        except InvalidToken:
            return None


# The functions: one Codec per distinct set of options, built on first use.
@lru_cache(maxsize=64)
def _cached_codec(keys: Keys, mode: Modes, options: tuple[tuple[str, type, object], ...]) -> Codec:
    return Codec(keys, mode=mode, **{name: value for name, _, value in options})  # type: ignore[arg-type]


def _codec(keys: Keys, mode: Modes, options: CodecOptions) -> Codec:
    # Each value's type is part of the key: True == 1 and hashes alike, and must
    # not pass as a validated ttl of 1.
    key = (keys, mode, tuple((name, type(value), value) for name, value in sorted(options.items())))
    try:
        hash(key)
    except TypeError:  # an unhashable guard or clock: a codec built for this call
        return Codec(keys, mode=mode, **options)
    return _cached_codec(*key)


def encode(
    state: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    now: int | None = None,
    **options: Unpack[CodecOptions],
) -> str:
    """A new token: ``Codec(keys, mode=mode, **options).encode(state, ...)``, the codec cached."""
    return _codec(keys, mode, options).encode(state, subject=subject, tool=tool, now=now)


def verify(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    now: int | None = None,
    type: type[T] | None = None,
    **options: Unpack[CodecOptions],
) -> T:
    """A token's state, or ``InvalidToken``: ``Codec(keys, mode=mode, **options).verify(...)``, cached."""
    return _codec(keys, mode, options).verify(token, subject=subject, tool=tool, now=now, type=type)


def decode(
    token: object,
    keys: Keys,
    /,
    *,
    mode: Modes,
    subject: str = "",
    tool: str | None = None,
    now: int | None = None,
    type: type[T] | None = None,
    **options: Unpack[CodecOptions],
) -> T | None:
    """A token's state, or ``None`` if refused: ``Codec(keys, mode=mode, **options).decode(...)``, cached."""
    return _codec(keys, mode, options).decode(token, subject=subject, tool=tool, now=now, type=type)
