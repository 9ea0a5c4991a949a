"""A booking tool for a fleet of workers: configured by the environment alone, no line of guard code.

``book(restaurant)`` asks for the date (input required), and books on the retry. Every
worker reads the same variables (docs/deployment.md, "A fleet"): ``REQUESTSTATE_KEYS``,
so that any worker accepts another's tokens, and ``REQUESTSTATE_GUARD``, the replay
guard they share, so that each token is redeemed once across all of them. ``protect``
begins the guard when the server starts, and serves once the tokens it mints are accepted.

Run (see examples/README.md)::

    export REQUESTSTATE_KEYS=$(requeststate keygen) REQUESTSTATE_GUARD=redis://127.0.0.1:6379/0
    uvicorn examples.fleet_server:app --workers 2 --port 8000   # streamable HTTP, stateless
    python examples/fleet_server.py                              # stdio
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

import requeststate as rs
from requeststate.mcp import protect

server = MCPServer("booking")

_DATE = {"type": "object", "properties": {"date": {"type": "string"}}, "required": ["date"]}


@server.tool()
async def book(restaurant: str, ctx: Context) -> str | InputRequiredResult:
    """Book a table: asks for the date, then books."""
    if ctx.request_state is None:
        ask = ElicitRequest(params=ElicitRequestFormParams(message="Which date?", requested_schema=_DATE))
        return InputRequiredResult(input_requests={"date": ask}, request_state=f"for:{restaurant}")
    return f"booked {restaurant} ({ctx.request_state})"


protect(server, rs.Codec.from_env(asyncio=True))  # REQUESTSTATE_KEYS, _MODE, _TTL, _GUARD
# Stateless: any worker serves any request, and the state travels in requestState alone.
app = server.streamable_http_app(stateless_http=True)

if __name__ == "__main__":
    server.run()
