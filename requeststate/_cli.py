"""The ``requeststate`` command line: keygen, inspect, probe, bench, demo.

Exit codes: 0 success (for ``inspect``, a token that verifies or was only
read), 1 a token refused or unreadable (for ``probe``, at least one FAIL),
2 a usage or configuration error (for ``probe``, also a server that did not
start or offers no input-required tool), 141 (128 + SIGPIPE) when the reader
of stdout went away (``requeststate demo | head``). Results go to stdout,
errors to stderr.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import runpy
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TextIO

from . import __version__
from ._base64 import b64decode, b64encode
from ._codec import encode, verify
from ._encrypted import AeadMode
from ._errors import InvalidToken, Reason
from ._keys import KeyRing
from ._modes import Mode, mode_of, wire_modes
from ._secrets import MIN_SECRET_BYTES

__all__ = ["main"]

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141  # what a shell reports for a process killed by SIGPIPE

# keygen's ceiling: far above any useful secret (HKDF reads it whole), far below a MemoryError.
MAX_SECRET_BYTES = 1024
DEFAULT_KEY_ENV = "REQUESTSTATE_KEYS"


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
    """The payload of a ``v1.`` token, NOT verified: what the client can read too.

    ``None`` when it is not base64url JSON. Raises ``RecursionError`` for JSON
    nested too deeply to parse (the caller refuses it).
    """
    parts = token.split(".")
    raw = b64decode(parts[1]) if len(parts) == 3 else None
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _is_well_formed_sealed(token: str, mode: Mode) -> bool:
    # Only the framing: base64url of at least a nonce and a tag. Whether it
    # decrypts is for verify to say, with the key.
    (wire,) = wire_modes(mode)[1]
    body = b64decode(token[len(wire.prefix) :])
    return body is not None and isinstance(wire, AeadMode) and len(body) >= wire.shortest_blob


def _when(exp: object, now: int) -> str:
    if exp is None:
        return "not given"
    if not isinstance(exp, int) or isinstance(exp, bool):
        return "not an integer"
    try:
        stamp = datetime.datetime.fromtimestamp(exp, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        stamp = "beyond the calendar"
    left = exp - now
    return f"{stamp} (unix {exp}), " + (f"{left} s left" if left >= 0 else f"expired {-left} s ago")


def _show_claims(exp: object, token_id: object, now: int) -> None:
    print(f"expires: {_when(exp, now)}")
    # ensure_ascii: in an unverified v1. payload the id is anyone's to write, and no
    # escape sequence of theirs may reach the terminal.
    shown = json.dumps(token_id, ensure_ascii=True) if isinstance(token_id, str) else None
    print(f"id:      {shown or 'none (cannot be made single-use)'}")


def _show_unverified(token: str, mode: Mode, now: int) -> int:
    if mode is not Mode.SIGNED:
        if not _is_well_formed_sealed(token, mode):
            print(
                f"not a well-formed {_prefix(token)} token: the body is not a nonce and a tag in base64url",
                file=sys.stderr,
            )
            return EXIT_REFUSED
        print(f"mode:    {mode}")
        print(f"state:   sealed: set {DEFAULT_KEY_ENV} or pass --key-env to verify and read it,")
        print("         with its expiry and id")
        return EXIT_OK
    try:
        payload = _read_unverified_payload(token)
        # ensure_ascii: the payload is the client's to write, so no raw control
        # characters reach the terminal.
        shown = None if payload is None else json.dumps(payload, indent=2, ensure_ascii=True)
    except RecursionError:
        print("not a well-formed v1. token: its payload is JSON nested too deeply", file=sys.stderr)
        return EXIT_REFUSED
    if shown is None:
        print("not a well-formed v1. token: the payload is not readable base64url JSON", file=sys.stderr)
        return EXIT_REFUSED
    fields = payload if isinstance(payload, dict) else {}
    print(f"mode:    {mode}")
    print(f"UNVERIFIED (anyone can write this; set {DEFAULT_KEY_ENV} or pass --key-env to verify):")
    _show_claims(fields.get("exp"), fields.get("id"), now)
    print("payload:")
    print(shown)
    return EXIT_OK


class _Claims:
    """A guard that only records what verify hands a guard: the token's id and expiry.

    The public ``Guard`` protocol is how a verified token's id and ``exp`` leave
    the core; ``inspect`` claims nothing (it answers True, so nothing is refused).
    """

    token_id: str | None = None
    expires_at: int | None = None

    def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        self.token_id, self.expires_at = token_id, expires_at
        return True


def _prefix(token: str) -> str:
    return token[: token.index(".") + 1]


def _inspect(args: argparse.Namespace) -> int:
    # strip: a token pasted or read from a file often ends in a newline.
    raw: str = sys.stdin.read() if args.token == "-" else args.token  # noqa: S105 (not a password)
    token = raw.strip()
    mode = mode_of(token)
    if mode is None:
        print("not a requeststate token: no v1., v1e. or v1x. prefix", file=sys.stderr)
        return EXIT_REFUSED
    now = int(time.time()) if args.now is None else args.now
    # The mode is named only once the token is known to be well-formed (or valid):
    # "v1e.!!!!" is not an encrypted anything.
    print(f"prefix:  {_prefix(token)}")
    print(f"length:  {len(token)} characters")
    key_env = args.key_env or (DEFAULT_KEY_ENV if os.environ.get(DEFAULT_KEY_ENV, "").strip() else None)
    if key_env is None:
        return _show_unverified(token, mode, now)
    try:
        keys = KeyRing.from_env(key_env, encoding=args.key_encoding)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    claims = _Claims()
    check = partial(
        verify, token, keys, mode=mode, subject=args.subject, tool=args.tool, now=now, leeway=args.leeway
    )
    try:
        try:
            state = check(guard=claims)
        except InvalidToken as refused:
            if refused.reason is not Reason.MALFORMED:
                raise
            # With a guard, a token minted without an id (by mcp.d) is refused as
            # malformed; without one it may still verify.
            state = check()
    except InvalidToken as refused:
        print(f"REFUSED under {key_env}: {refused.reason}")
        return EXIT_REFUSED
    except ValueError as error:  # --now or --leeway out of range: verify never raises for the token
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(f"VALID under {keys!r} from {key_env}")
    print(f"mode:    {mode}")
    _show_claims(None if claims.expires_at is None else claims.expires_at - args.leeway, claims.token_id, now)
    print(f"state:   {json.dumps(state, ensure_ascii=True)}")
    return EXIT_OK


_BENCH_NEEDS_CHECKOUT = (
    "the benchmark ships with the source tree, not the wheel: run from a checkout (make bench)"
)


def _checkout_benchmarks() -> bool:
    """Whether ``benchmarks`` would import from the checkout this package came from.

    Under ``python -m`` the current directory comes first on ``sys.path``: any
    ``benchmarks`` package there would run. Only the one beside the package's
    own source is ours.
    """
    try:
        spec = importlib.util.find_spec("benchmarks")
    except (ImportError, ValueError):
        return False
    if spec is None or spec.origin is None:
        return False
    checkout = Path(__file__).resolve().parent.parent
    return Path(spec.origin).resolve().parent.parent == checkout


def _bench(args: argparse.Namespace) -> int:
    if not _checkout_benchmarks():
        print(_BENCH_NEEDS_CHECKOUT, file=sys.stderr)
        return EXIT_USAGE
    argv = ["benchmarks", *(["--quick"] if args.quick else [])]
    saved, sys.argv = sys.argv, argv
    try:
        runpy.run_module("benchmarks", run_name="__main__", alter_sys=True)
    except ImportError as missing:  # a peer or the chart library: the bench group is not installed
        print(
            f"the benchmark cannot import {missing.name or 'a module'}: run it with make bench, "
            "which installs the bench dependency group",
            file=sys.stderr,
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
        raise argparse.ArgumentTypeError("a timeout is a positive number of seconds")
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
    parser.add_argument("--version", action="version", version=f"requeststate {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
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
    inspect = commands.add_parser(
        "inspect",
        help="show a token's mode, expiry and id; verify it with a key",
        description="With a key (--key-env VAR, or REQUESTSTATE_KEYS when it is set): verify the "
        "token and print its expiry, id, time left and state, or the refusal reason. Without one: the "
        "prefix, the size and, for v1. tokens, the payload, its expiry and id marked UNVERIFIED.",
    )
    inspect.add_argument(
        "token", help="the token, or - to read it from stdin (keeps it out of shell history)"
    )
    inspect.add_argument(
        "--key-env",
        metavar="VAR",
        help=f"environment variable holding the secrets (default: {DEFAULT_KEY_ENV}, when it is set)",
    )
    inspect.add_argument(
        "--key-encoding",
        choices=["base64url", "base64", "hex"],
        default=None,
        help="how the secrets are written (default: base64url, as keygen prints; "
        "standard base64 or hex is refused unless named here)",
    )
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
way. So is another spelling of the same token accepted, unless the state has
no integrity at all. A PASS proves that attempt was refused, not that the
state cannot be forged. The probe first checks that the unmodified state is
accepted and answered differently from a first call; if not, it stops (exit
2). So does a server that breaks the protocol or sends more than the probe
reads (a message over 4 MiB or 50,000 JSON values). On a terminal, a line per
check shows on stderr as it runs.

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
        help="bound on the whole probe (default 60)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    args = _parser().parse_args(argv)
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
