"""The rules of single use (``requeststate._ledger``), on a store of fake replies: milliseconds, no I/O.

Each store spells the atomic steps in its own language (Lua, SQL, Python); what the
answers mean is decided here, once, and tests/test_guard_contract.py runs every real store
through the same rules.
"""

from __future__ import annotations

import logging
import secrets

import pytest

import requeststate as rs
from requeststate._ledger import member_of
from requeststate._seam import Answer, Claim, Ledger, Status, claimed_member

NOW = 2_000_000_000


def ledger(clock_skew: int = 5) -> Ledger:
    return Ledger("app", clock_skew, log="requeststate.test", describe="the fake store")


def dated(minted: int = NOW) -> rs.ClaimId:
    return rs.ClaimId(secrets.token_hex(16), minted)


def answer(
    status: str, since: int = NOW - 100, *, began_here: bool = False, terms: str | None = None
) -> Answer:
    return Answer(status, since, began_here, "clock_skew=5;leeway=0" if terms is None else terms)


def refused_reason(call: object) -> rs.Reason:
    with pytest.raises(rs.InvalidToken) as refused:
        call()  # type: ignore[operator]
    return refused.value.reason


def test_a_claim_carries_the_digest_its_score_the_prune_line_the_mint_and_the_terms() -> None:
    token_id = dated(NOW - 3)
    claim = ledger().prepare(token_id, NOW + 300, NOW)
    assert claim == Claim(claimed_member(token_id), NOW + 300, NOW, NOW - 5, NOW - 3, "clock_skew=5;leeway=0")


def test_a_mark_adds_nothing_and_prunes_as_a_claim_does() -> None:
    assert ledger().mark(NOW) == Claim("", NOW, NOW, NOW - 5, NOW, "clock_skew=5;leeway=0")


def test_a_claimed_answer_after_the_memory_began_is_a_first_claim() -> None:
    rules = ledger()
    claim = rules.prepare(dated(NOW - 94), NOW + 300, NOW)  # minted 6 s after since (NOW - 100)
    assert rules.settle(claim, answer(Status.CLAIMED)) is True


def test_a_replayed_answer_is_a_replay() -> None:
    rules = ledger()
    assert rules.settle(rules.prepare(dated(), NOW + 300, NOW), answer(Status.REPLAYED)) is False


@pytest.mark.parametrize("minted", [NOW - 100, NOW - 95], ids=["at since", "within clock_skew"])
def test_a_token_minted_by_the_memorys_start_plus_clock_skew_is_outside_memory(minted: int) -> None:
    rules = ledger()
    claim = rules.prepare(dated(minted), NOW + 300, NOW)
    assert refused_reason(lambda: rules.settle(claim, answer(Status.CLAIMED))) is rs.Reason.OUTSIDE_MEMORY


def test_a_token_from_past_clock_skew_in_the_future_is_outside_memory() -> None:
    assert (
        refused_reason(lambda: ledger().prepare(dated(NOW + 6), NOW + 300, NOW)) is rs.Reason.OUTSIDE_MEMORY
    )
    assert ledger().prepare(dated(NOW + 5), NOW + 300, NOW).minted == NOW + 5


def test_other_terms_are_an_outage_naming_both() -> None:
    rules = ledger()
    claim = rules.prepare(dated(), NOW + 300, NOW)
    with pytest.raises(
        rs.GuardUnavailable, match=r"^the namespace's verifiers use clock_skew=0;leeway=0, this one "
    ):
        rules.settle(claim, answer(Status.TERMS, terms="clock_skew=0;leeway=0"))


def test_a_reply_no_store_gives_is_an_outage() -> None:
    with pytest.raises(
        rs.GuardUnavailable, match=r"^the fake store answered the claim with a reply no claim gives$"
    ):
        ledger().read("claimed", "1", 0, "terms")


def test_reading_the_terms_changes_nothing() -> None:
    # A log line or a debugger reading them must not change what learn_leeway accepts.
    rules = ledger()
    assert [rules.terms, rules.terms] == ["clock_skew=5;leeway=0"] * 2
    rules.learn_leeway(30)
    assert rules.terms == "clock_skew=5;leeway=30"


def test_once_a_claim_carried_the_terms_another_leeway_is_refused() -> None:
    rules = ledger()
    rules.mark(NOW)
    with pytest.raises(
        ValueError, match=r"^this guard already gave the fake store its terms with leeway=0, not 30"
    ):
        rules.learn_leeway(30)


def test_an_answered_claim_is_remembered_until_its_token_expires() -> None:
    rules = ledger()
    claim = rules.prepare(dated(NOW - 50), NOW + 10, NOW)
    assert rules.answered_before(claim) is False
    rules.settle(claim, answer(Status.CLAIMED))
    assert rules.answered_before(rules.prepare(dated(NOW - 50), NOW + 10, NOW)) is False  # another id
    assert rules.answered_before(claim._replace(now=NOW + 10)) is True
    assert rules.answered_before(claim._replace(now=NOW + 11)) is False


def test_an_outage_is_not_remembered() -> None:
    rules = ledger()
    claim = rules.prepare(dated(), NOW + 300, NOW)
    with pytest.raises(rs.GuardUnavailable):
        rules.settle(claim, answer(Status.TERMS, terms="other"))
    assert rules.answered_before(claim) is False


