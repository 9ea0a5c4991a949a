"""``requeststate probe``: its options, and the run of ``requeststate.probe`` they configure."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ._shared import EXIT_USAGE

__all__ = ["add_probe", "run_probe"]


def run_probe(args: argparse.Namespace) -> int:
    """``requeststate probe``: the exit code of ``requeststate.probe.run``, or 2 for a usage error."""
    if bool(args.server_command) == bool(args.url):
        print("error: name the server either as a command after -- or with --url", file=sys.stderr)
        return EXIT_USAGE
    if (args.header or args.header2) and not args.url:
        print("error: --header and --header2 apply to --url only", file=sys.stderr)
        return EXIT_USAGE
    if args.workers is not None and args.url:
        print("error: --workers applies to a command only (give --url once per worker)", file=sys.stderr)
        return EXIT_USAGE
    if args.env2 and args.url:
        print("error: --env2 applies to a command only (use --header2 with --url)", file=sys.stderr)
        return EXIT_USAGE
    try:
        from requeststate import probe
    except ImportError as missing:
        if missing.name != "requeststate.probe":  # the probe names itself when its extra is missing
            raise
        print(f"error: {missing}", file=sys.stderr)
        return EXIT_USAGE
    headers = dict(args.header)
    if args.url:
        target, *others = (probe.Target(url=url, headers=headers) for url in args.url)
    else:
        target = probe.Target(command=tuple(args.server_command))
        others = [target] * ((args.workers or 1) - 1)  # the command started once per worker
    limits = {"max_targets": args.max_targets, "max_rounds": args.max_rounds, "racers": args.racers}
    second = None
    if args.header2 or args.env2:
        second = probe.Target(target.command, target.url, headers=dict(args.header2), env=dict(args.env2))
    options = probe.ProbeOptions(
        tools=tuple(args.tool),
        arguments=args.arguments,
        single_use=args.single_use,
        require_confidential=args.require_confidential,
        ttl=args.ttl,
        second=second,
        wordlists=tuple(args.wordlist),
        workers=tuple(others),
        exactly_once=tuple(args.exactly_once),
        **{name: limit for name, limit in limits.items() if limit is not None},  # else the probe's own
    )
    return probe.run(
        target,
        options,
        timeout=args.timeout,
        as_json=args.json,
        junit=args.junit,
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


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a positive number: {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        # Shared by --timeout and --ttl: argparse names the option before the message.
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {text!r}")
    return value


def add_probe(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``probe`` subcommand and its options."""
    probe = commands.add_parser(
        "probe",
        help="check any MCP server's requestState handling, black-box (needs the mcp extra)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="requeststate probe [options] [--workers N] -- COMMAND [ARG ...]\n"
        "       requeststate probe [options] --url URL [--url URL ...]",
        description="""\
Connect to an MCP server (protocol 2026-07-28), find every tool, prompt and
resource that answers input-required with a requestState, walk each flow to
its end with placeholder answers, and attack the state of every round as a
client without the key would, each attempt on a fresh round: single
bits flipped across the decoded token, truncated, extended, the MAC/tag
removed or truncated, the prefix swapped, a random state; every member of a
readable state forged (JSON, form text, base64, hex, zlib or gzip, behind any
prefix), an unkeyed hash recomputed, the MAC key guessed from common secrets
(--wordlist adds yours), a JWT re-signed with alg none; the token re-spelled
(padding, alphabet); a genuine state sent with other arguments, to another
target, as another user (--header2, --env2), after it expired (--ttl), twice;
and whether the client can read it. Given the workers of one deployment (--url
once per worker, or --workers N to start the command N times), a state minted
by one is sent to the others and redeemed on one then another, and every check
crosses workers; behind one URL, under --single-use, a refused replay is sent
again over 7 new connections, which reach only the workers the balancer picks
(with client-IP affinity, one): the report's coverage line says so. Under
--single-use, one state is also redeemed 8 times at once (--racers N), spread
over the workers: at most one may be accepted. --exactly-once TOOL names a
tool that answers an identical retry with its first call's answer: its final
round is retried identically (the same answer, or "in progress" and then
it), with other answers (refused), and 8 times at once (one answer).

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
not, it stops (exit 2), or, for a later round or another tool, leaves that
state out and says why. So does a server that breaks the protocol or sends
more than the probe reads (a message over 4 MiB or 50,000 JSON values). On a
terminal, a line per check shows on stderr as it runs; --junit FILE also
writes the verdicts as JUnit XML, a test case per check, for a CI system.

Without --tool, tools, then prompts and resources, are tried in turn with
placeholder arguments (tools annotated destructiveHint: true are skipped), up
to --max-targets of them, each up to --max-rounds rounds:
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
    probe.add_argument(
        "--url",
        action="append",
        default=[],
        help="a streamable HTTP endpoint instead, e.g. http://127.0.0.1:8000/mcp; given again, the "
        "workers of one deployment: states cross between them",
    )
    probe.add_argument(
        "--workers",
        type=_positive,
        metavar="N",
        help="start the command N times, as N workers of one deployment: states cross between them",
    )
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
    probe.add_argument(
        "--tool",
        action="append",
        default=[],
        metavar="NAME",
        help="probe this tool (repeatable) instead of every tool, prompt and resource that answers "
        "input-required",
    )
    probe.add_argument(
        "--max-targets",
        type=_positive,
        metavar="N",
        help="probe at most N tools, prompts and resources (the report shows the budget)",
    )
    probe.add_argument(
        "--max-rounds",
        type=_positive,
        metavar="N",
        help="walk and probe at most N rounds of each (1: the first round only; the report shows the budget)",
    )
    probe.add_argument(
        "--arguments",
        type=_json_object,
        metavar="JSON",
        help="the tool's arguments as a JSON object (default: placeholders for its required properties)",
    )
    probe.add_argument(
        "--single-use",
        action="store_true",
        help="FAIL, not INFO, when a state can be redeemed twice; and send one state's redemptions at once "
        "(--racers): more than one accepted FAILs",
    )
    probe.add_argument(
        "--racers",
        type=_positive,
        metavar="N",
        help="with --single-use, send N identical redemptions of one state at once (default 8; spread "
        "over the workers, when several): at most one may be accepted",
    )
    probe.add_argument(
        "--exactly-once",
        action="append",
        default=[],
        metavar="TOOL",
        help="TOOL is exactly-once (repeatable): probe it as --tool does, and check that an identical "
        "retry of its final round gets the first call's answer, a retry with other answers is refused, "
        "and N identical calls at once (--racers) get one answer",
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
        "--junit",
        type=Path,
        metavar="FILE",
        help="also write the verdicts to FILE as JUnit XML, a test case per check, for a CI system",
    )
    probe.add_argument(
        "--timeout",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help="bound on the probe's own work (default 60); the --ttl wait comes on top, and stopping "
        "a server it started can take up to 6 s more",
    )
