"""An exactly-once tool: ``book(item)`` books once per state, and a retry gets the first booking's answer.

Round 1 asks the user to confirm (input required); round 2 performs the booking (here: a counter
of this process) and answers ``booked <id> runs=<n>``, where ``n`` is how many times the action
has run in this process. When the answer to round 2 is lost (a dropped connection, a proxy's
timeout) the client retries with the same ``requestState``: ``protect(..., exactly_once={"book"})``
answers the retry with the first call's answer, kept by the replay guard, and the booking does not
run again, on this worker or on any other that shares the guard (docs/exactly-once.md).

Configured by the environment alone (docs/deployment.md): ``REQUESTSTATE_KEYS`` (required),
``REQUESTSTATE_GUARD`` (the store shared by every worker: ``sqlite:////var/lib/app/claims.db``,
``redis://...``, ``postgresql://...``; unset, a ``MemoryGuard`` for this one process),
``REQUESTSTATE_MODE`` and ``REQUESTSTATE_TTL``.

Run (see examples/README.md)::

    export REQUESTSTATE_KEYS=$(requeststate keygen)
    python examples/exactly_once_server.py                       # stdio
    uvicorn examples.exactly_once_server:app --port 8000          # streamable HTTP, stateless
"""

from __future__ import annotations

import itertools
import secrets

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult

import requeststate as rs
from requeststate.mcp import protect

server = MCPServer("bookings")

_CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
_runs = itertools.count(1)  # the action's runs in this process


@server.tool()
async def book(item: str, ctx: Context) -> str | InputRequiredResult:
    """Book ``item``: asks for confirmation, then books it, once per state."""
    if ctx.request_state is None:
        question = ElicitRequestFormParams(message=f"Book {item}?", requested_schema=_CONFIRM)
        return InputRequiredResult(
            input_requests={"confirm": ElicitRequest(params=question)}, request_state=item
        )
    reply = (ctx.input_responses or {}).get("confirm")
    confirmed = (
        isinstance(reply, ElicitResult) and reply.action == "accept" and (reply.content or {}).get("confirm")
    )
    if not confirmed:
        return f"not booked: {ctx.request_state}"
    booking = secrets.token_hex(4)  # the action: in a real server, the call that books and charges
    return f"booked {booking} runs={next(_runs)}"


# REQUESTSTATE_GUARD, when set, wins over the MemoryGuard (a fleet shares its store).
protect(server, rs.Codec.from_env(asyncio=True, guard=rs.MemoryGuard()), exactly_once={"book"})
# Stateless: any worker serves any request, and the state travels in requestState alone.
app = server.streamable_http_app(stateless_http=True)

if __name__ == "__main__":
    server.run()
