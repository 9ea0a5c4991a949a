"""``rs.peek``: what a token shows without a key, verified by nothing."""

from __future__ import annotations

import msgspec
import pytest

import requeststate as rs
from tests.conftest import NOW, SECRET


def test_a_signed_token_shows_its_payload() -> None:
    token = rs.encode("state", SECRET, mode="signed", subject="alice", tool="book", now=NOW)
    peeked = rs.peek(token)
    payload = msgspec.json.decode(peeked.payload or b"")
    assert (peeked.mode, payload["s"], payload["exp"], payload["iat"]) == (
        rs.Mode.SIGNED,
        "state",
        NOW + rs.DEFAULT_TTL,
        NOW,
    )


@pytest.mark.parametrize("mode", [rs.Mode.ENCRYPTED, rs.Mode.XCHACHA], ids=str)
def test_a_sealed_token_shows_its_mode_only(mode: rs.Mode) -> None:
    assert rs.peek(rs.encode("state", SECRET, mode=mode, now=NOW)) == rs.Peek(mode, None)


def test_a_forged_signed_payload_is_shown_as_written() -> None:
    # Nothing is verified: a payload under a MAC of zeros reads as well as a genuine one.
    genuine = rs.encode("x", SECRET, mode="signed", now=NOW)
    forged = f"v1.{genuine.split('.')[1]}.{'A' * 43}"
    assert rs.peek(forged) == rs.peek(genuine)


@pytest.mark.parametrize(
    "token",
    [None, b"v1.x.y", "", "v2.abc", "v1.!!!.x", "v1.eyJ9", "v1e.AAAA", "v1x." + "A" * 40],
    ids=["none", "bytes", "empty", "unknown prefix", "bad base64", "no mac", "short v1e.", "short v1x."],
)
def test_what_is_not_framed_as_a_token_is_malformed(token: object) -> None:
    with pytest.raises(rs.InvalidToken, match=r"^malformed$"):
        rs.peek(token)


def test_the_repr_shows_the_payloads_size_not_its_bytes() -> None:
    peeked = rs.peek(rs.encode("hunter2", SECRET, mode="signed", now=NOW))
    assert repr(peeked) == f"Peek(mode=signed, payload=<{len(peeked.payload or b'')} bytes>)"
