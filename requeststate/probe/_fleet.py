"""Checks across the workers of one deployment: a state minted by one worker sent to every other, and
a state redeemed on one worker redeemed again on another."""

from __future__ import annotations

from ._plan import Plan, Verdict, judge
from ._session import Outcome


async def shared(plan: Plan) -> Verdict:
    """A state minted by the first worker must be accepted by every other: a retry lands on any of them.

    On a PASS, every later check crosses workers: each state minted on the first, each echo sent to
    the others in turn.
    """
    minter, *others = plan.workers
    refused: list[tuple[str, Outcome]] = []
    accepted: list[tuple[str, Outcome]] = []
    for worker in others:
        state, replies = await minter.session.fresh(plan.target)
        outcome = await worker.session.echo(plan.target, state, replies)
        (accepted if outcome.accepted else refused).append((worker.name, outcome))
    if refused:
        names = ", ".join(name for name, _ in refused)
        detail = refused[0][1].detail.removeprefix("refused: ")
        return "FAIL", f"a state minted by {minter.name} was refused by {names} ({detail})"
    plan.session.cross([worker.session.client for worker in others])
    names = ", ".join(name for name, _ in accepted)
    return "PASS", (
        f"a state minted by {minter.name} was {accepted[0][1].detail} by {names}; every later check "
        "sends its states to another worker than the one that minted them"
    )


async def replayed(plan: Plan) -> Verdict:
    """A state redeemed on the first worker, sent to every other: each must refuse it (single use)."""
    if plan.results.get("fleet_shared") == "FAIL":
        return (
            "SKIP",
            "the workers refuse each other's states (see that row): a replay across them proves nothing",
        )
    if plan.exactly_once:
        return "SKIP", (
            "an exactly-once tool answers an identical retry with the first call's answer: the "
            "exactly_once rows of its final round judge its retries"
        )
    minter, *others = plan.workers
    refusals: list[Outcome] = []
    for worker in others:
        state, replies = await minter.session.fresh(plan.target)
        once = await minter.session.echo(plan.target, state, replies)
        if not once.accepted:
            return "ERROR", f"the first redemption, on {minter.name}, was not accepted: {once.detail}"
        again = await worker.session.echo(plan.target, state, replies)
        if again.accepted:
            detail = f"redeemed on {minter.name}, the state was {again.detail} again on {worker.name}"
            if plan.options.single_use:
                return "FAIL", detail + ": each worker keeps its own record of redeemed states"
            return "INFO", detail + " (not single-use; --single-use makes this a FAIL)"
        refusals.append(again)
    names = ", ".join(worker.name for worker in others)
    verdict, detail = judge(refusals, "")
    return verdict, f"redeemed on {minter.name}, then sent to {names}: {detail}"
