"""Where a boundary goes in a server's middleware chain, and the warnings every shape shares."""

from __future__ import annotations

import logging
from typing import Any

from mcp.server import MCPServer, Server
from mcp.server.context import ServerMiddleware
from mcp.server.request_state import RequestStateBoundary

import requeststate as rs

logger = logging.getLogger("requeststate.mcp")

_ANY_SERVER = (MCPServer, Server)


def chain(server: object) -> list[ServerMiddleware[Any]]:
    """The server's middleware list; ``TypeError`` for anything but an SDK server."""
    if not isinstance(server, _ANY_SERVER):
        raise TypeError(f"server must be an mcp MCPServer or Server, not {type(server).__name__}")
    return server.middleware


def install(server: object, boundary: ServerMiddleware[Any], ours: type) -> None:
    """Put ``boundary`` where the SDK puts its own, replacing every ``RequestStateBoundary``."""
    entries = chain(server)
    if any(isinstance(entry, ours) for entry in entries):
        raise ValueError("this server's requestState is already protected by requeststate")
    sdk = [index for index, entry in enumerate(entries) if isinstance(entry, RequestStateBoundary)]
    if sdk:
        # MCPServer always installs one: take its place, so the order the SDK
        # documents (telemetry outside, user middleware inside) still holds.
        position = sdk[0]
        entries[:] = [entry for entry in entries if not isinstance(entry, RequestStateBoundary)]
    else:
        # The low-level Server has none: go right after the SDK's own built-ins
        # (OpenTelemetry), which is where MCPServer puts its boundary.
        position = 0
        while position < len(entries) and type(entries[position]).__module__.startswith("mcp."):
            position += 1
    entries.insert(position, boundary)


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
