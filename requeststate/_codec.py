"""``Codec``: options, clock, CSPRNG, guard and counts around the strict core (``_envelope``); functions."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, Final, NamedTuple, TypeAlias, Unpack, cast, final

from ._bounds import INT64_MIN, check_int
from ._claims import Claims
from ._envelope import open_token, seal_token
from ._errors import InvalidToken, Reason
from ._guard import (
    ASYNC_GUARD_NEEDS_AWAIT,
    AsyncGuard,
    AsyncKeepingGuard,
    Guard,
    GuardUnavailable,
    KeepingGuard,
    aclaim,
    aredeem,
    claim,
    is_async_guard,
    keeps_answers,
    mint_note,
    redeem,
    tell_leeway,
)
from ._guard_url import guard_from_env
from ._keys import BoundKey, KeyRing, Keys, as_key_ring
from ._metrics import Counts, Meter
from ._modes import Mode, WireMode, modes_from_env, wire_of
from ._options import DEFAULT_MODE, DEFAULT_TTL, CodecOptions, Context, check_options, ttl_from_env
from ._payload import Payload, T, read_state
from ._redemption import Kept, Redemption, answer_mode, answer_tool
from ._token_id import TOKEN_ID_BYTES, ClaimId, claim_id

__all__ = ["CallOptions", "Codec", "decode", "encode", "verify"]

# What a token opened to: its state (as asked for), its payload, its mode's wire format, and
# the key it verified under. A plain tuple: it is built on every token, and read here only.
_Opened: TypeAlias = "tuple[Any, Payload, WireMode, BoundKey]"


def now_from(now: object, clock: Callable[[], float] | None) -> int:
    """The time a call runs at: ``now`` if given (an int), else the clock's reading, in whole seconds."""
    if now is None:
        # time.time is looked up per call, so a test's patched clock (freezegun) is seen.
        return int(time.time() if clock is None else clock())
    return check_int("now", now, INT64_MIN)


class _Redeeming(NamedTuple):
    """A redemption on its way: its guard's ``redeem`` arguments, and what its token was checked for."""

    claim_id: ClaimId | None
    expires_at: int
    now: int
    request: str
    lease_until: int
    subject: str
    tool: str | None

    @property
    def call(self) -> tuple[ClaimId | None, int, int, str, int]:
        """The arguments of the guard's ``redeem``, after the guard."""
        return self.claim_id, self.expires_at, self.now, self.request, self.lease_until


