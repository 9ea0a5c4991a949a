"""Where a boundary goes in a server's middleware chain, and the warnings every shape shares.

Three shapes of server: the SDK's ``MCPServer`` and low-level ``Server``, and FastMCP's
``FastMCP`` (fastmcp >= 4.1), which wraps a low-level ``Server`` of its own
(``FastMCP._mcp_server``) and installs the SDK's ``RequestStateBoundary`` in its chain,
after FastMCP's own dispatching middleware. FastMCP is never imported here: a ``FastMCP``
exists only once its module is loaded, so it is looked for in ``sys.modules``.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from mcp.server import MCPServer, Server
from mcp.server.context import ServerMiddleware
from mcp.server.request_state import RequestStateBoundary

import requeststate as rs

if TYPE_CHECKING:
    from fastmcp import FastMCP

logger = logging.getLogger("requeststate.mcp")

AnyServer: TypeAlias = "MCPServer[Any] | Server[Any] | FastMCP[Any]"
"""What ``protect`` and ``use_codec`` take: the SDK's ``MCPServer`` or ``Server``, or a ``FastMCP``."""

_ANY_SERVER = (MCPServer, Server)
FASTMCP_MINIMUM: Final = (4, 1)
"""The first FastMCP whose server wraps an SDK ``Server`` with the SDK's boundary in its chain."""


def chain(server: object) -> list[ServerMiddleware[Any]]:
    """The server's middleware list; ``TypeError`` for anything but an SDK server or a FastMCP."""
    if isinstance(server, _ANY_SERVER):
        return server.middleware
    if _is_fastmcp(server):
        return _fastmcp_chain(server)
    raise TypeError(
        f"server must be an mcp MCPServer or Server, or a fastmcp FastMCP, not {type(server).__name__}"
    )


def _is_fastmcp(server: object) -> bool:
    module = sys.modules.get("fastmcp.server.server")
    fastmcp_class = getattr(module, "FastMCP", None)
    return isinstance(fastmcp_class, type) and isinstance(server, fastmcp_class)


def _fastmcp_chain(server: object) -> list[ServerMiddleware[Any]]:
    """The chain of the SDK server a FastMCP serves through, or ``TypeError`` naming what is missing."""
    version = str(getattr(sys.modules.get("fastmcp"), "__version__", "unknown"))
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is None or (int(found[1]), int(found[2])) < FASTMCP_MINIMUM:
        raise TypeError(
            f"fastmcp {version} cannot be protected: requeststate needs fastmcp >= 4.1, whose server "
            "wraps the MCP SDK's (pip install 'requeststate[fastmcp]')"
        )
    inner = getattr(server, "_mcp_server", None)
    entries = getattr(inner, "middleware", None)
    if not isinstance(inner, Server) or not isinstance(entries, list):
        raise TypeError(
            f"this FastMCP ({version}) does not serve through an MCP SDK Server: it cannot be protected"
        )
    return entries


def install(server: object, boundary: ServerMiddleware[Any], ours: type) -> None:
    """Put ``boundary`` where the SDK puts its own, replacing every ``RequestStateBoundary``."""
    entries = chain(server)
    if any(isinstance(entry, ours) for entry in entries):
        raise ValueError("this server's requestState is already protected by requeststate")
    sdk = [index for index, entry in enumerate(entries) if isinstance(entry, RequestStateBoundary)]
    if sdk:
        # MCPServer and FastMCP always install one: take its place, so the order the SDK
        # documents (telemetry outside, user middleware inside) still holds, and under
        # FastMCP the boundary stays after FastMCP's own dispatching middleware.
        position = sdk[0]
        entries[:] = [entry for entry in entries if not isinstance(entry, RequestStateBoundary)]
    elif _is_fastmcp(server):
        # Its boundary's place is after FastMCP's own middleware, which only it knows.
        raise TypeError("this FastMCP has no requestState boundary in its chain to replace")
    else:
        # The low-level Server has none: go right after the SDK's own built-ins
        # (OpenTelemetry), which is where MCPServer puts its boundary.
        position = 0
        while position < len(entries) and type(entries[position]).__module__.startswith("mcp."):
            position += 1
    entries.insert(position, boundary)


def start_with(server: object, begin: Callable[[], Awaitable[None]]) -> None:
    """Make ``server`` await ``begin`` each time it starts serving, before the lifespan it had.

    Every shape serves through an SDK ``Server``, which enters its ``lifespan`` before
    it reads a request: once per run over stdio and under the streamable-HTTP session
    manager (stateless or not), once per connection in memory and over FastMCP's SSE.
    The lifespan it had (the user's, or FastMCP's) runs inside, unchanged.
    """
    inner = _inner_server(server)
    lifespan = inner.lifespan

    @asynccontextmanager
    async def begun(app: Server[Any]) -> AsyncIterator[Any]:
        await begin()
        async with lifespan(app) as state:
            yield state

    inner.lifespan = begun


def _inner_server(server: object) -> Server[Any]:
    """The SDK ``Server`` that ``server`` serves through (``chain`` has accepted ``server``)."""
    if isinstance(server, Server):
        return server
    inner = getattr(server, "_lowlevel_server" if isinstance(server, MCPServer) else "_mcp_server", None)
    if not isinstance(inner, Server):
        raise TypeError(
            f"this {type(server).__name__} serves through no MCP SDK Server: it cannot be protected"
        )
    return inner


def warn_if_ephemeral(ring: rs.KeyRing) -> None:
    """Warn once at setup: ephemeral keys break every retry across workers or restarts."""
    if ring.is_ephemeral:
        logger.warning(
            "requestState keys are ephemeral (KeyRing %s): every token dies with this process. "
            "That is right for one stdio process only; behind HTTP with several workers, replicas "
            "or any restart, every multi-round retry will be refused. Share one KeyRing between "
            "all workers (KeyRing.from_env() or a secret store).",
            ring.fingerprint,
        )
