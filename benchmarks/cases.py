"""What is timed for each mode and state size: our ``encode`` and ``decode``, the refusals, and the floor.

The floor of a mode is the least work any correct implementation of its wire
format must do, on the same payload bytes our codec carries for that state:

- ``signed`` (``v1.``): ``hmac.digest`` (SHA-256) of the payload and base64url of
  payload and MAC; to decode, base64url-decode both, recompute the MAC and
  ``hmac.compare_digest`` it.
- ``encrypted`` (``v1e.``): a 12-byte ``os.urandom`` nonce, ``AESGCM.encrypt``
  with the bind tag as AAD, base64url of nonce and ciphertext; to decode,
  base64url-decode and ``AESGCM.decrypt``.
- ``xchacha`` (``v1x.``): the same with a 24-byte nonce and
  ``nacl.bindings.crypto_aead_xchacha20poly1305_ietf_encrypt``/``decrypt``.

The floor uses the stdlib ``base64.urlsafe_b64encode``/``urlsafe_b64decode`` on
bytes it prepared in advance (already split and padded), and skips every check
and every conversion to ``str``: everything beyond it is ours.
"""

from __future__ import annotations

import base64
import hmac
import importlib
import json
import os
import random
import string
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

import requeststate as rs

__all__ = [
    "FLOORS",
    "OVERSIZED_TOKEN_CHARS",
    "SIZES",
    "SUBJECT",
    "TOOL",
    "TTL",
    "Floor",
    "codec_cases",
    "make_state",
    "round_trip",
    "size_label",
]

SIZES: Final = (64, 1024, 16 * 1024)
SUBJECT: Final = "user-7f3a9c"
TOOL: Final = "book"
TTL: Final = 300
OVERSIZED_TOKEN_CHARS: Final = rs.DEFAULT_MAX_TOKEN_BYTES + 1


def size_label(size: int) -> str:
    """``64 B``, ``1 KiB``, ``16 KiB``."""
    return f"{size // 1024} KiB" if size >= 1024 and size % 1024 == 0 else f"{size} B"


def make_state(size: int) -> str:
    """JSON text of exactly ``size`` bytes, the shape a handler keeps between rounds.

    The filler is random letters and digits (fixed seed), so no codec that
    compresses gets an unrealistically easy input.
    """
    head, tail = '{"step":1,"data":"', '"}'
    filler = size - len(head) - len(tail)
    if filler < 0:
        raise ValueError(f"a state is at least {len(head) + len(tail)} bytes")
    rng = random.Random(size)
    return head + "".join(rng.choices(string.ascii_letters + string.digits, k=filler)) + tail


@dataclass(frozen=True)
class Floor:
    """The bare primitive calls of one mode on one payload."""

    encode: Callable[[], object]
    decode: Callable[[], object]


def _b64decode_padded(text: bytes) -> bytes:
    return base64.urlsafe_b64decode(text + b"=" * (-len(text) % 4))


def _signed_floor(payload: bytes, bind_tag: bytes) -> Floor:
    key = os.urandom(32)

    def encode() -> tuple[bytes, bytes]:
        mac = hmac.digest(key, payload, "sha256")
        return base64.urlsafe_b64encode(payload), base64.urlsafe_b64encode(mac)

    payload64, mac64 = encode()

    def decode() -> bool:
        body = base64.urlsafe_b64decode(payload64)
        return hmac.compare_digest(hmac.digest(key, body, "sha256"), base64.urlsafe_b64decode(mac64))

    return Floor(encode, decode)


def _aesgcm_floor(payload: bytes, bind_tag: bytes) -> Floor:
    aead = AESGCM(os.urandom(32))

    def encode() -> bytes:
        nonce = os.urandom(12)
        return base64.urlsafe_b64encode(nonce + aead.encrypt(nonce, payload, bind_tag))

    blob64 = encode()

    def decode() -> bytes:
        blob = base64.urlsafe_b64decode(blob64)
        return aead.decrypt(blob[:12], blob[12:], bind_tag)

    return Floor(encode, decode)


def _xchacha_floor(payload: bytes, bind_tag: bytes) -> Floor:
    bindings = importlib.import_module("nacl.bindings")
    seal = bindings.crypto_aead_xchacha20poly1305_ietf_encrypt
    unseal = bindings.crypto_aead_xchacha20poly1305_ietf_decrypt
    key = os.urandom(32)

    def encode() -> bytes:
        nonce = os.urandom(24)
        return base64.urlsafe_b64encode(nonce + seal(payload, bind_tag, nonce, key))

    blob64 = encode()

    def decode() -> bytes:
        blob = base64.urlsafe_b64decode(blob64)
        opened: bytes = unseal(blob[24:], bind_tag, blob[:24], key)
        return opened

    return Floor(encode, decode)


