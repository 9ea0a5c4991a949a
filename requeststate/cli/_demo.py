"""``requeststate demo``: a token minted in each mode, then what is accepted and what is refused.

The README shows its output (tests/test_docs_examples.py checks it): keep it stable.
"""

from __future__ import annotations

from typing import TextIO

import requeststate as rs

from ._shared import EXIT_OK

__all__ = ["run_demo"]


def _tamper(token: str) -> str:
    # Flip one character in the middle of the token, keeping it base64url.
    middle = len(token) // 2
    flipped = "A" if token[middle] != "A" else "B"
    return token[:middle] + flipped + token[middle + 1 :]


def _outcome(token: str, keys: rs.KeyRing, mode: rs.Mode, subject: str, now: int) -> str:
    try:
        return f"accepted: {rs.verify(token, keys, mode=mode, subject=subject, tool='book', now=now)}"
    except rs.InvalidToken as refused:
        return f"refused (reason for the log: {refused.reason})"


def run_demo(out: TextIO) -> int:
    """Mint a token in each mode, then show what is accepted and what is refused."""
    keys = rs.KeyRing.ephemeral()
    state = '{"step":2,"date":"2026-12-01"}'
    now = 1_800_000_000
    print(f"key ring: {keys!r}", file=out)
    for mode in rs.Mode:
        token = rs.encode(state, keys, mode=mode, subject="alice", tool="book", ttl=300, now=now)
        print(f"\n[{mode}] token ({len(token)} bytes): {token}", file=out)
        cases = [
            ("alice, same tool, in time", token, "alice", now),
            ("one character tampered", _tamper(token), "alice", now),
            ("expired (ttl + 1 s later)", token, "alice", now + 301),
            ("another user (mallory)", token, "mallory", now),
        ]
        for label, candidate, subject, at in cases:
            print(f"  {label:28} -> {_outcome(candidate, keys, mode, subject, at)}", file=out)
    return EXIT_OK
