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
from typing import Final

from requeststate._payload import too_deep

MAX_READ_CHARS: Final = 1 << 20
"""The longest text (or bytes) read as JSON, or peeled further: far above any real state."""
MAX_INFLATED: Final = 1 << 20
"""The most bytes a compressed state inflates to before the probe stops reading it (a bomb)."""

BASE64: Final = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
HEX: Final = re.compile(r"(?:[0-9a-f]{2})+|(?:[0-9A-F]{2})+")
TOKEN: Final = re.compile(r"[A-Za-z0-9_\-+/.=]+")
"""Base64 (either alphabet) or hex parts and dots: a token that may carry a MAC or a tag."""


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


def parse_json(raw: str | bytes) -> object | None:
    """A JSON object or array, else ``None``; so too for text too long or nested too deep to read."""
    if len(raw) > MAX_READ_CHARS:
        return None
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        return None
    if too_deep(text):
        return None
    try:
        value: object = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) else None


def _deflate(raw: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-15)
    return compressor.compress(raw) + compressor.flush()


def _inflate(wbits: int) -> Callable[[bytes], bytes]:
    """Decompress at most ``MAX_INFLATED`` bytes: the state comes from the server, maybe a bomb."""

    def inflate(raw: bytes) -> bytes:
        inflater = zlib.decompressobj(wbits=wbits)
        inflated = inflater.decompress(raw, MAX_INFLATED)
        if inflater.unconsumed_tail or not inflater.eof:
            raise zlib.error("too large, or truncated")
        return inflated

    return inflate


COMPRESSIONS: Final[tuple[tuple[str, bytes, Callable[[bytes], bytes], Callable[[bytes], bytes]], ...]] = (
    ("zlib", b"\x78", _inflate(15), zlib.compress),
    ("gzip", b"\x1f\x8b", _inflate(31), lambda raw: gzip.compress(raw, mtime=0)),
    ("deflate", b"", _inflate(-15), _deflate),
)
"""Each: its name, the bytes it starts with, how to inflate (bounded), how to compress alike."""
