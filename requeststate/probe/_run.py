"""Entry points: connect, find what to probe, check the baseline, run the checks, print the report."""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Final, TextIO

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer, Server
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ._checks import run_checks
from ._decode import parse_json, split_prefix
from ._guess import check_wordlists
from ._placeholders import answers, elicitation_callback, list_roots_callback, sampling_callback
from ._plan import Plan, Worker
from ._report import EXIT_SETUP, ProbeOptions, Report, Scope, Target, escape
from ._session import (
    Endpoint,
    Outcome,
    ProbeError,
    Session,
    TransportFailure,
    all_tools,
    asks,
    attempt,
    candidates,
    error_text,
    signature,
    tool_candidate,
)
from ._transport import BoundedTransport, ProtocolBreak, stdio

DEFAULT_TIMEOUT: Final = 60.0
REPLAY_CONNECTIONS: Final = 7
"""New connections a refused replay is sent over, under ``single_use``, when the server is one URL: where a
load balancer spreads connections over n workers at random, all 7 land on the worker that redeemed the
state with a chance of (1/n)**7 (1/128 for 2 workers: a guard per worker is caught 99.2% of the time);
round robin sends the very next connection to another worker."""
_SERVER_LOG_LINES: Final = 20
_UNAUTHORIZED: Final = frozenset({401, 403})
_DEFAULTS: Final = ProbeOptions()


@dataclass
class _HTTPStatus:
    """The statuses an HTTP server answered with, to explain a refused connection."""

    seen: set[int] = field(default_factory=set)

    async def __call__(self, response: httpx2.Response) -> None:
        self.seen.add(response.status_code)


@asynccontextmanager
async def _connect(target: Target, server_log: TextIO) -> AsyncIterator[Client]:
    statuses = _HTTPStatus()
    async with AsyncExitStack() as stack:
        if target.url is not None:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=dict(target.headers),
                    event_hooks={"response": [statuses]},
                    transport=BoundedTransport(),
                )
            )
            transport: Any = streamable_http_client(target.url, http_client=http)
        elif target.server is not None:
            transport = _in_memory(target.server)  # the SDK connects a Server or MCPServer in memory
        else:
            # The command is the user's own, as in a shell: it inherits the environment (its keys
            # included), unlike the SDK's default of a safe subset for servers an app launches.
            transport = stdio(target.command, {**os.environ, **target.env}, server_log)
        try:
            client = await stack.enter_async_context(
                Client(
                    transport,
                    cache=None,
                    elicitation_callback=elicitation_callback,
                    sampling_callback=sampling_callback,
                    list_roots_callback=list_roots_callback,
                )
            )
        except Exception as error:  # any failure to start or connect is a setup error
            denied = sorted(statuses.seen & _UNAUTHORIZED)
            if denied:
                raise ProbeError(
                    f"the server answered HTTP {denied[0]}: it wants credentials; pass them with "
                    "--header 'Authorization: Bearer ...' (repeatable, never printed)"
                ) from None
            broken = _protocol_break(error)
            if broken is not None:
                raise ProbeError(str(broken)) from None
            leaf = _leaf(error)
            if target.command and isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
                raise ProbeError(
                    "could not connect to the server: it closed its stdout before answering initialize "
                    "(did the command exit? is it an MCP server over stdio?)"
                ) from None
            raise ProbeError(f"could not connect to the server: {_reason(leaf)}") from None
        yield client


@asynccontextmanager
async def _session(target: Target, server_log: TextIO, loose: bool) -> AsyncIterator[Session]:
    """Another connection, for the checks that need one; its failures surface outside the transport."""
    failure: Exception | None = None
    async with _connect(target, server_log) as client:
        try:
            yield Session(client, loose=loose)
        except (TransportFailure, MCPError) as error:  # keep it out of the transport's exception group
            failure = error
    if failure is not None:
        raise failure


def _in_memory(server: object) -> MCPServer[Any] | Server[Any]:
    """The SDK server to connect in memory: ``server``, or the SDK ``Server`` a FastMCP serves through.

    A FastMCP (>= 4.1) wraps an SDK ``Server`` (``_mcp_server``) whose lifespan enters FastMCP's
    own, so the SDK's memory transport runs it as FastMCP's does. FastMCP is never imported
    here: a server can only be a FastMCP if its module is loaded already.
    """
    if isinstance(server, MCPServer | Server):
        return server
    fastmcp = getattr(sys.modules.get("fastmcp.server.server"), "FastMCP", None)
    if isinstance(fastmcp, type) and isinstance(server, fastmcp):
        served = getattr(server, "_mcp_server", None)
        if isinstance(served, Server):
            return served
        version = getattr(sys.modules.get("fastmcp"), "__version__", "unknown")
        raise ProbeError(
            f"this FastMCP ({version}) serves through no MCP SDK Server: the probe connects to "
            "fastmcp >= 4.1 in process (or probe it over stdio or HTTP)"
        )
    raise ProbeError(
        f"server must be an mcp MCPServer or Server, or a fastmcp FastMCP, not {type(server).__name__}"
    )