@final
class Codec:
    """Mints and verifies ``requestState`` tokens under options fixed and checked once.

    Args:
        keys: a ``KeyRing`` (its first key mints, every key verifies), or one raw secret.
        **options: see ``CodecOptions``: ``mode`` (default ``"encrypted"``), ``ttl``,
            ``leeway``, ``max_token_bytes``, ``guard``, ``clock``, ``metrics``. A bad
            one raises ``TypeError`` or ``ValueError``.

    Each call takes the ``Context`` it runs in by keyword: ``subject``, ``tool`` and ``now``
    (spelled out on each method: docs/performance.md says why).
    Immutable and safe to share between threads; its repr never shows key bytes.
    """

    def __init__(self, keys: Keys, /, **options: Unpack[CodecOptions]) -> None:
        self._keys: Final = as_key_ring(keys)
        settings = check_options(options)
        self._settings: Final = settings
        self._wires: Final = tuple(map(wire_of, settings.mode))
        self._mode_of: Final = dict(zip(self._wires, settings.mode, strict=True))
        # Read on every token: kept as attributes of their own.
        self._leeway: Final = settings.leeway
        self._max_bytes: Final = settings.max_token_bytes
        self._guard: Final = settings.guard
        self._clock: Final = settings.clock
        self._counts: Final = None if settings.metrics is None else Counts(settings.metrics, settings.mode)
        self._guard_is_async: Final = is_async_guard(settings.guard)
        self._ttl: Final = settings.ttl
        self._lease: Final = settings.lease
        self._answer_wire: Final = wire_of(answer_mode(settings.mode[0]))
        tell_leeway(settings.guard, settings.leeway)
        # A guard that serves its own process's tokens from its first second hears of each.
        self._mint_note: Final = mint_note(settings.guard)
        # One read of the CSPRNG per token: the minting mode's nonce, then the token id's random bits.
        self._nonce_bytes: Final = self._wires[0].nonce_bytes
        self._random_bytes: Final = self._nonce_bytes + TOKEN_ID_BYTES

    @classmethod
    def from_env(
        cls,
        *,
        environ: Mapping[str, str] | None = None,
        asyncio: bool = False,
        **options: Unpack[CodecOptions],
    ) -> Codec:
        """The deployment's codec: ``REQUESTSTATE_KEYS`` (required), ``_MODE``, ``_TTL``, ``_GUARD``.

        The recommended set-up for servers (docs/deployment.md). The variables, when set, win
        over ``mode``, ``ttl`` and ``guard``; one that cannot be used raises ``ValueError``
        naming it and the fix. ``REQUESTSTATE_GUARD`` is a URL (``guard_from_url``); with
        ``asyncio=True`` it builds the asyncio guard of its store, for ``averify``/``adecode``
        (an MCP server's). ``environ``: where to read them; ``None``, the process environment.
        """
        environ = os.environ if environ is None else environ  # a default's repr shows in help(): no keys
        options["ttl"] = ttl_from_env(environ, options.get("ttl", DEFAULT_TTL))
        options["mode"] = modes_from_env(environ, options.get("mode", DEFAULT_MODE))
        keys = KeyRing.from_env(environ=environ)  # the keys first: a guard's client is built last
        guard = guard_from_env(environ, asyncio=asyncio)
        if guard is not None:
            options["guard"] = guard
        return cls(keys, **options)

    def replace(self, **changes: Unpack[CodecOptions]) -> Codec:
        """A codec with the same keys and options, but for ``changes``: as ``dataclasses.replace`` does.

        ``codec.replace(guard=None)``, ``codec.replace(mode="signed", ttl=60)``. Each
        option is checked again, as by ``Codec``. For other keys: ``Codec(keys, **codec.options)``.
        """
        options = self.options
        options.update(changes)
        return Codec(self._keys, **options)

    @property
    def options(self) -> CodecOptions:
        """Every option of this codec, defaults filled in: ``Codec(keys, **codec.options)`` is its like."""
        return self._settings.as_options()

    @property
    def keys(self) -> KeyRing:
        """The key ring: the first key mints, every key verifies."""
        return self._keys

    @property
    def modes(self) -> tuple[Mode, ...]:
        """The accepted modes, in order; the first mints."""
        return self._settings.mode

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

    @property
    def lease(self) -> int:
        """Seconds an exactly-once redemption's first call holds its action (``redeem``)."""
        return self._lease

    @property
    def metrics(self) -> Meter | None:
        """The OpenTelemetry meter tokens are counted on, or ``None``: nothing is counted."""
        return self._settings.metrics

    def __repr__(self) -> str:
        guard = "" if self._guard is None else f", guard={type(self._guard).__name__}"
        return f"Codec(keys={self._keys!r}, mode={','.join(self.modes)}, ttl={self.ttl}{guard})"

    # The methods spell out subject=, tool= and now= (the ``Context``) rather than take
    # **context: Unpack[Context], which cost 7% of a decode (docs/performance.md).
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
        token = seal_token(
            state,
            self._wires[0],
            self._keys,
            subject,
            tool,
            minted + self._ttl,
            nonce,
            token_id,
            minted,
            self._max_bytes,
        )
        if self._mint_note is not None:
            self._mint_note(ClaimId(token_id, minted))
        if self._counts is not None:
            self._counts.minted()
        return token

    def open(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: type[T] | None = None,
    ) -> Claims[T]:
        """The claims of a token that passes every check of ``verify``: its state, expiry, id, mode and key.

        ``verify`` returns the state alone; ``open`` is for a caller who also needs the
        token's ``exp`` or id (a log line, a store of its own). The arguments and the
        errors are ``verify``'s.
        """
        if self._guard_is_async:
            raise TypeError(ASYNC_GUARD_NEEDS_AWAIT)
        return self._claims(self._opened(token, subject, tool, now, type, raising=True))

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
        if self._guard_is_async:
            raise TypeError(ASYNC_GUARD_NEEDS_AWAIT)
        opened = self._opened(token, subject, tool, now, type, raising=True)
        return opened[0]  # type: ignore[index,no-any-return]

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
        if self._guard_is_async:
            raise TypeError(ASYNC_GUARD_NEEDS_AWAIT)
        opened = self._opened(token, subject, tool, now, type, raising=False)
        return None if opened is None else opened[0]

    async def aopen(
        self,
        token: object,
        /,
        *,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: type[T] | None = None,
    ) -> Claims[T]:
        """``open`` for asyncio servers: the checks run inline, then an async guard's claim is awaited."""
        opened = (
            await self._aopened(token, subject, tool, now, type, raising=True)
            if self._guard_is_async
            else self._opened(token, subject, tool, now, type, raising=True)
        )
        return self._claims(opened)

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
        opened = (
            await self._aopened(token, subject, tool, now, type, raising=True)
            if self._guard_is_async
            else self._opened(token, subject, tool, now, type, raising=True)
        )
        return opened[0]  # type: ignore[index,no-any-return]

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
        opened = (
            await self._aopened(token, subject, tool, now, type, raising=False)
            if self._guard_is_async
            else self._opened(token, subject, tool, now, type, raising=False)
        )
        return None if opened is None else opened[0]

    def redeem(
        self,
        token: object,
        /,
        *,
        request: str,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: type[T] | None = None,
    ) -> Redemption[T]:
        """Accept a token exactly once for ``request``: its first call runs the action, an identical retry
        gets the first call's answer (docs/exactly-once.md).

        The checks are ``verify``'s; then the guard (a ``KeepingGuard``: every guard of
        requeststate is one) claims the token's id for ``request``, what makes a retry
        identical (for an MCP server: the method, target, arguments and input responses; the
        guard holds its digest only). On the first call, ``Redemption.answer`` is ``None``: run
        the action, then ``keep`` its answer. On an identical retry it is that answer, opened:
        run nothing. A retry while the first call has kept no answer is refused as
        ``in_progress`` (within the codec's ``lease``) or ``outcome_unknown`` (past it); one of
        another ``request``, as ``replayed``; one whose answer was too large, as
        ``answer_too_large``. The action never runs twice for one token.

        Raises:
            InvalidToken: as ``verify``, and with the reasons above.
            TypeError: the codec's guard keeps no answers (or there is none), or it is async
                (use ``aredeem``).
        """
        guard = cast("KeepingGuard", self._keeping())
        if self._guard_is_async:
            raise TypeError(ASYNC_GUARD_NEEDS_AWAIT)
        opened, claimed = self._redeeming(token, subject, tool, now, type, request)
        try:
            kept = redeem(guard, *claimed.call)
        except InvalidToken as refused:
            self._refused(refused, False)  # counted
            raise
        return self._redeemed(opened, kept, claimed)

    async def aredeem(
        self,
        token: object,
        /,
        *,
        request: str,
        subject: str = "",
        tool: str | None = None,
        now: int | None = None,
        type: type[T] | None = None,
    ) -> Redemption[T]:
        """``redeem`` for asyncio servers: the checks run inline, then the guard's claim is awaited."""
        guard = self._keeping()
        opened, claimed = self._redeeming(token, subject, tool, now, type, request)
        try:
            kept = await aredeem(guard, *claimed.call)
        except InvalidToken as refused:
            self._refused(refused, False)  # counted
            raise
        return self._redeemed(opened, kept, claimed)

    def keep(self, redemption: Redemption[Any], answer: str, /, *, now: int | None = None) -> bool:
        """Keep the first call's ``answer`` (text: the result, serialised) for its token's identical retries.

        The answer is sealed as a state is, encrypted, bound to the redemption's subject and
        tool, and naming its claim, and kept by the guard with the claim, until the token expires; an
        answer longer than ``max_token_bytes`` sealed is kept as "too large" instead (its
        retry is refused as ``answer_too_large``).

        Returns:
            ``True`` once kept; ``False`` if the guard's store did not answer (its retries are
            then refused as ``in_progress``, then ``outcome_unknown``): the action ran, so return
            the answer to this call all the same.

        Raises:
            TypeError, ValueError: ``answer`` is not a ``str``, or ``redemption`` is a retry's.
        """
        guard = cast("KeepingGuard", self._keeping())
        if self._guard_is_async:
            raise TypeError(ASYNC_GUARD_NEEDS_AWAIT)
        claimed, sealed = self._sealed_answer(redemption, answer, now)
        try:
            guard.keep(claimed, redemption.request, sealed)
        except GuardUnavailable:
            return False
        return True

    async def akeep(self, redemption: Redemption[Any], answer: str, /, *, now: int | None = None) -> bool:
        """``keep`` for asyncio servers: an async guard's ``keep`` is awaited."""
        guard = self._keeping()
        claimed, sealed = self._sealed_answer(redemption, answer, now)
        try:
            kept = guard.keep(claimed, redemption.request, sealed)
            if kept is not None:
                await kept
        except GuardUnavailable:
            return False
        return True

    def _keeping(self) -> KeepingGuard | AsyncKeepingGuard:
        if not keeps_answers(self._guard):
            held = "no guard" if self._guard is None else f"a {type(self._guard).__name__}, which has none"
            raise TypeError(
                "redeem and keep need a guard that keeps answers (redeem and keep methods: every guard "
                f"of requeststate has them); this codec has {held}"
            )
        return self._guard  # type: ignore[return-value]

    def _redeeming(
        self, token: object, subject: object, tool: object, now: object, type: Any, request: str
    ) -> tuple[_Opened, _Redeeming]:
        """Every check of the token (raised if refused), and the redemption its guard is asked for."""
        now = now_from(now, self._clock)
        opened = self._checked(token, subject, tool, now, type, raising=True)
        payload = opened[1]  # type: ignore[index]
        claimed = claim_id(payload.id, payload.iat)
        expires_at = payload.exp + self._leeway
        return opened, _Redeeming(claimed, expires_at, now, request, now + self._lease, subject, tool)  # type: ignore[arg-type,return-value]

    def _redeemed(self, opened: _Opened, kept: str | None, claimed: _Redeeming) -> Redemption[Any]:
        """The redemption of an accepted token: its claims, and the kept answer, opened, for a retry."""
        answer = None
        if kept is not None:
            try:
                answer = self._opened_answer(kept, claimed)
            except InvalidToken as refused:
                self._refused(refused, False)  # counted
                raise
        if self._counts is not None:
            self._counts.accepted(self._mode_of[opened[2]], True)
        return Redemption(self._claims(opened), answer, claimed.request, claimed.subject, claimed.tool)

    def _opened_answer(self, kept: str, claimed: _Redeeming) -> str:
        """The answer a retry gets, opened; ``outcome_unknown`` if it cannot be (another key ring, say)."""
        try:
            payload, _, _ = open_token(
                kept,
                (self._answer_wire,),
                self._keys,
                claimed.subject,
                answer_tool(claimed.tool),
                claimed.now,
                self._leeway,
                self._max_bytes,
            )
            opened = read_state(payload.s, Kept)
        except InvalidToken:
            raise InvalidToken(Reason.OUTCOME_UNKNOWN) from None
        if opened.claim != claimed.claim_id:  # a store that answered with another claim's answer
            raise InvalidToken(Reason.OUTCOME_UNKNOWN)
        if opened.answer is None:
            raise InvalidToken(Reason.ANSWER_TOO_LARGE)
        return opened.answer  # type: ignore[no-any-return]

    def _sealed_answer(
        self, redemption: Redemption[Any], answer: str, now: int | None
    ) -> tuple[ClaimId, str]:
        """The claimed id, and ``answer`` sealed for its retries: as "too large" if it does not fit."""
        if not isinstance(answer, str):
            raise TypeError(f"answer must be a str (the result, serialised), not {type(answer).__name__}")
        if not redemption.first:
            raise ValueError("only the first call of a redemption keeps an answer: a retry got it")
        claims = redemption.claims
        claimed = claims.claim_id
        minted = now_from(now, self._clock)
        tool = answer_tool(redemption.tool)

        def sealed(kept: Kept) -> str:
            random = os.urandom(self._answer_wire.nonce_bytes + TOKEN_ID_BYTES)
            nonce, answer_id = (
                random[: self._answer_wire.nonce_bytes],
                random[self._answer_wire.nonce_bytes :],
            )
            return seal_token(
                kept,
                self._answer_wire,
                self._keys,
                redemption.subject,
                tool,
                claims.exp,
                nonce,
                answer_id.hex(),
                minted,
                self._max_bytes,
            )

        try:
            return claimed, sealed(Kept(claimed, answer))  # type: ignore[arg-type,return-value]
        except ValueError:  # longer than max_token_bytes: the retry is told it ran, answer too large
            return claimed, sealed(Kept(claimed, None))  # type: ignore[arg-type,return-value]

    def _opened(
        self, token: object, subject: object, tool: object, now: object, type: Any, *, raising: bool
    ) -> _Opened | None:
        """Every check, then the (sync) guard's claim, and the count; ``None`` or raised if refused."""
        now = now_from(now, self._clock)
        opened = self._checked(token, subject, tool, now, type, raising=raising)
        if opened is None:
            return None
        guard = self._guard
        if guard is not None:
            payload = opened[1]
            try:
                claim(guard, claim_id(payload.id, payload.iat), payload.exp + self._leeway, now)
            except InvalidToken as refused:
                self._refused(refused, raising)
                return None
        if self._counts is not None:
            self._counts.accepted(self._mode_of[opened[2]], guard is not None)
        return opened

    def _checked(
        self, token: object, subject: object, tool: object, now: int, type: Any, *, raising: bool
    ) -> _Opened | None:
        """Every check of the token at ``now`` (its unix second, resolved), before any guard; ``None`` or
        raised (and counted) if refused. Nothing is counted for a token that passes."""
        try:
            payload, wire, key = open_token(
                token, self._wires, self._keys, subject, tool, now, self._leeway, self._max_bytes
            )
            return payload.s if type is None else read_state(payload.s, type), payload, wire, key
        except InvalidToken as refused:
            self._refused(refused, raising)
            return None

    async def _aopened(
        self, token: object, subject: object, tool: object, now: object, type: Any, *, raising: bool
    ) -> _Opened | None:
        """``_opened`` with an async guard, whose claim is awaited last, at the time of the checks."""
        now = now_from(now, self._clock)
        opened = self._checked(token, subject, tool, now, type, raising=raising)
        if opened is None:
            return None
        _, payload, wire, _ = opened
        try:
            await aclaim(self._guard, claim_id(payload.id, payload.iat), payload.exp + self._leeway, now)  # type: ignore[arg-type]
        except InvalidToken as refused:
            self._refused(refused, raising)
            return None
        if self._counts is not None:
            self._counts.accepted(self._mode_of[wire], True)
        return opened

    def _refused(self, refused: InvalidToken, raising: bool) -> None:
        # Counted, then raised (open, verify) or answered None (decode): docs/performance.md.
        if self._counts is not None:
            self._counts.refused(refused.reason)
        if raising:
            raise refused

    def _claims(self, opened: _Opened | None) -> Claims[Any]:
        # Only after a raising open: a refusal has raised.
        state, payload, wire, key = opened  # type: ignore[misc]
        return Claims(state, payload.exp, payload.id, payload.iat, self._mode_of[wire], key.key.fingerprint)


