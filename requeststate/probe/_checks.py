"""The checks: each sends the server something it must refuse and turns the answer into a report line."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from functools import partial
from typing import Final, TypeAlias

import anyio

from ._encodings import Reading, alg_none, edits, readable, readings
from ._mutations import (
    Mutation,
    extended,
    flip,
    prefix_swapped,
    random_like,
    repadded,
    tag_emptied,
    tag_halved,
    tag_removed,
    tag_text_halved,
    truncated,
)
from ._report import Check, Options, Report, Result
from ._session import Endpoint, Outcome, ProbeError, Session, TransportFailure

Verdict: TypeAlias = tuple[Result, str]
Connector: TypeAlias = Callable[[], AbstractAsyncContextManager[Session]]
"""Opens another connection to the server, as the same or as another identity."""

EXPIRY_MARGIN: Final = 2.0  # seconds past the TTL: whole-second expiry times and a little clock skew
MAX_KNOWN_WAIT: Final = 10.0  # wait out an expiry read from the state only this long, unasked
_FLIP_AT: Final = (1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6)
_MAX_FORGERIES: Final = 8
_PLAUSIBLE_UNIX_TIME: Final = 1_000_000_000


@dataclass
class Plan:
    """What the checks work with: the connection, what to probe, and the options."""

    session: Session
    target: Endpoint
    other: Endpoint | None
    options: Options
    extend: Callable[[float], None]  # moves the probe's deadline, for the expiry check's wait
    again: Connector  # a second connection, same identity
    second: Connector | None  # a connection as options.second, another identity


def _judge(refusals: Sequence[Outcome], note: str) -> Verdict:
    """PASS when every refusal was a JSON-RPC error or a re-elicit; WARN when one looked like a crash."""
    for refusal in refusals:
        if refusal.crashed:
            return "WARN", refusal.detail + note
    return "PASS", refusals[0].detail + note


# --- tampering: any change to the bytes ------------------------------------------------------------------

_TAMPERING: Final[tuple[tuple[str, str, tuple[Mutation, ...], str], ...]] = (
    ("bit_flip", "one byte flipped", tuple(flip(f) for f in _FLIP_AT), f" (at {len(_FLIP_AT)} positions)"),
    ("truncated", "truncated (-4 chars)", (truncated,), ""),
    ("extended", "extended (+AAAA)", (extended,), ""),
    ("tag_stripped", "MAC/tag removed", (tag_removed, tag_emptied), ""),
    (
        "tag_truncated",
        "MAC/tag truncated",
        (tag_halved, tag_text_halved),
        " (to half its bytes, and characters)",
    ),
    ("prefix_swapped", "prefix swapped", (prefix_swapped,), ""),
    ("repadded", "re-padded base64", (repadded("="), repadded("==")), " (with = and ==)"),
)

_NOT_APPLICABLE: Final = {
    "tag_stripped": "no base64 token with room for a tag (JSON or text: see the forgery rows)",
    "tag_truncated": "no base64 token with room for a tag (JSON or text: see the forgery rows)",
    "prefix_swapped": "the token has no prefix (no short text before a '.')",
}


async def _tamper(plan: Plan, id_: str, mutations: Sequence[Mutation], note: str) -> Verdict:
    """FAIL on the first variant accepted, each on a fresh first round; SKIP when none applies."""
    refusals: list[Outcome] = []
    for mutate in mutations:
        state, replies = await plan.session.fresh(plan.target)
        candidate = mutate(state)
        if candidate is None or candidate == state:
            continue
        outcome = await plan.session.echo(plan.target, candidate, replies)
        if outcome.accepted:
            return "FAIL", outcome.detail + _where(state, candidate)
        refusals.append(outcome)
    if not refusals:
        return "SKIP", _NOT_APPLICABLE.get(id_, "does not apply to this token")
    return _judge(refusals, note)


def _where(state: str, candidate: str) -> str:
    """`` (character 9 of 51 changed)`` for a one-character change, else nothing."""
    if len(state) != len(candidate):
        return ""
    changed = [index for index, (a, b) in enumerate(zip(state, candidate, strict=True)) if a != b]
    return f" (character {changed[0] + 1} of {len(state)} changed)" if len(changed) == 1 else ""


async def _random(plan: Plan) -> Verdict:
    """A state the server never minted must be refused before any handler sees it."""
    state, replies = await plan.session.fresh(plan.target)
    outcome = await plan.session.echo(plan.target, random_like(state), replies)
    if outcome.accepted:
        return "FAIL", f"a random state was {outcome.detail}"
    if outcome.crashed:
        return "FAIL", (
            f"a random state reached the handler ({outcome.detail.removeprefix('refused by ')}): a server "
            "that checks its state refuses it before any handler runs"
        )
    return "PASS", outcome.detail


# --- forgery without the key ----------------------------------------------------------------------------

Forgeries: TypeAlias = Callable[[str], list[tuple[str, str]]]
"""A state -> forged states made from it without a key, each with what was done."""


def _forged_by(found: Callable[[str], list[Reading]], how: Callable[[Reading], str]) -> Forgeries:
    def forge(state: str) -> list[tuple[str, str]]:
        made: dict[str, str] = {}
        for reading in found(state):
            for edit in edits(reading.value):
                forged = reading.rebuild(edit.value)
                if forged != state:
                    made.setdefault(forged, f"`{edit.field}` changed ({edit.change}), {how(reading)}")
        return list(made.items())[:_MAX_FORGERIES]

    return forge


_FORGERIES: Final[tuple[tuple[str, str, Forgeries, str], ...]] = (
    (
        "forged",
        "state forged without the key",
        _forged_by(
            lambda state: [r for r in readings(state) if r.hashed is None],
            lambda r: f"re-encoded as {r.wrapping}",
        ),
        "nothing readable to forge (see 'state hidden from the client')",
    ),
    (
        "rehashed",
        "unkeyed hash recomputed",
        _forged_by(
            lambda state: [r for r in readings(state) if r.hashed is not None],
            lambda r: f"re-encoded as {r.wrapping}, the hash recomputed",
        ),
        "no unkeyed hash (MD5, SHA-1, SHA-2) of the state found in it",
    ),
    (
        "alg_none",
        "JWT re-signed with alg none",
        _forged_by(alg_none, lambda r: f"sent as {r.wrapping} and no signature"),
        "the state is not a JWT",
    ),
)


async def _forge(plan: Plan, forge: Forgeries, not_applicable: str) -> Verdict:
    """Each forgery on a fresh first round, made from that round's state; FAIL on the first accepted."""
    refusals: list[Outcome] = []
    tried: list[str] = []
    for index in range(_MAX_FORGERIES):
        state, replies = await plan.session.fresh(plan.target)
        made = forge(state)
        if index >= len(made):
            break
        forged, what = made[index]
        outcome = await plan.session.echo(plan.target, forged, replies)
        if outcome.accepted:
            return "FAIL", f"{outcome.detail}: {what}"
        refusals.append(outcome)
        tried.append(what)
    if not refusals:
        return "SKIP", not_applicable
    return _judge(refusals, f" ({len(tried)} tried, e.g. {tried[0]})")


