from __future__ import annotations

import asyncio

import msgspec
import pytest

import requeststate as rs
from tests.conftest import NOW


class Step(msgspec.Struct):
    step: int


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
    assert rs.decode(token, ring, **arguments) is None  # type: ignore[call-overload]


@pytest.mark.parametrize("token", [None, b"v1.", 0, -1, 3.14, [], {}, set(), object(), "", "v1.", "\ud800"])
def test_any_input_type_is_none(ring: rs.KeyRing, mode: rs.Mode, token: object) -> None:
    assert rs.decode(token, ring, mode=mode) is None


def test_invalid_identity_is_none(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, subject="alice")
    assert rs.decode(token, ring, mode=mode, subject="ali\0ce") is None
    assert rs.decode(token, ring, mode=mode, subject="\udc00") is None


def test_configuration_errors_still_raise(ring: rs.KeyRing) -> None:
    with pytest.raises(ValueError, match="mode"):
        rs.decode("v1.x.y", ring, mode="nope")  # type: ignore[call-overload]  # what the Literal type catches
    with pytest.raises(ValueError, match="leeway"):
        rs.decode("v1.x.y", ring, mode="signed", leeway=-1)
    with pytest.raises(TypeError, match="keys"):
        rs.decode("v1.x.y", None, mode="signed")  # type: ignore[call-overload]


def test_replayed_token_is_none(ring: rs.KeyRing, mode: rs.Mode) -> None:
    guard = rs.MemoryGuard()
    token = rs.encode("state", ring, mode=mode, now=NOW)
    assert rs.decode(token, ring, mode=mode, now=NOW, guard=guard) == "state"
    assert rs.decode(token, ring, mode=mode, now=NOW, guard=guard) is None


def test_adecode_returns_the_state_then_none_on_replay(ring: rs.KeyRing, mode: rs.Mode) -> None:
    guard = rs.MemoryGuard()
    token = rs.encode("state", ring, mode=mode, now=NOW)

    async def twice() -> list[str | None]:
        return [await rs.adecode(token, ring, mode=mode, now=NOW, guard=guard) for _ in range(2)]

    assert asyncio.run(twice()) == ["state", None]


def test_adecode_of_any_input_type_is_none(ring: rs.KeyRing) -> None:
    async def attempts() -> list[object]:
        return [await rs.adecode(token, ring, mode="signed") for token in (None, b"x", 5, "v1.x.y")]

    assert asyncio.run(attempts()) == [None] * 4


# --- added for mutation testing: decode and adecode pass every option through ---------------


def test_decode_checks_the_tool(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, subject="alice", tool="book", now=NOW)
    assert rs.decode(token, ring, mode=mode, subject="alice", tool="book", now=NOW) == "state"
    assert rs.decode(token, ring, mode=mode, subject="alice", tool="cancel", now=NOW) is None


def test_adecode_checks_the_tool(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, subject="alice", tool="book", now=NOW)

    async def attempts() -> list[str | None]:
        return [
            await rs.adecode(token, ring, mode=mode, subject="alice", tool=tool, now=NOW)
            for tool in ("book", "cancel")
        ]

    assert asyncio.run(attempts()) == ["state", None]


def test_adecode_checks_expiry_at_the_given_now(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, now=NOW, ttl=10)

    async def attempts() -> list[str | None]:
        return [await rs.adecode(token, ring, mode=mode, now=now) for now in (NOW + 10, NOW + 11)]

    assert asyncio.run(attempts()) == ["state", None]


def test_adecode_has_no_leeway_by_default(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode("state", ring, mode=mode, now=NOW, ttl=10)
    assert asyncio.run(rs.adecode(token, ring, mode=mode, now=NOW + 11)) is None


def test_adecode_decodes_the_requested_type(ring: rs.KeyRing, mode: rs.Mode) -> None:
    token = rs.encode(Step(3), ring, mode=mode, now=NOW)
    assert asyncio.run(rs.adecode(token, ring, mode=mode, now=NOW, type=Step)) == Step(3)
