from __future__ import annotations

import hmac
import time

import msgspec
import pytest

import requeststate as rs
from requeststate._codec import _encode
from tests import reference as ref
from tests.conftest import NOW, OTHER_SECRET, SECRET


class Booking(msgspec.Struct):
    step: int
    date: str


def mint(ring: rs.KeyRing, mode: rs.Mode, state: object = "state", **options: object) -> str:
    options = {"subject": "alice", "tool": "book", "now": NOW, **options}
    return rs.encode(state, ring, mode=mode, **options)  # type: ignore[arg-type]


def reason(token: object, keys: rs.KeyRing | bytes, mode: rs.Mode, **options: object) -> rs.Reason:
    options = {"subject": "alice", "tool": "book", "now": NOW, **options}
    with pytest.raises(rs.InvalidToken) as caught:
        rs.verify(token, keys, mode=mode, **options)  # type: ignore[call-overload]
    return caught.value.reason


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


def test_encrypted_tokens_differ_each_time(ring: rs.KeyRing) -> None:
    assert mint(ring, rs.Mode.ENCRYPTED) != mint(ring, rs.Mode.ENCRYPTED)


def test_encrypted_token_hides_state(ring: rs.KeyRing) -> None:
    token = mint(ring, rs.Mode.ENCRYPTED, "top-secret-plan")
    from requeststate._base64 import b64decode

    assert b"top-secret-plan" not in (b64decode(token[4:]) or b"")


def test_deterministic_entry_point_matches_the_reference(ring: rs.KeyRing) -> None:
    nonce = bytes(range(12))
    token = _encode("s", ring, "encrypted", "alice", "book", 10, NOW, 1 << 16, lambda n: nonce[:n])
    assert token == ref.token("encrypted", SECRET, "s", NOW + 10, "alice", "book", nonce)


