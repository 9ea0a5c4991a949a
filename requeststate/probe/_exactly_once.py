"""Checks of a tool that runs exactly once per state (``--exactly-once``): an identical retry of its final
round gets the first call's answer, and a retry with other answers is refused.

What such a tool answers (``requeststate.mcp``'s ``exactly_once``): an identical retry after the first
call answered, its answer again (the same JSON); while the first call still runs, JSON-RPC -32603 with
``data.reason`` ``request_state_in_progress``; a retry that differs in anything, a refusal as of a
replay; an answer it could not keep, -32602 with ``request_state_answer_too_large`` or
``request_state_outcome_unknown``.
"""

from __future__ import annotations

from typing import Final

import anyio
from mcp import Client
from mcp_types import INTERNAL_ERROR, InputResponses

from ._placeholders import other_answers
from ._plan import Plan, Verdict, judge
from ._session import Reply

IN_PROGRESS: Final = "request_state_in_progress"
NOT_KEPT: Final = frozenset({"request_state_answer_too_large", "request_state_outcome_unknown"})
SETTLE_TRIES: Final = 5
"""How many times an identical retry is sent while the server says the first call still runs."""
SETTLE_PAUSE: Final = 0.2
"""Seconds between those tries."""


def in_progress(reply: Reply) -> bool:
    """Whether ``reply`` says the first call still runs: retry later."""
    return reply.code == INTERNAL_ERROR and reply.reason == IN_PROGRESS


def unfinished(plan: Plan) -> Verdict | None:
    """A SKIP when ``plan``'s round is not the final one of its flow: the final round is the one retried."""
    if plan.target.completes:
        return None
    return "SKIP", (
        f"the flow of {plan.target.label()} was not walked to its end (--max-rounds, or a later round not "
        "probed): the final round is the one retried"
    )


def first_and_retry(plan: Plan) -> tuple[Client, Client, str]:
    """Where the first call goes, where its retry goes, and how a detail says so: across a fleet, two
    workers, neither the one that minted the state (a retry lands on any of them)."""
    if len(plan.workers) < 2:
        return plan.session.client, plan.session.client, ""
    minter, other = plan.workers[0], plan.workers[1]
    return (
        other.session.client,
        minter.session.client,
        f" (the call on {other.name}, the retry on {minter.name})",
    )


async def _answered(plan: Plan, state: str, replies: InputResponses, via: Client) -> Reply | Verdict:
    """The first call's answer, or an ERROR when it was refused: then no retry can be judged."""
    first = await plan.session.reply(plan.target, state, replies, via=via)
    if first.result is None:
        return "ERROR", f"the first call of the final round was not answered: {first.describe()}"
    return first


async def settled(plan: Plan, state: str, replies: InputResponses, via: Client) -> Reply:
    """The answer to an identical retry, sent again after a pause while the server says the first call
    still runs (up to ``SETTLE_TRIES`` times)."""
    for _ in range(SETTLE_TRIES - 1):
        again = await plan.session.reply(plan.target, state, replies, via=via)
        if not in_progress(again):
            return again
        await anyio.sleep(SETTLE_PAUSE)
    return await plan.session.reply(plan.target, state, replies, via=via)


async def identical(plan: Plan) -> Verdict:
    """An identical retry of the final round, after the first call answered, must get the same answer."""
    skipped = unfinished(plan)
    if skipped is not None:
        return skipped
    call, retry, where = first_and_retry(plan)
    state, replies = await plan.session.fresh(plan.target)
    first = await _answered(plan, state, replies, call)
    if not isinstance(first, Reply):
        return first
    again = await settled(plan, state, replies, retry)
    if again == first:
        return "PASS", f"the identical retry got the first call's answer again ({first.describe()}){where}"
    if again.reason in NOT_KEPT:
        return "WARN", (
            f"the server kept no answer to compare ({again.describe()}){where}: nothing is proven either way"
        )
    if in_progress(again):
        return "FAIL", (
            f"the identical retry was still told in progress {SETTLE_TRIES} times over "
            f"{SETTLE_PAUSE * (SETTLE_TRIES - 1):g} s, though the first call had answered{where}"
        )
    if again.result is not None:
        return (
            "FAIL",
            f"the first call answered {first.describe()}, its identical retry {again.describe()}{where}",
        )
    return (
        "FAIL",
        f"the first call answered {first.describe()}, its identical retry was refused: "
        f"{again.describe()}{where}",
    )


async def changed(plan: Plan) -> Verdict:
    """A retry of the final round with other answers, after the first call answered, must be refused."""
    skipped = unfinished(plan)
    if skipped is not None:
        return skipped
    call, retry, where = first_and_retry(plan)
    state, replies = await plan.session.fresh(plan.target)
    other = other_answers(replies)
    if other is None:
        return "SKIP", "the final round asks nothing that can be answered otherwise"
    first = await _answered(plan, state, replies, call)
    if not isinstance(first, Reply):
        return first
    outcome = await plan.session.echo(plan.target, state, other, via=retry)
    if outcome.accepted:
        return "FAIL", (
            f"after the first call answered {first.describe()}, a retry of its state with other "
            f"inputResponses was {outcome.detail}{where}"
        )
    verdict, detail = judge([outcome], where)
    return verdict, f"a retry with other inputResponses is {detail}"
