"""The payload every mode carries, ``{s, exp, b}``: writing it, and the claims checked on it."""

from __future__ import annotations

import hmac
import re
from itertools import accumulate, repeat
from typing import Final

import msgspec

from ._errors import Reason
from ._payload import INT64_MAX, INT64_MIN, Payload

__all__ = ["INT64_MAX", "INT64_MIN", "MAX_JSON_DEPTH", "Payload", "build_payload", "read_payload", "too_deep"]

MAX_JSON_DEPTH: Final = 128
"""The deepest nesting of arrays and objects read in a payload or a typed state.

Explicit, so every Python behaves alike: without it 3.11 refuses a state 5000
levels deep (RecursionError) while 3.13 accepts it.
"""


_HEX_DIGITS: Final = b"0123456789abcdef"
_encode_payload: Final = msgspec.json.Encoder().encode
_decode_payload: Final = msgspec.json.Decoder(Payload).decode


_JSON_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS_ONLY: Final = {code: None for code in range(0x80) if chr(code) not in "[]{}"}
_NESTING_STEP: Final = {"[": 1, "{": 1, "]": -1, "}": -1}


def too_deep(text: str) -> bool:
    """Whether JSON ``text`` nests arrays and objects deeper than ``MAX_JSON_DEPTH``.

    Counting brackets settles almost every text at C speed; only one with more
    brackets than the limit is scanned, outside its strings.
    """
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    brackets = _JSON_STRING.sub("", text).translate(_BRACKETS_ONLY)
    # Characters past ASCII outside a string are not JSON: they count as nothing here.
    return max(accumulate(map(_NESTING_STEP.get, brackets, repeat(0))), default=0) > MAX_JSON_DEPTH


def build_payload(state: str, exp: int, bind_tag: str, token_id: str | None = None) -> bytes:
    """Compact UTF-8 JSON of the claims, as every writer emits them.

    Raises ``ValueError`` for a state that is not valid Unicode (a lone surrogate).
    """
    try:
        return _encode_payload(Payload(state, exp, bind_tag, token_id))
    except UnicodeEncodeError:
        raise ValueError("state must be valid Unicode (no lone surrogates)") from None


def read_payload(authenticated: bytes, bind_tag: str, now: int, leeway: int) -> Payload | Reason:
    """The claims in payload bytes whose MAC or AEAD tag has verified, if they hold; else why not.

    Strict: a UTF-8 JSON object with ``s`` a string, ``exp`` a signed 64-bit
    JSON integer, ``b`` 64 lowercase hex, ``id`` (if present) a string of 1 to
    64 characters, and no member name twice; other members are ignored. Then
    the claims, in order: not expired at ``now`` (give or take ``leeway``),
    and bound to ``bind_tag``. One function, so a token costs one call here.
    """
    try:
        payload = _decode_payload(authenticated)
    # ValueError: bytes that are not UTF-8; RecursionError: nesting deeper than msgspec follows.
    except (msgspec.DecodeError, ValueError, RecursionError):
        return Reason.MALFORMED
    # msgspec keeps the last of two equal member names. Bytes that re-encode
    # exactly (every token we mint) cannot hold a duplicate, nor any nesting;
    # anything else is scanned in full.
    if _encode_payload(payload) != authenticated and _irregular(authenticated):
        return Reason.MALFORMED
    if now > payload.exp + leeway:
        return Reason.EXPIRED
    # bind_tag is 64 lowercase hex, so a b outside that alphabet can never match
    # it; which of the two refusals it is matters only to the log.
    try:
        if hmac.compare_digest(payload.b, bind_tag):
            return payload
    except TypeError:  # compare_digest takes only ASCII str; b is not even hex
        return Reason.MALFORMED
    # b is ASCII here (compare_digest took it). Deleting the hex digits in one
    # bytes pass costs a sixth of str.strip(digits).
    return (
        Reason.MALFORMED if payload.b.encode("ascii").translate(None, _HEX_DIGITS) else Reason.WRONG_BINDING
    )


def _irregular(document: bytes) -> bool:
    """Whether authenticated payload bytes are not UTF-8, nest too deep, or repeat a member name."""
    try:
        # msgspec skips an unknown member without reading its bytes as UTF-8.
        text = document.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return too_deep(text) or _has_duplicate_member(document)


def _has_duplicate_member(document: bytes) -> bool:
    found = False

    def pairs_hook(pairs: list[tuple[str, object]]) -> None:
        nonlocal found
        if len({name for name, _ in pairs}) != len(pairs):
            found = True

    import json  # here: only a payload no writer of ours made reaches this scan

    try:
        json.loads(document, object_pairs_hook=pairs_hook)
    except (ValueError, RecursionError):  # fail closed where the two parsers disagree
        return True
    return found
