"""The MCP nemesis's checker (scripts/mcp_nemesis/checker.py), on histories that break each rule; a short run.

A history here is written by hand: flows of the booking tool, the requests sent for them, and the
faults injected. Each test breaks one rule, or shows the fault that makes an answer the right one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.mcp_nemesis import history as h
from scripts.mcp_nemesis.checker import GRACE, LOSS_WINDOW, SLOW_RESUME, Check


def flow(number: int, started: float = 0.0, ended: float = 2.0, *, completed: bool = True) -> h.Flow:
    return h.Flow(number, started, started + 0.1, ended, completed)


def sent(number: int, kind: str, outcome: str, at: float = 1.0, text: str | None = None) -> h.Attempt:
    """A request of flow ``number`` sent at ``at``, answered 0.1 s later; accepted, it is its own flow's."""
    if text is None:
        text = h.expected_answer(number) if outcome == h.ACCEPTED and kind != h.ROUND1 else ""
    return h.Attempt(number, kind, "balancer", at, at + 0.1, outcome, text)


def fault(kind: str, hits: str, began: float, ended: float, lost: float | None = None) -> h.FaultWindow:
    return h.FaultWindow(kind, hits, began, ended, lost)


def check(
    *attempts: h.Attempt, faults: tuple[h.FaultWindow, ...] = (), flows: tuple[h.Flow, ...] = ()
) -> Check:
    return Check(list(attempts), list(flows) or [flow(1)], list(faults))


def test_a_token_accepted_by_its_round_2_and_a_replay_is_one_double_redemption() -> None:
    found = check(sent(1, h.REDEEM, h.ACCEPTED), sent(1, h.REPLAY, h.ACCEPTED, at=1.5))
    assert (found.double_redemptions(), found.wrong_codes()) == (1, {})


def test_a_token_accepted_with_another_flows_arguments_after_its_round_2_is_a_double_and_cross_talk() -> None:
    swapped = f"booked {h.restaurant(2)} (for:{h.restaurant(1)})"
    found = check(sent(1, h.SWAP, h.ACCEPTED, text=swapped), sent(1, h.REDEEM, h.ACCEPTED, at=1.5))
    assert (found.double_redemptions(), found.cross_talk()) == (1, 1)


def test_a_round_2_answered_with_another_flows_state_is_cross_talk() -> None:
    found = check(sent(1, h.REDEEM, h.ACCEPTED, text=h.expected_answer(2)))
    assert (found.cross_talk(), found.double_redemptions()) == (1, 0)


def test_replays_refused_are_neither_doubles_nor_wrong_codes() -> None:
    found = check(sent(1, h.REDEEM, h.ACCEPTED), sent(1, h.REPLAY, h.INVALID, at=1.5))
    assert (found.double_redemptions(), found.cross_talk(), found.wrong_codes()) == (0, 0, {})


def test_a_round_2_refused_with_no_fault_is_a_wrong_code() -> None:
    assert check(sent(1, h.REDEEM, h.INVALID)).wrong_codes() == {"redeem: refused, its state not lost": 1}


def test_a_round_2_reelicited_with_no_fault_is_a_wrong_code_as_a_refusal_is() -> None:
    assert check(sent(1, h.REDEEM, h.REELICIT)).wrong_codes() == {"redeem: refused, its state not lost": 1}


def test_a_round_2_refused_after_a_loss_of_the_claims_its_token_predates_is_right() -> None:
    loss = fault("flushall", "store", 0.5, 0.6, lost=0.6)
    assert check(sent(1, h.REDEEM, h.INVALID), faults=(loss,)).wrong_codes() == {}


def test_a_round_2_refused_during_an_eviction_burst_before_the_loss_it_reports_is_right() -> None:
    # The burst evicts the claims at some moment of it, and reports its end (1.5): a refusal at 1.1
    # was a wrong code in a run (2026-11-29, standalone), the checker's error, not the guard's.
    burst = fault("eviction", "store", 1.0, 1.5, lost=1.5)
    assert check(sent(1, h.REDEEM, h.INVALID, at=1.0), faults=(burst,)).wrong_codes() == {}


