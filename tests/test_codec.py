from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Final

import msgspec
import pytest

import requeststate as rs
from requeststate._base64 import b64decode
from requeststate._modes import MODE_BY_PREFIX
from requeststate._payload import MAX_JSON_DEPTH
from tests.conftest import ALL_MODES, NOW, OTHER_SECRET, SECRET
from tests.support import reference as ref


class Step(msgspec.Struct):
    step: int


class Booking(msgspec.Struct):
    step: int
    date: str


def mint(ring: rs.KeyRing, mode: rs.Mode, state: object = "state", **options: object) -> str:
    options = {"subject": "alice", "tool": "book", "now": NOW, **options}
    return rs.encode(state, ring, mode=mode, **options)  # type: ignore[arg-type]


def reason(token: object, keys: rs.KeyRing | bytes, mode: rs.Mode, **options: object) -> rs.Reason:
    options = {"subject": "alice", "tool": "book", "now": NOW, **options}
    with pytest.raises(rs.InvalidToken) as caught:
        rs.verify(token, keys, mode=mode, **options)  # type: ignore[arg-type]
    return caught.value.reason


async def averify(token: object, keys: rs.Keys, /, *, mode: rs.Modes, **call: Any) -> Any:
    """``Codec(keys, mode=..., options).averify(token, subject=..., tool=..., now=..., type=...)``."""
    per_call = {name: call.pop(name) for name in ("subject", "tool", "now", "type") if name in call}
    return await rs.Codec(keys, mode=mode, **call).averify(token, **per_call)


async def adecode(token: object, keys: rs.Keys, /, *, mode: rs.Modes, **call: Any) -> Any:
    """``Codec(keys, mode=..., options).adecode(token, ...)``: as ``averify``, ``None`` for a refusal."""
    per_call = {name: call.pop(name) for name in ("subject", "tool", "now", "type") if name in call}
    return await rs.Codec(keys, mode=mode, **call).adecode(token, **per_call)


# --- round trips -----------------------------------------------------------------


def test_round_trip(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode)
    assert rs.verify(token, ring, mode=mode, subject="alice", tool="book", now=NOW) == "state"


def test_mode_accepts_its_string_name(ring: rs.KeyRing) -> None:
    token = rs.encode("x", ring, mode="encrypted", now=NOW)
    assert rs.verify(token, ring, mode="encrypted", now=NOW) == "x"


def test_mode_prefixes(ring: rs.KeyRing) -> None:
    assert mint(ring, rs.Mode.SIGNED).startswith("v1.")
    assert mint(ring, rs.Mode.ENCRYPTED).startswith("v1e.")
    assert mint(ring, rs.Mode.XCHACHA).startswith("v1x.")


def test_structured_state_is_carried_as_json_text(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, Booking(step=2, date="2026-12-01"))
    assert rs.verify(token, ring, mode=mode, subject="alice", tool="book", now=NOW) == (
        '{"step":2,"date":"2026-12-01"}'
    )


def test_typed_decode_returns_the_type(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, Booking(step=2, date="2026-12-01"))
    booking = rs.verify(token, ring, mode=mode, subject="alice", tool="book", now=NOW, type=Booking)
    assert booking == Booking(step=2, date="2026-12-01")


def test_typed_decode_of_another_shape_is_wrong_type(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, {"step": "two"})
    assert reason(token, ring, mode, type=Booking) is rs.Reason.WRONG_TYPE


def test_typed_decode_of_non_json_state_is_wrong_type(ring: rs.KeyRing, mode: rs.Mode) -> None:
    assert reason(mint(ring, mode, "plain text"), ring, mode, type=Booking) is rs.Reason.WRONG_TYPE


def test_typed_decode_of_deeply_nested_state_is_wrong_type(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, "[" * 5000 + "]" * 5000)
    assert reason(token, ring, mode, type=object) is rs.Reason.WRONG_TYPE


