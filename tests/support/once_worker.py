"""An exactly-once booking worker for tests/test_exactly_once_fleet.py, configured by the environment.

``REQUESTSTATE_KEYS`` and ``REQUESTSTATE_GUARD`` (the fleet's); ``RUNS_FILE``: every worker appends one
line per run of the action (``<pid> <item>``), so that a test counts the runs of the whole fleet;
``HOLD_FILE``: while it exists, the action, once run, holds its answer back (a worker killed then dies
after the action and before the answer). The lease is 2 s: a retry past it hears the outcome is unknown.
"""

from __future__ import annotations

import os

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

import requeststate as rs
from requeststate.mcp import protect

LEASE = 2
server = MCPServer("bookings")
_CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}


@server.tool()
async def book(item: str, ctx: Context) -> str | InputRequiredResult:
    """Asks for confirmation, then runs the action once per state and answers which worker ran it."""
    if ctx.request_state is None:
        question = ElicitRequestFormParams(message=f"Book {item}?", requested_schema=_CONFIRM)
        return InputRequiredResult(
            input_requests={"confirm": ElicitRequest(params=question)}, request_state=item
        )
    with open(os.environ["RUNS_FILE"], "a", encoding="utf-8") as runs:
        runs.write(f"{os.getpid()} {item}\n")
    while os.path.exists(os.environ["HOLD_FILE"]):
        await anyio.sleep(0.05)
    return f"booked {item} by {os.getpid()}"


protect(server, rs.Codec.from_env(asyncio=True, lease=LEASE), exactly_once={"book"})
app = server.streamable_http_app(stateless_http=True)
