"""Running a probe: connect to each worker, set up, run the checks into a report; and the command
line's run of it, which prints the report."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import Final, TextIO
from urllib.parse import urlsplit

import anyio

from ._checks import run_checks
from ._connect import connect, connection, in_memory, inside, leaf, reason
from ._discover import set_up
from ._guess import check_wordlists
from ._junit import write_junit
from ._plan import Plan, Worker
from ._report import EXIT_SETUP, ProbeOptions, Report, Target, escape
from ._server_log import kept_back, last_lines, logs_to
from ._session import ProbeError, Session
from ._transport import ProtocolBreak

DEFAULT_TIMEOUT: Final = 60.0
REPLAY_CONNECTIONS: Final = 7
"""New connections a refused replay is sent over, under ``single_use``, when the server is one URL: where a
load balancer places each new connection on one of n workers at random, all 7 land on the worker that
redeemed the state with a chance of (1/n)**7 (1/128 for 2 workers: a guard per worker is caught 99.2% of
the time); round robin sends the very next connection to another worker. A balancer with client-IP
affinity sends all 7 to the same worker: the report's ``coverage`` says that one address proves no more."""
ONE_ADDRESS: Final = (
    "one address: the checks reached only the workers behind it that the probe's connections landed on, "
    "and the probe cannot tell which or how many (a balancer with client-IP affinity, such as nginx "
    "ip_hash or a Kubernetes Service with sessionAffinity: ClientIP, sends them all to one); to check "
    "every worker, give each worker's URL (--url once per worker) or start the server once per worker "
    "(--workers N)"
)
_DEFAULTS: Final = ProbeOptions()
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


async def probe(
    target: Target,
    options: ProbeOptions = _DEFAULTS,
    *,
    timeout: float | None = None,
    server_log: TextIO | None = None,
    progress: TextIO | None = None,
) -> Report:
    """Probe the server at ``target``; raises ``ProbeError`` when it cannot (exit code 2).

    ``timeout`` bounds the probe's own work (``TimeoutError``); the expiry check's wait comes
    on top. ``server_log`` receives the stderr of a server spawned over stdio (its last lines),
    or, for a server object probed in this process, the log lines of ``requeststate`` (each
    refusal the probe provokes logs one). Without it, the probe keeps them back itself, with the
    SDK's and FastMCP's loggers silenced meanwhile, and a ``ProbeError`` or ``TimeoutError`` it
    raises ends with their last lines (escaped for a terminal, as is its message). ``progress``,
    if given, receives a line per check as it runs, with its time. A server that breaks the
    protocol (stdout that is not JSON-RPC, a message past the probe's bounds) ends the probe
    with ``ProbeError``, never with a verdict on its state.
    """
    if server_log is not None:
        return await _probe_logged(target, options, timeout, server_log, progress)
    with kept_back() as log:
        try:
            return await _probe_logged(target, options, timeout, log, progress)
        except ProbeError as error:
            raise ProbeError(escape(str(error)) + last_lines(log)) from None
        except TimeoutError:
            bound = "" if timeout is None else f" after {timeout:g} s"
            raise TimeoutError(f"the probe timed out{bound}{last_lines(log)}") from None


async def _probe_logged(
    target: Target,
    options: ProbeOptions,
    timeout: float | None,
    server_log: TextIO,
    progress: TextIO | None,
) -> Report:
    if not target.command and target.url is None and target.server is None:
        raise ProbeError("name a server: a command after --, or --url")
    for named in (target, options.second, *options.workers):
        if named is not None and named.server is not None:
            in_memory(named.server)  # a server object the probe cannot connect: said before connecting
    twice = _named_twice((target, *options.workers))
    if twice is not None:
        raise ProbeError(twice)
    unreadable = check_wordlists(options.wordlists)
    if unreadable is not None:
        raise ProbeError(unreadable)
    try:
        with anyio.fail_after(timeout) as scope, logs_to(server_log, in_process=target.server is not None):

            def extend(seconds: float) -> None:
                scope.deadline += seconds

            return await _probe(target, options, extend, server_log, progress)
    except Exception as error:
        # Raised through a transport's task group, an error comes wrapped: the server's fault first.
        found = inside(error, ProtocolBreak) or inside(error, ProbeError)
        if found is None:
            raise
        raise ProbeError(str(found)) from None


