"""A worker of the nemesis's fleet: examples/fleet_server.py's booking tool, on a clock the nemesis can step.

``uvicorn --factory scripts.mcp_nemesis.worker:sdk_app`` (the SDK's ``MCPServer``) or ``:fastmcp_app``
(FastMCP). Each is configured by ``REQUESTSTATE_*`` alone, as the examples are, plus one variable of
the nemesis's own, ``MCP_NEMESIS_CLOCK``: a file holding the seconds this worker's clock runs ahead
of the wall clock (negative: behind), which the nemesis rewrites to step it. The examples take no
clock (a deployment has no reason to), hence a server of the nemesis's own.
"""

from __future__ import annotations

import os
import time
from typing import Any

from fastmcp import Context as FastMCPContext
from fastmcp import FastMCP
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

import requeststate as rs
from requeststate.mcp import protect

CLOCK_FILE = "MCP_NEMESIS_CLOCK"
_DATE = {"type": "object", "properties": {"date": {"type": "string"}}, "required": ["date"]}


def _round(restaurant: str, state: str | None) -> str | InputRequiredResult:
    # The examples' tool: the answer names the arguments and the state, so a checker sees whose it read.
    if state is None:
        ask = ElicitRequest(params=ElicitRequestFormParams(message="Which date?", requested_schema=_DATE))
        return InputRequiredResult(input_requests={"date": ask}, request_state=f"for:{restaurant}")
    return f"booked {restaurant} ({state})"


class SteppedClock:
    """The wall clock plus the offset in a file, read again whenever the file changes."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._changed = -1
        self._offset = 0.0

    def __call__(self) -> float:
        changed = os.stat(self._path).st_mtime_ns
        if changed != self._changed:
            with open(self._path) as file:
                self._offset = float(file.read() or 0)
            self._changed = changed
        return time.time() + self._offset


def _codec() -> rs.Codec:
    return rs.Codec.from_env(asyncio=True, clock=SteppedClock(os.environ[CLOCK_FILE]))


def sdk_app() -> Any:
    """The SDK's ``MCPServer``, protected, as a stateless streamable HTTP app."""
    server = MCPServer("booking", log_level="WARNING")

    @server.tool()
    async def book(restaurant: str, ctx: Context) -> str | InputRequiredResult:
        """Book a table: asks for the date, then books."""
        return _round(restaurant, ctx.request_state)

    protect(server, _codec())
    return server.streamable_http_app(stateless_http=True)


def fastmcp_app() -> Any:
    """FastMCP, protected, as a stateless streamable HTTP app."""
    mcp = FastMCP("booking")

    @mcp.tool
    async def book(restaurant: str, ctx: FastMCPContext) -> str | InputRequiredResult:
        """Book a table: asks for the date, then books."""
        return _round(restaurant, ctx.request_state)

    protect(mcp, _codec())
    return mcp.http_app(stateless_http=True)
