"""``Codec.open``: a verified token's claims, under the checks of ``verify``."""

from __future__ import annotations

import msgspec
import pytest

import requeststate as rs
from tests.conftest import NOW, OTHER_SECRET, SECRET

pytestmark = pytest.mark.anyio


class Booking(msgspec.Struct):
    step: int


def codec(mode: rs.Modes = "encrypted", **options: object) -> rs.Codec:
    return rs.Codec(SECRET, mode=mode, metrics=None, **options)  # type: ignore[arg-type]


def test_open_returns_the_state_and_the_claims_of_the_token(mode: rs.Mode) -> None:
    token = codec(mode).encode("state", subject="alice", tool="book", now=NOW)
    claims = codec(mode).open(token, subject="alice", tool="book", now=NOW)
    expected_id = rs.peek(token).payload if mode is rs.Mode.SIGNED else None
    assert (claims.state, claims.exp, claims.minted, claims.mode, claims.fingerprint) == (
        "state",
        NOW + rs.DEFAULT_TTL,
        NOW,
        mode,
        rs.KeyRing(SECRET).fingerprint,
    )
    # The id is the payload's: 32 hex, and (in v1.) the very member anyone reads.
    assert len(claims.token_id or "") == 32
    if expected_id is not None:
        assert msgspec.json.decode(expected_id)["id"] == claims.token_id


def test_the_fingerprint_is_the_key_that_verified_not_the_minting_one() -> None:
    # Rotation: minted under the old key, opened by a ring whose first key is new.
    token = rs.Codec(rs.KeyRing(OTHER_SECRET), metrics=None).encode("s", now=NOW)
    claims = rs.Codec(rs.KeyRing(SECRET, OTHER_SECRET), metrics=None).open(token, now=NOW)
    assert claims.fingerprint == rs.KeyRing(OTHER_SECRET).fingerprint != rs.KeyRing(SECRET).fingerprint


def test_open_reads_a_typed_state() -> None:
    token = codec().encode(Booking(step=2), now=NOW)
    assert codec().open(token, now=NOW, type=Booking).state == Booking(step=2)


@pytest.mark.parametrize(
    ("subject", "now", "reason"),
    [("mallory", NOW, rs.Reason.BAD_SIGNATURE), ("alice", NOW + rs.DEFAULT_TTL + 1, rs.Reason.EXPIRED)],
)
def test_open_refuses_what_verify_refuses(subject: str, now: int, reason: rs.Reason) -> None:
    token = codec().encode("s", subject="alice", now=NOW)
    with pytest.raises(rs.InvalidToken, match=rf"^{reason.value}$"):
        codec().open(token, subject=subject, now=now)


def test_open_claims_the_token_in_the_guard() -> None:
    guarded = codec(guard=rs.MemoryGuard())
    token = guarded.encode("s", now=NOW)
    guarded.open(token, now=NOW)
    with pytest.raises(rs.InvalidToken, match=r"^replayed$"):
        guarded.open(token, now=NOW)


async def test_aopen_awaits_an_async_guard() -> None:
    seen: list[rs.ClaimId] = []

    class Recorder:
        async def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
            seen.append(claimed)
            return len(seen) == 1

    guarded = codec(guard=Recorder())
    token = guarded.encode("s", now=NOW)
    claims = await guarded.aopen(token, now=NOW)
    assert seen == [claims.claim_id]
    with pytest.raises(rs.InvalidToken, match=r"^replayed$"):
        await guarded.aopen(token, now=NOW)


def test_the_claim_id_is_what_a_guard_is_asked_to_claim() -> None:
    seen: list[rs.ClaimId] = []

    class Recorder:
        def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
            seen.append(claimed)
            return True

    guarded = codec(guard=Recorder())
    claims = guarded.open(guarded.encode("s", now=NOW), now=NOW)
    assert seen == [claims.claim_id] == [rs.ClaimId(str(claims.token_id), NOW)]


def test_the_repr_leaves_the_state_out() -> None:
    claims = codec().open(codec().encode("hunter2", now=NOW), now=NOW)
    assert repr(claims) == (
        f"Claims(exp={NOW + rs.DEFAULT_TTL}, token_id={claims.token_id!r}, minted={NOW}, "
        f"mode=encrypted, fingerprint={rs.KeyRing(SECRET).fingerprint!r})"
    )
