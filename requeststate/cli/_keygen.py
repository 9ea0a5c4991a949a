"""``requeststate keygen``: a new secret, as ``REQUESTSTATE_KEYS`` takes it."""

from __future__ import annotations

import argparse
from typing import Final

import requeststate as rs

from ._shared import EXIT_OK

__all__ = ["add_keygen", "run_keygen"]

# keygen's ceiling: far above any useful secret (HKDF reads it whole), far below a MemoryError.
MAX_SECRET_BYTES: Final = 1024


def run_keygen(args: argparse.Namespace) -> int:
    """``requeststate keygen``: print a new secret."""
    print(rs.KeyRing.generate_secret(args.bytes))
    return EXIT_OK


def _secret_bytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of bytes: {text!r}") from None
    if not rs.MIN_SECRET_BYTES <= value <= MAX_SECRET_BYTES:
        raise argparse.ArgumentTypeError(f"a secret is {rs.MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} bytes")
    return value


def add_keygen(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``keygen`` subcommand and its options."""
    keygen = commands.add_parser(
        "keygen",
        help=f"print a new random secret (base64url), for {rs.ENV_KEYS}",
        description=f"Print a new secret from the OS CSPRNG as unpadded base64url. Put it first in "
        f"{rs.ENV_KEYS} (comma-separated, newest first) on every server that shares the tokens.",
    )
    keygen.add_argument(
        "--bytes",
        type=_secret_bytes,
        default=rs.MIN_SECRET_BYTES,
        help=f"secret size in bytes (default {rs.MIN_SECRET_BYTES}, "
        f"from {rs.MIN_SECRET_BYTES} to {MAX_SECRET_BYTES})",
    )