def _leaf(error: BaseException) -> BaseException:
    """The one exception inside nested groups of one (a task group's wrapping), else ``error``."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def _protocol_break(error: BaseException) -> ProtocolBreak | None:
    """The ``ProtocolBreak`` in ``error`` or its groups: the server's fault, whatever else then broke."""
    if isinstance(error, ProtocolBreak):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _protocol_break(inner)
            if found is not None:
                return found
    return None


def _reason(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}" if str(error) else text


async def probe(
    target: Target,
    options: ProbeOptions = _DEFAULTS,
    *,
    timeout: float | None = None,
    server_log: TextIO,
    progress: TextIO | None = None,
) -> Report:
    """Probe the server at ``target``; raises ``ProbeError`` when it cannot (exit code 2).

    ``timeout`` bounds the probe's own work (``TimeoutError``); the expiry check's wait comes
    on top. ``server_log`` receives the stderr of a server spawned over stdio (its last lines),
    or, for a server object probed in this process, the log lines of ``requeststate`` (each
    refusal the probe provokes logs one). ``progress``,
    if given, receives a line per check as it runs, with its time. A server that breaks the
    protocol (stdout that is not JSON-RPC, a message past the probe's bounds) ends the probe
    with ``ProbeError``, never with a verdict on its state.
    """
    if not target.command and target.url is None and target.server is None:
        raise ProbeError("name a server: a command after --, or --url")
    for named in (target, options.second, *options.workers):
        if named is not None and named.server is not None:
            _in_memory(named.server)  # a server object the probe cannot connect: said before connecting
    unreadable = check_wordlists(options.wordlists)
    if unreadable is not None:
        raise ProbeError(unreadable)
    try:
        with anyio.fail_after(timeout) as scope, _logs_to(server_log, in_process=target.server is not None):

            def extend(seconds: float) -> None:
                scope.deadline += seconds

            return await _probe(target, options, extend, server_log, progress)
    except Exception as error:
        broken = _protocol_break(error)
        if broken is None:
            raise
        raise ProbeError(str(broken)) from None


async def _probe(
    target: Target,
    options: ProbeOptions,
    extend: Callable[[float], None],
    server_log: TextIO,
    progress: TextIO | None,
) -> Report:
    report = Report(target)
    failure: ProbeError | None = None
    started = time.monotonic()
    targets = (target, *options.workers)
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(_connect(worker, server_log)) for worker in targets]
        # Raised in here, an error would reach the caller wrapped in the transports' exception
        # groups: keep it until the connections are closed.
        try:
            session, found = await _set_up(clients[0], report, options)
            if progress is not None:
                progress.write(
                    f"probing {len(found.scopes)} states of {len(found.endpoints)} tools, prompts or "
                    f"resources ({time.monotonic() - started:.1f} s to set up)\n"
                )
            workers = [
                Worker(_worker_name(worker, number), Session(client, loose=session.loose))
                for number, (worker, client) in enumerate(zip(targets, clients, strict=True), start=1)
            ]
            report.workers = [worker.name for worker in workers] if len(workers) > 1 else []
            # One URL may front several workers: a replay is sent again over new connections. With
            # several workers named, the fleet rows replay across them instead.
            behind_one_address = target.url is not None and len(workers) == 1
            second = options.second
            plans = [
                Plan(
                    session,
                    scope,
                    found.other,
                    options,
                    extend,
                    again=partial(_session, target, server_log, session.loose),
                    second=None if second is None else partial(_session, second, server_log, session.loose),
                    primary=not index,
                    workers=workers if len(workers) > 1 else (),
                    fresh_connections=REPLAY_CONNECTIONS if behind_one_address and not index else 0,
                )
                for index, scope in enumerate(found.scopes)
            ]
            await run_checks(plans, report, progress)
        except ProbeError as error:
            failure = error
    if failure is not None:
        raise failure
    return report


def _worker_name(target: Target, number: int) -> str:
    """A worker as the report names it: its URL, else its place in the fleet."""
    return target.url if target.url is not None else f"worker {number}"


@dataclass
class _Found:
    """What discovery found: the endpoints to probe, another for the cross-target check, and each
    round to probe."""

    endpoints: list[Endpoint]
    other: Endpoint | None
    scopes: list[Endpoint] = field(default_factory=list)  # each a round of an endpoint, walked to it


