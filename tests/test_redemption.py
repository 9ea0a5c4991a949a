"""``Codec.redeem`` and ``Codec.keep``: a token accepted exactly once, and its first call's answer for every
identical retry (docs/exactly-once.md). The stores' side is the contract (tests/test_guard_contract.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import requeststate as rs
from requeststate._redemption import answer_tool
from tests.conftest import NOW, SECRET

REQUEST = '["tools/call","book",{"item":"room 7"}]'


class Recording:
    """A MemoryGuard whose kept answers can be read, swapped or lost, as a faulty store would."""

    def __init__(self) -> None:
        self.guard = rs.MemoryGuard(clock_skew=0, clock=lambda: NOW - 60)
        self.kept: dict[rs.ClaimId, str] = {}
        self.swap: dict[rs.ClaimId, str] = {}
        self.unavailable = False

    def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        return self.guard.claim(claimed, expires_at, now)

    def redeem(
        self, claimed: rs.ClaimId, expires_at: int, now: int, request: str, lease_until: int, /
    ) -> str | None:
        kept = self.guard.redeem(claimed, expires_at, now, request, lease_until)
        return self.swap.get(claimed, kept)

    def keep(self, claimed: rs.ClaimId, request: str, answer: str, /) -> None:
        if self.unavailable:
            raise rs.GuardUnavailable("the store did not answer")
        self.kept[claimed] = answer
        self.guard.keep(claimed, request, answer)


def codec(guard: Any = None, **options: Any) -> rs.Codec:
    return rs.Codec(SECRET, guard=Recording() if guard is None else guard, metrics=None, **options)


def minted(on: rs.Codec, state: str = "state") -> str:
    return on.encode(state, subject="alice", tool="book", now=NOW)


def redeemed(on: rs.Codec, token: str, *, request: str = REQUEST, now: int = NOW) -> rs.Redemption[Any]:
    return on.redeem(token, request=request, subject="alice", tool="book", now=now)


def refused(on: rs.Codec, token: str, **options: Any) -> rs.Reason:
    with pytest.raises(rs.InvalidToken) as caught:
        redeemed(on, token, **options)
    return caught.value.reason


def test_the_first_call_runs_and_an_identical_retry_gets_its_answer() -> None:
    on = codec()
    token = minted(on, "booking 42")
    first = redeemed(on, token)
    kept = on.keep(first, "booked 42 runs=1", now=NOW)
    retries = [redeemed(on, token, now=NOW + 1) for _ in range(2)]
    assert [(first.first, first.state, first.answer), kept] == [(True, "booking 42", None), True]
    assert [(retry.first, retry.answer) for retry in retries] == [(False, "booked 42 runs=1")] * 2


def test_a_retry_of_another_request_is_refused_as_a_replay() -> None:
    on = codec()
    token = minted(on)
    redeemed(on, token)
    assert refused(on, token, request=REQUEST.replace("7", "8")) is rs.Reason.REPLAYED


def test_a_retry_before_an_answer_is_kept_is_in_progress_within_the_lease_and_unknown_after() -> None:
    on = codec(lease=30)
    token = minted(on)
    redeemed(on, token)
    assert [refused(on, token, now=NOW + 30), refused(on, token, now=NOW + 31)] == [
        rs.Reason.IN_PROGRESS,
        rs.Reason.OUTCOME_UNKNOWN,
    ]


def test_an_answer_too_large_to_keep_is_kept_as_such_and_its_retry_told_so() -> None:
    on = codec(max_token_bytes=1024)
    token = minted(on)
    first = redeemed(on, token)
    assert on.keep(first, "x" * 2048, now=NOW) is True
    assert refused(on, token) is rs.Reason.ANSWER_TOO_LARGE


def test_the_kept_answer_is_encrypted_even_in_signed_mode() -> None:
    guard = Recording()
    on = codec(guard, mode="signed")
    first = redeemed(on, minted(on))
    on.keep(first, "secret booking reference", now=NOW)
    (sealed,) = guard.kept.values()
    assert (sealed.split(".")[0], "secret" in sealed) == ("v1e", False)


def test_an_answer_kept_for_another_token_does_not_open_for_this_one() -> None:
    guard = Recording()
    on = codec(guard)
    one, other = minted(on), minted(on)
    on.keep(redeemed(on, one), "answer of one", now=NOW)
    (sealed,) = guard.kept.values()
    on.keep(redeemed(on, other), "answer of other", now=NOW)
    other_id = rs.Codec(SECRET, metrics=None).open(other, subject="alice", tool="book", now=NOW).claim_id
    assert other_id is not None
    guard.swap = {other_id: sealed}
    assert refused(on, other) is rs.Reason.OUTCOME_UNKNOWN


def test_keep_says_false_when_the_store_did_not_answer_and_the_retry_is_then_in_progress() -> None:
    guard = Recording()
    on = codec(guard)
    token = minted(on)
    first = redeemed(on, token)
    guard.unavailable = True
    assert (on.keep(first, "booked", now=NOW), refused(on, token)) == (False, rs.Reason.IN_PROGRESS)


def test_only_the_first_call_keeps_an_answer() -> None:
    on = codec()
    token = minted(on)
    on.keep(redeemed(on, token), "booked", now=NOW)
    with pytest.raises(ValueError, match="only the first call of a redemption keeps an answer"):
        on.keep(redeemed(on, token), "booked again", now=NOW)


def test_an_answer_that_is_not_text_is_refused() -> None:
    on = codec()
    first = redeemed(on, minted(on))
    with pytest.raises(TypeError, match=r"answer must be a str \(the result, serialised\), not dict"):
        on.keep(first, {"booked": 1}, now=NOW)  # type: ignore[arg-type]


def test_redeem_without_a_guard_that_keeps_answers_is_a_type_error() -> None:
    on = rs.Codec(SECRET, metrics=None)
    with pytest.raises(
        TypeError, match=r"redeem and keep need a guard that keeps answers.*this codec has no guard"
    ):
        redeemed(on, minted(on))


def test_redeem_checks_the_token_as_verify_does() -> None:
    on = codec()
    token = minted(on)
    with pytest.raises(rs.InvalidToken) as caught:
        on.redeem(token, request=REQUEST, subject="mallory", tool="book", now=NOW)
    assert caught.value.reason is rs.Reason.BAD_SIGNATURE


def test_aredeem_and_akeep_serve_asyncio() -> None:
    on = codec()
    token = minted(on)

    async def flow() -> list[object]:
        first = await on.aredeem(token, request=REQUEST, subject="alice", tool="book", now=NOW)
        await on.akeep(first, "booked", now=NOW)
        retry = await on.aredeem(token, request=REQUEST, subject="alice", tool="book", now=NOW)
        return [first.answer, retry.answer]

    assert asyncio.run(flow()) == [None, "booked"]


def test_a_redemption_s_repr_shows_neither_the_state_nor_the_answer() -> None:
    on = codec()
    token = minted(on, "secret state")
    on.keep(redeemed(on, token), "secret answer", now=NOW)
    text = repr(redeemed(on, token))
    assert ("secret" in text, text.startswith("Redemption(first=False, claims=Claims(")) == (False, True)


def test_an_answer_is_bound_to_its_own_context_and_the_state_s_tool() -> None:
    assert answer_tool("book") == '["requeststate/answer/1","book"]'
