"""The probe in any test suite: the ``requeststate_probe`` pytest fixture.

pytest loads this plugin by itself wherever requeststate is installed (the ``pytest11``
entry point named ``requeststate``; ``-p no:requeststate`` turns it off). The fixture
probes a server and returns the ``requeststate.probe.Report``::

    def test_request_state_is_safe(requeststate_probe):
        report = requeststate_probe(app, single_use=True)
        assert report.ok, report.summary()

``app`` is an in-process ``MCPServer``, low-level ``Server`` or ``FastMCP``; a command
(a list of str, spawned over stdio); or a streamable HTTP URL. The probe needs the ``mcp``
extra (``pip install 'requeststate[mcp]'``).

pytest imports every installed plugin, also where the ``mcp`` extra is absent: this module
imports nothing but pytest and the standard library until the fixture is used.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypedDict, TypeGuard, TypeVar, Unpack

import pytest

if TYPE_CHECKING:
    from requeststate.probe import Report, Target

__all__ = ["ProbeKeywords", "RequestStateProbe", "requeststate_probe"]

_URL_SCHEMES: Final = ("http://", "https://")
_T = TypeVar("_T")


class ProbeKeywords(TypedDict, total=False):
    """The keywords the fixture takes, in both of its forms (calling it, or awaiting ``run``)."""

    tool: str | Sequence[str] | None
    """The tool, or tools, to probe (``ProbeOptions.tools``); ``None``: every tool, prompt and resource
    that answers input-required."""
    arguments: dict[str, Any] | None
    """Their arguments (``ProbeOptions.arguments``); ``None``: placeholders."""
    single_use: bool
    """FAIL, not INFO, when a state can be redeemed twice (``ProbeOptions.single_use``)."""
    require_confidential: bool
    """FAIL, not INFO, when the client can read the state (``ProbeOptions.require_confidential``)."""
    ttl: float | None
    """The server's state lifetime: the expiry check waits it out (``ProbeOptions.ttl``)."""
    second: object | None
    """The same server as another user (any form the server takes), for the other-user check."""
    wordlists: Sequence[str | Path]
    """More secrets to guess the MAC key from (``ProbeOptions.wordlists``)."""
    max_targets: int | None
    """The most tools, prompts and resources probed (``ProbeOptions.max_targets``); ``None``: its default."""
    max_rounds: int | None
    """The most rounds of each probed (``ProbeOptions.max_rounds``); ``None``: its default."""
    exactly_once: str | Sequence[str] | None
    """The exactly-once tool, or tools (``ProbeOptions.exactly_once``): each probed, and its final round
    retried; ``None``: none."""
    racers: int | None
    """Identical redemptions of one state sent at once (``ProbeOptions.racers``); ``None``: its default."""
    headers: Mapping[str, str] | None
    """HTTP headers, for a URL only."""
    env: Mapping[str, str] | None
    """Environment variables added to a command's, for a command only."""
    timeout: float | None
    """The bound on the probe's own work; ``None``: ``requeststate.probe.DEFAULT_TIMEOUT``."""


class RequestStateProbe:
    """The ``requeststate_probe`` fixture's value: call it with a server, get the probe's ``Report``.

    Outside pytest, ``RequestStateProbe()`` is the same callable.
    """

    def __call__(self, server: object, **keywords: Unpack[ProbeKeywords]) -> Report:
        """Probe ``server`` and return the report; see ``run`` for the arguments.

        Synchronous, for a plain test. Called where an event loop already runs (an async
        test), the probe runs on a thread of its own with its own loop, and the test's loop
        waits: a server that this very loop serves (an HTTP app started in the test) cannot
        answer then; ``await requeststate_probe.run(...)`` instead.
        """
        __tracebackhide__ = True  # pytest shows the user's test and the error, not the plugin's frames
        checked = _Keywords(**keywords)
        return _call_blocking(lambda: self._run(server, checked))

    async def run(self, server: object, **keywords: Unpack[ProbeKeywords]) -> Report:
        """Probe ``server`` on the running event loop (an async test) and return the report.

        ``server``: an ``MCPServer``, low-level ``Server`` or ``FastMCP`` object (probed in
        memory), a command (a list of str, spawned over stdio, inheriting the environment and
        ``env``), a URL (``http://`` or ``https://``, streamable HTTP, with ``headers``), or a
        ``requeststate.probe.Target``; or a list of them, the workers of one deployment (a list
        of URLs, of commands, of server objects sharing their keys): states cross between them.
        ``tool`` and ``exactly_once`` (one name or several), ``arguments``, ``single_use``,
        ``require_confidential``, ``ttl``, ``wordlists``, ``max_targets``, ``max_rounds`` and
        ``racers`` are those of
        ``requeststate.probe.ProbeOptions``; ``second`` is the same server as another user
        (any form ``server`` takes), for the other-user check. ``timeout`` bounds the probe's
        own work (``requeststate.probe.DEFAULT_TIMEOUT`` by default); the expiry check's wait
        comes on top.

        Raises ``requeststate.probe.ProbeError`` when the probe cannot judge the server (it
        cannot connect, no tool answers input-required, the unmodified state is refused),
        with the server's last log lines, and ``TimeoutError``.
        """
        __tracebackhide__ = True
        return await self._probe(server, _Keywords(**keywords))

    def _run(self, server: object, keywords: _Keywords) -> Report:
        import anyio

        async def probe() -> Report:
            return await self._probe(server, keywords)

        return anyio.run(probe)

    async def _probe(self, server: object, keywords: _Keywords) -> Report:
        from requeststate import probe

        target, *workers = _targets(server, keywords.headers, keywords.env)
        limits = {
            "max_targets": keywords.max_targets,
            "max_rounds": keywords.max_rounds,
            "racers": keywords.racers,
        }
        options = probe.ProbeOptions(
            tools=_names(keywords.tool),
            exactly_once=_names(keywords.exactly_once),
            arguments=keywords.arguments,
            single_use=keywords.single_use,
            require_confidential=keywords.require_confidential,
            ttl=keywords.ttl,
            second=None if keywords.second is None else _target(keywords.second, None, None),
            wordlists=tuple(Path(path) for path in keywords.wordlists),
            workers=tuple(workers),
            **{name: limit for name, limit in limits.items() if limit is not None},
        )
        # The probe keeps the server's log back, and a ProbeError or timeout ends with its last lines.
        return await probe.probe(target, options, timeout=keywords.seconds())


