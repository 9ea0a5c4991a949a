"""Base64url without padding (RFC 4648 section 5), and its one strict reader.

Every token is read by ``b64decode`` and every signed token written by
``b64encode_joined``; both go through msgspec's base64 (standard alphabet,
padded, inside a JSON string), which is faster here than ``binascii`` by more
than a reader's minute is worth: docs/performance.md has the numbers. An
encrypted token's body is one ``binascii`` call.
"""

from __future__ import annotations

import binascii
from typing import Final

import msgspec

__all__ = ["b64decode", "b64encode", "b64encode_joined"]

_encode_json: Final = msgspec.json.Encoder().encode
_decode_bytes: Final = msgspec.json.Decoder(bytes).decode

_TO_URLSAFE: Final = bytes.maketrans(b"+/", b"-_")
# Standard to base64url, and the commas between JSON strings to the dots between parts.
_JSON_TO_URLSAFE: Final = bytes.maketrans(b"+/,", b"-_.")
# Base64url to standard. The standard alphabet's own "+" and "/", padding, and
# the two characters that mean something inside a JSON string (an escape could
# smuggle in any character) all become "!", which is no base64 at all.
_TO_STANDARD: Final = bytes.maketrans(b'-_+/=\\"', b"+/!!!!!")
# Indexed by length mod 4: what closes the JSON string, with the padding msgspec
# wants (a length of 1 mod 4 is never base64); and the last characters allowed,
# those whose unused low bits are zero, so every byte string has one encoding.
_CLOSING: Final = (b'"', None, b'=="', b'="')
_CANONICAL_LAST: Final = ("", "", "AQgw", "AEIMQUYcgkosw048")


def b64encode(data: bytes) -> str:
    """``data`` as unpadded base64url."""
    return binascii.b2a_base64(data, newline=False).rstrip(b"=").translate(_TO_URLSAFE).decode("ascii")


def b64encode_joined(*parts: bytes) -> str:
    """Each of ``parts`` as unpadded base64url, joined by ``"."``: a signed token's body."""
    # msgspec writes '["<padded standard base64>",...]'; one translate makes it
    # base64url with dots between the parts, and drops the brackets, quotes and padding.
    return _encode_json(parts).translate(_JSON_TO_URLSAFE, b'[]"=').decode("ascii")


def b64decode(text: str) -> bytes | None:
    """Decode canonical unpadded base64url, or return ``None``.

    Only the form ``b64encode`` writes is accepted: no padding, no whitespace,
    no ``+`` or ``/``, no length of 1 mod 4, and no non-zero unused trailing
    bits, so every byte string has exactly one accepted encoding.
    """
    tail = len(text) % 4
    closing = _CLOSING[tail]
    if closing is None or (tail and text[-1] not in _CANONICAL_LAST[tail]):
        return None
    try:
        return _decode_bytes(b'"' + text.encode("ascii").translate(_TO_STANDARD) + closing)
    except (UnicodeEncodeError, msgspec.DecodeError):
        return None