async def _set_up(client: Client, report: Report, options: ProbeOptions) -> tuple[Session, _Found]:
    report.protocol = client.protocol_version
    report.server = client.server_info.name if client.server_info is not None else ""
    if report.protocol not in MODERN_PROTOCOL_VERSIONS:
        raise ProbeError(
            f"the server negotiated protocol {report.protocol}; input-required results need "
            f"{' or '.join(MODERN_PROTOCOL_VERSIONS)}"
        )
    session = Session(client)
    try:
        endpoints, other, untried = await _find(
            session, options.tools, options.arguments, options.max_targets
        )
        first = endpoints[0]
        report.kind, report.tool, report.arguments = first.kind, first.name, first.arguments
        report.asks = asks(first.first)
        report.other_tool = other.label() if other is not None else None
        assert first.first.request_state is not None
        report.state = _describe_state(first.first.request_state)
        found = _Found(endpoints, other)
        walked: list[str] = []
        for endpoint in endpoints:
            await _restart(session, endpoint)
            rounds, cut = await _rounds(
                session, endpoint, options.max_rounds, report, primary=endpoint is first
            )
            found.scopes += rounds
            walked.append(_walked(endpoint, len(rounds), cut))
        if other is not None and other not in endpoints:
            await _restart(session, other)
    except (TransportFailure, MCPError) as error:
        text = error_text(error) if isinstance(error, MCPError) else str(error)
        raise ProbeError(f"setting up the probe failed: {text}") from None
    report.budget = (
        f"{len(found.scopes)} states: {'; '.join(walked)} (budget: {options.max_targets} tools, prompts "
        f"or resources, {options.max_rounds} rounds each"
        + ("; reached, others not tried: --max-targets" if untried else "")
        + ")"
    )
    return session, found


def _walked(endpoint: Endpoint, rounds: int, cut: bool) -> str:
    """``tool book_table, rounds 1-2``: what of one endpoint was probed."""
    if not rounds:
        return f"{endpoint.label()}, none"
    shown = "round 1" if rounds == 1 else f"rounds 1-{rounds}"
    return f"{endpoint.label()}, {shown}" + (" (cut: --max-rounds)" if cut else "")


async def _find(
    session: Session, wanted: tuple[str, ...], arguments: dict[str, Any] | None, budget: int
) -> tuple[list[Endpoint], Endpoint | None, bool]:
    """What to probe: the named tools, else every tool, prompt and resource that answers
    input-required, up to ``budget``; another one for the cross-target check (with one tool named,
    the first other that answers); and whether the budget left some untried."""
    tools = await all_tools(session.client)
    pool = await candidates(session.client, tools, None if wanted else arguments)
    found: list[Endpoint] = []
    for name in wanted:
        named = [tool for tool in tools if tool.name == name]
        if not named:
            raise ProbeError(f"the server lists no tool named {name!r}")
        endpoint = await attempt(session, tool_candidate(named[0], arguments))
        if not isinstance(endpoint, Endpoint):
            raise ProbeError(
                f"tool {name!r} answered no input-required with a requestState to "
                + ("these arguments" if arguments is not None else "placeholder arguments")
                + "; pass --arguments JSON"
                + _answered([endpoint])
            )
        found.append(endpoint)
    pool = [c for c in pool if (c[0], c[1]) not in {("tool", name) for name in wanted}]
    probed = len(wanted) if wanted else budget
    errors: list[str] = []
    tried = 0
    for candidate in pool:
        if len(found) >= max(
            probed, 2
        ):  # one more than is probed when that is one: for the cross-target check
            break
        tried += 1
        endpoint = await attempt(session, candidate)
        if isinstance(endpoint, Endpoint):
            found.append(endpoint)
        else:
            errors.append(endpoint)
    if not found:
        raise ProbeError(
            "no listed tool, prompt or resource answered input-required with a requestState"
            + (" to these arguments" if arguments is not None else " to placeholder arguments")
            + "; name a tool with --tool and pass --arguments JSON"
            + _answered(errors)
        )
    other = found[1] if len(found) > 1 else None
    untried = not wanted and (len(found) > probed or tried < len(pool))
    return found[:probed], other, untried


def _answered(errors: list[str]) -> str:
    """The JSON-RPC errors met on the way to a first round (the first three), for the message."""
    named = [error for error in errors if error][:3]
    return f" (the server answered {'; '.join(named)})" if named else ""


def _describe_state(token: str) -> str:
    prefix, rest = split_prefix(token)
    if prefix:
        shape = f"{prefix} token, {rest.count('.') + 2} parts"
    elif parse_json(token) is not None:
        shape = "JSON text"
    else:
        shape = "no prefix"
    return f"{shape}, {len(token)} characters"


async def _restart(session: Session, target: Endpoint) -> None:
    """Learn what a re-elicit of ``target`` looks like: its first round's questions, compared in full,
    or by keys and methods where two first rounds differ (a nonce in a message)."""
    second, _ = await session.new_round(replace(target, round=1))
    if signature(second, loose=False) != signature(target.first, loose=False):
        session.loose = True
    target.restart = signature(target.first, loose=session.loose)