@dataclass(frozen=True)
class _Keywords:
    """``ProbeKeywords`` with their defaults: what one probe runs with."""

    tool: str | Sequence[str] | None = None
    arguments: dict[str, Any] | None = None
    single_use: bool = False
    require_confidential: bool = False
    ttl: float | None = None
    second: object | None = None
    wordlists: Sequence[str | Path] = ()
    headers: Mapping[str, str] | None = None
    env: Mapping[str, str] | None = None
    timeout: float | None = None
    max_targets: int | None = None
    max_rounds: int | None = None
    exactly_once: str | Sequence[str] | None = None
    racers: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.wordlists, str | Path):  # one path would be read as paths of one letter each
            raise TypeError("wordlists= is a list of paths: wordlists=[path]")

    def seconds(self) -> float:
        """The probe's own time bound."""
        from requeststate.probe import DEFAULT_TIMEOUT

        return DEFAULT_TIMEOUT if self.timeout is None else self.timeout


def _names(names: str | Sequence[str] | None) -> tuple[str, ...]:
    """One tool's name, or several, as the probe takes them."""
    return (names,) if isinstance(names, str) else tuple(names or ())


def _targets(
    server: object, headers: Mapping[str, str] | None, env: Mapping[str, str] | None
) -> list[Target]:
    """The probe's ``Target`` for what the test passed, or one per worker for a list of them."""
    return (
        [_target(worker, headers, env) for worker in server]
        if _fleet(server)
        else [_target(server, headers, env)]
    )


def _fleet(server: object) -> TypeGuard[Sequence[object]]:
    """Whether ``server`` is a list of servers: of URLs, commands, server objects or ``Target``s.

    A list of str is one command, unless every item is a URL (a command is never a URL).
    """
    if not isinstance(server, Sequence) or isinstance(server, str | bytes) or not server:
        return False
    if all(isinstance(item, str) for item in server):
        return all(str(item).startswith(_URL_SCHEMES) for item in server)
    return True


def _target(server: object, headers: Mapping[str, str] | None, env: Mapping[str, str] | None) -> Target:
    """The probe's ``Target`` for what the test passed: a server object, a command, or a URL."""
    from requeststate.probe import Target

    url = isinstance(server, str) and server.startswith(_URL_SCHEMES)
    command = isinstance(server, Sequence) and not isinstance(server, str | bytes)
    if headers is not None and not url:
        raise TypeError("headers= go with a URL (streamable HTTP)")
    if env is not None and not command:
        raise TypeError("env= goes with a command (spawned over stdio)")
    if isinstance(server, Target):
        return server
    if isinstance(server, str):
        if not url:
            # A command given as one string would have to be split as a shell splits it.
            raise TypeError(
                f"a str is a URL (http:// or https://), not {server!r}: pass a command as a list of str"
            )
        return Target(url=server, headers=dict(headers or {}))
    if isinstance(server, Sequence) and not isinstance(server, bytes):
        argv = list(server)
        if not argv or not all(isinstance(word, str) for word in argv):
            raise TypeError("a command is a non-empty list of str (the program and its arguments)")
        return Target(command=tuple(argv), env=dict(env or {}))
    return Target(server=server)  # the probe says so if it is no server it can connect in memory


def _call_blocking(call: Callable[[], _T]) -> _T:
    """``call()`` here, or on a thread of its own where this thread already runs an event loop."""
    __tracebackhide__ = True
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    if not running:
        # Called out of the handler above: what it raises, or a server logs meanwhile, is not chained
        # to that RuntimeError ("no running event loop").
        return call()
    # anyio.run refuses to start a loop inside a running one: give the probe a thread and a loop.
    outcome: list[_T] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            outcome.append(call())
        except BaseException as error:  # handed to the caller's thread, re-raised there
            failure.append(error)

    worker = threading.Thread(target=work, name="requeststate-probe", daemon=True)
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    return outcome[0]


@pytest.fixture
def requeststate_probe() -> RequestStateProbe:
    """Probe a server's ``requestState`` handling from a test: ``requeststate_probe(app, **options)``.

    Fails the test at setup, naming ``pip install 'requeststate[mcp]'``, where the ``mcp`` extra
    is not installed.
    """
    try:
        import requeststate.probe  # noqa: F401 (the extra's presence: the probe imports it all)
    except ImportError as missing:
        if missing.name != "requeststate.probe":  # the probe names itself when its extra is missing
            raise
        pytest.fail(f"the requeststate_probe fixture cannot run: {missing}", pytrace=False)
    return RequestStateProbe()