def test_a_round_2_refused_for_a_token_minted_past_the_window_a_loss_opens_is_a_wrong_code() -> None:
    # The memory began again at flow 2's claim, right after the loss: flow 1 was minted well after.
    loss = fault("flushall", "store", 0.0, 0.0, lost=0.0)
    late = h.Flow(1, LOSS_WINDOW + 1, LOSS_WINDOW + 1, LOSS_WINDOW + 3, completed=False)
    found = check(
        sent(2, h.REDEEM, h.ACCEPTED, at=0.5),
        sent(1, h.REDEEM, h.INVALID, at=LOSS_WINDOW + 2),
        faults=(loss,),
        flows=(flow(2), late),
    )
    assert found.wrong_codes() == {"redeem: refused, its state not lost": 1}


def test_a_round_2_refused_for_a_token_minted_after_a_loss_but_before_the_next_claim_is_right() -> None:
    # Nothing claimed for a while after the loss: the memory began again at the first claim after it
    # (flow 2's), and a token minted before that cannot be vouched for. Flow 3's claim came before
    # the loss, and flow 4's went unchecked: neither began it.
    loss = fault("drop-table", "store", 0.0, 0.0, lost=0.0)
    early = h.Flow(1, LOSS_WINDOW + 1, LOSS_WINDOW + 1, LOSS_WINDOW + 4, completed=False)
    found = check(
        sent(3, h.REDEEM, h.ACCEPTED, at=-1.0),
        sent(4, h.REDEEM, h.UNCHECKED, at=0.5),
        sent(2, h.REDEEM, h.ACCEPTED, at=LOSS_WINDOW + 2),
        sent(1, h.REDEEM, h.INVALID, at=LOSS_WINDOW + 3),
        faults=(loss,),
        flows=(
            flow(3, -2.0, -0.5),
            flow(4, 0.0, 0.7, completed=False),
            flow(2, LOSS_WINDOW + 1.5, LOSS_WINDOW + 2.5),
            early,
        ),
    )
    assert found.wrong_codes() == {}


def test_a_round_2_refused_after_a_try_of_it_went_unchecked_is_right() -> None:
    # The claim of the first try may have reached the store after the worker stopped waiting.
    pause = fault("pause", "store", 0.9, 1.2)
    found = check(sent(1, h.REDEEM, h.UNCHECKED), sent(1, h.REDEEM, h.INVALID, at=1.7), faults=(pause,))
    assert found.wrong_codes() == {}


def test_unchecked_while_the_store_answers_is_a_wrong_code() -> None:
    assert check(sent(1, h.REDEEM, h.UNCHECKED)).wrong_codes() == {
        "redeem: unchecked, the store answering": 1
    }


@pytest.mark.parametrize(
    ("kind", "hits"), [("pause", "store"), ("link-drop", "link"), ("worker-pause", "worker")]
)
def test_unchecked_while_the_store_or_its_link_fails_or_a_worker_is_paused_is_right(
    kind: str, hits: str
) -> None:
    assert check(sent(1, h.REDEEM, h.UNCHECKED), faults=(fault(kind, hits, 0.5, 0.95),)).wrong_codes() == {}


def test_unchecked_past_the_grace_after_a_store_fault_is_a_wrong_code() -> None:
    long_ago = fault("pause", "store", 0.0, 0.9 - GRACE - 0.1)
    found = check(sent(1, h.REDEEM, h.UNCHECKED), faults=(long_ago,))
    assert found.wrong_codes() == {"redeem: unchecked, the store answering": 1}


def test_unchecked_while_only_a_worker_is_killed_is_a_wrong_code() -> None:
    found = check(sent(1, h.REPLAY, h.UNCHECKED), faults=(fault("worker-kill", "worker", 0.5, 1.5),))
    assert found.wrong_codes() == {"replay: unchecked, the store answering": 1}


