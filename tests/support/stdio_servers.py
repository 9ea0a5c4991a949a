"""Clients of several MCP servers over stdio whose processes start at once.

A ``Client`` of a ``stdio_client`` spawns its process and waits for it to answer before the next
``Client`` spawns its own: servers that each import the MCP SDK then start one after the other.
Here every process is spawned first, and each client then waits for its own, so they start in the
time of the slowest.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from types import TracebackType

from mcp import Client
from mcp.client._transport import TransportStreams
from mcp.client.session import ElicitationFnT
from mcp.client.stdio import StdioServerParameters, stdio_client

__all__ = ["clients"]


class _Spawned:
    """The transport of a process already spawned: the streams of an entered ``stdio_client``."""

    def __init__(self, streams: TransportStreams) -> None:
        self._streams = streams

    async def __aenter__(self) -> TransportStreams:
        return self._streams

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None  # the stdio_client that spawned the process stops it


@asynccontextmanager
async def clients(
    *servers: StdioServerParameters, elicitation_callback: ElicitationFnT | None = None
) -> AsyncGenerator[list[Client]]:
    """A client of each of ``servers``, in their order, until the block ends; every process spawned
    before any client waits for its server."""
    async with AsyncExitStack() as stack:
        spawned = [await stack.enter_async_context(stdio_client(server)) for server in servers]
        yield [
            await stack.enter_async_context(
                Client(_Spawned(streams), elicitation_callback=elicitation_callback)
            )
            for streams in spawned
        ]