def test_typed_decode_reads_a_state_nested_to_the_depth_limit(ring: rs.KeyRing, mode: rs.Mode) -> None:
    expected: list[object] = []
    for _ in range(MAX_JSON_DEPTH - 1):
        expected = [expected]
    token = mint(ring, mode, "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)
    assert rs.verify(token, ring, mode=mode, subject="alice", tool="book", now=NOW, type=list) == expected


def test_typed_decode_refuses_a_state_one_past_the_depth_limit(ring: rs.KeyRing, mode: rs.Mode) -> None:
    # Every Python alike: 3.13 follows nesting that 3.11 refuses by RecursionError.
    depth = MAX_JSON_DEPTH + 1
    assert reason(mint(ring, mode, "[" * depth + "]" * depth), ring, mode, type=list) is rs.Reason.WRONG_TYPE


def test_raw_secret_works_as_keys(mode: rs.Mode) -> None:
    token = rs.encode("x", SECRET, mode=mode, now=NOW)
    assert rs.verify(token, rs.KeyRing(SECRET), mode=mode, now=NOW) == "x"
    assert rs.verify(token, SECRET, mode=mode, now=NOW) == "x"


def test_raw_secret_is_derived_once(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = bytes(range(100, 132))
    rs.encode("x", secret, mode="signed", now=NOW)
    calls = 0
    real_init = rs.KeyRing.__init__

    def counting_init(self: rs.KeyRing, *secrets: bytes) -> None:
        nonlocal calls
        calls += 1
        real_init(self, *secrets)

    monkeypatch.setattr(rs.KeyRing, "__init__", counting_init)
    for _ in range(3):
        rs.verify(rs.encode("x", secret, mode="signed", now=NOW), secret, mode="signed", now=NOW)
    assert calls == 0


def test_tokens_differ_each_time_even_for_the_same_state(ring: rs.KeyRing, mode: rs.Mode) -> None:
    assert mint(ring, mode) != mint(ring, mode)


def test_every_token_carries_a_fresh_128_bit_id(ring: rs.KeyRing) -> None:
    ids = set()
    for _ in range(3):
        payload = json.loads(b64decode(mint(ring, rs.Mode.SIGNED).split(".")[1]) or b"")
        ids.add(payload["id"])
        assert len(bytes.fromhex(payload["id"])) == 16
    assert len(ids) == 3


@pytest.mark.parametrize("mode", [rs.Mode.ENCRYPTED, rs.Mode.XCHACHA], ids=str)
def test_encrypted_token_hides_state(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, "top-secret-plan")
    assert b"top-secret-plan" not in (b64decode(token[4:]) or b"")


def test_clock_defaults_to_now(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("x", ring, mode=mode, ttl=60)
    assert rs.verify(token, ring, mode=mode) == "x"
    assert rs.decode(token, ring, mode=mode, now=int(time.time()) + 120) is None


# --- the token never chooses the mode --------------------------------------------


# Every ordered pair of two different modes: (the mode minted in, the mode asked for).
MODE_PAIRS: Final = [(minted, asked) for minted in rs.Mode for asked in rs.Mode if minted is not asked]
MODE_PAIR_IDS: Final = [f"{minted}-as-{asked}" for minted, asked in MODE_PAIRS]


@pytest.mark.parametrize(("minted", "asked"), MODE_PAIRS, ids=MODE_PAIR_IDS)
def test_token_of_a_mode_not_asked_for_is_wrong_mode(
    ring: rs.KeyRing, minted: rs.Mode, asked: rs.Mode
) -> None:
    assert reason(mint(ring, minted), ring, asked) is rs.Reason.WRONG_MODE


def test_tuple_of_modes_accepts_each(ring: rs.KeyRing) -> None:
    every: rs.Modes = (rs.Mode.SIGNED, "encrypted", "xchacha")
    for mode in rs.Mode:
        token = mint(ring, mode)
        assert rs.verify(token, ring, mode=every, subject="alice", tool="book", now=NOW) == "state"


def test_tuple_of_modes_refuses_the_others(ring: rs.KeyRing) -> None:
    token = mint(ring, rs.Mode.XCHACHA)
    assert reason(token, ring, (rs.Mode.SIGNED, rs.Mode.ENCRYPTED)) is rs.Reason.WRONG_MODE  # type: ignore[arg-type]


def test_tuple_naming_a_mode_twice_accepts_it_and_refuses_the_others(ring: rs.KeyRing) -> None:
    twice: rs.Modes = ("encrypted", rs.Mode.ENCRYPTED)
    assert (
        rs.verify(mint(ring, rs.Mode.ENCRYPTED), ring, mode=twice, subject="alice", tool="book", now=NOW)
        == "state"
    )
    assert reason(mint(ring, rs.Mode.SIGNED), ring, twice) is rs.Reason.WRONG_MODE  # type: ignore[arg-type]


@pytest.mark.parametrize("token", ["v1e" + "A" * 100 + ".x", ".v1e.x", "x.v1e.x"])
def test_a_dot_anywhere_but_after_a_version_is_malformed(ring: rs.KeyRing, token: str) -> None:
    assert reason(token, ring, rs.Mode.SIGNED) is rs.Reason.MALFORMED


PREFIXES = {rs.Mode.SIGNED: "v1.", rs.Mode.ENCRYPTED: "v1e.", rs.Mode.XCHACHA: "v1x."}


def test_the_prefix_table_is_the_wire_formats() -> None:
    assert {mode: prefix for prefix, mode in MODE_BY_PREFIX.items()} == PREFIXES


def test_no_prefix_starts_another() -> None:
    # verify routes a token to the first allowed mode whose prefix it starts with.
    for prefix in MODE_BY_PREFIX:
        assert [other for other in MODE_BY_PREFIX if other.startswith(prefix)] == [prefix]


def test_the_default_clock_is_time_time_read_on_every_call(
    ring: rs.KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = rs.encode("state", ring, mode="signed", ttl=60)
    monkeypatch.setattr(time, "time", lambda: 4e9)
    assert rs.decode(token, ring, mode="signed") is None
    assert rs.decode(rs.encode("state", ring, mode="signed", ttl=60), ring, mode="signed") == "state"


@pytest.mark.parametrize(("minted", "asked"), MODE_PAIRS, ids=MODE_PAIR_IDS)
def test_swapped_prefix_is_refused(ring: rs.KeyRing, minted: rs.Mode, asked: rs.Mode) -> None:
    token = PREFIXES[asked] + mint(ring, minted)[len(PREFIXES[minted]) :]
    assert reason(token, ring, ALL_MODES) in {rs.Reason.MALFORMED, rs.Reason.BAD_SIGNATURE}  # type: ignore[arg-type]


@pytest.mark.parametrize("token", ["v1", "v1e", "v1ex", "v1x", "v1e-", ".v1.", "v1.e.", "v2.abc", "v1xe.abc"])
def test_near_prefixes_are_malformed(ring: rs.KeyRing, token: str) -> None:
    assert reason(token, ring, ALL_MODES) is rs.Reason.MALFORMED  # type: ignore[arg-type]


# --- binding -----------------------------------------------------------------------

WRONG_IDENTITIES = [
    pytest.param({"subject": "mallory"}, id="wrong subject"),
    pytest.param({"tool": "cancel"}, id="wrong tool"),
    pytest.param({"tool": None}, id="tool-bound token checked without tool"),
    pytest.param({"subject": "", "tool": None}, id="checked with no binding"),
    pytest.param({"subject": "alice\0book", "tool": None}, id="separator smuggled into subject"),
]
# In the encrypted modes the bind tag is the AEAD's associated data: a wrong
# identity fails the tag check itself.
EXPECTED_BINDING_REASON = {
    rs.Mode.SIGNED: rs.Reason.WRONG_BINDING,
    rs.Mode.ENCRYPTED: rs.Reason.BAD_SIGNATURE,
    rs.Mode.XCHACHA: rs.Reason.BAD_SIGNATURE,
}


@pytest.mark.parametrize("identity", WRONG_IDENTITIES)
def test_wrong_identity_is_refused(ring: rs.KeyRing, mode: rs.Mode, identity: dict[str, object]) -> None:
    expected = EXPECTED_BINDING_REASON[mode]
    if identity.get("subject") == "alice\0book":
        expected = rs.Reason.WRONG_BINDING  # refused before any crypto
    assert reason(mint(ring, mode), ring, mode, **identity) is expected


def test_subject_bound_token_checked_with_a_tool_is_refused(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, tool=None)
    assert reason(token, ring, mode, tool="book") is EXPECTED_BINDING_REASON[mode]


def test_tool_only_binding_differs_from_subject_only(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, subject="", tool="book")
    assert reason(token, ring, mode, subject="book", tool=None) is EXPECTED_BINDING_REASON[mode]


INVALID_IDENTITIES: Final = [
    {"subject": "a\0"},
    {"tool": "b\0"},
    {"subject": "\ud800"},
    {"tool": "\udfff"},
    {"subject": ' {"s":"x"}', "tool": None},
]
INVALID_IDENTITY_IDS: Final = [
    "NUL subject",
    "NUL tool",
    "surrogate subject",
    "surrogate tool",
    "payload subject",
]


@pytest.mark.parametrize("identity", INVALID_IDENTITIES, ids=INVALID_IDENTITY_IDS)
def test_invalid_identity_raises_at_encode(ring: rs.KeyRing, mode: rs.Mode, identity: dict[str, str]) -> None:
    with pytest.raises(ValueError, match=r"U\+0000|surrogate|start with"):
        mint(ring, mode, **identity)


@pytest.mark.parametrize(
    "identity",
    [*INVALID_IDENTITIES, {"subject": None}, {"subject": 7}, {"tool": b"book"}, {"subject": ["alice"]}],
    ids=[*INVALID_IDENTITY_IDS, "None subject", "int subject", "bytes tool", "unhashable subject"],
)
def test_invalid_identity_is_refused_at_verify(
    ring: rs.KeyRing, mode: rs.Mode, identity: dict[str, object]
) -> None:
    # The docs call an invalid identity a refusal: of any type, never a raise.
    assert reason(mint(ring, mode), ring, mode, **identity) is rs.Reason.WRONG_BINDING


def test_non_str_identity_raises_at_encode(ring: rs.KeyRing, mode: rs.Mode) -> None:
    with pytest.raises(TypeError, match="subject must be a str and tool a str or None"):
        mint(ring, mode, subject=None)


def test_an_unhashable_identity_raises_at_encode_saying_what_an_identity_must_be(
    ring: rs.KeyRing, mode: rs.Mode
) -> None:
    # The bind-tag cache cannot even look a list up; encode says what is wrong, not "unhashable".
    with pytest.raises(TypeError, match=r"^subject must be a str and tool a str or None$"):
        rs.Codec(ring, mode=mode).encode("x", subject=["alice"])  # type: ignore[arg-type]


# --- expiry ------------------------------------------------------------------------


def test_valid_through_the_second_of_exp(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, ttl=300)
    assert rs.verify(token, ring, mode=mode, subject="alice", tool="book", now=NOW + 300) == "state"


def test_expired_one_second_after_exp(ring: rs.KeyRing, mode: rs.Mode) -> None:
    assert reason(mint(ring, mode, ttl=300), ring, mode, now=NOW + 301) is rs.Reason.EXPIRED


def test_leeway_tolerates_skew(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, ttl=300)
    assert (
        rs.verify(token, ring, mode=mode, subject="alice", tool="book", now=NOW + 310, leeway=10) == "state"
    )
    assert reason(token, ring, mode, now=NOW + 311, leeway=10) is rs.Reason.EXPIRED


# --- rotation ----------------------------------------------------------------------


def test_old_key_still_verifies_after_rotation(mode: rs.Mode) -> None:
    old_token = mint(rs.KeyRing(OTHER_SECRET), mode)
    rotated = rs.KeyRing(SECRET, OTHER_SECRET)
    assert rs.verify(old_token, rotated, mode=mode, subject="alice", tool="book", now=NOW) == "state"


def test_new_tokens_use_the_first_key(mode: rs.Mode) -> None:
    token = mint(rs.KeyRing(SECRET, OTHER_SECRET), mode)
    assert rs.verify(token, rs.KeyRing(SECRET), mode=mode, subject="alice", tool="book", now=NOW) == "state"
    assert reason(token, rs.KeyRing(OTHER_SECRET), mode) is rs.Reason.BAD_SIGNATURE


def test_removed_key_fails(mode: rs.Mode) -> None:
    old_token = mint(rs.KeyRing(OTHER_SECRET), mode)
    assert reason(old_token, rs.KeyRing(SECRET), mode) is rs.Reason.BAD_SIGNATURE


# --- size --------------------------------------------------------------------------


def test_oversized_token_is_refused_before_any_decoding(
    ring: rs.KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    import requeststate._signed as signed

    def fail(*args: object) -> None:
        raise AssertionError("decoded an oversized token")

    monkeypatch.setattr(signed, "b64decode", fail)
    token = "v1." + "A" * (64 * 1024)
    assert reason(token, ring, rs.Mode.SIGNED) is rs.Reason.TOO_LARGE


def test_max_token_bytes_is_configurable(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode)
    assert reason(token, ring, mode, max_token_bytes=len(token) - 1) is rs.Reason.TOO_LARGE
    assert (
        rs.verify(token, ring, mode=mode, subject="alice", tool="book", now=NOW, max_token_bytes=len(token))
        == "state"
    )


def test_encode_refuses_a_state_whose_token_is_too_large(ring: rs.KeyRing, mode: rs.Mode) -> None:
    with pytest.raises(ValueError, match="max_token_bytes"):
        mint(ring, mode, "x" * (64 * 1024))


def test_encode_honours_a_raised_limit(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, "x" * (64 * 1024), max_token_bytes=1 << 20)
    read = rs.verify(token, ring, mode=mode, subject="alice", tool="book", now=NOW, max_token_bytes=1 << 20)
    assert read == "x" * (64 * 1024)


# --- any token type ----------------------------------------------------------------


@pytest.mark.parametrize("token", [None, b"v1.x.y", 5, 1.5, ["v1."], {"v1": 1}, object()])
def test_non_str_token_is_malformed(ring: rs.KeyRing, mode: rs.Mode, token: object) -> None:
    assert reason(token, ring, mode) is rs.Reason.MALFORMED


def test_str_subclass_token_is_accepted(ring: rs.KeyRing, mode: rs.Mode) -> None:
    class Text(str):
        pass

    assert (
        rs.verify(Text(mint(ring, mode)), ring, mode=mode, subject="alice", tool="book", now=NOW) == "state"
    )


# --- configuration errors fail loudly -----------------------------------------------


@pytest.mark.parametrize("ttl", [0, -1, rs.MAX_TTL + 1, 2**63])
def test_ttl_out_of_range_is_a_value_error(ring: rs.KeyRing, ttl: int) -> None:
    with pytest.raises(ValueError, match="ttl"):
        rs.encode("x", ring, mode="signed", ttl=ttl)


@pytest.mark.parametrize("ttl", [1.5, "300", None, True])
def test_ttl_not_an_int_is_a_type_error(ring: rs.KeyRing, ttl: object) -> None:
    rs.encode("x", ring, mode="signed", ttl=1)  # a validated ttl of 1 must not admit True
    with pytest.raises(TypeError, match="ttl"):
        rs.encode("x", ring, mode="signed", ttl=ttl)  # type: ignore[arg-type]


def test_exp_past_int64_is_a_value_error(ring: rs.KeyRing) -> None:
    with pytest.raises(ValueError, match="64-bit"):
        rs.encode("x", ring, mode="signed", ttl=10, now=2**63 - 5)


@pytest.mark.parametrize("now", [1.5, "0", True])
def test_now_not_an_int_is_a_type_error(ring: rs.KeyRing, now: object) -> None:
    with pytest.raises(TypeError, match="now"):
        rs.encode("x", ring, mode="signed", now=now)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="now"):
        rs.verify("x", ring, mode="signed", now=now)  # type: ignore[arg-type]


def test_bool_leeway_is_a_type_error_even_after_leeway_zero(ring: rs.KeyRing) -> None:
    rs.decode("x", ring, mode="signed", leeway=0)
    with pytest.raises(TypeError, match="leeway"):
        rs.verify("x", ring, mode="signed", leeway=False)


def test_negative_leeway_is_a_value_error(ring: rs.KeyRing) -> None:
    with pytest.raises(ValueError, match="leeway"):
        rs.verify("x", ring, mode="signed", leeway=-1)


@pytest.mark.parametrize("limit", [0, -5])
def test_max_token_bytes_out_of_range_is_a_value_error(ring: rs.KeyRing, limit: int) -> None:
    with pytest.raises(ValueError, match="max_token_bytes"):
        rs.verify("x", ring, mode="signed", max_token_bytes=limit)
    with pytest.raises(ValueError, match="max_token_bytes"):
        rs.encode("x", ring, mode="signed", max_token_bytes=limit)


@pytest.mark.parametrize("mode", ["SIGNED", "v1.", "", None, 1, ()])
def test_unknown_mode_is_a_value_error(ring: rs.KeyRing, mode: object) -> None:
    with pytest.raises(ValueError, match="mode"):
        rs.verify("x", ring, mode=mode)  # type: ignore[arg-type]


def test_unknown_mode_at_encode_is_a_value_error(ring: rs.KeyRing) -> None:
    with pytest.raises(ValueError, match="mode"):
        rs.encode("x", ring, mode="aes")  # type: ignore[arg-type]  # what the Literal type catches


@pytest.mark.parametrize("keys", [None, "secret" * 10, [SECRET], bytearray(SECRET)])
def test_keys_of_another_type_are_a_type_error(keys: object) -> None:
    with pytest.raises(TypeError, match="keys"):
        rs.encode("x", keys, mode="signed")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="keys"):
        rs.verify("x", keys, mode="signed")  # type: ignore[arg-type]


def test_short_raw_secret_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        rs.encode("x", bytes(16), mode="signed")


def test_state_msgspec_cannot_encode_is_a_type_error(ring: rs.KeyRing) -> None:
    with pytest.raises(TypeError, match=r"^Encoding objects of type object is unsupported$"):
        rs.encode(object(), ring, mode="signed")


def test_state_with_a_lone_surrogate_is_a_value_error(ring: rs.KeyRing, mode: rs.Mode) -> None:
    with pytest.raises(ValueError, match="surrogate"):
        rs.encode("\ud800", ring, mode=mode)


def test_errors_never_contain_the_state(ring: rs.KeyRing, mode: rs.Mode) -> None:
    secret_state = "hunter2-" + "x" * (64 * 1024)
    with pytest.raises(ValueError, match="max_token_bytes") as caught:
        rs.encode(secret_state, ring, mode=mode)
    assert "hunter2" not in str(caught.value)


# --- single use --------------------------------------------------------------------


class RecordingGuard:
    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.claims: list[tuple[str, int, int]] = []

    def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        self.claims.append((token_id, expires_at, now))
        return self.answer


class UnavailableGuard:
    def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        raise rs.GuardUnavailable("store down")


def test_guard_claims_the_token_id_until_exp_plus_leeway(ring: rs.KeyRing, mode: rs.Mode) -> None:
    guard = RecordingGuard()
    token = mint(ring, mode, ttl=300)
    rs.verify(token, ring, mode=mode, subject="alice", tool="book", now=NOW + 5, leeway=7, guard=guard)
    [(token_id, expires_at, now)] = guard.claims
    assert len(bytes.fromhex(token_id)) == 16
    assert (expires_at, now) == (NOW + 300 + 7, NOW + 5)


def test_second_redemption_is_replayed(ring: rs.KeyRing, mode: rs.Mode) -> None:
    guard = rs.MemoryGuard()
    token = mint(ring, mode)
    assert rs.verify(token, ring, mode=mode, subject="alice", tool="book", now=NOW, guard=guard) == "state"
    assert reason(token, ring, mode, guard=guard) is rs.Reason.REPLAYED


def test_distinct_tokens_of_the_same_state_are_each_redeemable(ring: rs.KeyRing, mode: rs.Mode) -> None:
    guard = rs.MemoryGuard()
    for _ in range(3):
        read = rs.verify(
            mint(ring, mode), ring, mode=mode, subject="alice", tool="book", now=NOW, guard=guard
        )
        assert read == "state"


@pytest.mark.parametrize(
    ("options", "tampered"),
    [({"subject": "mallory"}, False), ({"now": NOW + 301}, False), ({"type": Booking}, False), ({}, True)],
    ids=["wrong subject", "expired", "wrong type", "tampered"],
)
def test_refused_token_never_consumes_its_id(
    ring: rs.KeyRing, options: dict[str, object], tampered: bool
) -> None:
    guard = RecordingGuard()
    token = mint(ring, rs.Mode.SIGNED, "not json")
    if tampered:
        token = token[:-2] + ("AA" if token[-2:] != "AA" else "BA")
    arguments: dict[str, object] = {"subject": "alice", "tool": "book", "now": NOW, **options}
    with pytest.raises(rs.InvalidToken):
        rs.verify(token, ring, mode="signed", guard=guard, **arguments)  # type: ignore[arg-type]
    assert guard.claims == []


def test_guard_that_cannot_answer_fails_closed(ring: rs.KeyRing) -> None:
    assert reason(mint(ring, rs.Mode.SIGNED), ring, rs.Mode.SIGNED, guard=UnavailableGuard()) is (
        rs.Reason.GUARD_UNAVAILABLE
    )


def test_token_without_an_id_cannot_be_guarded(ring: rs.KeyRing) -> None:
    tag = ring.bound("alice", "book")[0].bind_tag
    token = ref.signed_token(SECRET, ref.payload("state", NOW, tag))  # as mcp.d writes it
    assert rs.verify(token, ring, mode="signed", subject="alice", tool="book", now=NOW) == "state"
    assert reason(token, ring, rs.Mode.SIGNED, guard=RecordingGuard()) is rs.Reason.MALFORMED


def test_async_guard_passed_to_verify_is_a_type_error(ring: rs.KeyRing) -> None:
    class AsyncOnly:
        async def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
            return True

    guard: Any = AsyncOnly()  # the mistake the type checker would catch; the runtime catches it too
    with pytest.raises(TypeError, match="averify"):
        rs.verify(mint(ring, rs.Mode.SIGNED), ring, mode="signed", subject="alice", tool="book", guard=guard)


def test_guard_answer_that_is_not_a_bool_is_a_type_error(ring: rs.KeyRing) -> None:
    class Sloppy:
        def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
            return 1  # type: ignore[return-value]

    with pytest.raises(TypeError, match="bool"):
        rs.verify(
            mint(ring, rs.Mode.SIGNED),
            ring,
            mode="signed",
            subject="alice",
            tool="book",
            now=NOW,
            guard=Sloppy(),
        )


class AsyncMemoryGuard:
    def __init__(self) -> None:
        self.inner = rs.MemoryGuard()

    async def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        return self.inner.claim(token_id, expires_at, now)


def test_averify_awaits_an_async_guard(ring: rs.KeyRing, mode: rs.Mode) -> None:
    guard = AsyncMemoryGuard()
    token = mint(ring, mode)

    async def redeem() -> object:
        return await averify(token, ring, mode=mode, subject="alice", tool="book", now=NOW, guard=guard)

    assert asyncio.run(redeem()) == "state"
    with pytest.raises(rs.InvalidToken) as caught:
        asyncio.run(redeem())
    assert caught.value.reason is rs.Reason.REPLAYED


def test_averify_accepts_a_sync_guard(ring: rs.KeyRing) -> None:
    guard = rs.MemoryGuard()
    token = mint(ring, rs.Mode.SIGNED)
    coroutine = averify(token, ring, mode="signed", subject="alice", tool="book", now=NOW, guard=guard)
    assert asyncio.run(coroutine) == "state"
    assert len(guard) == 1


def test_averify_maps_an_unavailable_guard_to_a_refusal(ring: rs.KeyRing) -> None:
    class Down:
        async def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
            raise rs.GuardUnavailable("timeout")

    coroutine = averify(
        mint(ring, rs.Mode.SIGNED), ring, mode="signed", subject="alice", tool="book", now=NOW, guard=Down()
    )
    with pytest.raises(rs.InvalidToken) as caught:
        asyncio.run(coroutine)
    assert caught.value.reason is rs.Reason.GUARD_UNAVAILABLE


def test_averify_without_guard_is_verify(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, Booking(1, "d"))
    coroutine = averify(token, ring, mode=mode, subject="alice", tool="book", now=NOW, type=Booking)
    assert asyncio.run(coroutine) == Booking(1, "d")


# --- the AES-GCM budget --------------------------------------------------------------


def test_aesgcm_budget_warns_once_past_its_share(caplog: pytest.LogCaptureFixture) -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=10, aesgcm_warn_share=0.5)
    with caplog.at_level("WARNING", logger="requeststate"):
        for _ in range(8):
            mint(ring, rs.Mode.ENCRYPTED)
    [record] = caplog.records
    assert "xchacha" in record.getMessage()
    assert ring.fingerprint in record.getMessage()


def test_aesgcm_budget_refuses_past_the_limit_naming_the_way_out() -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=3)
    for _ in range(3):
        mint(ring, rs.Mode.ENCRYPTED)
    with pytest.raises(rs.KeyBudgetExhausted, match=r"rotate.*xchacha"):
        mint(ring, rs.Mode.ENCRYPTED)


@pytest.mark.parametrize("mode", [rs.Mode.SIGNED, rs.Mode.XCHACHA], ids=str)
def test_other_modes_spend_no_aesgcm_budget(mode: rs.Mode) -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=1)
    for _ in range(3):
        mint(ring, mode)
    mint(ring, rs.Mode.ENCRYPTED)