def _named_twice(targets: Sequence[Target]) -> str | None:
    """Why ``targets`` name one worker twice, if they do: a replay from it to itself would pass as one
    across the fleet. A command named again is another process (``--workers``), not the same one."""
    seen: set[object] = set()
    for target in targets:
        if target.url is not None:
            address: object = _address(target.url)
            said = f"{target.url} is given twice"
        elif target.server is not None:
            address = id(target.server)
            said = f"the same {type(target.server).__name__} object is given twice"
        else:
            continue
        if address in seen:
            return f"{said}: name each worker of the deployment once (--url once per worker)"
        seen.add(address)
    return None


def _address(url: str) -> tuple[str, str, int | None, str, str]:
    """A URL as a worker's address: its scheme and host in lower case, its port spelled out."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # not a port: the URL as it is names the worker, httpx2 says what is wrong
        port = None
    return scheme, (parts.hostname or ""), port or _DEFAULT_PORTS.get(scheme), parts.path or "/", parts.query


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
    names = [_worker_name(worker, number) for number, worker in enumerate(targets, start=1)]
    async with AsyncExitStack() as stack:
        # Raised in here, an error would reach the caller wrapped in the transports' exception
        # groups: keep it until the connections are closed.
        try:
            clients = [
                await stack.enter_async_context(
                    connect(worker, server_log, where=_where(worker, name, len(targets)))
                )
                for worker, name in zip(targets, names, strict=True)
            ]
            session, found = await set_up(clients[0], report, options)
            if progress is not None:
                progress.write(
                    f"probing {len(found.scopes)} states of {len(found.endpoints)} tools, prompts or "
                    f"resources ({time.monotonic() - started:.1f} s to set up)\n"
                )
            workers = [
                Worker(name, Session(client, loose=session.loose))
                for name, client in zip(names, clients, strict=True)
            ]
            report.workers = names if len(workers) > 1 else []
            # One URL may front several workers: a replay is sent again over new connections. With
            # several workers named, the fleet rows replay across them instead.
            behind_one_address = target.url is not None and len(workers) == 1
            report.coverage = ONE_ADDRESS if behind_one_address else ""
            second = options.second
            plans = [
                Plan(
                    session,
                    scope,
                    found.other,
                    options,
                    extend,
                    again=partial(connection, target, server_log, session.loose),
                    second=None if second is None else partial(connection, second, server_log, session.loose),
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


def _where(target: Target, name: str, workers: int) -> str:
    """A worker as an error names it: ``worker http://10.0.0.2:8000/mcp``, ``worker 2``; or ``the
    server``, the only one."""
    if workers == 1:
        return "the server"
    return f"worker {name}" if target.url is not None else name


def run(
    target: Target,
    options: ProbeOptions = _DEFAULTS,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    as_json: bool = False,
    junit: Path | None = None,
    out: TextIO,
    err: TextIO,
    progress: TextIO | None = None,
) -> int:
    """Run the probe, print the table (or JSON) to ``out`` and errors to ``err``; return the exit code.

    ``timeout`` bounds the probe's own work; the expiry check's wait comes on top. ``junit``, if
    given, is a file the verdicts are written to as JUnit XML, once the probe has a report (a probe
    that cannot run writes none). ``progress`` receives a line per check as it runs (the command
    line passes its stderr when that is a terminal and the report is not JSON). The exit code is
    never 1 unless a check FAILed: a probe that cannot finish, whatever the server did, exits 2.
    """

    async def bounded() -> Report:
        return await probe(target, options, timeout=timeout, progress=progress)

    try:
        report = anyio.run(bounded)
    except (ProbeError, TimeoutError) as error:  # escaped, with the server's last log lines
        print(f"error: {error}", file=err)
        return EXIT_SETUP
    except Exception as error:  # a bug of ours must not read as a FAIL (exit 1) in CI
        said = escape(reason(leaf(error)).partition("\n")[0][:200])
        print(f"error: the probe failed ({said}): a bug in the probe, please report it", file=err)
        return EXIT_SETUP
    if junit is not None:
        try:
            write_junit(report, junit)
        except OSError as error:
            print(f"error: cannot write the JUnit report: {error}", file=err)
            return EXIT_SETUP
    if as_json:
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=True), file=out)
    else:
        print(report.table(), file=out)
    return report.exit_code
