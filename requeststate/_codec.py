"""``Codec``: options, clock, CSPRNG, guard and counts around the strict core (``_envelope``); functions."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, Final, Unpack, final

from ._envelope import open_token, seal_token
from ._errors import InvalidToken
from ._guard import ASYNC_GUARD_NEEDS_AWAIT, AsyncGuard, Guard, aclaim, claim, tell_lifetime
from ._keys import KeyRing, Keys, as_key_ring
from ._metrics import Counts
from ._modes import Mode, Modes, modes_from_env, wire_modes
from ._options import DEFAULT_TTL, CodecOptions, check_options, guard_is_async, now_from, ttl_from_env
from ._payload import T, read_state
from ._token_id import TOKEN_ID_BYTES, claim_id

__all__ = ["Codec", "decode", "encode", "verify"]


@final
class Codec:
    """Mints and verifies ``requestState`` tokens under options fixed and checked once.

    Args:
        keys: a ``KeyRing`` (its first key mints, every key verifies), or one raw secret.
        mode: ``"signed"`` (the client can read the state, not change it), ``"encrypted"``
            (neither) or ``"xchacha"`` (encrypted, with no per-key budget), a ``Mode``, or
            a tuple while migrating (the first mints). The server chooses, never the token.
        **options: see ``CodecOptions``. A bad one raises ``TypeError`` or ``ValueError``.

    Immutable and safe to share between threads; its repr never shows key bytes.
    """

    def __init__(self, keys: Keys, /, *, mode: Modes, **options: Unpack[CodecOptions]) -> None:
        self._keys: Final = as_key_ring(keys)
        self._modes, self._wires = wire_modes(mode)
        self._ttl, self._leeway, self._max_bytes, self._guard, self._clock, meter = check_options(options)
        self._counts: Final = None if meter is None else Counts(meter, self._modes)
        self._guard_is_async: Final = guard_is_async(self._guard)
        tell_lifetime(self._guard, self._ttl + self._leeway)
        # One read of the CSPRNG per token: the minting mode's nonce, then the token id's random bits.
        self._nonce_bytes: Final = self._wires[0].nonce_bytes
        self._random_bytes: Final = self._nonce_bytes + TOKEN_ID_BYTES

    @classmethod
    def from_env(
        cls,
        *,
        environ: Mapping[str, str] | None = None,
        mode: Modes = "encrypted",
        **options: Unpack[CodecOptions],
    ) -> Codec:
        """The codec the deployment configures: ``REQUESTSTATE_KEYS`` (required), ``_MODE`` and ``_TTL``.

        The recommended set-up for servers (docs/deployment.md). The variables, when set, win
        over ``mode`` and ``ttl``; one that cannot be used raises ``ValueError`` naming it and the fix.
        ``environ``: where to read them; ``None``, the process environment.
        """
        environ = os.environ if environ is None else environ  # a default's repr shows in help(): no keys
        options["ttl"] = ttl_from_env(environ, options.get("ttl", DEFAULT_TTL))
        return cls(KeyRing.from_env(environ=environ), mode=modes_from_env(environ, mode), **options)

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
        return self._max_bytes

    @property
    def guard(self) -> Guard | AsyncGuard | None:
        """The replay guard, or ``None`` (tokens may be redeemed until they expire)."""
        return self._guard

    @property
    def clock(self) -> Callable[[], float] | None:
        """The clock read when a call passes no ``now``; ``None``: ``time.time``."""
        return self._clock

    def __repr__(self) -> str:
        guard = "" if self._guard is None else f", guard={type(self._guard).__name__}"
        return f"Codec(keys={self._keys!r}, mode={','.join(self._modes)}, ttl={self._ttl}{guard})"

    def encode(
        self, state: object, /, *, subject: str = "", tool: str | None = None, now: int | None = None
    ) -> str:
        """Mint a token that carries ``state`` for ``ttl`` seconds, bound to ``subject`` and ``tool``.

        Args:
            state: a ``str``, carried as is, or any value msgspec encodes, as its JSON text
                (not ``bytes``: a ``TypeError`` says to pass the value, or its text).
            subject: the authenticated user, from the auth context (never the request); ``""``: none.
            tool: the tool, prompt or resource the state belongs to; ``None`` binds the subject alone.
            now: unix seconds to mint at; the codec's clock when ``None``.

        Raises:
            TypeError, ValueError: an invalid identity (docs/wire-format.md, "The bind tag"), a
                state msgspec cannot encode, a token over ``max_token_bytes``, or a bad ``now``.
            KeyBudgetExhausted: the minting key has sealed its AES-GCM limit.
        """
        minted = now_from(now, self._clock)
        random = os.urandom(self._random_bytes)
        nonce, token_id = random[: self._nonce_bytes], random[self._nonce_bytes :].hex()
        exp = minted + self._ttl
        token = seal_token(
            state, self._wires[0], self._keys, subject, tool, exp, nonce, token_id, minted, self._max_bytes
        )
        if self._counts is not None:
            self._counts.minted()
        return token

    def _checked(
        self, token: object, subject: object, tool: object, now: object, type: Any, *, raising: bool
    ) -> Any:
        # verify and decode in one: a refusal is counted, then raised or None (docs/performance.md).
        if self._guard_is_async:
            raise TypeError(ASYNC_GUARD_NEEDS_AWAIT)
        now = now_from(now, self._clock)
        try:
            payload, wire = open_token(
                token, self._wires, self._keys, subject, tool, now, self._leeway, self._max_bytes
            )
            state = payload.s if type is None else read_state(payload.s, type)
            if self._guard is not None:
                claim(self._guard, claim_id(payload.id, payload.iat), payload.exp + self._leeway, now)
        except InvalidToken as refused:
            if self._counts is not None:
                self._counts.refused(refused.reason)
            if raising:
                raise
            return None
        if self._counts is not None:
            self._counts.accepted(wire.prefix, self._guard is not None)
        return state

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

        The checks run in the order ``open_token`` documents (authentication first),
        then ``type``, and last the guard's claim.

        Args:
            token: the echoed ``requestState``, as the client sent it (any type).
            subject, tool: the identity the token must be bound to, as at ``encode``.
                An invalid identity (of any type) is a refusal, never an error.
            now: unix seconds to verify at; the codec's clock when ``None``.
            type: decode the state's JSON text as this type (msgspec, strict);
                without it, the state is its text, a ``str``.

        Raises:
            InvalidToken: the token is refused; ``.reason`` is for logs only.
            TypeError, ValueError: the guard is async (use ``averify``), or ``now`` is
                not an int from -2**63 to 2**63-1.
        """
        return self._checked(token, subject, tool, now, type, raising=True)  # type: ignore[no-any-return]

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

        ``verify`` without the reason: it never raises for what the client sent, only
        ``TypeError`` or ``ValueError`` for the caller's own mistakes (an async guard, use
        ``adecode``; a ``now`` that is not an int from -2**63 to 2**63-1).
        """
        return self._checked(token, subject, tool, now, type, raising=False)  # type: ignore[no-any-return]

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
        """``verify`` for asyncio servers: the checks run inline, then an async guard's claim is awaited."""
        now = now_from(now, self._clock)
        try:
            payload, wire = open_token(
                token, self._wires, self._keys, subject, tool, now, self._leeway, self._max_bytes
            )
            state = payload.s if type is None else read_state(payload.s, type)
            if self._guard is not None:
                await aclaim(self._guard, claim_id(payload.id, payload.iat), payload.exp + self._leeway, now)
        except InvalidToken as refused:
            if self._counts is not None:
                self._counts.refused(refused.reason)
            raise
        if self._counts is not None:
            self._counts.accepted(wire.prefix, self._guard is not None)
        return state  # type: ignore[return-value]

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
    # Each value's type is in the key: True == 1 and hashes alike, yet is no valid ttl of 1.
    key = tuple((name, type(value), value) for name, value in sorted(options.items()))
    try:
        return _cached_codec(keys, mode, key)
    except TypeError:  # an unhashable guard or clock: a codec for this call (or the option's own error)
        return Codec(keys, mode=mode, **options)


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