def test_exhausted_key_still_verifies(ring: rs.KeyRing) -> None:
    exhausted = rs.KeyRing(SECRET, aesgcm_limit=1)
    token = mint(exhausted, rs.Mode.ENCRYPTED)
    with pytest.raises(rs.KeyBudgetExhausted):
        mint(exhausted, rs.Mode.ENCRYPTED)
    assert rs.verify(token, exhausted, mode="encrypted", subject="alice", tool="book", now=NOW) == "state"


def test_the_minting_key_refuses_its_seal_past_the_limit() -> None:
    ring = rs.KeyRing(SECRET, OTHER_SECRET, aesgcm_limit=2)
    for _ in range(2):
        mint(ring, rs.Mode.ENCRYPTED)
    with pytest.raises(rs.KeyBudgetExhausted, match="has sealed its limit of 2"):
        mint(ring, rs.Mode.ENCRYPTED)


def test_token_without_an_id_cannot_be_guarded_asynchronously(ring: rs.KeyRing) -> None:
    tag = ring.bound("alice", "book")[0].bind_tag
    token = ref.signed_token(SECRET, ref.payload("state", NOW, tag))  # as mcp.d writes it
    coroutine = averify(
        token, ring, mode="signed", subject="alice", tool="book", now=NOW, guard=AsyncMemoryGuard()
    )
    with pytest.raises(rs.InvalidToken) as caught:
        asyncio.run(coroutine)
    assert caught.value.reason is rs.Reason.MALFORMED


