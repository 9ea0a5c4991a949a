"""Checks that forge a changed state without the server's key: every member of a readable state
edited, an unkeyed hash recomputed, a MAC's key guessed from common secrets, a JWT's alg set to none."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Final, TypeAlias

import anyio.lowlevel

from ._edits import edits, members
from ._guess import FORGERIES_PER_KEY, Mac, Secret, first_hit, macs, secrets
from ._plan import Budget, Plan, Verdict, judge, sample
from ._readings import Reading, alg_none, readings
from ._session import Outcome

MAX_FIELD_EDITS: Final = 64
"""The most members edited per check (each on its own round), spread evenly over the state: a state
of more members is sampled (and its PASS says how many were edited), within ``FORGE_SECONDS``."""
FORGE_SECONDS: Final = 8.0
GUESS_SECONDS: Final = 5.0
"""The longest the offline key search runs (a long ``--wordlist`` is cut there, and the report says so)."""
_GUESS_BATCH: Final = 256

Forgery: TypeAlias = tuple[str, str, str]
"""A forged token, the member changed, and what was done."""


@dataclass(frozen=True)
class Forged:
    """The states forged from one, and how many members there were to edit (in the widest reading)."""

    made: list[Forgery]
    members: int


Forgeries: TypeAlias = Callable[[str], Forged]
"""A state -> forged states made from it without a key."""


def _forged_by(found: Callable[[str], list[Reading]], how: Callable[[Reading], str]) -> Forgeries:
    @functools.lru_cache(maxsize=1)  # a server may mint the same state every round: forge it once
    def forge(state: str) -> Forged:
        made: dict[str, tuple[str, str]] = {}
        widest = 0
        for reading in found(state):
            widest = max(widest, members(reading.value))
            for edit in edits(reading.value, MAX_FIELD_EDITS):
                forged = reading.rebuild(edit.value)
                if forged != state:
                    made.setdefault(
                        forged, (edit.field, f"`{edit.field}` changed ({edit.change}), {how(reading)}")
                    )
        return Forged([(token, *named) for token, named in made.items()][:MAX_FIELD_EDITS], widest)

    return forge


FORGERIES: Final[tuple[tuple[str, str, Forgeries, str], ...]] = (
    (
        "forged",
        "every member forged",
        _forged_by(
            lambda state: [r for r in readings(state) if r.hashed is None],
            lambda r: f"re-encoded as {r.wrapping}",
        ),
        "nothing readable to forge, but under an unkeyed hash (see the next row), if at all",
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
)
ALG_NONE: Final = (
    "alg_none",
    "JWT re-signed with alg none",
    _forged_by(alg_none, lambda r: f"sent as {r.wrapping} and no signature"),
    "the state is not a JWT",
)


def _members(fields: Iterable[str]) -> str:
    shown = [f"`{field}`" for field in fields]
    return ", ".join(shown[:8]) + (f" and {len(shown) - 8} more" if len(shown) > 8 else "")


async def forge(plan: Plan, forgeries: Forgeries, not_applicable: str) -> Verdict:
    """Each forgery on a fresh round, made from that round's state; FAIL names every member accepted."""
    if not forgeries(sample(plan)).made:  # nothing to forge in this state's shape: no round spent on it
        return "SKIP", not_applicable
    budget = Budget(FORGE_SECONDS)
    accepted: dict[str, tuple[str, Outcome]] = {}
    refusals: list[Outcome] = []
    tried: list[str] = []
    edited: set[str] = set()
    widest = 0
    for index in range(MAX_FIELD_EDITS):
        if budget.spent():
            break
        state, replies = await plan.session.fresh(plan.target)
        found = forgeries(state)
        widest = max(widest, found.members)
        if index >= len(found.made):
            break
        forged, field, what = found.made[index]
        if field in accepted:
            continue
        edited.add(field)
        outcome = await plan.session.echo(plan.target, forged, replies)
        tried.append(what)
        if outcome.accepted:
            accepted[field] = (what, outcome)
        else:
            refusals.append(outcome)
    if accepted:
        what, outcome = next(iter(accepted.values()))
        return "FAIL", (
            f"{len(accepted)} of the {len(edited)} members edited went through: {_members(accepted)} "
            f"(e.g. {what}: {outcome.detail})"
        )
    if not refusals:
        return "SKIP", not_applicable
    # Fewer edited than there are: the PASS says so, since a member left out may be the one uncovered.
    part = f", {len(edited)} of {widest} members edited" if len(edited) < widest else ""
    return judge(refusals, f" (every one of {len(tried)} edits{part}{budget.note()}, e.g. {tried[0]})")


def _batches(items: Iterator[Secret]) -> Iterator[list[Secret]]:
    while batch := list(islice(items, _GUESS_BATCH)):
        yield batch


async def _search(found: list[Mac], plan: Plan) -> tuple[tuple[Mac, Secret] | None, int, Budget]:
    """The first secret that makes one of ``found``, how many were tried, and the time bound."""
    budget = Budget(GUESS_SECONDS)
    tried = 0
    for batch in _batches(secrets(plan.options.wordlists)):
        tried += len(batch)
        hit = first_hit(found, batch)
        if hit is not None:
            return hit, tried, budget
        await anyio.lowlevel.checkpoint()  # the probe's own timeout can end a long search
        if budget.spent():
            break
    return None, tried, budget


async def guessed_key(plan: Plan) -> Verdict:
    """Guess a readable MAC's key offline; on a hit, prove it with a state forged under that key."""
    found = macs(sample(plan))
    if not found:
        return "SKIP", (
            "no MAC over readable content (readable content and a 20, 32, 48 or 64-byte tag, or a "
            "JWT HS256/384/512)"
        )
    hit, tried, budget = await _search(found, plan)
    if hit is None:
        return "PASS", f"no secret of {tried} tried makes its {found[0].what}{budget.note()}"
    mac, secret = hit
    refusals: list[Outcome] = []
    for index in range(FORGERIES_PER_KEY):
        state, replies = await plan.session.fresh(plan.target)
        again = [m for m in macs(state) if m.what == mac.what]
        made = again[0].forge(secret.key) if again else []
        if index >= len(made):
            break
        forged, what = made[index]
        outcome = await plan.session.echo(plan.target, forged, replies)
        if outcome.accepted:
            return "FAIL", (
                f"its {mac.what} is made with {secret.source}: a state forged and signed with it "
                f"({what}) was {outcome.detail}"
            )
        refusals.append(outcome)
    refused = refusals[0].detail if refusals else "none could be made"
    return "WARN", (
        f"its {mac.what} is made with {secret.source}, yet states forged with it were refused "
        f"({refused}): the key is guessable all the same, replace it"
    )
