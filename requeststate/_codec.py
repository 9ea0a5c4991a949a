"""The strict core: ``encode`` mints a token, ``verify`` checks one or says why not."""

from __future__ import annotations

import enum
import inspect
import os
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Final, Protocol, TypeAlias, TypeVar, overload

import msgspec

from ._encrypted import ENCRYPTED, XCHACHA
from ._envelope import INT64_MAX, INT64_MIN, Payload, build_payload, read_payload, too_deep
from ._errors import InvalidToken, Reason
from ._guard import AsyncGuard, Guard, GuardUnavailable
from ._keys import BoundKey, KeyRing, SubKeys
from ._signed import SIGNED

__all__ = [
    "DEFAULT_MAX_TOKEN_BYTES",
    "DEFAULT_TTL",
    "Mode",
    "ModeSpec",
    "Modes",
    "averify",
    "encode",
    "verify",
]

T = TypeVar("T")

DEFAULT_TTL: Final = 300
DEFAULT_MAX_TOKEN_BYTES: Final = 64 * 1024
TOKEN_ID_BYTES: Final = 16  # 128 random bits, written as 32 hex: unique across every token


class Mode(enum.StrEnum):
    """A wire format. Chosen by the server on both sides, never by the token."""

    SIGNED = "signed"
    """``v1.``: HMAC-SHA256. The client can read the state but not change it."""
    ENCRYPTED = "encrypted"
    """``v1e.``: AES-256-GCM. The client can neither read nor change the state."""
    XCHACHA = "xchacha"
    """``v1x.``: XChaCha20-Poly1305, as ``ENCRYPTED`` without the 2^32 tokens per key
    limit of random 96-bit nonces. Our extension: mcp.d does not read it."""


ModeSpec: TypeAlias = "Mode | str"
Modes: TypeAlias = "Mode | str | tuple[Mode | str, ...]"
Keys: TypeAlias = "KeyRing | bytes"


class WireMode(Protocol):
    """One wire format: how a payload is sealed into a token and opened again."""

    @property
    def prefix(self) -> str: ...
    @property
    def nonce_bytes(self) -> int: ...
    def seal(self, payload: bytes, key: SubKeys, bind_tag: str, nonce: bytes) -> str: ...
    def open(self, token: str, bound_keys: tuple[BoundKey, ...]) -> tuple[bytes, str] | Reason: ...


_WIRE: Final[dict[str, WireMode]] = {Mode.SIGNED: SIGNED, Mode.ENCRYPTED: ENCRYPTED, Mode.XCHACHA: XCHACHA}
_VERSIONS: Final = frozenset(wire.prefix[:-1] for wire in _WIRE.values())
_VERSION_MAX_CHARS: Final = max(map(len, _VERSIONS)) + 1


def _wire_mode(mode: ModeSpec) -> WireMode:
    # Mode is a str enum, so "signed" and Mode.SIGNED find the same entry.
    wire = _WIRE.get(mode) if isinstance(mode, str) else None
    if wire is None:
        choices = ", ".join(repr(m.value) for m in Mode)
        raise ValueError(f"mode must be a Mode or one of {choices}, got {mode!r}")
    return wire


@lru_cache(maxsize=16)
def _ring_of_secret(secret: bytes) -> KeyRing:
    return KeyRing(secret)


def _key_ring(keys: Keys) -> KeyRing:
    # encode and verify test ``keys.__class__ is KeyRing`` (it is final) inline
    # first, to save a call per token.
    if isinstance(keys, KeyRing):
        return keys
    if isinstance(keys, bytes):
        # Derive once per secret, not per call: HKDF costs more than a whole token.
        return _ring_of_secret(keys)
    raise TypeError(f"keys must be a KeyRing or bytes, not {type(keys).__name__}")


