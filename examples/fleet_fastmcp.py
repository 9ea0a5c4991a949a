"""``fleet_server.py`` on FastMCP: a booking tool configured by the environment alone.

Run (see examples/README.md)::

    export REQUESTSTATE_KEYS=$(requeststate keygen) REQUESTSTATE_GUARD=redis://127.0.0.1:6379/0
    uvicorn examples.fleet_fastmcp:app --workers 2 --port 8000   # streamable HTTP, stateless
    python examples/fleet_fastmcp.py                              # stdio
"""

from __future__ import annotations

from fastmcp import Context, FastMCP
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

import requeststate as rs
from requeststate.mcp import protect

mcp = FastMCP("booking")

_DATE = {"type": "object", "properties": {"date": {"type": "string"}}, "required": ["date"]}


@mcp.tool
async def book(restaurant: str, ctx: Context) -> str | InputRequiredResult:
    """Book a table: asks for the date, then books."""
    if ctx.request_state is None:
        ask = ElicitRequest(params=ElicitRequestFormParams(message="Which date?", requested_schema=_DATE))
        return InputRequiredResult(input_requests={"date": ask}, request_state=f"for:{restaurant}")
    return f"booked {restaurant} ({ctx.request_state})"


protect(mcp, rs.Codec.from_env(asyncio=True))  # REQUESTSTATE_KEYS, _MODE, _TTL, _GUARD
app = mcp.http_app(stateless_http=True)  # any worker serves any request

if __name__ == "__main__":
    mcp.run(show_banner=False)
