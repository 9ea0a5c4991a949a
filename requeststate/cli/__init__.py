"""The ``requeststate`` command line: keygen, inspect, mint, probe, bench, demo.

Exit codes: 0 success (for ``inspect``, a token that verifies or was only
read), 1 a token refused or unreadable (for ``probe``, at least one FAIL),
2 a usage or configuration error (for ``probe``, also a server that did not
start or offers no input-required tool), 141 (128 + SIGPIPE) when the reader
of stdout went away (``requeststate demo | head``). Results go to stdout,
errors to stderr. Each subcommand lives in a module of its own; the parser
lives here. Like every integration, it uses the public ``requeststate`` only.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

import requeststate as rs
from requeststate import bench

from ._demo import run_demo
from ._inspect import add_inspect, run_inspect
from ._keygen import add_keygen, run_keygen
from ._mint import add_mint, run_mint
from ._probe import add_probe, run_probe
from ._shared import EXIT_BROKEN_PIPE, EXIT_OK

__all__ = ["console", "main"]


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": lambda args: run_demo(sys.stdout),
    "keygen": run_keygen,
    "inspect": run_inspect,
    "mint": run_mint,
    "probe": run_probe,
    "bench": lambda args: bench.run(args, sys.stdout),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="requeststate",
        description="Integrity-protected, optionally encrypted MCP requestState tokens.",
        epilog="exit codes: 0 success, 1 token refused or unreadable (probe: a FAIL), "
        "2 usage or configuration error",
    )
    parser.add_argument("--version", action="version", version=f"requeststate {rs.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("demo", help="mint and verify tokens in each mode, and show refusals")
    add_keygen(commands)
    add_inspect(commands)
    add_mint(commands)
    add_probe(commands)
    bench.add_arguments(
        commands.add_parser(
            "bench",
            help="measure your configuration: encode, decode and round costs, and what a guard adds",
            description="Measure this machine's cost of your configuration: a state of your size or "
            "your sample file, your modes, the length of your key ring, and what a MemoryGuard or "
            "your Redis adds. Within --seconds (5 by default); --json for a script.",
        )
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    parser = _parser()
    args = parser.parse_args(arguments)
    if args.command is None:  # a bare `requeststate`: what it can do
        parser.print_help()
        return EXIT_OK
    return _COMMANDS[args.command](args)


def console() -> None:
    """The ``requeststate`` console script."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left (| head): end quietly. Point stdout at devnull so the
        # interpreter's final flush does not raise the same error again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_BROKEN_PIPE
    sys.exit(code)