def test_clock_defaults_to_now(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("x", ring, mode=mode, ttl=60)
    assert rs.verify(token, ring, mode=mode) == "x"
    assert rs.decode(token, ring, mode=mode, now=int(time.time()) + 120) is None


# --- the token never chooses the mode --------------------------------------------


def test_token_of_a_mode_not_asked_for_is_wrong_mode(ring: rs.KeyRing) -> None:
    assert reason(mint(ring, rs.Mode.ENCRYPTED), ring, rs.Mode.SIGNED) is rs.Reason.WRONG_MODE
    assert reason(mint(ring, rs.Mode.SIGNED), ring, rs.Mode.ENCRYPTED) is rs.Reason.WRONG_MODE


def test_tuple_of_modes_accepts_each(ring: rs.KeyRing) -> None:
    both = (rs.Mode.SIGNED, "encrypted")
    for mode in rs.Mode:
        token = mint(ring, mode)
        assert rs.verify(token, ring, mode=both, subject="alice", tool="book", now=NOW) == "state"


@pytest.mark.parametrize(("swap_from", "swap_to"), [("v1.", "v1e."), ("v1e.", "v1.")])
def test_swapped_prefix_is_refused(ring: rs.KeyRing, swap_from: str, swap_to: str) -> None:
    mode = rs.Mode.SIGNED if swap_from == "v1." else rs.Mode.ENCRYPTED
    token = swap_to + mint(ring, mode)[len(swap_from) :]
    assert reason(token, ring, (rs.Mode.SIGNED, rs.Mode.ENCRYPTED)) is rs.Reason.MALFORMED  # type: ignore[arg-type]


@pytest.mark.parametrize("token", ["v1", "v1e", "v1ex", "v1x.abc", "v1e-", ".v1.", "v1.e."])
def test_near_prefixes_are_malformed(ring: rs.KeyRing, token: str) -> None:
    assert reason(token, ring, (rs.Mode.SIGNED, rs.Mode.ENCRYPTED)) is rs.Reason.MALFORMED  # type: ignore[arg-type]


# --- binding -----------------------------------------------------------------------

WRONG_IDENTITIES = [
    pytest.param({"subject": "mallory"}, id="wrong subject"),
    pytest.param({"tool": "cancel"}, id="wrong tool"),
    pytest.param({"tool": None}, id="tool-bound token checked without tool"),
    pytest.param({"subject": "", "tool": None}, id="checked with no binding"),
    pytest.param({"subject": "alice\0book", "tool": None}, id="separator smuggled into subject"),
]
EXPECTED_BINDING_REASON = {
    rs.Mode.SIGNED: rs.Reason.WRONG_BINDING,
    rs.Mode.ENCRYPTED: rs.Reason.BAD_SIGNATURE,
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


@pytest.mark.parametrize(
    "identity",
    [{"subject": "a\0"}, {"tool": "b\0"}, {"subject": "\ud800"}, {"tool": "\udfff"}],
    ids=["NUL subject", "NUL tool", "surrogate subject", "surrogate tool"],
)
def test_invalid_identity_raises_at_encode(ring: rs.KeyRing, mode: rs.Mode, identity: dict[str, str]) -> None:
    with pytest.raises(ValueError, match=r"U\+0000|surrogate"):
        mint(ring, mode, **identity)


@pytest.mark.parametrize(
    "identity",
    [{"subject": "a\0"}, {"tool": "b\0"}, {"subject": "\ud800"}, {"tool": "\udfff"}],
    ids=["NUL subject", "NUL tool", "surrogate subject", "surrogate tool"],
)
def test_invalid_identity_is_refused_at_verify(
    ring: rs.KeyRing, mode: rs.Mode, identity: dict[str, str]
) -> None:
    assert reason(mint(ring, mode), ring, mode, **identity) is rs.Reason.WRONG_BINDING


def test_bind_tag_comparison_is_constant_time(ring: rs.KeyRing, monkeypatch: pytest.MonkeyPatch) -> None:
    token = mint(ring, rs.Mode.ENCRYPTED)
    compared: list[object] = []
    real = hmac.compare_digest

    def spy(a: str, b: str) -> bool:
        compared.append(a)
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    rs.verify(token, ring, mode="encrypted", subject="alice", tool="book", now=NOW)
    assert compared == [ring.bind_tags("alice", "book")[0]]


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
    assert rs.verify(
        token, ring, mode=mode, subject="alice", tool="book", now=NOW, max_token_bytes=len(token)
    )


def test_encode_refuses_a_state_whose_token_is_too_large(ring: rs.KeyRing, mode: rs.Mode) -> None:
    with pytest.raises(ValueError, match="max_token_bytes"):
        mint(ring, mode, "x" * (64 * 1024))


def test_encode_honours_a_raised_limit(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = mint(ring, mode, "x" * (64 * 1024), max_token_bytes=1 << 20)
    assert rs.verify(token, ring, mode=mode, subject="alice", tool="book", now=NOW, max_token_bytes=1 << 20)


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


@pytest.mark.parametrize("ttl", [0, -1, 2**63])
def test_ttl_out_of_range_is_a_value_error(ring: rs.KeyRing, ttl: int) -> None:
    with pytest.raises(ValueError, match="ttl"):
        rs.encode("x", ring, mode="signed", ttl=ttl)


@pytest.mark.parametrize("ttl", [1.5, "300", None, True])
def test_ttl_not_an_int_is_a_type_error(ring: rs.KeyRing, ttl: object) -> None:
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
        rs.verify("x", ring, mode="signed", now=now)  # type: ignore[call-overload]


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
        rs.verify("x", ring, mode=mode)  # type: ignore[call-overload]


def test_unknown_mode_at_encode_is_a_value_error(ring: rs.KeyRing) -> None:
    with pytest.raises(ValueError, match="mode"):
        rs.encode("x", ring, mode="aes")


@pytest.mark.parametrize("keys", [None, "secret" * 10, [SECRET], bytearray(SECRET)])
def test_keys_of_another_type_are_a_type_error(keys: object) -> None:
    with pytest.raises(TypeError, match="keys"):
        rs.encode("x", keys, mode="signed")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="keys"):
        rs.verify("x", keys, mode="signed")  # type: ignore[call-overload]


def test_short_raw_secret_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        rs.encode("x", bytes(16), mode="signed")


def test_state_msgspec_cannot_encode_is_a_type_error(ring: rs.KeyRing) -> None:
    with pytest.raises(TypeError):
        rs.encode(object(), ring, mode="signed")


def test_state_with_a_lone_surrogate_is_a_value_error(ring: rs.KeyRing, mode: rs.Mode) -> None:
    with pytest.raises(ValueError, match="surrogate"):
        rs.encode("\ud800", ring, mode=mode)


def test_errors_never_contain_the_state(ring: rs.KeyRing, mode: rs.Mode) -> None:
    secret_state = "hunter2-" + "x" * (64 * 1024)
    with pytest.raises(ValueError, match="max_token_bytes") as caught:
        rs.encode(secret_state, ring, mode=mode)
    assert "hunter2" not in str(caught.value)