# --- binding: the state belongs to one target, one set of arguments, one user, one lifetime ----------------


async def _arguments(plan: Plan) -> Verdict:
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
    return _judge([outcome], "")


async def _cross_target(plan: Plan) -> Verdict:
    target, other = plan.target, plan.other
    if other is None:
        return "SKIP", "only one tool, prompt or resource answers input-required"
    state, replies = await plan.session.fresh(target)
    outcome = await plan.session.echo(other, state, replies)
    verdict: Result = "FAIL" if outcome.accepted else "PASS"
    if not outcome.accepted and outcome.crashed:
        verdict = "WARN"
    return verdict, f"{target.label()} -> {other.label()}: {outcome.detail}"


async def _other_user(plan: Plan) -> Verdict:
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
    return _judge([outcome], " (the second identity)")


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


async def _expiry(plan: Plan) -> Verdict:
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
    return _judge([outcome], f" after {wait:.0f} s ({source})")


async def _replay(plan: Plan) -> Verdict:
    state, replies = await plan.session.fresh(plan.target)
    once = await plan.session.echo(plan.target, state, replies)
    if not once.accepted:
        return "ERROR", f"the first redemption was not accepted: {once.detail}"
    twice = await plan.session.echo(plan.target, state, replies)
    if not twice.accepted:
        verdict, detail = _judge([twice], "")
        return verdict, f"single-use: the second redemption is {detail}"
    if plan.options.single_use:
        return "FAIL", f"the second redemption is {twice.detail}"
    return "INFO", f"the second redemption is {twice.detail} (not single-use; --single-use makes this a FAIL)"


async def _hidden(plan: Plan) -> Verdict:
    state, _ = await plan.session.fresh(plan.target)
    seen = readable(state)
    if seen is None:
        return "PASS", "nothing readable in the token (opaque to the client)"
    if plan.options.require_confidential:
        return "FAIL", f"state readable by the client: {seen}"
    return "INFO", f"state readable by the client: {seen} (--require-confidential makes this a FAIL)"


# --- running them ------------------------------------------------------------------------------------------


def _checks(plan: Plan) -> list[tuple[str, str, Callable[[], Awaitable[Verdict]]]]:
    checks: list[tuple[str, str, Callable[[], Awaitable[Verdict]]]] = [
        (id_, name, partial(_tamper, plan, id_, mutations, note)) for id_, name, mutations, note in _TAMPERING
    ]
    checks.append(("random", "random state (never minted)", partial(_random, plan)))
    checks += [(id_, name, partial(_forge, plan, forge, skip)) for id_, name, forge, skip in _FORGERIES]
    checks += [
        ("arguments", "same state, other arguments", partial(_arguments, plan)),
        ("cross_tool", "state sent to another target", partial(_cross_target, plan)),
        ("other_user", "state sent as another user", partial(_other_user, plan)),
        ("expiry", "state used after expiry", partial(_expiry, plan)),
        ("replay", "same state redeemed twice", partial(_replay, plan)),
        ("confidential", "state hidden from the client", partial(_hidden, plan)),
    ]
    return checks


async def run_checks(plan: Plan, report: Report) -> None:
    """Run every check in order, appending one line each to ``report``."""
    for id_, name, run_check in _checks(plan):
        try:
            result, detail = await run_check()
        except (TransportFailure, ProbeError) as failure:  # a lost connection, or no second one
            result, detail = "ERROR", str(failure)
        report.checks.append(Check(id_, name, result, detail))
