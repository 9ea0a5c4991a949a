from __future__ import annotations

import base64
import os

import pytest

from requeststate._base64 import b64decode, b64encode


@pytest.mark.parametrize("size", range(40))
def test_round_trip_of_every_tail_length(size: int) -> None:
    data = os.urandom(size)
    assert b64decode(b64encode(data)) == data


def test_encode_is_unpadded_urlsafe() -> None:
    assert b64encode(b"\xfb\xff") == "-_8"


def test_encode_matches_the_standard_library_without_padding() -> None:
    data = bytes(range(256))
    assert b64encode(data) == base64.urlsafe_b64encode(data).decode().rstrip("=")


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


@pytest.mark.parametrize("text", ["AA", "AAE", "AAAAAQ"])
def test_zero_unused_trailing_bits_are_accepted(text: str) -> None:
    assert b64decode(text) is not None


@pytest.mark.parametrize("text", ["é", "AAA\u0660", "AA.A", "AA\x00A"])
def test_characters_outside_the_alphabet_are_refused(text: str) -> None:
    assert b64decode(text) is None


def test_empty_string_is_empty_bytes() -> None:
    assert b64decode("") == b""


# --- added for mutation testing: the exact characters at the edges ---------------------------


def test_encode_keeps_a_trailing_x() -> None:
    assert b64encode(b"\x00\x00\x17") == "AAAX"


@pytest.mark.parametrize("text", ["AA!!!!AA", "AA    AA", "AAAA\n\n\n\n", "AB..CD.."])
def test_characters_outside_the_alphabet_are_refused_in_a_whole_quantum(text: str) -> None:
    # Lengths that are a multiple of 4: only a strict decoder refuses the stray characters.
    assert b64decode(text) is None
