"""The strict core: ``seal_token`` (deterministic given its randomness) and the checks of ``open_token``."""

from __future__ import annotations

import re

import pytest

import requeststate as rs
from requeststate._bounds import INT64_MAX
from requeststate._envelope import open_token, seal_token
from requeststate._keys import BoundKey
from requeststate._modes import WireMode, wire_modes
from requeststate._payload import Payload
from tests.conftest import NOW, OTHER_SECRET, SECRET
from tests.support import reference as ref

RING = rs.KeyRing(SECRET)
SIGNED, ENCRYPTED, XCHACHA = wire_modes(tuple(rs.Mode))[1]
WIRES = {rs.Mode.SIGNED: SIGNED, rs.Mode.ENCRYPTED: ENCRYPTED, rs.Mode.XCHACHA: XCHACHA}
TOKEN_ID = bytes(range(0xE0, 0xF0)).hex()
MINTED = NOW - 300
MAX = rs.DEFAULT_MAX_TOKEN_BYTES


def nonce_for(wire: WireMode) -> bytes:
    return bytes(range(wire.nonce_bytes))


def seal(
    wire: WireMode, state: object = "state", subject: object = "alice", tool: object = "book", exp: int = NOW
) -> str:
    return seal_token(state, wire, RING, subject, tool, exp, nonce_for(wire), TOKEN_ID, MINTED, MAX)


def opened(
    token: object,
    wires: tuple[WireMode, ...] = (SIGNED, ENCRYPTED, XCHACHA),
    subject: object = "alice",
    tool: object = "book",
    now: int = NOW,
    leeway: int = 0,
    max_bytes: int = MAX,
) -> tuple[Payload, WireMode, BoundKey]:
    return open_token(token, wires, RING, subject, tool, now, leeway, max_bytes)


def reference_token(mode: rs.Mode, secret: bytes, payload: bytes) -> str:
    """``payload`` sealed by the reference, with the AAD an encrypted token for alice/book has."""
    tag = ref.bind_tag(secret, "alice", "book")
    if mode is rs.Mode.SIGNED:
        return ref.signed_token(secret, payload)
    if mode is rs.Mode.ENCRYPTED:
        return ref.encrypted_token(secret, payload, tag, bytes(12))
    return ref.xchacha_token(secret, payload, tag, bytes(24))


def reason(token: object, **options: object) -> rs.Reason:
    with pytest.raises(rs.InvalidToken) as caught:
        opened(token, **options)  # type: ignore[arg-type]
    return caught.value.reason


# --- seal_token -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_seal_is_the_reference_token_for_the_given_randomness(mode: rs.Mode) -> None:
    wire = WIRES[mode]
    expected = ref.token(
        mode, SECRET, "state", NOW, "alice", "book", bytes(range(wire.nonce_bytes)), TOKEN_ID, MINTED
    )
    assert seal(wire) == expected


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_seal_carries_a_value_that_is_not_a_str_as_its_json_text(mode: rs.Mode) -> None:
    payload, _, _ = opened(seal(WIRES[mode], state={"step": 1, "dates": ["2026-12-01"]}))
    assert payload.s == '{"step":1,"dates":["2026-12-01"]}'


def test_seal_mints_with_the_first_key_of_the_ring() -> None:
    token = seal_token(
        "state", SIGNED, rs.KeyRing(OTHER_SECRET, SECRET), "", None, NOW, b"", TOKEN_ID, MINTED, MAX
    )
    assert token == ref.token("signed", OTHER_SECRET, "state", NOW, "", None, b"", TOKEN_ID, MINTED)


def test_seal_accepts_an_exp_of_int64_max() -> None:
    assert opened(seal(SIGNED, exp=INT64_MAX))[0].exp == INT64_MAX


def test_seal_refuses_an_exp_past_int64() -> None:
    with pytest.raises(ValueError, match=r"^now \+ ttl must fit in a signed 64-bit integer$"):
        seal(SIGNED, exp=INT64_MAX + 1)


def test_seal_refuses_a_token_over_the_limit_saying_by_how_much() -> None:
    size = len(seal(SIGNED))
    assert len(seal_token("state", SIGNED, RING, "alice", "book", NOW, b"", TOKEN_ID, MINTED, size)) == size
    with pytest.raises(
        ValueError, match=rf"^the token would be {size} bytes, over max_token_bytes={size - 1}$"
    ):
        seal_token("state", SIGNED, RING, "alice", "book", NOW, b"", TOKEN_ID, MINTED, size - 1)


