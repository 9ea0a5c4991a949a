"""The ``requeststate`` command line: keygen, inspect, mint, probe, bench, demo.

Exit codes: 0 success (for ``inspect``, a token that verifies or was only
read), 1 a token refused or unreadable (for ``probe``, at least one FAIL),
2 a usage or configuration error (for ``probe``, also a server that did not
start or offers no input-required tool), 141 (128 + SIGPIPE) when the reader
of stdout went away (``requeststate demo | head``). Results go to stdout,
errors to stderr. ``inspect``, ``mint``, ``bench`` and ``demo`` live in
modules of their own (``_cli_*``); the parser, keygen and probe live here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import __version__
from ._base64 import b64encode
from ._cli_bench import BENCH_NEEDS_CHECKOUT, add_bench, checkout_benchmarks, run_bench
from ._cli_demo import run_demo
from ._cli_inspect import add_inspect, run_inspect
from ._cli_mint import add_mint, run_mint
from ._cli_shared import EXIT_BROKEN_PIPE, EXIT_OK, EXIT_USAGE
from ._secrets import MIN_SECRET_BYTES

__all__ = ["main"]

# keygen's ceiling: far above any useful secret (HKDF reads it whole), far below a MemoryError.
MAX_SECRET_BYTES = 1024


def _keygen(args: argparse.Namespace) -> int:
    print(b64encode(os.urandom(args.bytes)))
    return EXIT_OK


_PROBE_NEEDS_MCP = "requeststate probe needs the mcp extra: pip install 'requeststate[mcp]'"


def _probe(args: argparse.Namespace) -> int:
    if bool(args.server_command) == (args.url is not None):
        print("error: name the server either as a command after -- or with --url", file=sys.stderr)
        return EXIT_USAGE
    if (args.header or args.header2) and args.url is None:
        print("error: --header and --header2 apply to --url only", file=sys.stderr)
        return EXIT_USAGE
    if args.env2 and args.url is not None:
        print("error: --env2 applies to a command only (use --header2 with --url)", file=sys.stderr)
        return EXIT_USAGE
    try:
        from . import probe
    except ModuleNotFoundError as missing:  # the mcp extra (mcp, mcp_types, anyio, httpx2) is absent
        if (missing.name or "").partition(".")[0] in ("mcp", "mcp_types", "anyio", "httpx2"):
            print(_PROBE_NEEDS_MCP, file=sys.stderr)
            return EXIT_USAGE
        raise
    target = probe.Target(command=tuple(args.server_command), url=args.url, headers=dict(args.header))
    second = None
    if args.header2 or args.env2:
        second = probe.Target(target.command, target.url, headers=dict(args.header2), env=dict(args.env2))
    options = probe.Options(
        tool=args.tool,
        arguments=args.arguments,
        single_use=args.single_use,
        require_confidential=args.require_confidential,
        ttl=args.ttl,
        second=second,
        wordlists=tuple(args.wordlist),
    )
    return probe.run(
        target,
        options,
        timeout=args.timeout,
        as_json=args.json,
        out=sys.stdout,
        err=sys.stderr,
        progress=sys.stderr if sys.stderr.isatty() and not args.json else None,
    )


def _json_object(text: str) -> dict[str, object]:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not JSON: {error}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("tool arguments must be a JSON object")
    return value


def _header(text: str) -> tuple[str, str]:
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise argparse.ArgumentTypeError("a header is NAME: VALUE")
    return name.strip(), value.strip()


def _variable(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError("an environment variable is NAME=VALUE")
    return name, value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        # Shared by --timeout and --ttl: argparse names the option before the message.
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {text!r}")
    return value


def _secret_bytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of bytes: {text!r}") from None
    if not MIN_SECRET_BYTES <= value <= MAX_SECRET_BYTES:
        raise argparse.ArgumentTypeError(f"a secret is {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} bytes")
    return value


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": lambda args: run_demo(sys.stdout),
    "keygen": _keygen,
    "inspect": run_inspect,
    "mint": run_mint,
    "probe": _probe,
    "bench": run_bench,
}


def _parser(*, with_bench: bool) -> argparse.ArgumentParser:
    # bench is a command only where it works: in a checkout, beside its benchmarks.
    parser = argparse.ArgumentParser(
        prog="requeststate",
        description="Integrity-protected, optionally encrypted MCP requestState tokens.",
        epilog="exit codes: 0 success, 1 token refused or unreadable (probe: a FAIL), "
        "2 usage or configuration error",
    )
    parser.add_argument("--version", action="version", version=f"requeststate {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("demo", help="mint and verify tokens in each mode, and show refusals")
    keygen = commands.add_parser(
        "keygen",
        help="print a new random secret (base64url), for REQUESTSTATE_KEYS",
        description="Print a new secret from the OS CSPRNG as unpadded base64url. Put it first in "
        "REQUESTSTATE_KEYS (comma-separated, newest first) on every server that shares the tokens.",
    )
    keygen.add_argument(
        "--bytes",
        type=_secret_bytes,
        default=32,
        help=f"secret size in bytes (default 32, from {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES})",
    )
    add_inspect(commands)
    add_mint(commands)
    _add_probe(commands)
    if with_bench:
        add_bench(commands)
    return parser


def _add_probe(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    probe = commands.add_parser(
        "probe",
        help="check any MCP server's requestState handling, black-box (needs the mcp extra)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="requeststate probe [options] -- COMMAND [ARG ...]\n"
        "       requeststate probe [options] --url URL",
        description="""\
