"""The ``requeststate`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from ._codec import Mode, encode, verify
from ._errors import InvalidToken
from ._keys import KeyRing

__all__ = ["main"]


def _tamper(token: str) -> str:
    # Flip one character in the middle of the token, keeping it base64url.
    middle = len(token) // 2
    flipped = "A" if token[middle] != "A" else "B"
    return token[:middle] + flipped + token[middle + 1 :]


def _outcome(token: str, keys: KeyRing, mode: Mode, subject: str, now: int) -> str:
    try:
        return f"accepted: {verify(token, keys, mode=mode, subject=subject, tool='book', now=now)}"
    except InvalidToken as refused:
        return f"refused (reason for the log: {refused.reason})"


def run_demo(out: TextIO) -> int:
    """Mint a token in each mode, then show what is accepted and what is refused."""
    keys = KeyRing.ephemeral()
    state = '{"step":2,"date":"2026-12-01"}'
    now = 1_800_000_000
    print(f"key ring: {keys!r}", file=out)
    for mode in Mode:
        token = encode(state, keys, mode=mode, subject="alice", tool="book", ttl=300, now=now)
        print(f"\n[{mode}] token ({len(token)} bytes): {token}", file=out)
        cases = [
            ("alice, same tool, in time", token, "alice", now),
            ("one character tampered", _tamper(token), "alice", now),
            ("expired (ttl + 1 s later)", token, "alice", now + 301),
            ("another user (mallory)", token, "mallory", now),
        ]
        for label, candidate, subject, at in cases:
            print(f"  {label:28} -> {_outcome(candidate, keys, mode, subject, at)}", file=out)
    return 0


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": lambda args: run_demo(sys.stdout),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="requeststate",
        description="Integrity-protected, optionally encrypted MCP requestState tokens.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("demo", help="mint and verify tokens in each mode, and show refusals")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    args = _parser().parse_args(argv)
    return _COMMANDS[args.command](args)
