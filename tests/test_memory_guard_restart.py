"""Issue 34's M: a ``MemoryGuard`` in a restarted process refuses the replays of tokens redeemed before.

Its memory begins when it is built: every token minted by then (plus its ``clock_skew``) may have
been redeemed by the process it replaced, with the same keys, and is refused.
"""

from __future__ import annotations

import hashlib

import requeststate as rs

from .support.verdicts import verdict

SECRET = hashlib.sha256(b"test_memory_guard_restart").digest()
NOW = 2_000_000_000


def served_by_a_process_started_at(started: int) -> rs.Codec:
    """The codec of a server process started at ``started``, with the deployment's keys and its own guard."""
    return rs.Codec(SECRET, mode="encrypted", guard=rs.MemoryGuard(clock=lambda: started))


def test_a_memory_guard_built_after_tokens_were_redeemed_refuses_their_replays() -> None:
    # Before: its ids died with the process, and the restarted one accepted 50 of 50 replays.
    before = served_by_a_process_started_at(NOW - 60)
    tokens = [before.encode("step", now=NOW) for _ in range(50)]
    redeemed = [verdict(before, token, NOW) for token in tokens]
    restarted = served_by_a_process_started_at(NOW + 10)
    replays = [verdict(restarted, token, NOW + 10) for token in tokens]
    assert (redeemed, replays) == (["accepted"] * 50, ["guard_unavailable"] * 50)


def test_a_restarted_memory_guard_accepts_the_tokens_minted_from_the_second_begin_returns() -> None:
    restarted = served_by_a_process_started_at(NOW)
    guard = restarted.guard
    assert isinstance(guard, rs.MemoryGuard)
    ready = guard.begin()
    outcomes = [verdict(restarted, restarted.encode("step", now=at), ready) for at in (ready - 1, ready)]
    assert (ready, outcomes) == (NOW + 1, ["guard_unavailable", "accepted"])
