"""A FastMCP server whose ``requestState`` requeststate protects: a two-round booking tool.

``book(restaurant)`` asks for the date (input required) and books on the retry. FastMCP
installs the MCP SDK's ephemeral boundary; ``protect`` replaces it with requeststate's,
which binds the state to the method, the tool, its arguments, this server's name and the
authenticated principal (none over stdio), and makes each token single-use with a guard.

Run (see examples/README.md)::

    export REQUESTSTATE_KEYS=$(requeststate keygen)
    python examples/fastmcp_server.py          # stdio, for FastMCP's Client or any MCP client
"""

from __future__ import annotations

import os

from fastmcp import Context, FastMCP
from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult

import requeststate as rs
from requeststate.mcp import protect

mcp = FastMCP("fastmcp-booking")

_DATE = {"type": "object", "properties": {"date": {"type": "string"}}, "required": ["date"]}


@mcp.tool
async def book(restaurant: str, ctx: Context) -> str | InputRequiredResult:
    """Book a table: asks for the date, then books."""
    if ctx.request_state is None:
        ask = ElicitRequest(params=ElicitRequestFormParams(message="Which date?", requested_schema=_DATE))
        return InputRequiredResult(input_requests={"date": ask}, request_state=f"restaurant={restaurant}")
    reply = (ctx.input_responses or {}).get("date")
    date = reply.content.get("date") if isinstance(reply, ElicitResult) and reply.content else None
    return f"Booked {restaurant} on {date} ({ctx.request_state})."


def codec() -> rs.Codec:
    """The deployment's codec (REQUESTSTATE_KEYS, _MODE, _TTL), single use in this process."""
    if os.environ.get(rs.ENV_KEYS):
        return rs.Codec.from_env(guard=rs.MemoryGuard())
    return rs.Codec(rs.KeyRing.ephemeral(), guard=rs.MemoryGuard())  # protect() warns: one process only


protect(mcp, codec())

if __name__ == "__main__":
    mcp.run(show_banner=False)
