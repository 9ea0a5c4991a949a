"""``requeststate mint``: a token for a state, under the keys of an environment variable (fixtures, tests)."""

from __future__ import annotations

import argparse
import sys

import requeststate as rs

from ._shared import EXIT_OK, EXIT_USAGE, add_key_options, read_keys

__all__ = ["add_mint", "run_mint"]


def run_mint(args: argparse.Namespace) -> int:
    """``requeststate mint``: the token on stdout (0), or why none can be minted on stderr (2)."""
    keys = read_keys(args.key_env or rs.ENV_KEYS, args.key_encoding)
    if keys is None:
        return EXIT_USAGE
    # One trailing newline is what echo and a here-document add, not part of the state.
    state = sys.stdin.read().removesuffix("\n") if args.state == "-" else args.state
    try:
        # metrics=None: the command line serves no clients, so it has nothing to count.
        codec = rs.Codec(keys, mode=args.mode, ttl=args.ttl, metrics=None)
        token = codec.encode(state, subject=args.subject, tool=args.tool, now=args.now)
    # A ttl or now out of range, an identity that cannot be bound, a token over the size cap.
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(token)
    return EXIT_OK


def add_mint(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``mint`` subcommand and its options."""
    mint = commands.add_parser(
        "mint",
        help="mint a token for a test fixture, with keys from the environment",
        description=f"Mint a token that carries STATE, under the first secret of {rs.ENV_KEYS} "
        f"(or --key-env VAR), bound to --subject and --tool, and print it. The mode and ttl come from "
        f"the flags only, never from {rs.ENV_MODE} or {rs.ENV_TTL}, so a fixture is the same "
        "in every shell; --now makes it reproducible but for its random nonce and id.",
    )
    mint.add_argument(
        "state",
        help="the state the token carries, as text (a server's is often JSON), or - to read it from "
        "stdin (one trailing newline dropped)",
    )
    add_key_options(mint, f"environment variable holding the secrets, newest first (default: {rs.ENV_KEYS})")
    mint.add_argument(
        "--mode",
        choices=[mode.value for mode in rs.Mode],
        default=rs.DEFAULT_MODE.value,
        help=f"the token's mode (default: {rs.DEFAULT_MODE.value})",
    )
    mint.add_argument("--subject", default="", help="the subject to bind the token to (default: none)")
    mint.add_argument("--tool", default=None, help="the tool to bind the token to (default: none)")
    mint.add_argument(
        "--ttl",
        type=int,
        default=rs.DEFAULT_TTL,
        help=f"seconds the token lives, 1 to {rs.MAX_TTL} (default {rs.DEFAULT_TTL})",
    )
    mint.add_argument("--now", type=int, default=None, help="unix seconds to mint at (default: now)")