@pytest.mark.parametrize("kind", [h.FORGED, h.SWAP])
def test_a_forged_or_swapped_token_unchecked_even_while_the_store_fails_is_a_wrong_code(kind: str) -> None:
    # The bindings and the MAC are checked before the guard: a store down changes nothing.
    found = check(sent(1, kind, h.UNCHECKED), faults=(fault("pause", "store", 0.5, 1.5),))
    assert found.wrong_codes() == {f"{kind}: unchecked, not refused as invalid": 1}


def test_a_forged_token_accepted_is_a_wrong_code() -> None:
    assert check(sent(1, h.FORGED, h.ACCEPTED)).wrong_codes() == {
        "forged: accepted, not refused as invalid": 1
    }


def test_no_answer_with_no_worker_fault_is_a_wrong_code() -> None:
    assert check(sent(1, h.ROUND1, h.NO_ANSWER)).wrong_codes() == {"round1: no answer, no worker fault": 1}


@pytest.mark.parametrize("kind", ["worker-kill", "worker-pause", "rolling-restart"])
def test_no_answer_while_a_worker_is_killed_paused_or_restarted_is_right(kind: str) -> None:
    assert (
        check(sent(1, h.REDEEM, h.NO_ANSWER), faults=(fault(kind, "worker", 0.5, 1.5),)).wrong_codes() == {}
    )


def test_another_error_code_is_always_wrong() -> None:
    other = "error -32603: Internal error"
    found = check(sent(1, h.REDEEM, other), faults=(fault("pause", "store", 0.5, 1.5),))
    assert found.wrong_codes() == {f"redeem: {other}": 1}


def test_resume_is_from_a_faults_end_to_the_first_flow_started_after_it_that_completed() -> None:
    flows = (
        flow(1, 9.0, 12.0),
        flow(2, 11.0, 14.0, completed=False),
        flow(3, 12.0, 13.5),
        flow(4, 12.5, 15.0),
    )
    found = check(faults=(fault("worker-kill", "worker", 5.0, 10.0),), flows=flows)
    assert found.resume() == {"worker-kill": [3.5]}


def test_a_fault_after_which_no_flow_completes_within_the_bound_is_not_resumed() -> None:
    flows = (flow(1, 11.0, 11.0 + SLOW_RESUME + 1),)
    found = check(faults=(fault("link-drop", "link", 9.0, 10.0),), flows=flows)
    assert (found.not_resumed(until=100.0), found.failed(until=100.0)) == (1, True)


def test_in_flight_lost_counts_the_flows_a_fault_began_within_and_those_never_completed() -> None:
    flows = (flow(1, 0.0, 3.0), flow(2, 1.0, 4.0, completed=False), flow(3, 2.5, 5.0, completed=False))
    found = check(faults=(fault("flushall", "store", 2.0, 2.1, lost=2.1),), flows=flows)
    assert found.in_flight_lost() == [("flushall", 2, 1)]


def test_the_summary_shows_each_wrong_answer_and_the_faults_on_the_first_flows_clock() -> None:
    found = check(sent(1, h.REDEEM, h.UNCHECKED, at=5.0), faults=(fault("worker-kill", "worker", 1.0, 2.0),))
    figures = found.summary(until=10.0)
    assert (figures["wrong_codes"], figures["wrong answers"], figures["fault timeline"]) == (
        1,
        [{"rule": "redeem: unchecked, the store answering", "via": "balancer", "sent": 5.0, "answered": 5.1}],
        [{"fault": "worker-kill", "began": 1.0, "ended": 2.0}],
    )


@pytest.mark.load
def test_a_short_run_on_an_sqlite_file_breaks_no_promise(tmp_path: Path) -> None:
    from scripts.nemesis.cli import main

    out = tmp_path / "mcp.json"
    code = main(["--mcp", "--seconds", "30", "--topology", "sqlite", "--json", str(out)])
    (figures,) = json.loads(out.read_text())
    found = {
        name: figures[name] for name in ("double_redemptions", "cross_talk", "wrong_codes", "not resumed")
    }
    assert (code, found) == (0, dict.fromkeys(found, 0))
    assert figures["flows completed"] > 0