def test_the_memory_of_answers_is_bounded() -> None:
    rules = ledger()
    claims = [rules.prepare(dated(NOW - 50), NOW + 300, NOW) for _ in range(4097)]
    for claim in claims:
        rules.settle(claim, answer(Status.CLAIMED))
    assert [rules.answered_before(claims[0]), rules.answered_before(claims[-1])] == [False, True]


def test_first_accepted_is_the_latest_memory_plus_clock_skew_and_one() -> None:
    answers = [answer(Status.MARKED, NOW - 10), answer(Status.MARKED, NOW - 3)]
    assert ledger().first_accepted(answers) == NOW - 3 + 5 + 1


def test_a_memory_met_first_is_not_logged_a_loss_after_one_is(caplog: pytest.LogCaptureFixture) -> None:
    rules = ledger()
    with caplog.at_level(logging.WARNING, logger="requeststate.test"):
        rules.first_accepted([answer(Status.MARKED, NOW - 100, began_here=True)])
        assert caplog.messages == []
        claim = rules.prepare(dated(NOW + 10), NOW + 300, NOW + 10)
        rules.settle(claim, answer(Status.CLAIMED, NOW + 2, began_here=True))
        rules.settle(claim, answer(Status.CLAIMED, NOW + 2, began_here=True))
    assert caplog.messages == [
        "replay guard: the fake store lost its memory of the claims (a restart, a flush, a failover, a "
        f"replaced file): it began again at {NOW + 2} (unix time), and every token minted by {NOW + 7} is "
        "refused (outside_memory), as it may have been redeemed before"
    ]


# --- exactly once -----------------------------------------------------------------------------------


def test_an_exactly_once_claim_carries_its_request_s_digest_and_its_lease() -> None:
    token_id = dated(NOW - 3)
    claim = ledger().prepare_redeem(token_id, NOW + 300, NOW, "book room 7", NOW + 60)
    assert (claim.request, claim.lease_until) == (member_of("book room 7"), NOW + 60)


def test_a_lease_that_ends_before_now_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^lease_until must be"):
        ledger().prepare_redeem(dated(), NOW + 300, NOW, "book", NOW - 1)


def test_an_exactly_once_first_claim_runs_the_action() -> None:
    rules = ledger()
    claim = rules.prepare_redeem(dated(NOW - 94), NOW + 300, NOW, "book", NOW + 60)
    assert rules.settle_redeem(claim, answer(Status.CLAIMED)) is None


def test_an_identical_retry_gets_the_answer_the_store_read_back() -> None:
    rules = ledger()
    claim = rules.prepare_redeem(dated(), NOW + 300, NOW, "book", NOW + 60)
    replayed = answer(Status.REPLAYED)._replace(request=member_of("book"), lease_until=NOW + 60, kept="v1e.x")
    assert rules.settle_redeem(claim, replayed) == "v1e.x"


@pytest.mark.parametrize(
    ("first", "lease_until", "kept", "reason"),
    [
        ("book room 8", NOW + 60, "v1e.x", rs.Reason.REPLAYED),
        ("", 0, "", rs.Reason.REPLAYED),  # the id was claimed for single use
        ("book room 7", NOW, "", rs.Reason.IN_PROGRESS),
        ("book room 7", NOW - 1, "", rs.Reason.OUTCOME_UNKNOWN),
    ],
    ids=["another-request", "single-use", "within-the-lease", "past-the-lease"],
)
def test_a_retry_is_refused_for_what_the_first_claim_left(
    first: str, lease_until: int, kept: str, reason: rs.Reason
) -> None:
    rules = ledger()
    claim = rules.prepare_redeem(dated(), NOW + 300, NOW, "book room 7", NOW + 60)
    digest = member_of(first) if first else ""
    replayed = answer(Status.REPLAYED)._replace(request=digest, lease_until=lease_until, kept=kept)
    assert refused_reason(lambda: rules.settle_redeem(claim, replayed)) is reason


def test_an_exactly_once_claim_is_never_refused_from_the_guard_s_memory_of_replays() -> None:
    rules = ledger()
    claim = rules.prepare_redeem(dated(), NOW + 300, NOW, "book", NOW + 60)
    rules.settle_redeem(claim, answer(Status.CLAIMED, since=NOW - 100))
    assert (rules.answered_before(claim), rules.answered_before(claim._replace(request=""))) == (False, True)


def test_a_store_s_reply_with_a_record_is_read_and_one_of_another_shape_refused() -> None:
    rules = ledger()
    read = rules.read("replayed", NOW, 0, "t", "digest", NOW + 60, "v1e.x")
    assert read == Answer("replayed", NOW, False, "t", "digest", NOW + 60, "v1e.x")
    assert rules.read("replayed", NOW, 0, "t", None, None, None) == Answer("replayed", NOW, False, "t")
    with pytest.raises(rs.GuardUnavailable, match="answered the claim with a reply no claim gives"):
        rules.read("replayed", NOW, 0, "t", "digest", "soon", "")


def test_a_kept_answer_must_be_a_sealed_token_s_text() -> None:
    with pytest.raises(ValueError, match=r"^a kept answer is a sealed token: non-empty ASCII text$"):
        Ledger.prepare_keep(dated(), "book", "")