@pytest.mark.parametrize(
    ("subject", "tool", "error", "message"),
    [
        (None, None, TypeError, "subject must be a str and tool a str or None"),
        ("a\0", None, ValueError, "subject and tool must not contain U+0000"),
        (
            "{",
            None,
            ValueError,
            "a subject bound without a tool must not start with '{' (it would read as a payload)",
        ),
    ],
    ids=["not a str", "separator", "payload-shaped"],
)
def test_seal_refuses_an_identity_that_cannot_be_bound(
    subject: object, tool: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        seal(SIGNED, subject=subject, tool=tool)


# --- open_token: what it returns ------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_open_returns_the_payload_the_mode_and_the_key_the_token_is_in(mode: rs.Mode) -> None:
    payload, wire, key = opened(seal(WIRES[mode]))
    assert (payload, wire, key) == (
        Payload("state", NOW, ref.bind_tag(SECRET, "alice", "book"), TOKEN_ID, MINTED),
        WIRES[mode],
        RING.bound("alice", "book")[0],
    )


def test_open_reads_a_token_without_an_id_as_mcp_d_writes_it() -> None:
    token = ref.token("encrypted", SECRET, "state", NOW, "alice", "book", bytes(12))
    assert opened(token)[0].id is None


def test_open_accepts_a_token_through_exp_plus_leeway() -> None:
    assert opened(seal(SIGNED), now=NOW + 5, leeway=5)[0].s == "state"


# --- open_token: each check's reason, and the order they run in -----------------------------------


@pytest.mark.parametrize("token", [None, b"v1.x.y", 5, ["v1."], b"x" * (MAX + 1)], ids=repr)
def test_a_token_that_is_not_a_str_is_malformed_whatever_its_size(token: object) -> None:
    assert reason(token) is rs.Reason.MALFORMED


def test_an_oversized_token_is_too_large_before_its_prefix_is_read() -> None:
    assert reason("x" * 101, max_bytes=100) is rs.Reason.TOO_LARGE


def test_a_token_of_exactly_the_limit_is_read() -> None:
    token = seal(SIGNED)
    assert opened(token, max_bytes=len(token))[0].s == "state"


def test_another_modes_prefix_is_wrong_mode_before_the_identity_is_checked() -> None:
    assert reason(seal(SIGNED), wires=(ENCRYPTED,), subject="a\0") is rs.Reason.WRONG_MODE


def test_an_invalid_identity_is_wrong_binding_even_for_a_token_that_cannot_be_decoded() -> None:
    assert reason("v1.!!!", subject="a\0") is rs.Reason.WRONG_BINDING


@pytest.mark.parametrize(
    ("subject", "tool"),
    [(None, None), ("alice", 5), (["alice"], None), ("alice", "\ud800"), ('{"s":1}', None)],
    ids=["None", "int tool", "unhashable", "surrogate", "payload-shaped"],
)
def test_an_identity_of_any_type_or_shape_is_a_refusal_never_an_error(subject: object, tool: object) -> None:
    assert reason(seal(SIGNED), subject=subject, tool=tool) is rs.Reason.WRONG_BINDING


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_a_forged_token_is_a_bad_signature_before_its_payload_is_read(mode: rs.Mode) -> None:
    # Authenticate first: a payload that is not even JSON is never parsed.
    assert reason(reference_token(mode, OTHER_SECRET, b"not json")) is rs.Reason.BAD_SIGNATURE


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_an_authentic_payload_that_is_not_json_is_malformed(mode: rs.Mode) -> None:
    assert reason(reference_token(mode, SECRET, b"not json")) is rs.Reason.MALFORMED


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_a_token_is_expired_one_second_after_exp_plus_leeway(mode: rs.Mode) -> None:
    assert reason(seal(WIRES[mode]), now=NOW + 6, leeway=5) is rs.Reason.EXPIRED


def test_expiry_is_checked_before_binding() -> None:
    # A signed token's tag is no AEAD input: only the payload's b says whom it is for.
    assert reason(seal(SIGNED, subject="bob"), now=NOW + 1) is rs.Reason.EXPIRED


@pytest.mark.parametrize(
    "b",
    ["0" * 64, "G" * 64, ref.bind_tag(SECRET, "alice", "book").upper(), "é" * 64],
    ids=["another tag", "not hex", "upper-case hex", "non-ASCII"],
)
@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_an_authentic_payload_whose_b_is_not_the_bind_tag_is_wrong_binding(mode: rs.Mode, b: str) -> None:
    # Whatever b's alphabet: compare_digest takes only ASCII, and must not raise.
    token = reference_token(mode, SECRET, ref.payload("state", NOW, b, TOKEN_ID))
    assert reason(token) is rs.Reason.WRONG_BINDING
