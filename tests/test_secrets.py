"""requeststate._secrets: a secret is at least 32 bytes of evident randomness, and says why when it is not."""

from __future__ import annotations

import hashlib
import os

import pytest

import requeststate as rs
from tests.conftest import SECRET

FIX = r"not secret randomness: use 32 random bytes: requeststate keygen, or os\.urandom\(32\)$"


@pytest.mark.parametrize(
    ("secret", "weakness"),
    [
        (b"k" * 32, "one byte repeated"),
        (bytes(32), "one byte repeated"),
        (b"ab" * 16, "a short pattern repeated"),
        (bytes(range(16)) * 2, "a short pattern repeated"),
        (hashlib.sha256(b"half").digest()[:20] * 2, "a short pattern repeated"),
        (bytes(range(15)) + bytes(range(15))[::-1] + b"\x00\x01", "made of only 15 distinct byte values"),
    ],
    ids=["one letter", "zeros", "two letters", "sixteen bytes twice", "twenty bytes twice", "fifteen values"],
)
def test_a_secret_evidently_not_random_is_refused_saying_why_and_how_to_make_one(
    secret: bytes, weakness: str
) -> None:
    with pytest.raises(ValueError, match=rf"^secret 0 is {weakness}, {FIX}"):
        rs.KeyRing(secret)


@pytest.mark.parametrize(
    "secret",
    [
        SECRET,
        os.urandom(32),
        hashlib.sha256(b"a key").digest() * 3 + b"x",
        bytes(range(16)) + bytes(range(16))[::-1],
    ],
    ids=[
        "the spec's key",
        "32 random bytes",
        "a pattern broken at its end",
        "sixteen values, no period",
    ],
)
def test_a_secret_with_no_evident_weakness_is_accepted(secret: bytes) -> None:
    assert len(rs.KeyRing(secret)) == 1


def test_the_refusal_names_the_secrets_position_and_never_its_bytes() -> None:
    with pytest.raises(ValueError, match=r"^secret 1 is one byte repeated") as caught:
        rs.KeyRing(SECRET, b"Q" * 40)
    assert "QQQQ" not in str(caught.value)


def test_from_env_names_the_variable_of_a_weak_secret() -> None:
    weak = "a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s"  # b"kkk..." in base64url
    with pytest.raises(ValueError, match=r"^MY_KEYS: secret 0 is one byte repeated"):
        rs.KeyRing.from_env("MY_KEYS", environ={"MY_KEYS": weak})


@pytest.mark.parametrize("text", ["ab+cd", "ab/cd"], ids=["plus", "slash"])
def test_either_character_of_standard_base64_alone_is_refused_with_the_option_that_reads_it(
    text: str,
) -> None:
    with pytest.raises(ValueError, match=r"looks like standard base64 .*pass encoding='base64'"):
        rs.KeyRing.from_env("MY_KEYS", environ={"MY_KEYS": text + "A" * 40})


def test_a_pattern_repeated_past_twice_is_refused() -> None:
    secret = (bytes(range(16)) * 3)[:40]  # sixteen distinct values, two and a half times
    with pytest.raises(ValueError, match=rf"^secret 0 is a short pattern repeated, {FIX}"):
        rs.KeyRing(secret)
