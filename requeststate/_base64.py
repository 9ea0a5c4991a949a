"""Base64url without padding (RFC 4648 section 5), and its one strict reader.

Both directions go through msgspec's base64 (standard alphabet, padded, inside
a JSON string), and a token is decoded on every request: on CPython 3.11
msgspec decodes a 64 B state's token 2.6x faster than ``binascii``, and this
whole strict reader is 1.6x faster than ``base64.urlsafe_b64decode``. Reading,
one ``bytes.translate`` switches the alphabet, and in the same pass turns every
character that base64url must not contain into one that msgspec refuses.
Writing, there is nothing to refuse: see ``b64encode``.
"""

from __future__ import annotations

from typing import Final

import msgspec

__all__ = ["b64decode", "b64encode", "b64encode_joined"]

_encode_bytes: Final = msgspec.json.Encoder().encode
_decode_bytes: Final = msgspec.json.Decoder(bytes).decode

# Standard to base64url, and the commas between parts to the dots between them.
_FROM_STANDARD: Final = bytes.maketrans(b"+/,", b"-_.")
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
    """``data`` (``bytes``, nothing else) as unpadded base64url: every AEAD token's body."""
    # msgspec writes '"<standard base64, padded>"': strip the quotes and the
    # padding at the ends, and two replaces (a fast search for a few bytes each)
    # switch the alphabet in half the time of a translate that deletes.
    standard = _encode_bytes(data).strip(b'"=')
    return standard.replace(b"+", b"-").replace(b"/", b"_").decode("ascii")


def b64encode_joined(*parts: bytes) -> str:
    """Each of ``parts`` as unpadded base64url, joined by ``"."``: a signed token's body."""
    # msgspec writes '["<padded>",...]' in one call; one translate makes it
    # base64url, dots between parts, and drops the rest: in pure Python, faster
    # than b64encode per part.
    return _encode_bytes(parts).translate(_FROM_STANDARD, b'[]"=').decode("ascii")


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
