"""The nemesis's checker (scripts/nemesis/checker.py): what its per-fault figures count, on a history."""

from __future__ import annotations

import pytest

from scripts.nemesis.checker import Run
from scripts.nemesis.history import ACCEPTED, Fault, Redemption

REFUSED = "outside_memory"


def first(minted: float, at: float, outcome: str) -> Redemption:
    return Redemption(f"token-{minted}-{at}", 0, True, minted, at, outcome)


def run(history: list[Redemption], *faults: Fault) -> Run:
    return Run("postgres-standby", 60.0, history, list(faults), [])


def test_a_token_minted_before_a_loss_and_first_redeemed_after_it_is_in_flight_at_that_fault() -> None:
    promotion = Fault("promote", began=10.0, ended=12.0, lost=10.5)
    history = [
        first(9.0, 9.5, ACCEPTED),  # redeemed before the loss
        first(10.0, 11.0, REFUSED),  # in flight, refused
        first(10.2, 13.0, ACCEPTED),  # in flight, accepted
        first(11.0, 11.5, REFUSED),  # minted after the loss: the window's, not in flight
        Redemption("token-9.0-9.5", 0, False, 9.0, 12.0, "replayed"),  # a replay, not a first redemption
    ]
    assert run(history, promotion).in_flight_by_fault() == {"promote": (2, 1)}


def test_a_fault_that_loses_nothing_strikes_when_it_begins() -> None:
    pause = Fault("pause", began=10.0, ended=11.0)
    history = [first(9.8, 10.2, "guard_unavailable"), first(10.1, 10.9, "guard_unavailable")]
    assert run(history, pause).in_flight_by_fault() == {"pause": (1, 1)}


def test_a_token_in_flight_at_two_faults_counts_for_the_last() -> None:
    promotion = Fault("promote", began=10.0, ended=11.0, lost=10.0)
    clock = Fault("clock", began=12.0, ended=12.0)
    assert run([first(9.0, 13.0, REFUSED)], promotion, clock).in_flight_by_fault() == {"clock": (1, 1)}


def test_resume_is_per_kind_of_fault_from_its_loss_to_the_first_token_minted_after_it_accepted() -> None:
    promotion = Fault("promote", began=10.0, ended=12.0, lost=10.5)
    restore = Fault("restore-pitr", began=30.0, ended=35.0, lost=33.0)
    history = [
        first(11.0, 11.1, REFUSED),
        first(17.0, 17.2, ACCEPTED),
        first(18.0, 18.1, ACCEPTED),
        first(40.0, 40.5, ACCEPTED),
    ]
    assert run(history, promotion, restore).resume_by_fault() == {
        "promote": [pytest.approx(6.7)],
        "restore-pitr": [pytest.approx(7.5)],
    }
