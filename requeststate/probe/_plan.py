"""What every check works with: the connection, what to probe, the options, and how refusals are judged."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TypeAlias

import anyio
from mcp import Client

from ._report import ProbeOptions, Result
from ._session import Endpoint, Outcome, Session

Verdict: TypeAlias = tuple[Result, str]
"""A check's result and its detail (for a FAIL, the evidence: the flaw is the check's own)."""
Connector: TypeAlias = Callable[[], AbstractAsyncContextManager[Session]]
"""Opens another connection to the server, as the same or as another identity."""


@dataclass(frozen=True)
class Worker:
    """One worker of the deployment: how the report names it, and a connection to it."""

    name: str
    session: Session


@dataclass
class Plan:
    """What the checks of one state work with: the connection, what to probe, the options, and the
    results so far.

    The first state probed (``primary``) gets every check; every other round, tool, prompt or
    resource gets those that attack a state, on a smaller sample of bits.
    """

    session: Session
    target: Endpoint
    other: Endpoint | None
    options: ProbeOptions
    extend: Callable[[float], None]  # moves the probe's deadline, for the expiry check's wait
    again: Connector  # a second connection, same identity
    second: Connector | None  # a connection as options.second, another identity
    primary: bool = True
    workers: Sequence[Worker] = ()  # the deployment's workers, the target's first; () for one server
    fresh_connections: int = 0  # a replay refused is sent again over this many new connections
    results: dict[str, Result] = field(default_factory=dict)  # check id -> result, as they complete

    @property
    def exactly_once(self) -> bool:
        """Whether the target is a tool named exactly-once: an identical retry gets the first answer."""
        return self.target.kind == "tool" and self.target.name in self.options.exactly_once

    def redeemers(self) -> list[Client]:
        """Where concurrent redemptions go: every worker in turn, or the one connection."""
        return [worker.session.client for worker in self.workers] or [self.session.client]


def sample(plan: Plan) -> str:
    """The state found for ``plan``'s round when it was walked: to read, never to send (it was redeemed)."""
    state = plan.target.first.request_state
    assert state is not None  # an endpoint is one that answered with a state
    return state


def judge(refusals: Sequence[Outcome], note: str) -> Verdict:
    """PASS when every refusal was a JSON-RPC error or a re-elicit; WARN when one looked like a crash."""
    for refusal in refusals:
        if refusal.crashed:
            return "WARN", refusal.detail + note
    return "PASS", refusals[0].detail + note


class Budget:
    """A bound on one check's attempts in time: it stops early against a slow server, and says so."""

    def __init__(self, seconds: float) -> None:
        self._deadline = anyio.current_time() + seconds
        self.seconds = seconds
        self.exhausted = False

    def spent(self) -> bool:
        """Whether the time is up (and, from then on, ``exhausted``)."""
        self.exhausted = self.exhausted or anyio.current_time() >= self._deadline
        return self.exhausted

    def note(self) -> str:
        """``, stopped at the 8 s bound`` once exhausted, else nothing."""
        return f", stopped at the {self.seconds:g} s bound" if self.exhausted else ""
