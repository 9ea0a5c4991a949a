"""DELIBERATELY INSECURE: an MCP server that trusts the echoed ``requestState``. For testing the probe only.

Never copy this server's state handling. It exists so that ``requeststate probe``
has something to catch: it is ``booking_server.py`` with the protection taken
away. The SDK's own ``RequestStateBoundary`` is removed and nothing replaces
it, so the wizard's state goes to the client as plain JSON and comes back
unchecked. A client can read it (the supplier's hold reference included),
change it, move it to another tool and replay it, and the handlers act on
whatever arrives.

Two tools, ``book_table(restaurant)`` and ``change_booking(restaurant)``, each
ask for a date and then a party size over two rounds, and share one state
format, so a state minted by one is accepted by the other.

    requeststate probe -- python examples/insecure_server.py          # reports FAILs, exits 1
"""

from __future__ import annotations

import logging
import secrets
import sys

import msgspec
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateBoundary
from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequests, InputRequiredResult


class Draft(msgspec.Struct):
    """The wizard's state between rounds, trusted as the client sends it back (the flaw)."""

    restaurant: str
    step: int
    date: str = ""
    hold: str = ""


_dump = msgspec.json.Encoder().encode
_load = msgspec.json.Decoder(Draft).decode

server: MCPServer = MCPServer("insecure-booking")
# The flaw: remove the SDK's boundary and install none, so requestState is plaintext both ways.
server.middleware[:] = [entry for entry in server.middleware if not isinstance(entry, RequestStateBoundary)]


def _ask(message: str, field: str, kind: str) -> InputRequests:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return {field: ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))}


def _accepted(ctx: Context, field: str) -> object | None:
    reply = (ctx.input_responses or {}).get(field)
    if isinstance(reply, ElicitResult) and reply.action == "accept" and reply.content:
        return reply.content.get(field)
    return None


def _wizard(action: str, restaurant: str, ctx: Context) -> str | InputRequiredResult:
    if ctx.request_state is None:
        return InputRequiredResult(
            input_requests=_ask(f"Which date at {restaurant}? (YYYY-MM-DD)", "date", "string"),
            request_state=_dump(Draft(restaurant=restaurant, step=1)).decode(),
        )
    draft = _load(ctx.request_state)  # the flaw: whatever the client sent back is believed
    if draft.step == 1:
        date = _accepted(ctx, "date")
        if not isinstance(date, str):
            return "Cancelled."
        draft = Draft(restaurant=draft.restaurant, step=2, date=date, hold=f"hold-{secrets.token_hex(6)}")
        return InputRequiredResult(
            input_requests=_ask(f"How many people on {date}?", "party", "integer"),
            request_state=_dump(draft).decode(),
        )
    party = _accepted(ctx, "party")
    if not isinstance(party, int) or isinstance(party, bool) or party < 1:
        return "Cancelled."
    return f"{action} a table for {party} at {draft.restaurant} on {draft.date}."


@server.tool()
async def book_table(restaurant: str, ctx: Context) -> str | InputRequiredResult:
    """Book a table: asks for the date, then the party size."""
    return _wizard("Booked", restaurant, ctx)


@server.tool()
async def change_booking(restaurant: str, ctx: Context) -> str | InputRequiredResult:
    """Move a booking: asks for the new date, then the party size."""
    return _wizard("Moved", restaurant, ctx)


if __name__ == "__main__":
    # Plain log lines on stderr (stdout is the stdio protocol). Each state the probe forges crashes a
    # handler here, and the SDK's own handler renders every crash as a rich traceback: two thirds of a
    # probe's time went to drawing them.
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, force=True)
    server.run()  # stdio
