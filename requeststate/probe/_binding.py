"""Checks that redeem a genuine state where it does not belong: with other arguments, at another
target, as another user, after it expired, twice; and whether the client can read it."""

from __future__ import annotations

import time
from typing import Final

import anyio
from mcp_types import InputResponses

from ._edits import readable
from ._plan import Plan, Verdict, judge, sample
from ._readings import readings
from ._report import Result
from ._spelling import respellings

EXPIRY_MARGIN: Final = 2.0  # seconds past the TTL: whole-second expiry times and a little clock skew
MAX_KNOWN_WAIT: Final = 10.0  # wait out an expiry read from the state only this long, unasked
_PLAUSIBLE_UNIX_TIME: Final = 1_000_000_000


async def arguments(plan: Plan) -> Verdict:
    target, other = plan.target, plan.target.other_arguments
    if other is None:
        if target.kind == "resource":
            return "SKIP", "a resource has no arguments (its URI is its target)"
        return "SKIP", f"the {target.kind} takes no arguments"
    restart = await plan.session.restart_of(target, other)
    state, replies = await plan.session.fresh(target)
    outcome = await plan.session.echo(target, state, replies, arguments=other, restart=restart)
    if outcome.accepted:
        return "FAIL", f"{outcome.detail} (the state was minted for other arguments)"
    return judge([outcome], "")


async def cross_target(plan: Plan) -> Verdict:
    target, other = plan.target, plan.other
    if other is None:
        return "SKIP", "only one tool, prompt or resource answers input-required"
    state, replies = await plan.session.fresh(target)
    outcome = await plan.session.echo(other, state, replies)
    verdict: Result = "FAIL" if outcome.accepted else "PASS"
    if not outcome.accepted and outcome.crashed:
        verdict = "WARN"
    return verdict, f"{target.label()} -> {other.label()}: {outcome.detail}"


async def other_user(plan: Plan) -> Verdict:
    if plan.second is None:
        return "SKIP", "needs a second identity: --header2 (with --url) or --env2 (with a command)"
    target = plan.target
    # The control: another connection as the same identity must accept the state, or a refusal
    # to the second identity would prove nothing (a key per process, say).
    state, replies = await plan.session.fresh(target)
    async with plan.again() as again:
        control = await again.echo(target, state, replies, restart=await again.restart_of(target))
    if not control.accepted:
        return "ERROR", (
            f"a state is not accepted even on another connection as the same identity ({control.detail}): "
            "a refusal to another user would prove nothing (does each server process have its own key?)"
        )
    state, replies = await plan.session.fresh(target)
    async with plan.second() as second:
        outcome = await second.echo(target, state, replies, restart=await second.restart_of(target))
    if outcome.accepted:
        return "FAIL", f"a state minted for the first identity was {outcome.detail} from the second"
    return judge([outcome], " (the second identity)")


def _expiry_in(state: str) -> float | None:
    """Seconds until the ``exp`` (unix time) a readable state names, if it names one."""
    for reading in readings(state):
        exp = _find_exp(reading.value)
        if exp is not None:
            return exp - time.time()
    return None


def _find_exp(value: object) -> int | None:
    if isinstance(value, dict):
        exp = value.get("exp")
        if isinstance(exp, int) and not isinstance(exp, bool) and exp > _PLAUSIBLE_UNIX_TIME:
            return exp
        for item in value.values():
            found = _find_exp(item)
            if found is not None:
                return found
    return None


async def expiry(plan: Plan) -> Verdict:
    state, replies = await plan.session.fresh(plan.target)
    if plan.options.ttl is not None:
        wait, source = plan.options.ttl + EXPIRY_MARGIN, f"a TTL of {plan.options.ttl:g} s (--ttl)"
    else:
        left = _expiry_in(state)
        if left is None:
            return "SKIP", "the state's lifetime is unknown: give --ttl SECONDS (a test instance, short TTL)"
        wait, source = max(0.0, left) + EXPIRY_MARGIN, "the exp the state carries"
        if wait > MAX_KNOWN_WAIT:
            return "SKIP", f"the state says it expires in {left:.0f} s: give --ttl SECONDS to wait it out"
    plan.extend(wait)
    await anyio.sleep(wait)
    outcome = await plan.session.echo(plan.target, state, replies)
    if outcome.accepted:
        return "FAIL", f"{outcome.detail} {wait:.0f} s after minting, past {source}"
    return judge([outcome], f" after {wait:.0f} s ({source})")


async def replay(plan: Plan) -> Verdict:
    if plan.exactly_once:
        return "SKIP", (
            "an exactly-once tool answers an identical retry with the first call's answer: the "
            "exactly_once rows of its final round judge its retries"
        )
    state, replies = await plan.session.fresh(plan.target)
    once = await plan.session.echo(plan.target, state, replies)
    if not once.accepted:
        return "ERROR", f"the first redemption was not accepted: {once.detail}"
    twice = await plan.session.echo(plan.target, state, replies)
    if not twice.accepted:
        # Single use, by the token's text or by what it holds? A copy spelled otherwise tells.
        for copy, what in respellings(state):
            again = await plan.session.echo(plan.target, copy, replies)
            if again.accepted:
                return "FAIL", (
                    f"the second redemption is refused, but a copy {what} was {again.detail}: the "
                    "server keeps single use by the token's text, and decodes other spellings alike"
                )
        behind = await _behind_one_address(plan, state, replies)
        if behind is not None:
            return "FAIL", behind
        tried = plan.fresh_connections if plan.options.single_use else 0
        # What was measured: the workers those connections reached, and one address cannot say which.
        note = (
            f", and so over {tried} new connections to this one address: single use on the workers "
            "they reached, not proof for a fleet (see coverage)"
            if tried
            else ""
        )
        verdict, detail = judge([twice], note)
        return verdict, f"single-use: the second redemption is {detail}"
    if plan.options.single_use:
        return "FAIL", f"the second redemption is {twice.detail}"
    return "INFO", f"the second redemption is {twice.detail} (not single-use; --single-use makes this a FAIL)"


async def _behind_one_address(plan: Plan, state: str, replies: InputResponses) -> str | None:
    """Whether the redeemed ``state`` is accepted over a new connection (``plan.fresh_connections`` of
    them, under ``single_use``): where a load balancer spreads connections over workers that each keep
    their own record of redeemed states, one of them lands on another worker, which accepts it."""
    if not plan.options.single_use:
        return None
    for number in range(1, plan.fresh_connections + 1):
        async with plan.again() as again:
            outcome = await again.echo(plan.target, state, replies)
        if outcome.accepted:
            return (
                f"the second redemption is refused on the connection that redeemed it, but over new "
                f"connection {number} of {plan.fresh_connections} the state was {outcome.detail}: "
                "behind this address, each worker keeps its own record of redeemed states"
            )
    return None


async def hidden(plan: Plan) -> Verdict:
    seen = readable(sample(plan))
    if seen is None:
        return "PASS", "nothing readable in the token (opaque to the client)"
    if plan.options.require_confidential:
        return "FAIL", f"state readable by the client: {seen}"
    return "INFO", f"state readable by the client: {seen} (--require-confidential makes this a FAIL)"
