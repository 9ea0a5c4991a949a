"""``Codec`` and the module functions: what a server sees, from ``encode`` to ``verify`` or ``decode``."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Final

import msgspec
import pytest

import requeststate as rs
from requeststate._base64 import b64decode
from tests.conftest import NOW, OTHER_SECRET, SECRET
from tests.support import reference as ref


class Step(msgspec.Struct):
    step: int


class Booking(msgspec.Struct):
    step: int
    date: str


def mint(ring: rs.KeyRing, mode: rs.Mode, state: object = "state", **options: object) -> str:
    options = {"subject": "alice", "tool": "book", "now": NOW, **options}
    return rs.encode(state, ring, mode=mode, **options)  # type: ignore[arg-type]


def read(token: object, keys: rs.Keys, mode: rs.Modes, **options: object) -> Any:
    options = {"subject": "alice", "tool": "book", "now": NOW, **options}
    return rs.verify(token, keys, mode=mode, **options)  # type: ignore[arg-type]


def reason(token: object, keys: rs.Keys, mode: rs.Modes, **options: object) -> rs.Reason:
    with pytest.raises(rs.InvalidToken) as caught:
        read(token, keys, mode, **options)
    return caught.value.reason


def mcp_d_token(state: str = "state") -> str:
    """A signed token as mcp.d writes it: no id member."""
    return ref.signed_token(SECRET, ref.payload(state, NOW, ref.bind_tag(SECRET, "alice", "book")))


# --- round trips ----------------------------------------------------------------------------------


def test_round_trip(ring: rs.KeyRing, mode: rs.Mode) -> None:
    assert read(mint(ring, mode), ring, mode) == "state"


def test_mode_accepts_its_string_name(ring: rs.KeyRing, mode: rs.Mode) -> None:
    assert read(mint(ring, mode), ring, mode.value) == "state"


def test_each_mode_mints_its_prefix(ring: rs.KeyRing) -> None:
    prefixes = [mint(ring, mode).partition(".")[0] for mode in rs.Mode]
    assert prefixes == ["v1", "v1e", "v1x"]


def test_structured_state_is_carried_as_json_text(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, Booking(step=2, date="2026-12-01"))
    assert read(token, ring, mode) == '{"step":2,"date":"2026-12-01"}'


def test_typed_verify_returns_the_type(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, Booking(step=2, date="2026-12-01"))
    assert read(token, ring, mode, type=Booking) == Booking(step=2, date="2026-12-01")


def test_typed_verify_of_another_shape_is_wrong_type(ring: rs.KeyRing, mode: rs.Mode) -> None:
    assert reason(mint(ring, mode, {"step": "two"}), ring, mode, type=Booking) is rs.Reason.WRONG_TYPE


def test_raw_secret_works_as_keys(mode: rs.Mode) -> None:
    token = rs.encode("x", SECRET, mode=mode, now=NOW)
    assert rs.verify(token, rs.KeyRing(SECRET), mode=mode, now=NOW) == "x"
    assert rs.verify(token, SECRET, mode=mode, now=NOW) == "x"


def test_tokens_differ_each_time_even_for_the_same_state(ring: rs.KeyRing, mode: rs.Mode) -> None:
    assert mint(ring, mode) != mint(ring, mode)


def test_every_token_carries_a_fresh_128_bit_id_and_when_it_was_minted(ring: rs.KeyRing) -> None:
    payloads = [json.loads(b64decode(mint(ring, rs.Mode.SIGNED).split(".")[1]) or b"") for _ in range(3)]
    assert [(len(bytes.fromhex(p["id"])), p["iat"]) for p in payloads] == [(16, NOW)] * 3
    assert len({p["id"] for p in payloads}) == 3


@pytest.mark.parametrize("mode", [rs.Mode.ENCRYPTED, rs.Mode.XCHACHA], ids=str)
def test_encrypted_token_hides_state(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, "top-secret-plan")
    assert b"top-secret-plan" not in (b64decode(token[4:]) or b"")


def test_the_default_clock_is_time_time_read_on_every_call(
    ring: rs.KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Read per call, so freezegun and the like are seen.
    token = rs.encode("state", ring, mode="signed", ttl=60)
    monkeypatch.setattr(time, "time", lambda: 4e9)
    assert rs.decode(token, ring, mode="signed") is None
    assert rs.decode(rs.encode("state", ring, mode="signed", ttl=60), ring, mode="signed") == "state"


# --- the token never chooses the mode -------------------------------------------------------------

# Every ordered pair of two different modes: (the mode minted in, the mode asked for).
MODE_PAIRS: Final = [(minted, asked) for minted in rs.Mode for asked in rs.Mode if minted is not asked]
MODE_PAIR_IDS: Final = [f"{minted}-as-{asked}" for minted, asked in MODE_PAIRS]
PREFIXES: Final = {rs.Mode.SIGNED: "v1.", rs.Mode.ENCRYPTED: "v1e.", rs.Mode.XCHACHA: "v1x."}


@pytest.mark.parametrize(("minted", "asked"), MODE_PAIRS, ids=MODE_PAIR_IDS)
def test_token_of_a_mode_not_asked_for_is_wrong_mode(
    ring: rs.KeyRing, minted: rs.Mode, asked: rs.Mode
) -> None:
    assert reason(mint(ring, minted), ring, asked) is rs.Reason.WRONG_MODE


def test_tuple_of_modes_accepts_each(ring: rs.KeyRing) -> None:
    every: rs.Modes = (rs.Mode.SIGNED, "encrypted", "xchacha")
    assert [read(mint(ring, mode), ring, every) for mode in rs.Mode] == ["state"] * 3


def test_tuple_of_modes_refuses_the_others(ring: rs.KeyRing) -> None:
    assert reason(mint(ring, rs.Mode.XCHACHA), ring, ("signed", "encrypted")) is rs.Reason.WRONG_MODE


def test_tuple_naming_a_mode_twice_accepts_it_and_refuses_the_others(ring: rs.KeyRing) -> None:
    twice: rs.Modes = ("encrypted", rs.Mode.ENCRYPTED)
    assert read(mint(ring, rs.Mode.ENCRYPTED), ring, twice) == "state"
    assert reason(mint(ring, rs.Mode.SIGNED), ring, twice) is rs.Reason.WRONG_MODE


@pytest.mark.parametrize(
    ("minted", "asked", "expected"),
    [
        (rs.Mode.SIGNED, rs.Mode.ENCRYPTED, rs.Reason.MALFORMED),
        (rs.Mode.SIGNED, rs.Mode.XCHACHA, rs.Reason.MALFORMED),
        (rs.Mode.ENCRYPTED, rs.Mode.SIGNED, rs.Reason.MALFORMED),
        (rs.Mode.ENCRYPTED, rs.Mode.XCHACHA, rs.Reason.BAD_SIGNATURE),
        (rs.Mode.XCHACHA, rs.Mode.SIGNED, rs.Reason.MALFORMED),
        (rs.Mode.XCHACHA, rs.Mode.ENCRYPTED, rs.Reason.BAD_SIGNATURE),
    ],
    ids=MODE_PAIR_IDS,
)
def test_a_token_under_another_modes_prefix_is_refused_by_that_mode(
    ring: rs.KeyRing, minted: rs.Mode, asked: rs.Mode, expected: rs.Reason
) -> None:
    # A signed body has dots, an encrypted one has none; v1e. and v1x. differ in nonce and key.
    token = PREFIXES[asked] + mint(ring, minted)[len(PREFIXES[minted]) :]
    assert reason(token, ring, tuple(rs.Mode)) is expected


# --- binding --------------------------------------------------------------------------------------

WRONG_IDENTITIES = [
    pytest.param({"subject": "mallory"}, id="wrong subject"),
    pytest.param({"tool": "cancel"}, id="wrong tool"),
    pytest.param({"tool": None}, id="tool-bound token checked without tool"),
    pytest.param({"subject": "", "tool": None}, id="checked with no binding"),
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
    assert reason(mint(ring, mode), ring, mode, **identity) is EXPECTED_BINDING_REASON[mode]


def test_subject_bound_token_checked_with_a_tool_is_refused(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, tool=None)
    assert reason(token, ring, mode, tool="book") is EXPECTED_BINDING_REASON[mode]


def test_tool_only_binding_differs_from_subject_only(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, subject="", tool="book")
    assert reason(token, ring, mode, subject="book", tool=None) is EXPECTED_BINDING_REASON[mode]


INVALID_IDENTITIES: Final = [
    pytest.param({"subject": "a\0"}, "U\\+0000", id="NUL subject"),
    pytest.param({"tool": "b\0"}, "U\\+0000", id="NUL tool"),
    pytest.param({"subject": "alice\0book", "tool": None}, "U\\+0000", id="separator smuggled into subject"),
    pytest.param({"subject": "\ud800"}, "surrogate", id="surrogate subject"),
    pytest.param({"tool": "\udfff"}, "surrogate", id="surrogate tool"),
    pytest.param({"subject": ' {"s":"x"}', "tool": None}, "start with", id="payload subject"),
]


@pytest.mark.parametrize(("identity", "rule"), INVALID_IDENTITIES)
def test_invalid_identity_raises_at_encode(
    ring: rs.KeyRing, mode: rs.Mode, identity: dict[str, str], rule: str
) -> None:
    with pytest.raises(ValueError, match=rule):
        mint(ring, mode, **identity)


@pytest.mark.parametrize(
    "identity",
    [
        *(param.values[0] for param in INVALID_IDENTITIES),
        {"subject": None},
        {"subject": 7},
        {"tool": b"book"},
        {"subject": ["alice"]},
    ],
    ids=[*(str(param.id) for param in INVALID_IDENTITIES), "None", "int", "bytes tool", "unhashable"],
)
def test_invalid_identity_is_refused_at_verify(
    ring: rs.KeyRing, mode: rs.Mode, identity: dict[str, object]
) -> None:
    # The docs call an invalid identity a refusal: of any type, never a raise.
    assert reason(mint(ring, mode), ring, mode, **identity) is rs.Reason.WRONG_BINDING


@pytest.mark.parametrize("subject", [None, ["alice"]], ids=["None", "unhashable"])
def test_an_identity_that_is_no_str_raises_at_encode_saying_what_it_must_be(
    ring: rs.KeyRing, mode: rs.Mode, subject: object
) -> None:
    with pytest.raises(TypeError, match=r"^subject must be a str and tool a str or None$"):
        rs.Codec(ring, mode=mode).encode("x", subject=subject)  # type: ignore[arg-type]


# --- expiry ---------------------------------------------------------------------------------------


def test_valid_through_the_second_of_exp(ring: rs.KeyRing, mode: rs.Mode) -> None:
    assert read(mint(ring, mode, ttl=300), ring, mode, now=NOW + 300) == "state"


def test_expired_one_second_after_exp(ring: rs.KeyRing, mode: rs.Mode) -> None:
    assert reason(mint(ring, mode, ttl=300), ring, mode, now=NOW + 301) is rs.Reason.EXPIRED


def test_leeway_tolerates_skew(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, ttl=300)
    assert read(token, ring, mode, now=NOW + 310, leeway=10) == "state"
    assert reason(token, ring, mode, now=NOW + 311, leeway=10) is rs.Reason.EXPIRED


def test_exp_of_exactly_int64_max_is_minted_and_verifies(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("edge", ring, mode=mode, ttl=10, now=2**63 - 11)
    assert rs.verify(token, ring, mode=mode, now=2**63 - 1) == "edge"


def test_now_of_int64_max_is_a_valid_clock(ring: rs.KeyRing, mode: rs.Mode) -> None:
    assert reason(mint(ring, mode), ring, mode, now=2**63 - 1) is rs.Reason.EXPIRED


# --- rotation -------------------------------------------------------------------------------------


def test_old_key_still_verifies_after_rotation(mode: rs.Mode) -> None:
    old_token = mint(rs.KeyRing(OTHER_SECRET), mode)
    assert read(old_token, rs.KeyRing(SECRET, OTHER_SECRET), mode) == "state"


def test_new_tokens_use_the_first_key(mode: rs.Mode) -> None:
    token = mint(rs.KeyRing(SECRET, OTHER_SECRET), mode)
    assert read(token, rs.KeyRing(SECRET), mode) == "state"
    assert reason(token, rs.KeyRing(OTHER_SECRET), mode) is rs.Reason.BAD_SIGNATURE


def test_removed_key_fails(mode: rs.Mode) -> None:
    assert reason(mint(rs.KeyRing(OTHER_SECRET), mode), rs.KeyRing(SECRET), mode) is rs.Reason.BAD_SIGNATURE


# --- size -----------------------------------------------------------------------------------------


def test_max_token_bytes_is_configurable(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode)
    assert reason(token, ring, mode, max_token_bytes=len(token) - 1) is rs.Reason.TOO_LARGE
    assert read(token, ring, mode, max_token_bytes=len(token)) == "state"


# The length of the token of a 128 KiB state, by mode: over the default cap of 128 KiB.
OVERSIZED = {rs.Mode.SIGNED: 175014, rs.Mode.ENCRYPTED: 175008, rs.Mode.XCHACHA: 175024}


def test_encode_refuses_a_state_whose_token_is_too_large(ring: rs.KeyRing, mode: rs.Mode) -> None:
    # The message is the length and the cap, whole: nothing of the state it carries.
    expected = f"the token would be {OVERSIZED[mode]} bytes, over max_token_bytes=131072"
    with pytest.raises(ValueError, match=rf"^{expected}$"):
        mint(ring, mode, "hunter2" + "x" * (128 * 1024 - 7))


def test_encode_honours_a_raised_limit(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, "x" * (128 * 1024), max_token_bytes=1 << 20)
    assert read(token, ring, mode, max_token_bytes=1 << 20) == "x" * (128 * 1024)


# --- any token type -------------------------------------------------------------------------------


def test_str_subclass_token_is_accepted(ring: rs.KeyRing, mode: rs.Mode) -> None:
    class Text(str):
        __slots__ = ()

    assert read(Text(mint(ring, mode)), ring, mode) == "state"


# --- caller mistakes raise ------------------------------------------------------------------------


def test_a_ttl_of_true_is_refused_even_after_a_ttl_of_1(ring: rs.KeyRing) -> None:
    # True == 1 and hashes alike: the functions' codec cache must not hand True the codec of 1.
    rs.encode("x", ring, mode="signed", ttl=1)
    with pytest.raises(TypeError, match=r"^ttl must be an int, not bool$"):
        rs.encode("x", ring, mode="signed", ttl=True)


def test_a_leeway_of_false_is_refused_even_after_a_leeway_of_0(ring: rs.KeyRing) -> None:
    rs.decode("x", ring, mode="signed", leeway=0)
    with pytest.raises(TypeError, match=r"^leeway must be an int, not bool$"):
        rs.verify("x", ring, mode="signed", leeway=False)


def test_an_unknown_mode_is_refused_listing_the_choices(ring: rs.KeyRing) -> None:
    with pytest.raises(
        ValueError, match=r"^mode must be a Mode or one of 'signed', 'encrypted', 'xchacha', got 'aes'$"
    ):
        rs.encode("x", ring, mode="aes")  # type: ignore[arg-type]  # what the Literal type catches


@pytest.mark.parametrize(
    ("keys", "type_name"),
    [(None, "NoneType"), ("secret" * 10, "str"), ([SECRET], "list"), (bytearray(SECRET), "bytearray")],
)
def test_keys_of_another_type_are_refused_naming_it(keys: object, type_name: str) -> None:
    with pytest.raises(TypeError, match=rf"^keys must be a KeyRing or bytes, not {type_name}$"):
        rs.encode("x", keys, mode="signed")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=rf"^keys must be a KeyRing or bytes, not {type_name}$"):
        rs.decode("x", keys, mode="signed")  # type: ignore[arg-type]


def test_a_short_raw_secret_is_refused_stating_the_requirement() -> None:
    with pytest.raises(ValueError, match=r"^secret 0 is 16 bytes; each secret must be at least 32 bytes"):
        rs.encode("x", bytes(16), mode="signed")


def test_state_msgspec_cannot_encode_is_a_type_error(ring: rs.KeyRing) -> None:
    with pytest.raises(TypeError, match=r"^Encoding objects of type object is unsupported$"):
        rs.encode(object(), ring, mode="signed")


def test_state_with_a_lone_surrogate_is_a_value_error(ring: rs.KeyRing, mode: rs.Mode) -> None:
    with pytest.raises(ValueError, match=r"^state must be valid Unicode \(no lone surrogates\)$"):
        rs.encode("\ud800", ring, mode=mode)


# --- single use -----------------------------------------------------------------------------------


class RecordingGuard:
    def __init__(self) -> None:
        self.claims: list[tuple[rs.ClaimId, int, int]] = []

    def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        self.claims.append((claimed, expires_at, now))
        return True


class AsyncRecordingGuard:
    def __init__(self) -> None:
        self.claims: list[tuple[rs.ClaimId, int, int]] = []

    async def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        self.claims.append((claimed, expires_at, now))
        return True


class AsyncMemoryGuard:
    def __init__(self) -> None:
        self.inner = rs.MemoryGuard()

    async def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        return self.inner.claim(claimed, expires_at, now)


class UnavailableGuard:
    def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        raise rs.GuardUnavailable("store down")


class AsyncUnavailableGuard:
    async def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        raise rs.GuardUnavailable("timeout")


def test_guard_claims_the_token_id_until_exp_plus_leeway(ring: rs.KeyRing, mode: rs.Mode) -> None:
    guard = RecordingGuard()
    read(mint(ring, mode, ttl=300), ring, mode, now=NOW + 5, leeway=7, guard=guard)
    [(claimed, expires_at, now)] = guard.claims
    assert (claimed.minted, expires_at, now) == (NOW, NOW + 300 + 7, NOW + 5)


def test_second_redemption_is_replayed(ring: rs.KeyRing, mode: rs.Mode) -> None:
    guard = rs.MemoryGuard()
    token = mint(ring, mode)
    assert read(token, ring, mode, guard=guard) == "state"
    assert reason(token, ring, mode, guard=guard) is rs.Reason.REPLAYED


def test_distinct_tokens_of_the_same_state_are_each_redeemable(ring: rs.KeyRing, mode: rs.Mode) -> None:
    guard = rs.MemoryGuard()
    assert [read(mint(ring, mode), ring, mode, guard=guard) for _ in range(3)] == ["state"] * 3


@pytest.mark.parametrize(
    ("options", "tampered", "expected"),
    [
        ({"subject": "mallory"}, False, rs.Reason.WRONG_BINDING),
        ({"now": NOW + 301}, False, rs.Reason.EXPIRED),
        ({"type": Booking}, False, rs.Reason.WRONG_TYPE),
        ({}, True, rs.Reason.BAD_SIGNATURE),
    ],
    ids=["wrong subject", "expired", "wrong type", "tampered"],
)
def test_refused_token_never_consumes_its_id(
    ring: rs.KeyRing, options: dict[str, object], tampered: bool, expected: rs.Reason
) -> None:
    guard = RecordingGuard()
    token = mint(ring, rs.Mode.SIGNED, "not json")
    if tampered:
        token = token[:-2] + ("AA" if token[-2:] != "AA" else "BA")
    assert reason(token, ring, "signed", guard=guard, **options) is expected
    assert guard.claims == []


def test_guard_that_cannot_answer_fails_closed(ring: rs.KeyRing) -> None:
    token = mint(ring, rs.Mode.SIGNED)
    assert reason(token, ring, "signed", guard=UnavailableGuard()) is rs.Reason.GUARD_UNAVAILABLE


def test_token_without_an_id_is_accepted_unguarded_and_refused_guarded(ring: rs.KeyRing) -> None:
    # mcp.d mints no id: such a token cannot be made single-use.
    assert read(mcp_d_token(), ring, "signed") == "state"
    assert reason(mcp_d_token(), ring, "signed", guard=RecordingGuard()) is rs.Reason.MALFORMED


def test_guard_answer_that_is_not_a_bool_is_a_type_error(ring: rs.KeyRing) -> None:
    class Sloppy:
        def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
            return 1  # type: ignore[return-value]

    with pytest.raises(TypeError, match=r"^Guard.claim must return a bool, not int$"):
        read(mint(ring, rs.Mode.SIGNED), ring, "signed", guard=Sloppy())


def test_an_async_guard_given_to_verify_is_a_type_error_naming_averify(ring: rs.KeyRing) -> None:
    guard: Any = AsyncMemoryGuard()  # the mistake the type checker would catch; the runtime catches it too
    with pytest.raises(TypeError, match=r"^an async guard needs averify\(\) or adecode\(\)$"):
        read(mint(ring, rs.Mode.SIGNED), ring, "signed", guard=guard)


def test_a_codec_with_an_async_guard_refuses_sync_calls_up_front(ring: rs.KeyRing) -> None:
    codec = rs.Codec(ring, mode="signed", guard=AsyncMemoryGuard())
    for call in (codec.decode, codec.verify):
        with pytest.raises(TypeError, match=r"^an async guard needs averify\(\) or adecode\(\)$"):
            call("not even a token")


def test_a_sync_claim_that_returns_a_coroutine_is_a_type_error_naming_the_async_calls(
    ring: rs.KeyRing,
) -> None:
    class SneakyGuard:  # claim is a plain function, so the codec cannot tell up front
        def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
            async def later() -> bool:
                return True

            return later()  # type: ignore[return-value]

    codec = rs.Codec(ring, mode="signed", guard=SneakyGuard())
    with pytest.raises(TypeError, match=r"^an async guard needs averify\(\) or adecode\(\)$"):
        codec.decode(mint(ring, rs.Mode.SIGNED), subject="alice", tool="book", now=NOW)


def test_functions_take_an_unhashable_guard_and_keep_every_option(ring: rs.KeyRing) -> None:
    class ListGuard(list[rs.ClaimId]):  # a list: unhashable
        def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
            if claimed in self:
                return False
            self.append(claimed)
            return True

    guard = ListGuard()
    token = rs.encode("x", ring, mode="signed", now=NOW, ttl=10)
    options: dict[str, Any] = {"mode": "signed", "guard": guard}
    assert rs.decode(token, ring, now=NOW + 11, leeway=1, **options) == "x"
    assert rs.decode(token, ring, now=NOW + 11, leeway=1, **options) is None
    fresh = rs.encode("y", ring, mode="signed", now=NOW, ttl=10)
    assert rs.decode(fresh, ring, now=NOW + 12, leeway=1, **options) is None
    assert rs.decode(fresh, ring, now=NOW, max_token_bytes=len(fresh) - 1, **options) is None
    assert rs.decode(fresh, ring, now=NOW, **options) == "y"


# --- the Codec ------------------------------------------------------------------------------------


def test_codec_holds_the_ring_and_the_modes_in_order(ring: rs.KeyRing) -> None:
    codec = rs.Codec(ring, mode=("encrypted", rs.Mode.SIGNED, "encrypted"))
    assert (codec.keys, codec.modes) == (ring, (rs.Mode.ENCRYPTED, rs.Mode.SIGNED))


def test_codec_mints_in_its_first_mode_and_reads_every_mode(ring: rs.KeyRing) -> None:
    codec = rs.Codec(ring, mode=("xchacha", "signed"))
    assert codec.encode("x").startswith("v1x.")
    assert codec.decode(rs.encode("y", ring, mode="signed")) == "y"


def test_codec_reads_its_clock_on_each_call(ring: rs.KeyRing, mode: rs.Mode) -> None:
    readings = iter([NOW, NOW + 301])
    codec = rs.Codec(ring, mode=mode, clock=lambda: next(readings))
    token = codec.encode("x")
    assert rs.decode(token, ring, mode=mode, now=NOW + 300) == "x"
    assert codec.decode(token) is None  # the second reading: one second past exp


def test_a_clock_past_every_token_refuses_them_and_cannot_mint(ring: rs.KeyRing, mode: rs.Mode) -> None:
    # An int is a valid float to a type checker: a clock far past int64 must
    # make decode refuse, never raise.
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
    from_codec = codec.encode("x", subject="a", tool="t", now=NOW)
    from_function = rs.encode("y", ring, mode=mode, subject="a", tool="t", ttl=60, now=NOW)
    assert rs.verify(from_codec, ring, mode=mode, subject="a", tool="t", now=NOW + 60) == "x"
    assert codec.verify(from_function, subject="a", tool="t", now=NOW + 60) == "y"


def test_codec_repr_names_the_ring_the_modes_the_ttl_and_the_guard(ring: rs.KeyRing) -> None:
    codec = rs.Codec(ring, mode=("signed", "encrypted"), ttl=60, guard=rs.MemoryGuard())
    assert repr(codec) == f"Codec(keys={ring!r}, mode=signed,encrypted, ttl=60, guard=MemoryGuard)"


def test_codec_repr_without_a_guard(ring: rs.KeyRing) -> None:
    assert repr(rs.Codec(ring, mode="encrypted")) == f"Codec(keys={ring!r}, mode=encrypted, ttl=300)"


def test_each_codec_method_binds_no_identity_by_default(ring: rs.KeyRing, mode: rs.Mode) -> None:
    codec = rs.Codec(ring, mode=mode)
    token = codec.encode("x", now=NOW)
    assert codec.decode(token, now=NOW) == "x"
    assert codec.verify(token, now=NOW) == "x"
    assert asyncio.run(codec.adecode(token, now=NOW)) == "x"
    assert asyncio.run(codec.averify(token, now=NOW)) == "x"


# --- decode: the thin adapter, None for every refusal ---------------------------------------------


def test_decode_returns_the_state_of_a_valid_token(ring: rs.KeyRing, mode: rs.Mode) -> None:
    assert rs.decode(mint(ring, mode), ring, mode=mode, subject="alice", tool="book", now=NOW) == "state"


def test_typed_decode(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode(Step(3), ring, mode=mode, now=NOW)
    assert rs.decode(token, ring, mode=mode, now=NOW, type=Step) == Step(3)


@pytest.mark.parametrize(
    "options",
    [
        {"subject": "mallory"},
        {"tool": "cancel"},
        {"now": NOW + 301},
        {"mode": "signed"},
        {"type": Step},
        {"max_token_bytes": 10},
    ],
    ids=["wrong subject", "wrong tool", "expired", "wrong mode", "wrong type", "too large"],
)
def test_every_refusal_is_none(ring: rs.KeyRing, options: dict[str, object]) -> None:
    token = rs.encode("not json", ring, mode="encrypted", subject="alice", tool="book", now=NOW)
    arguments: dict[str, Any] = {
        "mode": "encrypted",
        "subject": "alice",
        "tool": "book",
        "now": NOW,
        **options,
    }
    assert rs.decode(token, ring, **arguments) is None


@pytest.mark.parametrize("token", [None, b"v1.", 0, -1, 3.14, [], {}, set(), object(), "", "v1.", "\ud800"])
def test_any_input_type_is_none(ring: rs.KeyRing, mode: rs.Mode, token: object) -> None:
    assert rs.decode(token, ring, mode=mode) is None


def test_invalid_identity_is_none(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, subject="alice")
    assert rs.decode(token, ring, mode=mode, subject="ali\0ce") is None
    assert rs.decode(token, ring, mode=mode, subject="\udc00") is None


def test_caller_mistakes_still_raise_from_decode(ring: rs.KeyRing) -> None:
    with pytest.raises(ValueError, match=r"^mode must be a Mode or one of"):
        rs.decode("v1.x.y", ring, mode="nope")  # type: ignore[arg-type]  # what the Literal type catches
    with pytest.raises(ValueError, match=r"^leeway must be an int from 0"):
        rs.decode("v1.x.y", ring, mode="signed", leeway=-1)
    with pytest.raises(ValueError, match=r"^now must be an int from -2\*\*63"):
        rs.decode("v1.x.y", ring, mode="signed", now=2**63)


def test_replayed_token_is_none(ring: rs.KeyRing, mode: rs.Mode) -> None:
    guard = rs.MemoryGuard()
    token = rs.encode("state", ring, mode=mode, now=NOW)
    assert rs.decode(token, ring, mode=mode, now=NOW, guard=guard) == "state"
    assert rs.decode(token, ring, mode=mode, now=NOW, guard=guard) is None


# --- averify and adecode, for asyncio servers -----------------------------------------------------


def test_averify_awaits_an_async_guard(ring: rs.KeyRing, mode: rs.Mode) -> None:
    codec = rs.Codec(ring, mode=mode, guard=AsyncMemoryGuard())
    token = mint(ring, mode)

    async def redeem() -> str:
        return await codec.averify(token, subject="alice", tool="book", now=NOW)

    assert asyncio.run(redeem()) == "state"
    with pytest.raises(rs.InvalidToken, match=r"^replayed$"):
        asyncio.run(redeem())


def test_averify_accepts_a_sync_guard(ring: rs.KeyRing) -> None:
    codec = rs.Codec(ring, mode="signed", guard=rs.MemoryGuard())
    token = mint(ring, rs.Mode.SIGNED)
    assert asyncio.run(codec.averify(token, subject="alice", tool="book", now=NOW)) == "state"
    with pytest.raises(rs.InvalidToken, match=r"^replayed$"):
        asyncio.run(codec.averify(token, subject="alice", tool="book", now=NOW))


def test_averify_maps_an_unavailable_guard_to_a_refusal(ring: rs.KeyRing) -> None:
    codec = rs.Codec(ring, mode="signed", guard=AsyncUnavailableGuard())
    with pytest.raises(rs.InvalidToken, match=r"^guard_unavailable$"):
        asyncio.run(codec.averify(mint(ring, rs.Mode.SIGNED), subject="alice", tool="book", now=NOW))


def test_averify_claims_what_verify_claims(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode)
    guard, recorder = AsyncRecordingGuard(), RecordingGuard()
    options: dict[str, Any] = {"subject": "alice", "tool": "book", "now": NOW}
    asyncio.run(rs.Codec(ring, mode=mode, leeway=7, guard=guard).averify(token, **options))
    rs.Codec(ring, mode=mode, leeway=7, guard=recorder).verify(token, **options)
    assert guard.claims == recorder.claims
    [(claimed, expires_at, now)] = guard.claims
    assert (claimed.minted, expires_at, now) == (NOW, NOW + 300 + 7, NOW)


def test_averify_decodes_the_requested_type(ring: rs.KeyRing, mode: rs.Mode) -> None:
    codec = rs.Codec(ring, mode=mode)
    token = codec.encode(Booking(1, "d"), now=NOW)
    assert asyncio.run(codec.averify(token, now=NOW, type=Booking)) == Booking(1, "d")


GUARDS: Final = {"no guard": lambda: None, "sync guard": rs.MemoryGuard, "async guard": AsyncMemoryGuard}


@pytest.mark.parametrize("guard", GUARDS.values(), ids=GUARDS.keys())
def test_aopen_opens_the_token_for_the_subject_tool_and_type_it_is_given(
    ring: rs.KeyRing, guard: Any
) -> None:
    # The MCP boundary opens each echo so (protect()). Catches: an argument of aopen's not passed on,
    # on either path (an async guard's, or none and a sync guard's).
    codec = rs.Codec(ring, mode="encrypted", guard=guard())
    token = codec.encode(Booking(1, "d"), subject="alice", tool="book", now=NOW)
    claims = asyncio.run(codec.aopen(token, subject="alice", tool="book", now=NOW, type=Booking))
    assert (claims.state, claims.mode, claims.minted) == (Booking(1, "d"), rs.Mode.ENCRYPTED, NOW)


@pytest.mark.parametrize("guard", GUARDS.values(), ids=GUARDS.keys())
def test_aopen_refuses_a_token_expired_at_the_now_it_is_given(ring: rs.KeyRing, guard: Any) -> None:
    codec = rs.Codec(ring, mode="encrypted", ttl=10, guard=guard())
    token = codec.encode("state", now=NOW)
    with pytest.raises(rs.InvalidToken, match=r"^expired$"):
        asyncio.run(codec.aopen(token, now=NOW + 11))


@pytest.mark.parametrize(
    "options",
    [{"now": NOW + 11}, {"subject": "bob", "now": NOW}, {"now": NOW, "type": Step}],
    ids=["expired", "wrong subject", "wrong type"],
)
def test_averify_refuses_for_the_reason_verify_does(
    ring: rs.KeyRing, mode: rs.Mode, options: dict[str, Any]
) -> None:
    codec = rs.Codec(ring, mode=mode, ttl=10)
    token = codec.encode("state", now=NOW)
    with pytest.raises(rs.InvalidToken) as refused:
        codec.verify(token, **options)
    with pytest.raises(rs.InvalidToken, match=rf"^{refused.value.reason}$"):
        asyncio.run(codec.averify(token, **options))


def test_averify_and_adecode_read_the_codecs_clock(ring: rs.KeyRing, mode: rs.Mode) -> None:
    codec = rs.Codec(ring, mode=mode, ttl=10, clock=lambda: NOW + 11)
    token = codec.encode("x", now=NOW)
    with pytest.raises(rs.InvalidToken, match=r"^expired$"):
        asyncio.run(codec.averify(token))
    assert asyncio.run(codec.adecode(token)) is None


def test_token_without_an_id_cannot_be_guarded_asynchronously(ring: rs.KeyRing) -> None:
    codec = rs.Codec(ring, mode="signed", guard=AsyncMemoryGuard())
    with pytest.raises(rs.InvalidToken, match=r"^malformed$"):
        asyncio.run(codec.averify(mcp_d_token(), subject="alice", tool="book", now=NOW))


def test_adecode_returns_the_state_then_none_on_replay(ring: rs.KeyRing, mode: rs.Mode) -> None:
    codec = rs.Codec(ring, mode=mode, guard=AsyncMemoryGuard())
    token = codec.encode("state", now=NOW)

    async def twice() -> list[str | None]:
        return [await codec.adecode(token, now=NOW) for _ in range(2)]

    assert asyncio.run(twice()) == ["state", None]


def test_adecode_of_any_input_type_is_none(ring: rs.KeyRing) -> None:
    codec = rs.Codec(ring, mode="signed")

    async def attempts() -> list[object]:
        return [await codec.adecode(token) for token in (None, b"x", 5, "v1.x.y")]

    assert asyncio.run(attempts()) == [None] * 4


def test_adecode_passes_every_option_through(ring: rs.KeyRing, mode: rs.Mode) -> None:
    codec = rs.Codec(ring, mode=mode, ttl=10)
    token = codec.encode(Step(3), subject="alice", tool="book", now=NOW)

    async def attempt(**options: Any) -> object:
        return await codec.adecode(token, **{"subject": "alice", "tool": "book", "now": NOW, **options})

    assert asyncio.run(attempt(type=Step, now=NOW + 10)) == Step(3)
    assert asyncio.run(attempt(tool="cancel")) is None
    assert asyncio.run(attempt(subject="bob")) is None
    assert asyncio.run(attempt(now=NOW + 11)) is None
    assert asyncio.run(attempt(type=Booking)) is None


@pytest.mark.parametrize("state", [b'{"step":1}', bytearray(b"{}"), memoryview(b"{}")], ids=type)
def test_bytes_are_refused_as_a_state_saying_what_to_pass(ring: rs.KeyRing, state: object) -> None:
    # Before: msgspec.json.encode(obj), the natural thing to pass, was carried as a base64 string,
    # and the genuine token was then refused as wrong_type by a typed decode.
    with pytest.raises(TypeError, match=r"^state must be a str or a value msgspec encodes, not bytes: pass"):
        mint(ring, rs.Mode.ENCRYPTED, state)


# --- replace and options --------------------------------------------------------------------------


def test_replace_changes_the_options_named_and_keeps_the_rest() -> None:
    guard = rs.MemoryGuard()
    codec = rs.Codec(SECRET, mode="signed", ttl=60, guard=guard, metrics=None)
    changed = codec.replace(ttl=120)
    assert (changed.keys, changed.modes, changed.ttl, changed.guard) == (
        codec.keys,
        (rs.Mode.SIGNED,),
        120,
        guard,
    )
    assert codec.ttl == 60


def test_options_build_the_same_codec_again() -> None:
    codec = rs.Codec(SECRET, mode=("signed", "encrypted"), ttl=90, leeway=5, metrics=None)
    again = rs.Codec(SECRET, **codec.options)
    token = codec.encode("s", now=NOW)
    assert (again.options, again.verify(token, now=NOW + 94)) == (codec.options, "s")


def test_replace_checks_the_options_again() -> None:
    with pytest.raises(TypeError, match=r"^unexpected option\(s\) tll; the options are "):
        rs.Codec(SECRET, metrics=None).replace(tll=60)  # type: ignore[call-arg]
