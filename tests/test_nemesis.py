"""The nemesis's checker (scripts/nemesis.py): what it counts from a history, on histories made by hand.

The nemesis itself runs against real redis-servers in ``nox -s nemesis``; these tests make sure
that its verdict can fail.
"""

from __future__ import annotations

from scripts.nemesis import Fault, Redemption, Run


def redemption(
    token: str, *, first: bool, at: float, outcome: str = "accepted", minted: float = 0.0
) -> Redemption:
    return Redemption(token, 0, first, minted, at, outcome)


def test_a_token_accepted_twice_is_one_double_redemption() -> None:
    history = [
        redemption("a", first=True, at=1.0),
        redemption("a", first=False, at=2.0),
        redemption("a", first=False, at=3.0),
        redemption("b", first=True, at=1.5),
        redemption("b", first=False, at=2.5, outcome="replayed"),
    ]
    run = Run("standalone", 10.0, history, [])
    assert (run.doubles(), run.summary()["replays accepted"]) == (1, 2)


def test_resume_is_from_the_loss_to_the_first_token_minted_after_it_that_was_accepted() -> None:
    history = [
        redemption("old", first=True, at=10.5, minted=9.0),  # minted before the loss: not a new flow
        redemption("refused", first=True, at=11.0, minted=10.2, outcome="guard_unavailable"),
        redemption("new", first=True, at=16.5, minted=16.0),
    ]
    run = Run("standalone", 20.0, history, [Fault("flushall", 10.0, 10.0, lost=10.0)])
    assert (run.resume_times(), run.summary()["collateral"]) == ([6.5], 0.333)


def test_a_replay_is_charged_to_the_last_fault_between_its_tokens_acceptance_and_it() -> None:
    history = [
        redemption("a", first=True, at=1.0),
        redemption("a", first=False, at=6.0, outcome="replayed"),
        redemption("b", first=True, at=4.0),
        redemption("b", first=False, at=6.0),
    ]
    faults = [Fault("pause", 2.0, 2.5), Fault("flushall", 5.0, 5.0, lost=5.0)]
    assert Run("standalone", 10.0, history, faults).by_fault() == {"flushall": (2, 1)}
