"""requeststate._envelope: the strict core, sealing a state and opening a token, each check in its order."""

from __future__ import annotations

import json

import pytest

import requeststate as rs
from requeststate._encrypted import ENCRYPTED, XCHACHA
from requeststate._envelope import TOKEN_ID_BYTES, open_token, seal_token
from requeststate._modes import WireMode
from requeststate._options import INT64_MAX
from requeststate._payload import Payload
from requeststate._signed import SIGNED
from tests.conftest import SECRET

KEYS = rs.KeyRing(SECRET)
WIRES: tuple[WireMode, ...] = (SIGNED, ENCRYPTED, XCHACHA)
MAX = 64 * 1024
EXP = 2_000_000_000


def random_for(wire: WireMode) -> bytes:
    return bytes(range(wire.nonce_bytes + TOKEN_ID_BYTES))


def seal(
    state: object = "state", wire: WireMode = ENCRYPTED, *, exp: int = EXP, tool: str | None = "t"
) -> str:
    return seal_token(state, wire, KEYS, "alice", tool, exp, random_for(wire), MAX)


def opened(
    token: object, *, subject: object = "alice", tool: object = "t", now: int = EXP, leeway: int = 0
) -> Payload | rs.Reason:
    try:
        payload, _ = open_token(token, WIRES, KEYS, subject, tool, now, leeway, MAX)
    except rs.InvalidToken as refused:
        return refused.reason
    return payload


def signed_over(raw: bytes) -> str:
    # An authentic v1. token whose payload is exactly these bytes: what only a key holder can make.
    return SIGNED.seal(raw, KEYS.bound("alice", "t")[0], b"")


@pytest.mark.parametrize("wire", WIRES, ids=lambda wire: wire.prefix)
def test_the_same_random_bytes_make_the_same_token(wire: WireMode) -> None:
    assert seal(wire=wire) == seal(wire=wire)
    assert seal(wire=wire).startswith(wire.prefix)


@pytest.mark.parametrize("wire", WIRES, ids=lambda wire: wire.prefix)
def test_the_token_id_is_the_random_bytes_after_the_nonce(wire: WireMode) -> None:
    payload, opened_by = open_token(seal(wire=wire), WIRES, KEYS, "alice", "t", EXP, 0, MAX)
    assert payload.id == bytes(range(wire.nonce_bytes, wire.nonce_bytes + TOKEN_ID_BYTES)).hex()
    assert opened_by is wire


def state_of(token: str, **options: object) -> str:
    payload = opened(token, **options)  # type: ignore[arg-type]
    assert isinstance(payload, Payload), payload
    return payload.s


def test_a_state_that_is_no_str_travels_as_its_json_text() -> None:
    assert state_of(seal({"step": 1})) == '{"step":1}'


def test_an_expiry_past_int64_is_refused_at_mint() -> None:
    with pytest.raises(ValueError, match=r"^now \+ ttl must fit in a signed 64-bit integer$"):
        seal(exp=INT64_MAX + 1)


def test_a_token_longer_than_the_cap_is_refused_at_mint() -> None:
    with pytest.raises(ValueError, match=r"^the token would be \d+ bytes, over max_token_bytes=100$"):
        seal_token("x" * 100, SIGNED, KEYS, "alice", "t", EXP, random_for(SIGNED), 100)


def test_valid_through_the_second_of_its_expiry_and_refused_the_second_after() -> None:
    token = seal()
    assert state_of(token, now=EXP) == "state"
    assert opened(token, now=EXP + 1) is rs.Reason.EXPIRED


def test_leeway_extends_the_expiry_by_its_seconds() -> None:
    token = seal()
    assert state_of(token, now=EXP + 5, leeway=5) == "state"
    assert opened(token, now=EXP + 6, leeway=5) is rs.Reason.EXPIRED


def test_another_identity_is_refused_in_the_signed_mode_by_its_bind_tag() -> None:
    assert opened(seal(wire=SIGNED), subject="mallory") is rs.Reason.WRONG_BINDING


@pytest.mark.parametrize("wire", [ENCRYPTED, XCHACHA], ids=lambda wire: wire.prefix)
def test_another_identity_fails_the_aead_tag_in_the_encrypted_modes(wire: WireMode) -> None:
    assert opened(seal(wire=wire), subject="mallory") is rs.Reason.BAD_SIGNATURE


def test_expiry_is_checked_before_the_binding() -> None:
    assert opened(seal(wire=SIGNED), subject="mallory", now=EXP + 1) is rs.Reason.EXPIRED


@pytest.mark.parametrize("b", ["G" * 64, "0" * 64, "é" * 64], ids=["not hex", "another tag", "not ascii"])
def test_an_authentic_payload_whose_bind_tag_is_not_the_expected_one_is_wrong_binding(b: str) -> None:
    raw = json.dumps({"s": "x", "exp": EXP, "b": b}, separators=(",", ":")).encode()
    assert opened(signed_over(raw)) is rs.Reason.WRONG_BINDING


@pytest.mark.parametrize(
    ("token", "subject", "reason"),
    [
        (b"v1.x", "alice", rs.Reason.MALFORMED),
        ("v1e." + "A" * MAX, "alice", rs.Reason.TOO_LARGE),
        ("v9.AAAA", "\0", rs.Reason.MALFORMED),
        ("v1e.!!!!", "\0", rs.Reason.WRONG_BINDING),
        ("v1e.!!!!", "alice", rs.Reason.MALFORMED),
    ],
    ids=["not a str", "too large", "prefix before identity", "identity before framing", "framing"],
)
def test_the_checks_run_in_their_documented_order(token: object, subject: str, reason: rs.Reason) -> None:
    assert opened(token, subject=subject) is reason


def test_a_token_of_a_mode_not_accepted_is_refused_by_its_prefix() -> None:
    with pytest.raises(rs.InvalidToken, match=r"^wrong_mode$"):
        open_token(seal(wire=XCHACHA), (SIGNED, ENCRYPTED), KEYS, "alice", "t", EXP, 0, MAX)
