"""Decoding what a server sends, bounded: base64 and hex in either spelling, JSON, compression.

Every state the probe reads comes from the server under test, which may be hostile:
JSON is read only up to a size and a nesting depth, and compressed data only up to
an inflated size, so no state can exhaust the probe's stack or memory.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import re
import zlib
from collections.abc import Callable
from itertools import accumulate, repeat
from typing import Final

MAX_READ_CHARS: Final = 1 << 20
"""The longest text (or bytes) read as JSON, or peeled further: far above any real state."""
MAX_JSON_VALUES: Final = 50_000
"""The most JSON values read from one text, as from one message: parsed, each takes some 100 bytes."""
MAX_INFLATED: Final = 1 << 20
"""The most bytes a compressed state inflates to before the probe stops reading it (a bomb)."""

BASE64: Final = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
HEX: Final = re.compile(r"(?:[0-9a-f]{2})+|(?:[0-9A-F]{2})+")
TOKEN: Final = re.compile(r"[A-Za-z0-9_\-+/.=]+")
"""Base64 (either alphabet) or hex parts and dots: a token that may carry a MAC or a tag."""
PREFIX: Final = re.compile(r"[A-Za-z0-9_-]{1,16}")
"""A token's prefix: short text before its first separator (``v1``, ``v1e``, ``enc``)."""
PREFIX_SEPARATORS: Final = ".:|$~"
_PREFIXED: Final = re.compile(r"[A-Za-z0-9_-]{1,16}[.:|$~]")
MAX_JSON_DEPTH: Final = 128
"""The deepest nesting of arrays and objects read: the probe walks a state recursively."""

# A JSON string, or an unterminated one up to the end of the text. Possessive (``*+``): the engine
# never backtracks into it, so each character is looked at once; a backtracking pattern rescans to
# the end from every quote of ``"\"\"\...`` (issue 22: 80 KB took 13 s).
_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*+"?', re.DOTALL)
_BRACKETS_ONLY: Final = {code: None for code in range(0x80) if chr(code) not in "[]{}"}
_NESTING_STEP: Final = {"[": 1, "{": 1, "]": -1, "}": -1}


def b64decode(text: str) -> bytes | None:
    """Either base64 alphabet, padded or not; ``None`` when it is not base64."""
    body = text.rstrip("=").replace("+", "-").replace("/", "_")
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None


def b64encode_like(raw: bytes, original: str) -> str:
    """``raw`` in ``original``'s base64 alphabet (URL-safe unless it has ``+`` or ``/``) and padding."""
    standard = any(c in original for c in "+/")
    text = (base64.b64encode(raw) if standard else base64.urlsafe_b64encode(raw)).decode("ascii")
    return text if original.endswith("=") else text.rstrip("=")


def hex_like(original: str) -> Callable[[bytes], str]:
    """Spells bytes as hex in ``original``'s case."""
    upper = original.isupper()
    return lambda raw: raw.hex().upper() if upper else raw.hex()


def split_prefix(token: str) -> tuple[str, str]:
    """``(prefix with its separator, the rest)``: ``("v1e.", body)``, ``("enc:", body)``; ``("", token)``
    when it has none. A prefix is read past, never trusted: it names a scheme, it keeps no secret."""
    found = _PREFIXED.match(token)
    return (found.group(), token[found.end() :]) if found else ("", token)


def too_deep(text: str) -> bool:
    """Whether JSON ``text`` nests arrays and objects deeper than ``MAX_JSON_DEPTH``, in time linear in its
    length. Brackets in strings do not count; nor do those after a string that never ends."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    brackets = _STRING.sub("", text).translate(_BRACKETS_ONLY)
    # Characters past ASCII outside a string are not JSON: they count as nothing here.
    return max(accumulate(map(_NESTING_STEP.get, brackets, repeat(0))), default=0) > MAX_JSON_DEPTH


def json_values(text: str) -> int:
    """At most how many values JSON ``text`` holds: one, and one more per ',', '[' or '{' (those in
    strings count too: an overcount only makes the probe read less)."""
    return 1 + text.count(",") + text.count("[") + text.count("{")


def parse_json(raw: str | bytes) -> object | None:
    """A JSON object or array, else ``None``; so too for text too long, of too many values, or nested
    too deep to read."""
    if len(raw) > MAX_READ_CHARS:
        return None
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        return None
    if json_values(text) > MAX_JSON_VALUES or too_deep(text):
        return None
    try:
        value: object = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) else None


def _deflate(raw: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-15)
    return compressor.compress(raw) + compressor.flush()


Inflate = Callable[[bytes, int], bytes]
"""Decompresses to at most so many bytes; raises ``zlib.error`` past them."""


def _inflate(wbits: int) -> Inflate:
    """Decompress at most ``limit`` bytes (and never over ``MAX_INFLATED``): the state comes from the
    server, maybe a bomb."""

    def inflate(raw: bytes, limit: int) -> bytes:
        inflater = zlib.decompressobj(wbits=wbits)
        inflated = inflater.decompress(raw, max(1, min(limit, MAX_INFLATED)))
        if inflater.unconsumed_tail or not inflater.eof:
            raise zlib.error("too large, or truncated")
        return inflated

    return inflate


COMPRESSIONS: Final[tuple[tuple[str, bytes, Inflate, Callable[[bytes], bytes]], ...]] = (
    ("zlib", b"\x78", _inflate(15), zlib.compress),
    ("gzip", b"\x1f\x8b", _inflate(31), lambda raw: gzip.compress(raw, mtime=0)),
    ("deflate", b"", _inflate(-15), _deflate),
)
"""Each: its name, the bytes it starts with, how to inflate (to a bound), how to compress alike."""
