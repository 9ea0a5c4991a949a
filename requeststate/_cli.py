"""The ``requeststate`` command line: keygen, inspect, probe, bench, demo.

Exit codes: 0 success (for ``inspect``, a token that verifies or was only
read), 1 a token refused or unreadable (for ``probe``, at least one FAIL),
2 a usage or configuration error (for ``probe``, also a server that did not
start or offers no input-required tool). Results go to stdout, errors to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from ._base64 import b64decode, b64encode
from ._codec import encode, verify
from ._errors import InvalidToken
from ._keys import MIN_SECRET_BYTES, KeyRing
from ._modes import Mode, mode_of

__all__ = ["main"]

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2


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
    return EXIT_OK


def _keygen(args: argparse.Namespace) -> int:
    print(b64encode(os.urandom(args.bytes)))
    return EXIT_OK


def _read_unverified_payload(token: str) -> object:
    """The payload of a ``v1.`` token, NOT verified: what the client can read too."""
    parts = token.split(".")
    raw = b64decode(parts[1]) if len(parts) == 3 else None
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _inspect(args: argparse.Namespace) -> int:
    token: str = sys.stdin.read().strip() if args.token == "-" else args.token  # noqa: S105 (not a password)
    mode = mode_of(token)
    if mode is None:
        print("not a requeststate token: no v1., v1e. or v1x. prefix", file=sys.stderr)
        return EXIT_REFUSED
    print(f"mode:   {mode} ({token[: token.index('.') + 1]})")
    print(f"length: {len(token)} characters")
    if args.key_env is None:
        if mode is not Mode.SIGNED:
            print("state:  encrypted; pass --key-env to verify and read it")
            return EXIT_OK
        payload = _read_unverified_payload(token)
        if payload is None:
            print("payload is not readable base64url JSON", file=sys.stderr)
            return EXIT_REFUSED
        # ensure_ascii: the payload is the client's to write, so no raw control
        # characters reach the terminal.
        print("payload (UNVERIFIED: anyone can write this; pass --key-env to verify):")
        print(json.dumps(payload, indent=2, ensure_ascii=True))
        return EXIT_OK
    try:
        keys = KeyRing.from_env(args.key_env)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        state = verify(
            token, keys, mode=mode, subject=args.subject, tool=args.tool, now=args.now, leeway=args.leeway
        )
    except InvalidToken as refused:
        print(f"REFUSED: {refused.reason}")
        return EXIT_REFUSED
    print(f"VALID under {keys!r}")
    print(f"state:  {json.dumps(state, ensure_ascii=True)}")
    return EXIT_OK


def _bench(args: argparse.Namespace) -> int:
    argv = ["benchmarks", *(["--quick"] if args.quick else [])]
    saved, sys.argv = sys.argv, argv
    try:
        runpy.run_module("benchmarks", run_name="__main__", alter_sys=True)
    except ModuleNotFoundError:
        print(
            "the benchmark ships with the source tree: run this from a checkout (make bench)", file=sys.stderr
        )
        return EXIT_USAGE
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else EXIT_OK
    finally:
        sys.argv = saved
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
    )
    return probe.run(
        target,
        options,
        timeout=args.timeout,
        as_json=args.json,
        out=sys.stdout,
        err=sys.stderr,
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
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("a timeout is a positive number of seconds")
    return value


def _secret_bytes(text: str) -> int:
    value = int(text)
    if value < MIN_SECRET_BYTES:
        raise argparse.ArgumentTypeError(f"a secret is at least {MIN_SECRET_BYTES} bytes")
    return value


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": lambda args: run_demo(sys.stdout),
    "keygen": _keygen,
    "inspect": _inspect,
    "probe": _probe,
    "bench": _bench,
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="requeststate",
        description="Integrity-protected, optionally encrypted MCP requestState tokens.",
        epilog="exit codes: 0 success, 1 token refused or unreadable (probe: a FAIL), "
        "2 usage or configuration error",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("demo", help="mint and verify tokens in each mode, and show refusals")
    keygen = commands.add_parser(
        "keygen",
        help="print a new random secret (base64url), for REQUESTSTATE_KEYS",
        description="Print a new secret from the OS CSPRNG as unpadded base64url. Put it first in "
        "REQUESTSTATE_KEYS (comma-separated, newest first) on every server that shares the tokens.",
    )
    keygen.add_argument(
        "--bytes", type=_secret_bytes, default=32, help="secret size (default 32, at least 32)"
    )
    inspect = commands.add_parser(
        "inspect",
        help="show a token's mode and size; verify it with a key",
        description="Without a key: the mode, the size and, for v1. tokens, the payload marked "
        "UNVERIFIED. With --key-env: verify the token and print its state, or the refusal reason.",
    )
    inspect.add_argument(
        "token", help="the token, or - to read it from stdin (keeps it out of shell history)"
    )
    inspect.add_argument("--key-env", metavar="VAR", help="environment variable holding the secrets")
    inspect.add_argument("--subject", default="", help="the subject the token must be bound to")
    inspect.add_argument("--tool", default=None, help="the tool the token must be bound to")
    inspect.add_argument("--now", type=int, default=None, help="unix seconds to verify at (default: now)")
    inspect.add_argument("--leeway", type=int, default=0, help="seconds of clock skew tolerated")
    _add_probe(commands)
    bench = commands.add_parser("bench", help="run the benchmark (from a source checkout)")
    bench.add_argument("--quick", action="store_true", help="a short run, under 30 seconds")
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
client without the key would, each attempt on a fresh first round: one byte
flipped, truncated, extended, the MAC/tag removed or truncated, the prefix
swapped, re-padded base64, a random state; the state forged without the key
(JSON, form text, base64, hex, zlib or gzip re-encoded with a value changed,
an unkeyed hash recomputed, a JWT re-signed with alg none); a genuine state
sent with other arguments, to another target, as another user (--header2,
--env2), after it expired (--ttl), twice; and whether the client can read it.

A check FAILs when the server accepts: it answers with a normal result, or
with an input-required that moves on. It PASSes on a JSON-RPC error or a
re-elicit: an input-required that asks exactly what a call without
requestState asks. A tool error result (isError) or a -32603 is a WARN, not a
PASS: a handler crashing on the state answers the same way. A PASS proves that
attempt was refused, not that the state cannot be forged. The probe first
checks that the unmodified state is accepted and answered differently from a
first call; if not, it stops (exit 2).

Without --tool, tools, then prompts and resources, are tried in turn with
placeholder arguments (tools annotated destructiveHint: true are skipped):
point the probe at a test instance, never at production. A spawned server
inherits this environment and its stderr is kept back, shown only if the
probe cannot run.""",
        epilog="exit codes: 0 no FAIL, 1 at least one FAIL, 2 a usage error, a server that did not\n"
        "start or offers no input-required tool, or a check that could not complete (ERROR)",
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
    probe.add_argument("--json", action="store_true", help="print a JSON report instead of the table")
    probe.add_argument(
        "--timeout",
        type=_seconds,
        default=20.0,
        metavar="SECONDS",
        help="bound on the whole probe (default 20)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    args = _parser().parse_args(argv)
    return _COMMANDS[args.command](args)


def console() -> None:
    """The ``requeststate`` console script."""
    sys.exit(main())
