"""Checks that change a token's bytes without reading it: bits flipped, cut, extended, the MAC or tag
removed or shortened, the prefix swapped, the base64 re-spelled, a random state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ._edits import spread
from ._flaws import FLAWS
from ._mutations import (
    Mutation,
    extended,
    prefix_swapped,
    random_like,
    tag_emptied,
    tag_halved,
    tag_removed,
    tag_text_halved,
    truncated,
)
from ._plan import Budget, Plan, Verdict, judge
from ._session import Outcome
from ._spelling import RESPELLINGS, respellings, spelling

MAX_FLIPS: Final = 32
"""The most single-bit flips on the first state probed, spread evenly over the token's bytes."""
FURTHER_FLIPS: Final = 8
"""The most single-bit flips on each further state (another round, tool, prompt or resource): the
first state's 32 establish how the server answers a flip, these whether this state is protected too."""
FLIP_SECONDS: Final = 8.0
INTEGRITY: Final = ("bit_flip", "random", "forged", "rehashed", "guessed_key", "alg_none")
"""The checks whose FAIL shows a flaw in the state's integrity: another spelling accepted is then a FAIL."""


def coarse_first(positions: list[int]) -> list[int]:
    """``positions`` in an order whose every prefix spreads over all of them (the first, the middle,
    the quarters, ...): flips cut short by the time bound still cover the whole token."""
    order: list[int] = []
    taken: set[int] = set()
    step = 1 << len(positions).bit_length()
    while step:
        for index in range(0, len(positions), step):
            if index not in taken:
                taken.add(index)
                order.append(positions[index])
        step //= 2
    return order


async def bit_flip(plan: Plan) -> Verdict:
    """Flip the lowest bit of bytes spread over the decoded token, each on a fresh round."""
    budget = Budget(FLIP_SECONDS)
    state, replies = await plan.session.fresh(plan.target)
    shape = spelling(state)
    accepted: list[tuple[int, Outcome]] = []
    refusals: list[Outcome] = []
    flips = MAX_FLIPS if plan.primary else FURTHER_FLIPS
    for count, position in enumerate(coarse_first(spread(range(shape.size), flips))):
        if count:  # the first flip goes on the round fetched above
            if budget.spent():
                break
            state, replies = await plan.session.fresh(plan.target)
        fresh = spelling(state)
        candidate = fresh.flipped(position) if position < fresh.size else None
        if candidate is None or candidate == state:
            continue
        outcome = await plan.session.echo(plan.target, candidate, replies)
        if outcome.accepted:
            accepted.append((position, outcome))
        else:
            refusals.append(outcome)
    tried = len(accepted) + len(refusals)
    if accepted:
        where = shape.region(sorted(position for position, _ in accepted))
        return "FAIL", (
            f"{len(accepted)} of {tried} single-bit flips were accepted, at {where} "
            f"(the first: {accepted[0][1].detail})"
        )
    if not refusals:
        return "SKIP", "no byte of the token could be flipped and spelled back"
    return judge(refusals, f" ({tried} single-bit flips over its {shape.size} bytes{budget.note()})")


async def tamper(plan: Plan, mutations: Sequence[Mutation], note: str, not_applicable: str) -> Verdict:
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
        return "SKIP", not_applicable
    return judge(refusals, note)


def _where(state: str, candidate: str) -> str:
    """`` (character 9 of 51 changed)`` for a one-character change, else nothing."""
    if len(state) != len(candidate):
        return ""
    changed = [index for index, (a, b) in enumerate(zip(state, candidate, strict=True)) if a != b]
    return f" (character {changed[0] + 1} of {len(state)} changed)" if len(changed) == 1 else ""


_NO_TAG: Final = "no base64 token with room for a tag (JSON or text: see the forgery rows)"

TAMPERING: Final[tuple[tuple[str, str, tuple[Mutation, ...], str, str], ...]] = (
    ("truncated", "truncated (-4 chars)", (truncated,), "", "the token is too short"),
    ("extended", "extended (+AAAA)", (extended,), "", ""),
    ("tag_stripped", "MAC/tag removed", (tag_removed, tag_emptied), "", _NO_TAG),
    (
        "tag_truncated",
        "MAC/tag truncated",
        (tag_halved, tag_text_halved),
        " (to half its bytes, and characters)",
        _NO_TAG,
    ),
    (
        "prefix_swapped",
        "prefix swapped",
        (prefix_swapped,),
        "",
        "the token has no prefix (no short text before a '.')",
    ),
)
"""Each: id, name, the mutations, a note on a refusal, why it may not apply."""


async def random_state(plan: Plan) -> Verdict:
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


# A token with no '-' or '_' has no other alphabet: one of n random characters is so with a
# chance of (62/64)**n, 0.15 for 60; eight states in a row, 2.4e-7.
_STATES_PER_SPELLING: Final = 8


async def respelled(plan: Plan) -> Verdict:
    """The same bytes in other base64 spellings: a WARN naming each accepted, unless nothing has integrity."""
    refusals: list[Outcome] = []
    accepted: list[tuple[str, Outcome]] = []
    state, replies = await plan.session.fresh(plan.target)
    if not respellings(state):
        return "SKIP", "not a base64 token, or one already padded"
    # Each spelling on a fresh state (a single-use server refuses a second redemption). A state may
    # not have one (no '-' or '_' to swap alphabets): a few more are fetched for it.
    for index, what in enumerate(RESPELLINGS):
        candidate = None
        for attempt in range(_STATES_PER_SPELLING):
            if index or attempt:  # the very first goes on the round fetched above
                state, replies = await plan.session.fresh(plan.target)
            candidate = next((text for text, name in respellings(state) if name == what), None)
            if candidate is not None:
                break
        if candidate is None:
            continue
        outcome = await plan.session.echo(plan.target, candidate, replies)
        if outcome.accepted:
            accepted.append((what, outcome))
        else:
            refusals.append(outcome)
    if accepted:
        whats = [what for what, _ in accepted]
        named = whats[0] if len(whats) == 1 else f"{', '.join(whats[:-1])} and {whats[-1]}"
        detail = accepted[0][1].detail
        unprotected = [check for check in INTEGRITY if plan.results.get(check) == "FAIL"]
        if unprotected:
            first, *others = unprotected
            also = f" (see also {', '.join(others)})" if others else ""
            return "FAIL", (
                f"the token {named} was {detail}, and the {first} row FAILed: {FLAWS[first]}{also}"
            )
        return "WARN", (
            f"the token {named} was {detail}. The server decodes base64 leniently: its "
            "integrity is not at stake (the same bytes), but a replay guard or cache keyed on the "
            "token's text takes each such copy for a new token"
        )
    return judge(refusals, " (re-padded, in the other base64 alphabet, with a newline, with unused bits set)")
