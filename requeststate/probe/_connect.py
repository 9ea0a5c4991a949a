"""Connecting to a server: over streamable HTTP, over stdio, or in memory; and why a connection failed."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final, TextIO, TypeVar

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer, Server
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from ._placeholders import elicitation_callback, list_roots_callback, sampling_callback
from ._report import Target
from ._session import ProbeError, Session, TransportFailure
from ._transport import BoundedTransport, ProtocolBreak, stdio

_UNAUTHORIZED: Final = frozenset({401, 403})
_E = TypeVar("_E", bound=BaseException)


@dataclass
class _HTTPStatus:
    """The statuses an HTTP server answered with, to explain a refused connection."""

    seen: set[int] = field(default_factory=set)

    async def __call__(self, response: httpx2.Response) -> None:
        self.seen.add(response.status_code)


@asynccontextmanager
async def connect(target: Target, server_log: TextIO, *, where: str = "the server") -> AsyncIterator[Client]:
    """A client connected to ``target``; ``ProbeError`` naming it (``where``: ``worker 2``, when the
    probe was given several) and the cause when it cannot connect."""
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
            transport = in_memory(target.server)  # the SDK connects a Server or MCPServer in memory
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
                    f"{where} answered HTTP {denied[0]}: it wants credentials; pass them with "
                    "--header 'Authorization: Bearer ...' (repeatable, never printed)"
                ) from None
            broken = inside(error, ProtocolBreak)
            if broken is not None:
                raise ProbeError(str(broken)) from None
            cause = leaf(error)
            if target.command and isinstance(cause, MCPError) and cause.code == CONNECTION_CLOSED:
                raise ProbeError(
                    f"could not connect to {where}: it closed its stdout before answering initialize "
                    "(did the command exit? is it an MCP server over stdio?)"
                ) from None
            raise ProbeError(f"could not connect to {where}: {reason(cause)}") from None
        yield client


@asynccontextmanager
async def connection(target: Target, server_log: TextIO, loose: bool) -> AsyncIterator[Session]:
    """Another connection, for the checks that need one; its failures surface outside the transport."""
    failure: Exception | None = None
    async with connect(target, server_log) as client:
        try:
            yield Session(client, loose=loose)
        except (TransportFailure, MCPError) as error:  # keep it out of the transport's exception group
            failure = error
    if failure is not None:
        raise failure


def in_memory(server: object) -> MCPServer[Any] | Server[Any]:
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


def leaf(error: BaseException) -> BaseException:
    """The one exception inside nested groups of one (a task group's wrapping), else ``error``."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def inside(error: BaseException, kind: type[_E]) -> _E | None:
    """The first ``kind`` in ``error`` or its groups: a ``ProtocolBreak`` (the server's fault, whatever
    else then broke) or a ``ProbeError`` that a transport's task group wrapped."""
    if isinstance(error, kind):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = inside(inner, kind)
            if found is not None:
                return found
    return None


def reason(error: BaseException) -> str:
    """``ConnectError: All connection attempts failed``: the error's class, and its text if any."""
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}" if str(error) else text
