"""Base64url without padding (RFC 4648 section 5), and its one strict reader."""

from __future__ import annotations

import base64
import re

__all__ = ["b64decode", "b64encode"]

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_CANONICAL_CHARS = re.compile(r"[A-Za-z0-9_-]*")
# In a final group of 2 (or 3) characters only the high 2 (or 4) bits of the last
# character carry data; the canonical encoding leaves the rest zero.
_UNUSED_BITS = {2: 0x0F, 3: 0x03}
_SEXTET = {char: value for value, char in enumerate(_ALPHABET)}


def b64encode(data: bytes) -> str:
    """Encode ``data`` as unpadded base64url."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64decode(text: str) -> bytes | None:
    """Decode canonical unpadded base64url, or return ``None``.

    Only the form ``b64encode`` writes is accepted: no padding, no whitespace,
    no ``+`` or ``/``, no length of 1 mod 4, and no non-zero unused trailing
    bits, so every byte string has exactly one accepted encoding.
    """
    tail = len(text) % 4
    if tail == 1 or _CANONICAL_CHARS.fullmatch(text) is None:
        return None
    if tail and _SEXTET[text[-1]] & _UNUSED_BITS[tail]:
        return None
    return base64.urlsafe_b64decode(text + "=" * (4 - tail) if tail else text)