# --- the Codec: options checked once, at construction --------------------------------------


def test_codec_holds_the_ring_and_the_modes_in_order(ring: rs.KeyRing) -> None:
    codec = rs.Codec(ring, mode=("encrypted", rs.Mode.SIGNED, "encrypted"), ttl=60, max_token_bytes=100)
    assert (codec.keys, codec.modes, codec.ttl, codec.leeway, codec.max_token_bytes, codec.guard) == (
        ring,
        (rs.Mode.ENCRYPTED, rs.Mode.SIGNED),
        60,
        0,
        100,
        None,
    )


def test_codec_derives_a_raw_secret_once() -> None:
    assert rs.Codec(SECRET, mode="signed").keys is rs.Codec(SECRET, mode="signed").keys


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        (
            {"mode": "rot13"},
            ValueError,
            "^mode must be a Mode or one of 'signed', 'encrypted', 'xchacha', got 'rot13'$",
        ),
        ({"mode": ()}, ValueError, "^mode must name at least one Mode$"),
        ({"mode": ["signed"]}, ValueError, "^mode must be a Mode or one of"),
        ({"ttl": 0}, ValueError, "^ttl must be an int from 1 to 86400, got 0$"),
        ({"ttl": True}, TypeError, "^ttl must be an int, not bool$"),
        ({"leeway": -1}, ValueError, "^leeway must be an int from 0 to 2\\*\\*63-1, got -1$"),
        ({"max_token_bytes": 0}, ValueError, "^max_token_bytes must be an int from 1"),
        (
            {"guard": rs.MemoryGuard},
            TypeError,
            "^guard must be an instance, such as MemoryGuard\\(\\), not the class",
        ),
        (
            {"guard": object()},
            TypeError,
            "^guard must have a claim\\(token_id, expires_at, now\\) method; a object",
        ),
        ({"clock": 5}, TypeError, "^clock must be a callable returning unix seconds, not int$"),
    ],
    ids=[
        "mode",
        "no-mode",
        "mode-list",
        "ttl",
        "ttl-bool",
        "leeway",
        "size",
        "guard-class",
        "guard-object",
        "clock",
    ],
)
def test_codec_refuses_a_bad_option_at_construction(
    ring: rs.KeyRing, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        rs.Codec(ring, **{"mode": "signed", **options})


def test_codec_reads_its_clock_on_each_call(ring: rs.KeyRing, mode: rs.Mode) -> None:
    readings = iter([NOW, NOW + 301])
    codec = rs.Codec(ring, mode=mode, clock=lambda: next(readings))
    token = codec.encode("x")
    assert rs.decode(token, ring, mode=mode, now=NOW + 300) == "x"
    assert codec.decode(token) is None  # the second reading: one second past exp


def test_a_clock_past_every_token_refuses_them_and_cannot_mint(ring: rs.KeyRing, mode: rs.Mode) -> None:
    # An int is a valid float to a type checker; compiled, a clock typed to return
    # float made this one an OverflowError out of decode, which must never raise.
    token = rs.encode("x", ring, mode=mode, now=NOW)
    codec = rs.Codec(ring, mode=mode, clock=lambda: 10**400)
    assert codec.decode(token) is None
    with pytest.raises(rs.InvalidToken, match=r"^expired$"):
        codec.verify(token)
    with pytest.raises(ValueError, match=r"^now \+ ttl must fit in a signed 64-bit integer$"):
        codec.encode("x")


def test_codec_now_overrides_its_clock(ring: rs.KeyRing, mode: rs.Mode) -> None:
    codec = rs.Codec(ring, mode=mode, clock=lambda: 0.0)
    assert codec.decode(codec.encode("x", now=NOW), now=NOW) == "x"


def test_codec_and_functions_mint_alike(ring: rs.KeyRing, mode: rs.Mode) -> None:
    codec = rs.Codec(ring, mode=mode, ttl=60)
    assert (
        rs.verify(
            codec.encode("x", subject="a", tool="t", now=NOW),
            ring,
            mode=mode,
            subject="a",
            tool="t",
            now=NOW + 60,
        )
        == "x"
    )
    assert (
        codec.verify(
            rs.encode("y", ring, mode=mode, subject="a", tool="t", ttl=60, now=NOW),
            subject="a",
            tool="t",
            now=NOW + 60,
        )
        == "y"
    )


def test_codec_with_an_async_guard_refuses_sync_calls_up_front(ring: rs.KeyRing) -> None:
    codec = rs.Codec(ring, mode="signed", guard=AsyncMemoryGuard())
    with pytest.raises(TypeError, match=r"^an async guard needs averify\(\) or adecode\(\)$"):
        codec.decode("not even a token")


def test_codec_repr_names_the_fingerprint_and_no_key_bytes(ring: rs.KeyRing) -> None:
    codec = rs.Codec(ring, mode=("signed", "encrypted"), ttl=60, guard=rs.MemoryGuard())
    assert repr(codec) == f"Codec(keys={ring!r}, mode=signed,encrypted, ttl=60, guard=MemoryGuard)"


def test_functions_take_an_unhashable_guard(ring: rs.KeyRing) -> None:
    class ListGuard(list[str]):  # a list: unhashable
        def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
            if token_id in self:
                return False
            self.append(token_id)
            return True

    guard = ListGuard()
    token = rs.encode("x", ring, mode="signed", now=NOW)
    assert rs.decode(token, ring, mode="signed", now=NOW, guard=guard) == "x"
    assert rs.decode(token, ring, mode="signed", now=NOW, guard=guard) is None


# --- boundaries, prefixes, error messages, and averify's defaults --------------------------

INT64_MAX = 2**63 - 1


def test_exp_of_exactly_int64_max_is_minted_and_verifies(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("edge", ring, mode=mode, ttl=10, now=INT64_MAX - 10)
    assert rs.verify(token, ring, mode=mode, now=INT64_MAX) == "edge"


def test_now_of_int64_max_is_a_valid_clock(ring: rs.KeyRing, mode: rs.Mode) -> None:
    assert reason(mint(ring, mode), ring, mode, now=INT64_MAX) is rs.Reason.EXPIRED


def test_encode_allows_a_token_of_exactly_max_token_bytes(ring: rs.KeyRing) -> None:
    size = len(mint(ring, rs.Mode.SIGNED))  # signed tokens of one state all have one length
    token = mint(ring, rs.Mode.SIGNED, max_token_bytes=size)
    assert len(token) == size


@pytest.mark.parametrize("token", ["v1e", "v1x", "v1e?AAAA"])
def test_a_prefix_without_its_dot_is_malformed(ring: rs.KeyRing, token: str) -> None:
    # Not "v1" with a stray last character: without the dot there is no version to compare.
    assert reason(token, ring, rs.Mode.ENCRYPTED) is rs.Reason.MALFORMED


@pytest.mark.parametrize(("token", "mode"), [("v1e..", rs.Mode.SIGNED), ("v1..", rs.Mode.ENCRYPTED)])
def test_the_prefix_alone_decides_wrong_mode(ring: rs.KeyRing, token: str, mode: rs.Mode) -> None:
    assert reason(token, ring, mode) is rs.Reason.WRONG_MODE


def test_each_mode_name_works_with_a_ttl_used_nowhere_else(ring: rs.KeyRing) -> None:
    for name in ("signed", "encrypted", "xchacha"):
        token = rs.encode("x", ring, mode=name, ttl=4321, now=NOW)
        assert rs.verify(token, ring, mode=name, now=NOW + 4321) == "x"


def test_unknown_mode_error_lists_every_choice(ring: rs.KeyRing) -> None:
    with pytest.raises(ValueError, match=r"'signed', 'encrypted', 'xchacha', got 'rot13'$"):
        rs.encode("x", ring, mode="rot13")  # type: ignore[arg-type]  # what the Literal type catches


def test_keys_type_error_names_the_type_given(ring: rs.KeyRing) -> None:
    with pytest.raises(TypeError, match=r"^keys must be a KeyRing or bytes, not list$"):
        rs.encode("x", [SECRET], mode="signed")  # type: ignore[arg-type]


def test_option_type_error_names_the_option_and_the_type_given(ring: rs.KeyRing) -> None:
    with pytest.raises(TypeError, match=r"^now must be an int, not float$"):
        rs.verify("x", ring, mode="signed", now=1.5)  # type: ignore[arg-type]


def test_exp_past_int64_error_states_the_requirement(ring: rs.KeyRing) -> None:
    with pytest.raises(ValueError, match=r"^now \+ ttl must fit in a signed 64-bit integer$"):
        rs.encode("x", ring, mode="signed", ttl=10, now=INT64_MAX - 5)


def test_an_async_guard_given_to_verify_is_a_type_error_naming_averify(ring: rs.KeyRing) -> None:
    guard: Any = AsyncMemoryGuard()
    with pytest.raises(TypeError, match=r"^an async guard needs averify\(\) or adecode\(\)$"):
        rs.verify(
            mint(ring, rs.Mode.SIGNED),
            ring,
            mode="signed",
            subject="alice",
            tool="book",
            now=NOW,
            guard=guard,
        )


class AsyncRecordingGuard:
    def __init__(self) -> None:
        self.claims: list[tuple[str, int, int]] = []

    async def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        self.claims.append((token_id, expires_at, now))
        return True


def test_averify_claims_the_token_id_until_exp_plus_leeway(ring: rs.KeyRing, mode: rs.Mode) -> None:
    guard = AsyncRecordingGuard()
    token = mint(ring, mode)
    asyncio.run(averify(token, ring, mode=mode, subject="alice", tool="book", now=NOW, leeway=7, guard=guard))
    recorder = RecordingGuard()
    rs.verify(token, ring, mode=mode, subject="alice", tool="book", now=NOW, leeway=7, guard=recorder)
    assert guard.claims == recorder.claims
    token_id, expires_at, now = guard.claims[0]
    assert (len(token_id), expires_at, now) == (32, NOW + 300 + 7, NOW)


def test_averify_checks_expiry_at_the_given_now(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, now=NOW, ttl=10)
    with pytest.raises(rs.InvalidToken) as caught:
        asyncio.run(averify(token, ring, mode=mode, now=NOW + 11))
    assert caught.value.reason is rs.Reason.EXPIRED


def test_averify_has_no_leeway_by_default(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, now=NOW, ttl=10)
    assert asyncio.run(averify(token, ring, mode=mode, now=NOW + 10)) == "state"
    with pytest.raises(rs.InvalidToken):
        asyncio.run(averify(token, ring, mode=mode, now=NOW + 11))


def test_averify_binds_no_subject_by_default(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, now=NOW)
    assert asyncio.run(averify(token, ring, mode=mode, now=NOW)) == "state"


# --- decode and adecode: the thin adapter, None for every refusal -----------------------------


def test_valid_token_decodes_to_its_state(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, subject="alice", now=NOW)
    assert rs.decode(token, ring, mode=mode, subject="alice", now=NOW) == "state"


def test_typed_decode(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode(Step(3), ring, mode=mode, now=NOW)
    assert rs.decode(token, ring, mode=mode, now=NOW, type=Step) == Step(3)


@pytest.mark.parametrize(
    "options",
    [{"subject": "mallory"}, {"now": NOW + 301}, {"mode": "signed"}, {"type": Step}, {"max_token_bytes": 10}],
    ids=["wrong subject", "expired", "wrong mode", "wrong type", "too large"],
)
def test_every_refusal_is_none(ring: rs.KeyRing, options: dict[str, object]) -> None:
    token = rs.encode("not json", ring, mode="encrypted", subject="alice", now=NOW)
    arguments: dict[str, object] = {"mode": "encrypted", "subject": "alice", "now": NOW, **options}
    assert rs.decode(token, ring, **arguments) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("token", [None, b"v1.", 0, -1, 3.14, [], {}, set(), object(), "", "v1.", "\ud800"])
def test_any_input_type_is_none(ring: rs.KeyRing, mode: rs.Mode, token: object) -> None:
    assert rs.decode(token, ring, mode=mode) is None


def test_invalid_identity_is_none(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, subject="alice")
    assert rs.decode(token, ring, mode=mode, subject="ali\0ce") is None
    assert rs.decode(token, ring, mode=mode, subject="\udc00") is None


def test_configuration_errors_still_raise(ring: rs.KeyRing) -> None:
    with pytest.raises(ValueError, match="mode"):
        rs.decode("v1.x.y", ring, mode="nope")  # type: ignore[arg-type]  # what the Literal type catches
    with pytest.raises(ValueError, match="leeway"):
        rs.decode("v1.x.y", ring, mode="signed", leeway=-1)
    with pytest.raises(TypeError, match="keys"):
        rs.decode("v1.x.y", None, mode="signed")  # type: ignore[arg-type]


def test_replayed_token_is_none(ring: rs.KeyRing, mode: rs.Mode) -> None:
    guard = rs.MemoryGuard()
    token = rs.encode("state", ring, mode=mode, now=NOW)
    assert rs.decode(token, ring, mode=mode, now=NOW, guard=guard) == "state"
    assert rs.decode(token, ring, mode=mode, now=NOW, guard=guard) is None


def test_adecode_returns_the_state_then_none_on_replay(ring: rs.KeyRing, mode: rs.Mode) -> None:
    guard = rs.MemoryGuard()
    token = rs.encode("state", ring, mode=mode, now=NOW)

    async def twice() -> list[str | None]:
        return [await adecode(token, ring, mode=mode, now=NOW, guard=guard) for _ in range(2)]

    assert asyncio.run(twice()) == ["state", None]


def test_adecode_of_any_input_type_is_none(ring: rs.KeyRing) -> None:
    async def attempts() -> list[object]:
        return [await adecode(token, ring, mode="signed") for token in (None, b"x", 5, "v1.x.y")]

    assert asyncio.run(attempts()) == [None] * 4


# --- decode and adecode pass every option through --------------------------------------------


def test_decode_checks_the_tool(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, subject="alice", tool="book", now=NOW)
    assert rs.decode(token, ring, mode=mode, subject="alice", tool="book", now=NOW) == "state"
    assert rs.decode(token, ring, mode=mode, subject="alice", tool="cancel", now=NOW) is None


def test_adecode_checks_the_tool(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, subject="alice", tool="book", now=NOW)

    async def attempts() -> list[str | None]:
        return [
            await adecode(token, ring, mode=mode, subject="alice", tool=tool, now=NOW)
            for tool in ("book", "cancel")
        ]

    assert asyncio.run(attempts()) == ["state", None]


def test_adecode_checks_expiry_at_the_given_now(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, now=NOW, ttl=10)

    async def attempts() -> list[str | None]:
        return [await adecode(token, ring, mode=mode, now=now) for now in (NOW + 10, NOW + 11)]

    assert asyncio.run(attempts()) == ["state", None]


def test_adecode_has_no_leeway_by_default(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, now=NOW, ttl=10)
    assert asyncio.run(adecode(token, ring, mode=mode, now=NOW + 11)) is None


def test_adecode_decodes_the_requested_type(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode(Step(3), ring, mode=mode, now=NOW)
    assert asyncio.run(adecode(token, ring, mode=mode, now=NOW, type=Step)) == Step(3)


def test_a_sync_claim_that_returns_a_coroutine_is_a_type_error_naming_the_async_calls(
    ring: rs.KeyRing,
) -> None:
    class SneakyGuard:  # claim is a plain function, so the codec cannot tell up front
        def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
            async def later() -> bool:
                return True

            return later()  # type: ignore[return-value]

    token = mint(ring, rs.Mode.SIGNED)
    codec = rs.Codec(ring, mode="signed", guard=SneakyGuard())
    with pytest.raises(TypeError, match=r"^an async guard needs averify\(\) or adecode\(\)$"):
        codec.decode(token, subject="alice", tool="book", now=NOW)


def test_each_codec_method_binds_no_identity_by_default(ring: rs.KeyRing, mode: rs.Mode) -> None:
    codec = rs.Codec(ring, mode=mode)
    token = codec.encode("x", now=NOW)
    assert codec.decode(token, now=NOW) == "x"
    assert codec.verify(token, now=NOW) == "x"
    assert asyncio.run(codec.adecode(token, now=NOW)) == "x"
    assert asyncio.run(codec.averify(token, now=NOW)) == "x"


def test_codec_repr_without_a_guard(ring: rs.KeyRing) -> None:
    assert repr(rs.Codec(ring, mode="encrypted")) == f"Codec(keys={ring!r}, mode=encrypted, ttl=300)"


def test_encode_names_a_bad_now(ring: rs.KeyRing) -> None:
    with pytest.raises(TypeError, match=r"^now must be an int, not str$"):
        rs.Codec(ring, mode="signed").encode("x", now="1")  # type: ignore[arg-type]


def test_functions_with_an_unhashable_guard_keep_every_option(ring: rs.KeyRing) -> None:
    class ListGuard(list[str]):
        def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
            self.append(token_id)
            return True

    token = rs.encode("x", ring, mode="signed", now=NOW, ttl=10)
    options: dict[str, Any] = {"mode": "signed", "guard": ListGuard()}
    assert rs.decode(token, ring, now=NOW + 11, leeway=1, **options) == "x"
    assert rs.decode(token, ring, now=NOW + 12, leeway=1, **options) is None
    assert rs.decode(token, ring, now=NOW, max_token_bytes=len(token) - 1, **options) is None


# --- Codec.from_env: the deployment chooses --------------------------------------------------

ENV_KEYS = {"REQUESTSTATE_KEYS": ref.b64(SECRET)}


def test_from_env_reads_the_keys_and_mints_encrypted_for_300_seconds_by_default() -> None:
    codec = rs.Codec.from_env(environ=ENV_KEYS)
    assert (codec.keys.fingerprint, codec.modes, codec.ttl) == (
        rs.KeyRing(SECRET).fingerprint,
        (rs.Mode.ENCRYPTED,),
        rs.DEFAULT_TTL,
    )


def test_from_env_the_variables_win_over_the_codes_mode_and_ttl() -> None:
    environ = {**ENV_KEYS, "REQUESTSTATE_MODE": "signed,encrypted", "REQUESTSTATE_TTL": "60"}
    codec = rs.Codec.from_env(environ=environ, mode="xchacha", ttl=900)
    assert (codec.modes, codec.ttl) == ((rs.Mode.SIGNED, rs.Mode.ENCRYPTED), 60)


def test_from_env_keeps_the_codes_mode_and_ttl_where_the_deployment_says_nothing() -> None:
    codec = rs.Codec.from_env(environ=ENV_KEYS, mode="signed", ttl=900, guard=rs.MemoryGuard())
    assert (codec.modes, codec.ttl, type(codec.guard)) == ((rs.Mode.SIGNED,), 900, rs.MemoryGuard)


@pytest.mark.parametrize("ttl", ["0", "86401", "5m", "-1", "1e3", "٣"])
def test_from_env_a_ttl_that_cannot_be_used_names_the_variable_and_the_fix(ttl: str) -> None:
    with pytest.raises(
        ValueError,
        match=r"^REQUESTSTATE_TTL must be whole seconds from 1 to 86400 \(a day\), got .*: "
        r"set it as REQUESTSTATE_TTL=300, for five minutes$",
    ):
        rs.Codec.from_env(environ={**ENV_KEYS, "REQUESTSTATE_TTL": ttl})


def test_from_env_without_keys_says_how_to_make_one() -> None:
    with pytest.raises(ValueError, match=r"^REQUESTSTATE_KEYS is not set: .*requeststate keygen\)$"):
        rs.Codec.from_env(environ={"REQUESTSTATE_MODE": "signed"})


def test_from_env_reads_the_process_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQUESTSTATE_KEYS", ref.b64(SECRET))
    monkeypatch.setenv("REQUESTSTATE_MODE", "xchacha")
    assert rs.Codec.from_env().modes == (rs.Mode.XCHACHA,)


@pytest.mark.parametrize("ttl", ["1", "86400", " 60 "])
def test_from_env_takes_any_ttl_from_one_second_to_a_day(ttl: str) -> None:
    assert rs.Codec.from_env(environ={**ENV_KEYS, "REQUESTSTATE_TTL": ttl}).ttl == int(ttl)


def test_from_env_shows_at_most_twenty_characters_of_a_bad_ttl() -> None:
    with pytest.raises(ValueError, match=r"got '12345678901234567890':"):
        rs.Codec.from_env(environ={**ENV_KEYS, "REQUESTSTATE_TTL": "12345678901234567890" + "9" * 30})


def test_every_misspelled_option_is_named() -> None:
    with pytest.raises(TypeError, match=r"^unexpected option\(s\) leewey, tll; the options are "):
        rs.Codec(SECRET, mode="signed", tll=5, leewey=1)  # type: ignore[call-arg]


def test_a_now_below_the_64_bit_range_names_the_bound() -> None:
    with pytest.raises(ValueError, match=r"^now must be an int from -2\*\*63 to 2\*\*63-1, got "):
        rs.decode("v1.x", SECRET, mode="signed", now=-(2**63) - 1)


@pytest.mark.anyio
async def test_averify_reads_the_codecs_clock() -> None:
    codec = rs.Codec(SECRET, mode="signed", ttl=10, clock=lambda: NOW)
    token = codec.encode("state")
    assert await codec.averify(token) == "state"
    assert await rs.Codec(SECRET, mode="signed", clock=lambda: NOW + 11).adecode(token) is None
