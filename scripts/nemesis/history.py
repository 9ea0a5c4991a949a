"""What the nemesis records: each redemption (its outcome) and each fault (when it struck, what it lost)."""

from __future__ import annotations

from dataclasses import dataclass

import requeststate as rs

__all__ = ["ACCEPTED", "REFUSALS", "Fault", "Redemption"]


@dataclass
class Redemption:
    """One redemption in the history."""

    token_id: str
    worker: int
    first: bool
    """The token's first redemption, by the worker that minted it; else a replay."""
    minted: float
    """The wall clock when the token was minted."""
    at: float
    """The wall clock when the redemption was answered."""
    outcome: str
    """``ACCEPTED``, or the reason it was refused (``InvalidToken.reason``): ``replayed``,
    ``outside_memory`` (minted before the store's memory began), ``guard_unavailable`` (the store
    did not answer, or the terms differ), ... Every reason is a refusal."""


ACCEPTED = "accepted"
# The refusals the report counts apart: a replay, a token the store's memory cannot vouch for, an outage.
REFUSALS = (rs.Reason.REPLAYED.value, rs.Reason.OUTSIDE_MEMORY.value, rs.Reason.GUARD_UNAVAILABLE.value)


@dataclass
class Fault:
    """One fault the nemesis injected: what, when it began and ended, and when Redis lost claims."""

    kind: str
    began: float
    ended: float = 0.0
    lost: float | None = None
    """The wall clock when Redis forgot (a kill, a flush, the end of an eviction burst), if it did."""