Connect to an MCP server (protocol 2026-07-28), find a tool, prompt or
resource that answers input-required with a requestState, and attack it as a
client without the key would, each attempt on a fresh first round: single
bits flipped across the decoded token, truncated, extended, the MAC/tag
removed or truncated, the prefix swapped, a random state; every member of a
readable state forged (JSON, form text, base64, hex, zlib or gzip, behind any
prefix), an unkeyed hash recomputed, the MAC key guessed from common secrets
(--wordlist adds yours), a JWT re-signed with alg none; the token re-spelled
(padding, alphabet); a genuine state sent with other arguments, to another
target, as another user (--header2, --env2), after it expired (--ttl), twice;
and whether the client can read it.

A check FAILs when the server accepts: it answers with a normal result, or
with an input-required that moves on; the row names the flaw that proves. It
PASSes on a JSON-RPC error or a re-elicit: an input-required that asks exactly
what a call without requestState asks. A tool error result (isError) or a
-32603 is a WARN, not a PASS: a handler crashing on the state answers the same
way; on the random row it is a FAIL (a state never minted reached the
handler). So is another spelling of the same token accepted, unless another
row found the state's integrity broken. A PASS proves that attempt was
refused, not that the state cannot be forged. The probe first checks that the
unmodified state is accepted and answered differently from a first call; if
not, it stops (exit 2). So does a server that breaks the protocol or sends
more than the probe reads (a message over 4 MiB or 50,000 JSON values). On a
terminal, a line per check shows on stderr as it runs.

Without --tool, tools, then prompts and resources, are tried in turn with
placeholder arguments (tools annotated destructiveHint: true are skipped):
point the probe at a test instance, never at production. A spawned server
inherits this environment and its stderr is kept back, shown only if the
probe cannot run.""",
        epilog="exit codes: 0 no FAIL, 1 at least one FAIL, 2 a usage error, a server that\n"
        "did not start or offers no input-required tool, or a check that could not\n"
        "complete (ERROR)",
    )
    probe.add_argument(
        "server_command",
        nargs="*",
        metavar="COMMAND",
        help="the command that starts the server over stdio, after --",
    )
    probe.add_argument("--url", help="a streamable HTTP endpoint instead, e.g. http://127.0.0.1:8000/mcp")
    for flag, help_text in (
        (
            "--header",
            "an HTTP header for --url, e.g. 'Authorization: Bearer ...' (repeatable; never printed)",
        ),
        (
            "--header2",
            "the headers of a second identity, for the other-user check (repeatable; never printed)",
        ),
    ):
        probe.add_argument(
            flag, action="append", type=_header, default=[], metavar="'NAME: VALUE'", help=help_text
        )
    probe.add_argument(
        "--env2",
        action="append",
        type=_variable,
        default=[],
        metavar="NAME=VALUE",
        help="start a second server process with this added to its environment, as a second identity "
        "for the other-user check (repeatable; never printed)",
    )
    probe.add_argument(
        "--ttl",
        type=_seconds,
        metavar="SECONDS",
        help="the server's state lifetime: the expiry check waits it out (default: the exp a readable "
        "state carries, if within 10 s)",
    )
    probe.add_argument("--tool", metavar="NAME", help="probe this tool instead of searching for one")
    probe.add_argument(
        "--arguments",
        type=_json_object,
        metavar="JSON",
        help="the tool's arguments as a JSON object (default: placeholders for its required properties)",
    )
    probe.add_argument(
        "--single-use", action="store_true", help="FAIL, not INFO, when a state can be redeemed twice"
    )
    probe.add_argument(
        "--require-confidential",
        action="store_true",
        help="FAIL, not INFO, when the client can read the state",
    )
    probe.add_argument(
        "--wordlist",
        action="append",
        type=Path,
        default=[],
        metavar="FILE",
        help="more secrets for the MAC key guess, one a line, tried after the built-in list of common "
        "secrets (repeatable; at most 5 s of guessing)",
    )
    probe.add_argument(
        "--json",
        action="store_true",
        help="print a JSON report instead of the table (and no progress lines)",
    )
    probe.add_argument(
        "--timeout",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help="bound on the probe's own work (default 60); the --ttl wait comes on top, and stopping "
        "a server it started can take up to 6 s more",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    with_bench = checkout_benchmarks()
    if arguments[:1] == ["bench"] and not with_bench:
        print(BENCH_NEEDS_CHECKOUT, file=sys.stderr)
        return EXIT_USAGE
    parser = _parser(with_bench=with_bench)
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
