"""The checks in order, and running them (with a progress line each)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TextIO

from . import _binding as binding
from . import _exactly_once as exactly_once
from . import _fleet as fleet
from . import _forgery as forgery
from . import _race as race
from . import _tampering as tampering
from ._flaws import FLAWS
from ._plan import Plan, Verdict
from ._report import Check, Report
from ._session import ProbeError, TransportFailure

Row = tuple[str, str, Callable[[], Awaitable[Verdict]]]
"""A check's id, its name, and the run of it on one state."""


def _checks(plan: Plan) -> list[Row]:
    """The rows of one state: every check on the primary one, those that attack a state on the others;
    and, on the last round walked of a tool named exactly-once, the retries of its final round."""
    checks: list[Row] = []
    if plan.primary and plan.workers:  # first: whether the later checks can cross workers
        checks += [
            ("fleet_shared", "state sent to another worker", partial(fleet.shared, plan)),
            ("fleet_replay", "state redeemed on one worker, then another", partial(fleet.replayed, plan)),
        ]
    checks.append(("bit_flip", "single bits flipped", partial(tampering.bit_flip, plan)))
    checks += [
        (id_, name, partial(tampering.tamper, plan, mutations, note, skip))
        for id_, name, mutations, note, skip in tampering.TAMPERING
    ]
    checks.append(("random", "random state (never minted)", partial(tampering.random_state, plan)))
    checks += [
        (id_, name, partial(forgery.forge, plan, forge, skip)) for id_, name, forge, skip in forgery.FORGERIES
    ]
    checks.append(("guessed_key", "MAC key guessed (common secrets)", partial(forgery.guessed_key, plan)))
    id_, name, forge, skip = forgery.ALG_NONE
    checks.append((id_, name, partial(forgery.forge, plan, forge, skip)))
    if plan.primary:  # after the forgery rows: whether another spelling matters depends on what they found
        # How the server decodes a token's spelling is its decoder's, the same for every state: once.
        checks.append(
            ("repadded", "base64 re-spelled (padding, alphabet)", partial(tampering.respelled, plan))
        )
    checks.append(("arguments", "same state, other arguments", partial(binding.arguments, plan)))
    if plan.primary:  # properties of the server, not of one state: once
        checks += [
            ("cross_tool", "state sent to another target", partial(binding.cross_target, plan)),
            ("other_user", "state sent as another user", partial(binding.other_user, plan)),
            ("expiry", "state used after expiry", partial(binding.expiry, plan)),
        ]
    checks.append(("replay", "same state redeemed twice", partial(binding.replay, plan)))
    # Whether single use is atomic is the guard's, the same for every state: once. An exactly-once
    # tool answers identical redemptions alike instead: its own race judges them.
    if plan.primary and plan.options.single_use and not plan.exactly_once:
        racers = plan.options.racers
        checks.append(("race", f"same state redeemed {racers} times at once", partial(race.redeemed, plan)))
    if plan.exactly_once and plan.target.last:  # its final round, if the walk reached it
        checks += [
            (
                "exactly_once",
                "identical retry of an exactly-once tool",
                partial(exactly_once.identical, plan),
            ),
            ("exactly_once_changed", "retry with other answers", partial(exactly_once.changed, plan)),
            (
                "exactly_once_race",
                f"identical retries {plan.options.racers} at once",
                partial(race.retried, plan),
            ),
        ]
    checks.append(("confidential", "state hidden from the client", partial(binding.hidden, plan)))
    return checks


async def run_checks(plans: Sequence[Plan], report: Report, progress: TextIO | None) -> None:
    """Run every check of each state in turn, appending one line each to ``report`` (and to
    ``progress``, as it runs)."""
    rows = [(plan, row) for plan in plans for row in _checks(plan)]
    width = max(len(name) for _, (_, name, _) in rows)
    for number, (plan, (id_, name, run_check)) in enumerate(rows, start=1):
        scope = plan.target.scope()
        if progress is not None:
            where = f" ({scope})" if len(plans) > 1 else ""
            progress.write(f"[{number:{len(str(len(rows)))}}/{len(rows)}] {name:{width}}{where}  ")
            progress.flush()
        started = time.monotonic()
        try:
            result, detail = await run_check()
        except (TransportFailure, ProbeError) as failure:  # a lost connection, or no second one
            result, detail = "ERROR", str(failure)
        seconds = time.monotonic() - started
        plan.results[id_] = result
        flaw = FLAWS[id_] if result == "FAIL" else ""
        report.checks.append(Check(id_, name, result, detail, flaw, scope, seconds))
        if progress is not None:
            progress.write(f"{result} ({seconds:.1f} s)\n")
            progress.flush()
