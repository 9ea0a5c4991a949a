"""A FastMCP server with one two-round tool: what the FastMCP tests and the plugin's tests probe."""

from __future__ import annotations

from typing import Any

from fastmcp import Context, FastMCP
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

DATE = {"type": "object", "properties": {"date": {"type": "string"}}, "required": ["date"]}


def booking(name: str = "booking", **server: Any) -> tuple[FastMCP[Any], list[str | None]]:
    """A FastMCP server with one two-round tool, and the states its handler was handed."""
    mcp: FastMCP[Any] = FastMCP(name, **server)
    seen: list[str | None] = []

    @mcp.tool
    async def book(restaurant: str, ctx: Context) -> str | InputRequiredResult:
        seen.append(ctx.request_state)
        if ctx.request_state is None:
            ask = ElicitRequest(params=ElicitRequestFormParams(message="Which date?", requested_schema=DATE))
            return InputRequiredResult(input_requests={"date": ask}, request_state=f"for:{restaurant}")
        return f"booked {restaurant} ({ctx.request_state})"

    return mcp, seen
