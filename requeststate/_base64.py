"""Base64url without padding (RFC 4648 section 5), and its one strict reader."""

from __future__ import annotations

import binascii
from typing import Final

__all__ = ["b64decode", "b64encode"]

_ALPHABET: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_TO_STANDARD: Final = bytes.maketrans(b"-_", b"+/")
_FROM_STANDARD: Final = bytes.maketrans(b"+/", b"-_")
# By length mod 4: the padding binascii wants back (a length of 1 mod 4 is never
# base64), and the bits of the last character that carry no data, which the
# canonical encoding leaves zero.
_PADDING: Final = (b"", None, b"==", b"=")
_UNUSED_BITS: Final = (0, 0, 0x0F, 0x03)
_SEXTET: Final = {char: value for value, char in enumerate(_ALPHABET)}


def b64encode(data: bytes) -> str:
    """Encode ``data`` as unpadded base64url."""
    return binascii.b2a_base64(data, newline=False).translate(_FROM_STANDARD).rstrip(b"=").decode("ascii")


def b64decode(text: str) -> bytes | None:
    """Decode canonical unpadded base64url, or return ``None``.

    Only the form ``b64encode`` writes is accepted: no padding, no whitespace,
    no ``+`` or ``/``, no length of 1 mod 4, and no non-zero unused trailing
    bits, so every byte string has exactly one accepted encoding.
    """
    tail = len(text) % 4
    padding = _PADDING[tail]
    # Strict binascii refuses every character outside the standard alphabet and
    # misplaced padding; what it would accept but base64url must not is checked here.
    if padding is None or "+" in text or "/" in text or "=" in text:
        return None
    if tail and _SEXTET.get(text[-1], 0) & _UNUSED_BITS[tail]:
        return None
    try:
        return binascii.a2b_base64(text.encode("ascii").translate(_TO_STANDARD) + padding, strict_mode=True)
    except (UnicodeEncodeError, binascii.Error):
        return None