async def _rounds(
    session: Session, endpoint: Endpoint, most: int, report: Report, *, primary: bool
) -> tuple[list[Endpoint], bool]:
    """Walk ``endpoint``'s flow with placeholder answers, up to ``most`` rounds: each round whose
    unmodified state is accepted, and told apart from a re-elicit, is one to probe; and whether the
    flow went on past ``most``.

    The primary endpoint's first round must be (``ProbeError`` otherwise: nothing can be judged);
    a later round, or another endpoint, that is not is left out, the report saying why.
    """
    rounds: list[Endpoint] = []
    result = endpoint.first
    for number in range(1, most + 1):
        scope = replace(endpoint, first=result, round=number)
        assert result.request_state is not None
        described = _describe_state(result.request_state)
        outcome = await session.echo(scope, result.request_state, answers(result.input_requests))
        if outcome.restarted or not outcome.accepted:
            if primary and number == 1:
                raise ProbeError(_unjudgeable(outcome))
            reason = "it re-elicits" if outcome.restarted else outcome.detail.removeprefix("refused: ")
            refused = f"not probed: its unmodified state is refused ({reason})"
            report.scopes.append(Scope(scope.scope(), described, refused, probed=False))
            return rounds, False
        baseline = "the unmodified state is " + outcome.detail
        if primary and number == 1:
            report.baseline = baseline
        report.scopes.append(Scope(scope.scope(), described, baseline))
        rounds.append(scope)
        following = outcome.following
        if following is None or following.request_state is None:
            return rounds, False
        result = following
    return rounds, True


def _unjudgeable(outcome: Outcome) -> str:
    """Why the first state probed cannot be judged."""
    if outcome.restarted:
        return (
            "the server answers the unmodified state exactly as a call without requestState (it asks "
            "the same again), so a re-elicit cannot be told from acceptance: name a tool whose next "
            "round differs (--tool, --arguments)"
        )
    return (
        f"the unmodified state is not accepted ({outcome.detail.removeprefix('refused: ')}), so no "
        "mutation can be judged: check the server's keys and the tool's arguments (--arguments)"
    )


def _tail(log: TextIO) -> str:
    log.seek(0)
    lines = log.read().splitlines()[-_SERVER_LOG_LINES:]
    return "\n".join(f"  | {escape(line)}" for line in lines)


@contextmanager
def _logs_to(server_log: TextIO, *, in_process: bool) -> Iterator[None]:
    """For a server in this process, the ``requeststate`` logger's lines go to ``server_log`` alone."""
    if not in_process:
        yield
        return
    logger = logging.getLogger("requeststate")
    handler = logging.StreamHandler(server_log)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    saved = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.propagate = saved
        logger.removeHandler(handler)


@contextmanager
def _sdk_quiet() -> Iterator[None]:
    """The SDK's logger silenced: the probe reports what went wrong itself, without a traceback."""
    logger = logging.getLogger("mcp")
    saved = logger.level
    logger.setLevel(logging.CRITICAL + 1)  # its modules' loggers inherit the level (disabled does not)
    try:
        yield
    finally:
        logger.setLevel(saved)


def run(
    target: Target,
    options: ProbeOptions = _DEFAULTS,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    as_json: bool = False,
    out: TextIO,
    err: TextIO,
    progress: TextIO | None = None,
) -> int:
    """Run the probe, print the table (or JSON) to ``out`` and errors to ``err``; return the exit code.

    ``timeout`` bounds the probe's own work; the expiry check's wait comes on top. ``progress``
    receives a line per check as it runs (the command line passes its stderr when that is a
    terminal and the report is not JSON). The exit code is never 1 unless a check FAILed: a
    probe that cannot finish, whatever the server did, exits 2.
    """

    async def bounded() -> Report:
        return await probe(target, options, timeout=timeout, server_log=server_log, progress=progress)

    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as server_log, _sdk_quiet():
        try:
            report = anyio.run(bounded)
        except (ProbeError, TimeoutError) as error:
            message = (
                str(error) if isinstance(error, ProbeError) else f"the probe timed out after {timeout:g} s"
            )
            print(f"error: {escape(message)}", file=err)
            tail = _tail(server_log)
            if tail:
                print(f"the server's stderr (last lines):\n{tail}", file=err)
            return EXIT_SETUP
        except Exception as error:  # a bug of ours must not read as a FAIL (exit 1) in CI
            reason = escape(_reason(_leaf(error)).partition("\n")[0][:200])
            print(
                f"error: the probe failed ({reason}): a bug in the probe, please report it",
                file=err,
            )
            return EXIT_SETUP
    if as_json:
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=True), file=out)
    else:
        print(report.table(), file=out)
    return report.exit_code
