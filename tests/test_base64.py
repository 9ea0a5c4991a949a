from __future__ import annotations

import base64
import binascii
import os
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from requeststate._base64 import b64decode, b64encode, b64encode_joined

_BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
# Every character the decoder must refuse somewhere, with the alphabet often enough to
# reach the decoder's later checks.
_HOSTILE = _BASE64URL + '+/=\\"!. \n\t\x00\x7f\u00e9\u0660\U0001f600'


def _stdlib_reading(text: str) -> bytes | None:
    # The definition, by another road: the alphabet by regex, then the standard
    # library's decoder, then canonical means it re-encodes to the same text.
    if not re.fullmatch(r"[A-Za-z0-9_-]*", text) or len(text) % 4 == 1:
        return None
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error:
        return None
    return data if base64.urlsafe_b64encode(data).decode().rstrip("=") == text else None


@pytest.mark.parametrize("size", range(40))
def test_round_trip_of_every_tail_length(size: int) -> None:
    data = os.urandom(size)
    assert b64decode(b64encode(data)) == data


def test_encode_is_unpadded_urlsafe() -> None:
    assert b64encode(b"\xfb\xff") == "-_8"


def test_encode_joined_joins_parts_with_dots() -> None:
    assert b64encode_joined(b"\xfb\xff", b"", b"\x00") == "-_8..AA"


@pytest.mark.parametrize("text", ["-_8=", "AA==", "AAA="])
def test_padding_is_refused(text: str) -> None:
    assert b64decode(text) is None


@pytest.mark.parametrize("text", ["+_8", "-/8", "a+b/"])
def test_standard_alphabet_is_refused(text: str) -> None:
    assert b64decode(text) is None


@pytest.mark.parametrize("text", [" AAA", "AAA ", "AA\nA", "AAAA\t", "AA\rAA"])
def test_whitespace_is_refused(text: str) -> None:
    assert b64decode(text) is None


@pytest.mark.parametrize("text", ["A", "AAAAA", "AAAAAAAAA"])
def test_length_one_mod_four_is_refused(text: str) -> None:
    assert b64decode(text) is None


@pytest.mark.parametrize("text", ["AB", "AAB", "AAC", "AAAAAB"])
def test_non_zero_unused_trailing_bits_are_refused(text: str) -> None:
    assert b64decode(text) is None


@pytest.mark.parametrize(
    ("text", "data"), [("AA", b"\x00"), ("AAE", b"\x00\x01"), ("AAAAAQ", b"\x00\x00\x00\x01")]
)
def test_zero_unused_trailing_bits_are_accepted(text: str, data: bytes) -> None:
    assert b64decode(text) == data


@pytest.mark.parametrize("text", ["é", "AAA\u0660", "AA.A", "AA\x00A"])
def test_characters_outside_the_alphabet_are_refused(text: str) -> None:
    assert b64decode(text) is None


def test_empty_string_is_empty_bytes() -> None:
    assert b64decode("") == b""


@pytest.mark.parametrize("text", ["\\u0041" * 4, "AAAA" + "\\/" * 4, '"AAA', 'AA""'])
def test_json_string_syntax_is_refused(text: str) -> None:
    # The decoder reads through a JSON string: an escape must not smuggle a character in.
    assert b64decode(text) is None


def test_decode_agrees_with_the_standard_library_on_every_short_string() -> None:
    # Every string of up to 2 characters from all of ASCII and a few others (every one of
    # _HOSTILE's), and every string of 3 and 4 from the characters that sit at the edges of the rules.
    wide = [chr(c) for c in range(128)] + ["\u00e9", "\u0660", "\ud800", "\uff21", "\u212a", "\U0001f600"]
    edges = 'AQgwBE_-+/=\\"!.'
    texts = [""] + wide + [a + b for a in wide for b in wide]
    texts += [a + b + c for a in edges for b in edges for c in edges]
    texts += [a + b + c + d for a in edges for b in edges for c in edges for d in edges]
    assert [text for text in texts if b64decode(text) != _stdlib_reading(text)] == []


# From 3 characters: every shorter string is tried above (a fifth of the examples were, before).
@settings(max_examples=3000)
@given(
    st.text(alphabet=_HOSTILE, min_size=3, max_size=16)
    | st.text(alphabet=_BASE64URL, min_size=3, max_size=16)
)
def test_decode_agrees_with_the_standard_library(text: str) -> None:
    assert b64decode(text) == _stdlib_reading(text)


@given(st.binary(max_size=64))
# Each length modulo 3, twice, whatever hypothesis draws: what is stripped from msgspec's padded text.
@example(b"")
@example(b"\xfb")
@example(b"\xfb" * 2)
@example(b"\xfb" * 3)
@example(b"\xfb" * 4)
@example(b"\xfb" * 5)
@example(b"\xfb" * 6)
def test_encode_agrees_with_the_standard_library(data: bytes) -> None:
    assert b64encode(data) == base64.urlsafe_b64encode(data).decode().rstrip("=")


@given(st.lists(st.binary(max_size=64), min_size=1, max_size=3))
def test_encode_joined_agrees_with_the_standard_library(parts: list[bytes]) -> None:
    expected = ".".join(base64.urlsafe_b64encode(part).decode().rstrip("=") for part in parts)
    assert b64encode_joined(*parts) == expected


# --- the exact characters at the edges of the alphabet ---------------------------------------


def test_encode_keeps_a_trailing_x() -> None:
    assert b64encode(b"\x00\x00\x17") == "AAAX"


@pytest.mark.parametrize("text", ["AA!!!!AA", "AA    AA", "AAAA\n\n\n\n", "AB..CD.."])
def test_characters_outside_the_alphabet_are_refused_in_a_whole_quantum(text: str) -> None:
    # Lengths that are a multiple of 4: only a strict decoder refuses the stray characters.
    assert b64decode(text) is None