FLOORS: Final[dict[str, Callable[[bytes, bytes], Floor]]] = {
    "signed": _signed_floor,
    "encrypted": _aesgcm_floor,
    "xchacha": _xchacha_floor,
}
"""The floor of each mode by its value; a mode missing here is reported without a floor."""


def _payload_of(state: str, ring: rs.KeyRing) -> bytes:
    # The signed format carries the payload in the clear, and every mode carries
    # the same payload: take the exact bytes from a freshly minted v1. token.
    token = rs.encode(state, ring, mode=rs.Mode.SIGNED, subject=SUBJECT, tool=TOOL, ttl=TTL)
    return _b64decode_padded(token.split(".")[1].encode("ascii"))


def _tampered(token: str) -> str:
    # One base64url character in the middle of the token, replaced by another: the
    # token stays canonical base64url but its MAC or AEAD tag no longer verifies.
    middle = len(token) // 2
    return token[:middle] + ("B" if token[middle] == "A" else "A") + token[middle + 1 :]


def round_trip(state: str, ring: rs.KeyRing, mode: rs.Mode) -> Callable[[], object]:
    """One round as a server does it: ``encode`` a state, then ``decode`` the token, with one ``Codec``.

    The mode is passed as its string (``mode="encrypted"``), the way the README calls it.
    """
    codec = rs.Codec(ring, mode=mode.value, ttl=TTL)

    def one_round() -> object:
        return codec.decode(codec.encode(state, subject=SUBJECT, tool=TOOL), subject=SUBJECT, tool=TOOL)

    return one_round


def codec_cases(
    state: str, ring: rs.KeyRing, mode: rs.Mode, *, oversized: bool
) -> dict[str, Callable[[], object]]:
    """Every case of one mode and state, checked once before it is timed.

    Keys: ``encode``, ``decode`` (a ``Codec`` built once, as a server holds it),
    ``encode function``, ``decode function`` (the module functions, over their
    cached ``Codec``), ``decode tampered``, ``decode wrong subject``, ``decode
    expired``, with ``encode floor`` and ``decode floor`` when the mode has a
    floor, and ``decode oversized`` (a token of the default cap + 1) if asked. Each
    decode has the same call shape, so only the token's fate differs; the mode
    is passed as its string, as in ``round_trip``.

    Raises:
        RuntimeError: a case does not do what it is named for (a refusal that
            returns a state, a valid token that is refused).
    """
    name: rs.ModeName = mode.value
    codec = rs.Codec(ring, mode=name, ttl=TTL)
    token = codec.encode(state, subject=SUBJECT, tool=TOOL)
    expired = codec.encode(state, subject=SUBJECT, tool=TOOL, now=int(time.time()) - 10 * TTL)
    tampered = _tampered(token)
    other_subject = SUBJECT + "-other"
    # Each case is a function making the call as a handler writes it, as each
    # floor is: a functools.partial with keywords builds a dict on every call
    # (0.1x of a 64 B encode), a cost charged to our side alone.
    cases: dict[str, Callable[[], object]] = {
        "encode": lambda: codec.encode(state, subject=SUBJECT, tool=TOOL),
        "decode": lambda: codec.decode(token, subject=SUBJECT, tool=TOOL),
        "encode function": lambda: rs.encode(state, ring, mode=name, subject=SUBJECT, tool=TOOL, ttl=TTL),
        "decode function": lambda: rs.decode(token, ring, mode=name, subject=SUBJECT, tool=TOOL),
        "decode tampered": lambda: codec.decode(tampered, subject=SUBJECT, tool=TOOL),
        "decode wrong subject": lambda: codec.decode(token, subject=other_subject, tool=TOOL),
        "decode expired": lambda: codec.decode(expired, subject=SUBJECT, tool=TOOL),
    }
    if oversized:
        prefix = token[: token.index(".") + 1]
        huge = prefix + "A" * (OVERSIZED_TOKEN_CHARS - len(prefix))
        cases["decode oversized"] = lambda: codec.decode(huge, subject=SUBJECT, tool=TOOL)
    floor_of = FLOORS.get(mode.value)
    if floor_of is not None:
        payload = _payload_of(state, ring)
        floor = floor_of(payload, json.loads(payload)["b"].encode("ascii"))
        cases["encode floor"] = floor.encode
        cases["decode floor"] = floor.decode
    _check(cases, state)
    return cases


_ACCEPTED: Final = frozenset(
    {"encode", "decode", "encode function", "decode function", "encode floor", "decode floor"}
)


def _check(cases: dict[str, Callable[[], object]], state: str) -> None:
    for name, case in cases.items():
        result = case()
        refused = name not in _ACCEPTED
        if refused and result is not None:
            raise RuntimeError(f"{name!r} returned a state: the case does not test a refusal")
        if name in ("decode", "decode function") and result != state:
            raise RuntimeError("a valid token was refused")
        if name.endswith("floor") and not result:
            raise RuntimeError(f"the {name} did not verify")
