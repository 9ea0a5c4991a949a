"""What the subcommands of the command line share: exit codes, and the key options with the ring they name."""

from __future__ import annotations

import argparse
import sys
from typing import Final, get_args

import requeststate as rs

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "add_key_options",
    "read_keys",
]

EXIT_OK: Final = 0
EXIT_REFUSED: Final = 1
EXIT_USAGE: Final = 2
EXIT_BROKEN_PIPE: Final = 141  # what a shell reports for a process killed by SIGPIPE


def add_key_options(parser: argparse.ArgumentParser, key_env_help: str) -> None:
    """``--key-env VAR`` and ``--key-encoding ENC``: where the secrets are, and how they are written."""
    parser.add_argument("--key-env", metavar="VAR", help=key_env_help)
    parser.add_argument(
        "--key-encoding",
        choices=get_args(rs.SecretEncoding),
        default=None,
        help="how the secrets are written (default: base64url, as keygen prints; "
        "standard base64 or hex is refused unless named here)",
    )


def read_keys(name: str, encoding: rs.SecretEncoding | None) -> rs.KeyRing | None:
    """The ring of the secrets in the variable ``name``; ``None`` once the reason it has none is on stderr.

    The reason names the variable and the fix, never the value.
    """
    try:
        return rs.KeyRing.from_env(name, encoding=encoding)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return None
