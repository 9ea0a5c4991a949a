"""The history of an MCP nemesis run: every request a client sent and what it got, every flow, every fault."""

from __future__ import annotations

from dataclasses import dataclass

# What a request is.
ROUND1 = "round1"
"""A flow's first round: no ``requestState``; the answer carries the flow's token."""
REDEEM = "redeem"
"""The flow's round 2, its token echoed with its own arguments: each retry of it is one more."""
REPLAY = "replay"
"""The flow's token sent again once its round 2 was accepted."""
SWAP = "swap"
"""The flow's token sent with another flow's arguments (before its round 2)."""
FORGED = "forged"
"""The flow's token with one character changed (before its round 2)."""

# What a request got.
ACCEPTED = "accepted"
"""Round 1: its token; a round 2: the tool's answer."""
INVALID = "invalid"
"""JSON-RPC -32602, the frozen ``Invalid or expired requestState``."""
REELICIT = "reelicit"
"""A round 2 answered as a first round (``on_invalid="reelicit"``): a refusal, as -32602 is."""
UNCHECKED = "unchecked"
"""JSON-RPC -32603 ``requestState could not be checked``: the guard did not answer, retry."""
NO_ANSWER = "no answer"
"""No JSON-RPC answer: the connection failed or closed, or the answer took past the client's timeout."""
# Any other answer is recorded as "error CODE: MESSAGE": never one the docs promise.


@dataclass
class Attempt:
    """One request a client sent, and its answer."""

    flow: int
    """The flow whose token (or, for round 1, whose arguments) the request carries."""
    kind: str
    via: str
    """``balancer``, or ``worker N`` (its own address)."""
    sent: float
    answered: float
    outcome: str
    text: str = ""
    """The tool's answer, when a round 2 was accepted."""


@dataclass
class Flow:
    """One flow: round 1, then round 2 (retried under the documented rule) until it completed or was lost."""

    flow: int
    started: float
    minted: float
    """When round 1's answer (the token) arrived; 0 if it never did."""
    ended: float
    completed: bool


@dataclass
class FaultWindow:
    """One fault: its kind, what it hit (``store``, ``link``, ``worker``), when, and when claims were lost."""

    kind: str
    hits: str
    began: float
    ended: float
    lost: float | None = None


def restaurant(flow: int) -> str:
    """The argument of a flow's tool calls: its own, so that an answer says whose state it read."""
    return f"flow-{flow}"


def expected_answer(flow: int) -> str:
    """The answer a flow's accepted round 2 must be: its own restaurant, its own round 1's state."""
    return f"booked {restaurant(flow)} (for:{restaurant(flow)})"
