"""The checks in order, and running them (with a progress line each)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TextIO

from . import _binding as binding
from . import _forgery as forgery
from . import _tampering as tampering
from ._flaws import FLAWS
from ._plan import Plan, Verdict
from ._report import Check, Report
from ._session import ProbeError, TransportFailure


def _checks(plan: Plan) -> list[tuple[str, str, Callable[[], Awaitable[Verdict]]]]:
    checks: list[tuple[str, str, Callable[[], Awaitable[Verdict]]]] = [
        ("bit_flip", "single bits flipped", partial(tampering.bit_flip, plan))
    ]
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
    # After the forgery rows: whether another spelling matters depends on what they found.
    checks.append(("repadded", "base64 re-spelled (padding, alphabet)", partial(tampering.respelled, plan)))
    checks += [
        ("arguments", "same state, other arguments", partial(binding.arguments, plan)),
        ("cross_tool", "state sent to another target", partial(binding.cross_target, plan)),
        ("other_user", "state sent as another user", partial(binding.other_user, plan)),
        ("expiry", "state used after expiry", partial(binding.expiry, plan)),
        ("replay", "same state redeemed twice", partial(binding.replay, plan)),
        ("confidential", "state hidden from the client", partial(binding.hidden, plan)),
    ]
    return checks


async def run_checks(plan: Plan, report: Report, progress: TextIO | None) -> None:
    """Run every check in order, appending one line each to ``report`` (and to ``progress``, as it runs)."""
    checks = _checks(plan)
    width = max(len(name) for _, name, _ in checks)
    for number, (id_, name, run_check) in enumerate(checks, start=1):
        if progress is not None:
            progress.write(f"[{number:2}/{len(checks)}] {name:{width}}  ")
            progress.flush()
        started = time.monotonic()
        try:
            result, detail = await run_check()
        except (TransportFailure, ProbeError) as failure:  # a lost connection, or no second one
            result, detail = "ERROR", str(failure)
        plan.results[id_] = result
        report.checks.append(Check(id_, name, result, detail, FLAWS[id_] if result == "FAIL" else ""))
        if progress is not None:
            progress.write(f"{result} ({time.monotonic() - started:.1f} s)\n")
            progress.flush()
