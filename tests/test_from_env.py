"""KeyRing.from_env never reads a secret in an encoding other than the one it was written in."""

from __future__ import annotations

import base64
import hashlib

import pytest

import requeststate as rs
from tests.conftest import OTHER_SECRET, SECRET
from tests.support.reference import b64

# A secret whose standard base64 opens with "++//" (and so differs from its base64url).
STANDARD_SECRET = bytes([0xFB, 0xEF, 0xFF]) + hashlib.sha256(b"standard base64").digest()[:31]
NAME = "MY_KEYS"


def ring_from(value: str, **options: object) -> rs.KeyRing:
    return rs.KeyRing.from_env(NAME, environ={NAME: value}, **options)  # type: ignore[arg-type]


def fingerprint(secret: bytes) -> str:
    return rs.KeyRing(secret).fingerprint


def test_the_fixture_secret_has_both_standard_base64_characters() -> None:
    text = base64.b64encode(STANDARD_SECRET).decode()
    assert "+" in text
    assert "/" in text


def test_default_reads_base64url_as_keygen_prints_it() -> None:
    assert ring_from(b64(STANDARD_SECRET)).fingerprint == fingerprint(STANDARD_SECRET)


def test_default_refuses_standard_base64_naming_the_option() -> None:
    text = base64.b64encode(STANDARD_SECRET).decode()
    with pytest.raises(
        ValueError, match=r"^MY_KEYS: secret 0 looks like standard base64 .*encoding='base64'"
    ):
        ring_from(text)


def test_default_refuses_64_hex_digits_naming_the_option() -> None:
    # 64 hex digits are valid base64url too: read so, they would be 48 other bytes.
    with pytest.raises(ValueError, match=r"^MY_KEYS: secret 1 looks like hex, .*encoding='hex'"):
        ring_from(f"{b64(OTHER_SECRET)},{SECRET.hex()}")


def test_default_refuses_upper_case_hex_too() -> None:
    with pytest.raises(ValueError, match="looks like hex"):
        ring_from(SECRET.hex().upper())


def test_hint_never_contains_the_value() -> None:
    text = SECRET.hex()
    with pytest.raises(ValueError, match="looks like hex") as caught:
        ring_from(text)
    assert text not in str(caught.value)


def test_explicit_base64url_reads_64_hex_digits_as_base64url() -> None:
    # Named explicitly, the text is read as written: no guessing either way.
    text = SECRET.hex()
    assert ring_from(text, encoding="base64url").fingerprint == fingerprint(base64.urlsafe_b64decode(text))


def test_encoding_hex_reads_the_32_bytes_the_hex_spells() -> None:
    assert ring_from(SECRET.hex(), encoding="hex").fingerprint == fingerprint(SECRET)


def test_encoding_hex_refuses_an_odd_number_of_digits() -> None:
    with pytest.raises(ValueError, match=r"^MY_KEYS: secret 0 is not hex$"):
        ring_from(SECRET.hex() + "0", encoding="hex")


def test_encoding_hex_refuses_spaces_inside_the_value() -> None:
    # bytes.fromhex alone would skip them.
    with pytest.raises(ValueError, match=r"^MY_KEYS: secret 0 is not hex$"):
        ring_from(SECRET.hex()[:32] + " " + SECRET.hex()[32:], encoding="hex")


def test_encoding_base64_reads_standard_base64_padded_or_not() -> None:
    padded = base64.b64encode(STANDARD_SECRET + b"x").decode()
    assert padded.endswith("=")
    for text in (padded, padded.rstrip("=")):
        assert ring_from(text, encoding="base64").fingerprint == fingerprint(STANDARD_SECRET + b"x")


def test_encoding_base64_refuses_base64url() -> None:
    with pytest.raises(ValueError, match=r"^MY_KEYS: secret 0 is not base64$"):
        ring_from(b64(STANDARD_SECRET), encoding="base64")


def test_encoding_base64url_refuses_standard_base64() -> None:
    with pytest.raises(ValueError, match=r"^MY_KEYS: secret 0 is not base64url$"):
        ring_from(base64.b64encode(STANDARD_SECRET).decode(), encoding="base64url")


def test_an_unknown_encoding_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="encoding must be one of 'base64url', 'base64', 'hex', got 'utf-8'"):
        ring_from(b64(SECRET), encoding="utf-8")