def _check_int(name: str, value: object, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not minimum <= value <= INT64_MAX:
        raise ValueError(f"{name} must be an int from {minimum} to 2**63-1, got {value}")
    return value


# The options a server passes are few and repeat on every call, so each distinct
# set is validated once and its result cached (errors are not cached). typed:
# True == 1 and hashes alike, and must not pass as a validated ttl of 1.
@lru_cache(maxsize=64, typed=True)
def _encode_plan(mode: ModeSpec, ttl: int, max_token_bytes: int) -> WireMode:
    _check_int("ttl", ttl, 1)
    _check_int("max_token_bytes", max_token_bytes, 1)
    return _wire_mode(mode)


@lru_cache(maxsize=64, typed=True)
def _verify_plan(modes: Modes, leeway: int, max_token_bytes: int) -> tuple[WireMode, ...]:
    _check_int("leeway", leeway, 0)
    _check_int("max_token_bytes", max_token_bytes, 1)
    if not isinstance(modes, tuple):
        return (_wire_mode(modes),)
    if not modes:
        raise ValueError("mode must name at least one Mode")
    return tuple(dict.fromkeys(map(_wire_mode, modes)))


_encode_state: Final = msgspec.json.Encoder().encode


def check_options(
    keys: Keys, /, *, mode: Modes, ttl: int, leeway: int, max_token_bytes: int
) -> tuple[KeyRing, tuple[Mode, ...]]:
    """Check now what ``encode`` and ``verify`` would check on every call, for setup code.

    Integrations that take their options once (a server boundary) fail at
    construction, through the same checks. Returns the key ring and the modes
    in order (an integration mints with the first and accepts all).

    Raises:
        TypeError, ValueError: as ``encode`` and ``verify`` would.
    """
    ring = _key_ring(keys)
    listed = mode if isinstance(mode, tuple) else (mode,)
    _verify_plan(listed, leeway, max_token_bytes)  # refuses an empty tuple of modes
    _encode_plan(listed[0], ttl, max_token_bytes)
    return ring, tuple(map(Mode, listed))


@lru_cache(maxsize=64)
def _state_decoder(state_type: Any) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(state_type)


def encode(
    state: object,
    keys: Keys,
    /,
    *,
    mode: ModeSpec,
    subject: str = "",
    tool: str | None = None,
    ttl: int = DEFAULT_TTL,
    now: int | None = None,
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
) -> str:
    """Mint a token that carries ``state`` for ``ttl`` seconds, bound to an identity.

    Args:
        state: a ``str``, carried as is, or any value msgspec can encode, carried
            as its JSON text (decode it with ``type=``).
        keys: a ``KeyRing`` (its first key mints), or one raw secret of at least
            32 bytes (its subkeys are derived once and cached).
        mode: ``"signed"`` (readable, tamper-evident), ``"encrypted"``
            (confidential too) or ``"xchacha"`` (encrypted, no per-key budget),
            or a ``Mode``.
        subject: the authenticated user, from the server's auth context; ``""``
            for none.
        tool: the tool (or resource, or prompt) the state belongs to; ``None``
            binds the subject alone.
        ttl: lifetime in whole seconds, at least 1.
        now: unix seconds to mint at; the system clock when ``None``.
        max_token_bytes: refuse to mint a token longer than this.

    Every token carries a random 128-bit id, so a replay guard at ``decode``
    can make it single-use.

    Raises:
        TypeError, ValueError: a bad argument (short key, ``ttl`` not a positive
            int, a subject or tool containing U+0000 or a lone surrogate, a state
            msgspec cannot encode, a token over ``max_token_bytes``).
        KeyBudgetExhausted: the minting key has sealed 2^32 ``"encrypted"``
            tokens in this process (or the ring's lower ``aesgcm_limit``).
    """
    return _encode(state, keys, mode, subject, tool, ttl, now, max_token_bytes, os.urandom)


def _encode(
    state: object,
    keys: Keys,
    mode: ModeSpec,
    subject: str,
    tool: str | None,
    ttl: int,
    now: int | None,
    max_token_bytes: int,
    urandom: Callable[[int], bytes],
) -> str:
    # The deterministic entry point behind ``encode``: tests pass a fixed ``urandom``.
    ring = keys if keys.__class__ is KeyRing else _key_ring(keys)
    wire = _encode_plan(mode, ttl, max_token_bytes)
    # The clock is read inline, not through a helper: a call less per token.
    exp = (int(time.time()) if now is None else _check_int("now", now, INT64_MIN)) + ttl
    if exp > INT64_MAX:
        raise ValueError("now + ttl must fit in a signed 64-bit integer")
    text = state if isinstance(state, str) else _encode_state(state).decode("utf-8")
    key, bind_tag = ring._bound_keys(subject, tool)[0]
    # One read of the CSPRNG per token: the nonce (if any), then the token id.
    random = urandom(wire.nonce_bytes + TOKEN_ID_BYTES)
    nonce, token_id = random[: wire.nonce_bytes], random[wire.nonce_bytes :].hex()
    payload = build_payload(text, exp, bind_tag, token_id)
    token = wire.seal(payload, key, bind_tag, nonce)
    if len(token) > max_token_bytes:
        raise ValueError(f"the token would be {len(token)} bytes, over max_token_bytes={max_token_bytes}")
    return token


def _verified(
    token: object,
    keys: Keys,
    mode: Modes,
    subject: str,
    tool: str | None,
    leeway: int,
    now: int | None,
    state_type: Any,
    max_token_bytes: int,
) -> Verified:
    """Every check but the replay guard: (state, payload, time checked at), or why not.

    The one strict check behind ``verify``, ``decode`` and their async twins. It
    returns the reason rather than raising it, so a refusal costs no more than
    an acceptance: the attacker chooses how many of them we pay for.
    """
    ring = keys if keys.__class__ is KeyRing else _key_ring(keys)
    allowed = _verify_plan(mode, leeway, max_token_bytes)
    moment = int(time.time()) if now is None else _check_int("now", now, INT64_MIN)
    if not isinstance(token, str):
        return Reason.MALFORMED
    if len(token) > max_token_bytes:
        return Reason.TOO_LARGE
    # The prefixes are prefix-free, so at most one matches; usually one mode is allowed.
    for wire in allowed:
        if token.startswith(wire.prefix):
            break
    else:
        return _unexpected_prefix(token)
    try:
        bound_keys = ring._bound_keys(subject, tool)
    except (TypeError, ValueError):  # an invalid identity, of any type, is a refusal
        return Reason.WRONG_BINDING
    opened = wire.open(token, bound_keys)
    # Test for the success type: an exact match is isinstance's fast path, while
    # isinstance(x, Reason) always pays for the Enum metaclass's __instancecheck__ lookup.
    if not isinstance(opened, tuple):
        return opened
    payload = read_payload(opened[0], opened[1], moment, leeway)
    if not isinstance(payload, Payload):
        return payload
    if state_type is None:
        return payload.s, payload, moment
    if too_deep(payload.s):
        return Reason.WRONG_TYPE
    try:
        return _state_decoder(state_type).decode(payload.s), payload, moment
    except (msgspec.DecodeError, RecursionError):
        return Reason.WRONG_TYPE


def _unexpected_prefix(token: str) -> Reason:
    # "v1.xxx" -> "v1", "v1e.xxx" -> "v1e": the text before the first dot names
    # the format. Only the first few characters are read, however long the token.
    version, dot, _ = token[:_VERSION_MAX_CHARS].partition(".")
    return Reason.WRONG_MODE if dot and version in _VERSIONS else Reason.MALFORMED


def _claim_reason(claimed: object) -> Reason | None:
    if claimed is True:
        return None
    if claimed is False:
        return Reason.REPLAYED
    if inspect.iscoroutine(claimed):
        claimed.close()
        raise TypeError("an async guard needs averify() or adecode()")
    raise TypeError(f"Guard.claim must return a bool, not {claimed.__class__.__name__}")


def _claim(guard: Guard, payload: Payload, leeway: int, moment: int) -> Reason | None:
    # Tokens from other writers (mcp.d) carry no id: they cannot be made single-use.
    if payload.id is None:
        return Reason.MALFORMED
    try:
        return _claim_reason(guard.claim(payload.id, payload.exp + leeway, moment))
    except GuardUnavailable:
        return Reason.GUARD_UNAVAILABLE


async def _aclaim(guard: AsyncGuard | Guard, payload: Payload, leeway: int, moment: int) -> Reason | None:
    if payload.id is None:
        return Reason.MALFORMED
    try:
        claimed = guard.claim(payload.id, payload.exp + leeway, moment)
        return _claim_reason(await claimed if inspect.isawaitable(claimed) else claimed)
    except GuardUnavailable:
        return Reason.GUARD_UNAVAILABLE


Verified: TypeAlias = "tuple[Any, Payload, int] | Reason"


def checked(verified: Verified, guard: Guard | None, leeway: int) -> tuple[Any, Reason | None]:
    """``(state, None)`` for a token that passed every check and its guard's claim, else ``(None, why)``."""
    if not isinstance(verified, tuple):
        return None, verified
    value, payload, moment = verified
    refused = None if guard is None else _claim(guard, payload, leeway, moment)
    return (value, None) if refused is None else (None, refused)


async def achecked(
    verified: Verified, guard: AsyncGuard | Guard | None, leeway: int
) -> tuple[Any, Reason | None]:
    """``checked``, awaiting an async guard's claim."""
    if not isinstance(verified, tuple):
        return None, verified
    value, payload, moment = verified
    refused = None if guard is None else await _aclaim(guard, payload, leeway, moment)
    return (value, None) if refused is None else (None, refused)


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
    """Return the state a token carries, or raise ``InvalidToken`` saying why not.

    The checks run in this order, and authentication comes before any claim is
    read: type and size, prefix against the modes asked for, framing, MAC or
    AEAD tag, payload, expiry, binding, ``type``, and last the replay guard.

    Args:
        token: the echoed ``requestState``, as the client sent it (any type).
        keys: the ``KeyRing`` (every key verifies), or one raw secret.
        mode: the mode, or a tuple of modes while migrating, that this server
            accepts. A token of any other mode is refused.
        subject, tool: the identity the token must be bound to, as at ``encode``.
        leeway: seconds of clock skew tolerated after ``exp``.
        now: unix seconds to verify at; the system clock when ``None``.
        type: decode the state's JSON text as this type (msgspec, strict).
        max_token_bytes: refuse a longer token before decoding anything.
        guard: make the token single-use: its id is claimed in ``guard`` once
            every other check has passed, until ``exp + leeway``. A second
            redemption is refused as ``replayed``; a guard that cannot answer
            refuses as ``guard_unavailable``.

    Raises:
        InvalidToken: the token is refused; ``.reason`` is for logs only.
        TypeError, ValueError: a bad argument other than the token and the
            identity (an invalid subject or tool is a refusal, not an error).
    """
    verified = _verified(token, keys, mode, subject, tool, leeway, now, type, max_token_bytes)
    value, refused = checked(verified, guard, leeway)
    if refused is not None:
        raise InvalidToken(refused)
    return value


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
    """``verify`` for asyncio servers: the same checks, then awaits an async guard.

    The cryptography runs inline (it takes microseconds); only the guard's
    claim, a network round trip for ``AsyncRedisGuard``, is awaited. A sync
    ``Guard`` works here too.
    """
    verified = _verified(token, keys, mode, subject, tool, leeway, now, type, max_token_bytes)
    value, refused = await achecked(verified, guard, leeway)
    if refused is not None:
        raise InvalidToken(refused)
    return value