class CallOptions(CodecOptions, Context, total=False):
    """What a module function takes: the codec's options (``CodecOptions``) and the call's ``Context``."""


_CONTEXT_NAMES: Final = tuple(Context.__optional_keys__)


# The functions: one Codec per distinct set of options, built on first use.
@lru_cache(maxsize=64)
def _cached_codec(keys: Keys, options: tuple[tuple[str, type, object], ...]) -> Codec:
    return Codec(keys, **{name: value for name, _, value in options})  # type: ignore[arg-type]


def _codec_and_context(keys: Keys, options: CallOptions) -> tuple[Codec, Context]:
    context = cast("Context", {name: options.pop(name) for name in _CONTEXT_NAMES if name in options})  # type: ignore[misc]
    # Each value's type is in the key: True == 1 and hashes alike, yet is no valid ttl of 1.
    key = tuple((name, type(value), value) for name, value in sorted(options.items()))
    try:
        return _cached_codec(keys, key), context
    except TypeError:  # an unhashable guard or clock: a codec for this call (or the option's own error)
        return Codec(keys, **options), context  # type: ignore[misc]


def encode(state: object, keys: Keys, /, **options: Unpack[CallOptions]) -> str:
    """A new token: ``Codec(keys, **codec_options).encode(state, **context)``, the codec cached."""
    codec, context = _codec_and_context(keys, options)
    return codec.encode(state, **context)


def verify(token: object, keys: Keys, /, *, type: type[T] | None = None, **options: Unpack[CallOptions]) -> T:
    """A token's state, or ``InvalidToken``: ``Codec(keys, **codec_options).verify(token, ...)``, cached."""
    codec, context = _codec_and_context(keys, options)
    return codec.verify(token, type=type, **context)


def decode(
    token: object, keys: Keys, /, *, type: type[T] | None = None, **options: Unpack[CallOptions]
) -> T | None:
    """A token's state, or ``None`` if refused: ``Codec(keys, **codec_options).decode(...)``, cached."""
    codec, context = _codec_and_context(keys, options)
    return codec.decode(token, type=type, **context)
