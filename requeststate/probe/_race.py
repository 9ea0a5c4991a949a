"""Identical redemptions of one state sent at once: single use holds only if at most one is accepted,
and an exactly-once tool's retries get one answer, or "in progress", however many arrive together.

A guard whose check and claim are two steps, or a store per worker, lets two through; a request sent
twice in a row never shows it. The redemptions go over one connection, or spread over every worker
named (``--url`` once per worker): each worker then claims in its own store, if it keeps one.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TypeVar

import anyio

from ._exactly_once import in_progress, unfinished
from ._plan import Plan, Verdict, judge
from ._session import Outcome, Reply, TransportFailure

_T = TypeVar("_T")


async def _at_once(calls: Sequence[Callable[[], Awaitable[_T]]]) -> list[_T]:
    """Every call started together: their answers, in order. A lost connection raises once all ended."""
    answers: dict[int, _T] = {}
    lost: list[TransportFailure] = []

    async def one(index: int, call: Callable[[], Awaitable[_T]]) -> None:
        try:
            answers[index] = await call()
        except TransportFailure as failure:  # kept out of the task group's exception group
            lost.append(failure)

    async with anyio.create_task_group() as tasks:
        for index, call in enumerate(calls):
            tasks.start_soon(one, index, call)
    if lost:
        raise lost[0]
    return [answers[index] for index in range(len(calls))]


def _sent(plan: Plan) -> str:
    """``8 identical redemptions of one state sent at once over 2 workers``: what a detail opens with."""
    where = f"over {len(plan.workers)} workers" if plan.workers else "over one connection"
    return f"{plan.options.racers} identical redemptions of one state sent at once {where}"


async def redeemed(plan: Plan) -> Verdict:
    """``racers`` identical redemptions of one fresh state at once: at most one may be accepted."""
    state, replies = await plan.session.fresh(plan.target)
    clients = plan.redeemers()
    outcomes: list[Outcome] = await _at_once(
        [
            partial(plan.session.echo, plan.target, state, replies, via=clients[index % len(clients)])
            for index in range(plan.options.racers)
        ]
    )
    accepted = sum(outcome.accepted for outcome in outcomes)
    if accepted > 1:
        return "FAIL", f"{_sent(plan)}: {accepted} were accepted"
    refusals = [outcome for outcome in outcomes if not outcome.accepted]
    verdict, detail = judge(refusals, "")
    return verdict, f"{_sent(plan)}: {accepted} accepted, the others {detail}"


def _text(reply: Reply) -> str:
    return json.dumps(reply.result, sort_keys=True)


async def retried(plan: Plan) -> Verdict:
    """``racers`` identical calls of an exactly-once tool's final round at once: one answer, or "in
    progress"; different answers prove the action ran more than once."""
    skipped = unfinished(plan)
    if skipped is not None:
        return skipped
    state, replies = await plan.session.fresh(plan.target)
    clients = plan.redeemers()
    got: list[Reply] = await _at_once(
        [
            partial(plan.session.reply, plan.target, state, replies, via=clients[index % len(clients)])
            for index in range(plan.options.racers)
        ]
    )
    answers = {_text(reply): reply for reply in got if reply.result is not None}
    waiting = sum(in_progress(reply) for reply in got)
    refused = [reply for reply in got if reply.result is None and not in_progress(reply)]
    sent = _sent(plan).replace("redemptions", "calls")
    if len(answers) > 1:
        first, second, *_ = answers.values()
        return "FAIL", (
            f"{sent}: {len(answers)} different answers ({first.describe()}, {second.describe()}): "
            "the action ran more than once"
        )
    if refused:
        return "FAIL", (
            f"{sent}: {len(refused)} refused ({refused[0].describe()}), neither answered the first call's "
            "answer nor told in progress"
        )
    if not answers:
        return "ERROR", f"{sent}: every one was told in progress, none answered"
    (answer,) = answers.values()
    answered = len(got) - waiting
    told = "was" if waiting == 1 else "were"
    return (
        "PASS",
        f"{sent}: {answered} got one answer ({answer.describe()}), {waiting} {told} told in progress",
    )
