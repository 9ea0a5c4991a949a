"""The payload every mode carries, ``{s, exp, b, id, iat}``: writing it, and reading it once authenticated."""

from __future__ import annotations

import re
import typing
from functools import lru_cache
from itertools import accumulate, repeat
from typing import TYPE_CHECKING, Annotated, Any, Final

import msgspec

from ._bounds import INT64_MAX, INT64_MIN
from ._errors import InvalidToken, Reason

__all__ = ["MAX_JSON_DEPTH", "Payload", "T", "build_payload", "parse_payload", "read_state"]

if TYPE_CHECKING:  # a TypeVar default (PEP 696): typing's own TypeVar takes one from Python 3.13
    from typing_extensions import TypeVar

    T = TypeVar("T", default=str)  # a state's type: its text, a str, unless type= names another
else:
    T = typing.TypeVar("T")

MAX_JSON_DEPTH: Final = 128
"""The deepest nesting of arrays and objects read in a payload or a typed state.

Explicit, so every Python behaves alike: without it 3.11 refuses a state 5000
levels deep (RecursionError) while 3.13 accepts it.
"""


class Payload(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """The signed or sealed claims. Field order is the wire order: s, exp, b, id, iat.

    ``id`` and ``iat`` are our extensions (mcp.d ignores them): a unique token id,
    and the unix second the token was minted, which a replay guard claims together
    (``_token_id``). Tokens from other writers may lack them.
    """

    s: str
    exp: Annotated[int, msgspec.Meta(ge=INT64_MIN, le=INT64_MAX)]
    # 64 characters: a b that is not the bind tag, hex or not, is refused as
    # wrong_binding (a pattern here would triple the cost of parsing every token).
    b: Annotated[str, msgspec.Meta(min_length=64, max_length=64)]
    id: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | None = None
    iat: Annotated[int, msgspec.Meta(ge=INT64_MIN, le=INT64_MAX)] | None = None


_encode_payload: Final = msgspec.json.Encoder().encode
_decode_payload: Final = msgspec.json.Decoder(Payload).decode


def build_payload(
    state: str, exp: int, bind_tag: str, token_id: str | None = None, minted: int | None = None
) -> bytes:
    """Compact UTF-8 JSON of the claims, as every writer emits them.

    Raises ``ValueError`` for a state that is not valid Unicode (a lone surrogate).
    """
    try:
        return _encode_payload(Payload(state, exp, bind_tag, token_id, minted))
    except UnicodeEncodeError:
        raise ValueError("state must be valid Unicode (no lone surrogates)") from None


def parse_payload(authenticated: bytes) -> Payload:
    """The claims in payload bytes whose MAC or AEAD tag has verified, strictly parsed.

    A UTF-8 JSON object with ``s`` a string, ``exp`` a signed 64-bit JSON
    integer, ``b`` 64 characters, ``id`` (if present) a string of 1 to 64
    characters, ``iat`` (if present) a signed 64-bit JSON integer, no member
    name twice, and no nesting past ``MAX_JSON_DEPTH``; other members are
    ignored. ``b`` is checked against the bind tag later.

    Raises:
        InvalidToken: ``malformed``.
    """
    try:
        payload = _decode_payload(authenticated)
    # ValueError: bytes that are not UTF-8; RecursionError: nesting deeper than msgspec follows.
    except (msgspec.DecodeError, ValueError, RecursionError):
        raise InvalidToken(Reason.MALFORMED) from None
    # msgspec keeps the last of two equal member names. Bytes that re-encode
    # exactly (every token a writer of ours mints) cannot hold a duplicate, nor
    # any nesting; anything else is scanned in full.
    if _encode_payload(payload) != authenticated and _irregular(authenticated):
        raise InvalidToken(Reason.MALFORMED)
    return payload


@lru_cache(maxsize=64)
def _state_decoder(state_type: Any) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(state_type)


def read_state(text: str, state_type: Any) -> Any:
    """An authenticated state's JSON ``text`` as ``state_type`` (msgspec, strict).

    Raises:
        InvalidToken: ``wrong_type``, when it is not JSON of that type, or nests too deep.
    """
    if too_deep(text):
        raise InvalidToken(Reason.WRONG_TYPE)
    try:
        return _state_decoder(state_type).decode(text)
    except (msgspec.DecodeError, RecursionError):
        raise InvalidToken(Reason.WRONG_TYPE) from None


# Possessive, and the closing quote optional: a string that never ends is one match to the end of
# the text, not a new scan from each quote inside it (quadratic in the text's length).
_JSON_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*+"?')
_BRACKETS_ONLY: Final = {code: None for code in range(0x80) if chr(code) not in "[]{}"}
_NESTING_STEP: Final = {"[": 1, "{": 1, "]": -1, "}": -1}


def too_deep(text: str) -> bool:
    """Whether JSON ``text`` nests arrays and objects deeper than ``MAX_JSON_DEPTH``.

    Counting brackets settles almost every text; only one with more brackets
    than the limit is scanned, outside its strings.
    """
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    brackets = _JSON_STRING.sub("", text).translate(_BRACKETS_ONLY)
    # Characters past ASCII outside a string are not JSON: they count as nothing here.
    return max(accumulate(map(_NESTING_STEP.get, brackets, repeat(0))), default=0) > MAX_JSON_DEPTH


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

    import json  # here: only a payload that no writer of ours made reaches this scan

    try:
        json.loads(document, object_pairs_hook=pairs_hook)
    except (ValueError, RecursionError):  # fail closed where the two parsers disagree
        return True
    return found
