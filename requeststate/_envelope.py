"""The strict core, as two pure functions: a state sealed into a token, and a token opened to its payload.

Nothing here reads a clock or the CSPRNG: ``exp``, ``now`` and the random
bytes are arguments, so the same inputs always make the same token (the
known-answer vectors mint here). ``open_token`` runs every check in the
documented order and raises ``InvalidToken(reason)`` at the first that fails;
``Codec`` (in ``_codec``) supplies the options, the clock, the randomness and
the replay guard, and is the adapter that turns a refusal into ``None``.
"""

from __future__ import annotations

import hmac
from typing import Final

import msgspec

from ._bounds import INT64_MAX
from ._errors import InvalidToken, Reason
from ._keys import BoundKey, KeyRing
from ._modes import WireMode, wire_for
from ._payload import Payload, build_payload, parse_payload

__all__ = ["open_token", "seal_token"]

_encode_json: Final = msgspec.json.Encoder().encode


def seal_token(
    state: object,
    wire: WireMode,
    keys: KeyRing,
    subject: object,
    tool: object,
    exp: int,
    nonce: bytes,
    token_id: str,
    minted: int,
    max_bytes: int,
) -> str:
    """``state`` as a token of ``wire``'s format, minted by the first key of ``keys``, valid until ``exp``.

    ``state`` is a ``str``, carried as is, or a value msgspec encodes, carried
    as its JSON text. ``nonce``: ``wire.nonce_bytes`` from a CSPRNG (none for
    ``v1.``); ``token_id`` and ``minted`` (the token's ``id`` and ``iat``): what a
    replay guard claims (``_token_id``).

    Raises:
        TypeError, ValueError: an identity that cannot be bound, a state that
            cannot be encoded, an ``exp`` past 2**63-1, or a token longer than ``max_bytes``.
        KeyBudgetExhausted: the minting key has sealed its AES-GCM limit.
    """
    if exp > INT64_MAX:
        raise ValueError("now + ttl must fit in a signed 64-bit integer")
    if isinstance(state, str):
        text = state
    elif isinstance(state, bytes | bytearray | memoryview):
        # msgspec would carry bytes as a base64 string, and a typed decode would then refuse a
        # genuine token: bytes here are nearly always JSON already encoded (msgspec.json.encode).
        raise TypeError(
            "state must be a str or a value msgspec encodes, not bytes: pass the value itself, "
            "or its JSON text as a str (data.decode())"
        )
    else:
        text = _encode_json(state).decode("utf-8")
    minting = keys.bound(subject, tool)[0]
    token = wire.seal(build_payload(text, exp, minting.bind_tag, token_id, minted), minting, nonce)
    if len(token) > max_bytes:
        raise ValueError(f"the token would be {len(token)} bytes, over max_token_bytes={max_bytes}")
    return token


def open_token(
    token: object,
    wires: tuple[WireMode, ...],
    keys: KeyRing,
    subject: object,
    tool: object,
    now: int,
    leeway: int,
    max_bytes: int,
) -> tuple[Payload, WireMode, BoundKey]:
    """The payload of ``token``, its mode (one of ``wires``) and the key it verified under.

    The token must be bound to the identity and valid at ``now``.

    The checks, in order; authentication comes before any claim is read:
    type and size, prefix, the identity's validity (before any decoding),
    framing, MAC or AEAD tag under each key, payload, expiry, binding.

    Raises:
        InvalidToken: at the first check that fails, with its reason.
    """
    if not isinstance(token, str):
        raise InvalidToken(Reason.MALFORMED)
    if len(token) > max_bytes:
        raise InvalidToken(Reason.TOO_LARGE)
    wire = wire_for(token, wires)
    bound: tuple[BoundKey, ...]
    try:
        bound = keys.bound(subject, tool)
    except (TypeError, ValueError):  # an invalid identity, of any type, is a refusal
        raise InvalidToken(Reason.WRONG_BINDING) from None
    authenticated, key = wire.open(token, bound)
    payload = parse_payload(authenticated)
    if now > payload.exp + leeway:
        raise InvalidToken(Reason.EXPIRED)
    try:
        bound_here = hmac.compare_digest(payload.b, key.bind_tag)
    except TypeError:  # compare_digest takes only ASCII: such a b is no bind tag at all
        bound_here = False
    if not bound_here:
        raise InvalidToken(Reason.WRONG_BINDING)
    return payload, wire, key
