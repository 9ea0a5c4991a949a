"""A booking wizard: one MCP tool that asks the user two questions over two rounds.

``book_table(restaurant)`` answers "input required" twice (first the date, then
the party size) and books on the third call. Between rounds the wizard's state
(a msgspec ``Draft``) travels through the client as ``requestState``.
``requeststate.mcp.protect`` encrypts it and binds it to this server, to
``tools/call`` of ``book_table`` and to its arguments (the restaurant), and
refuses an echo that was tampered with, minted for another call or server, or
is older than 300 seconds. The handler only ever sees the plaintext it minted.

What this server does not do: it has no authentication (stdio, and HTTP without
``auth=``), so no user is bound (whoever holds a token can redeem it for the
same call), and it has no replay guard (a token can be redeemed again until it
expires). ``booking_http_server.py`` adds bearer-token users and a guard.

The draft holds the supplier's hold reference, which the client must never
see: in the default encrypted mode it cannot.

Run (see examples/README.md)::

    export REQUESTSTATE_KEYS=$(python -c "import secrets; print(secrets.token_urlsafe(32))")
    python examples/booking_server.py                      # stdio
    python examples/booking_server.py --http --port 8000   # streamable HTTP on 127.0.0.1
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import sys

import msgspec
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequests, InputRequiredResult

import requeststate as rs
from requeststate.mcp import protect

log = logging.getLogger("booking")


class Draft(msgspec.Struct, forbid_unknown_fields=True):
    """The wizard's state between rounds."""

    restaurant: str
    step: int
    date: str = ""
    hold: str = ""  # the supplier's hold reference: server-side only


_dump = msgspec.json.Encoder().encode
_load = msgspec.json.Decoder(Draft).decode


def _ask(message: str, field: str, kind: str) -> InputRequests:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return {field: ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))}


def _accepted(ctx: Context, field: str) -> object | None:
    reply = (ctx.input_responses or {}).get(field)
    if isinstance(reply, ElicitResult) and reply.action == "accept" and reply.content:
        return reply.content.get(field)
    return None


def _codec() -> rs.Codec:
    # Every worker must share the key, or a retry that lands on another one is refused.
    if os.environ.get("REQUESTSTATE_KEYS"):
        return rs.Codec.from_env()  # and REQUESTSTATE_MODE, REQUESTSTATE_TTL: the deployment chooses
    return rs.Codec(rs.KeyRing.ephemeral(), mode="encrypted")  # protect() warns: one process only


async def book_table(restaurant: str, ctx: Context) -> str | InputRequiredResult:
    """Book a table: asks for the date, then the party size."""
    if ctx.request_state is None:  # round 1: nothing yet
        draft = Draft(restaurant=restaurant, step=1)
        return InputRequiredResult(
            input_requests=_ask(f"Which date at {restaurant}? (YYYY-MM-DD)", "date", "string"),
            request_state=_dump(draft).decode(),
        )
    draft = _load(ctx.request_state)  # authenticated by the boundary, typed by msgspec
    if draft.step == 1:  # round 2: the date came back
        date = _accepted(ctx, "date")
        if not isinstance(date, str):
            return "Booking cancelled."
        hold = f"hold-{secrets.token_hex(6)}"  # stands in for a call to the supplier
        draft = Draft(restaurant=draft.restaurant, step=2, date=date, hold=hold)
        return InputRequiredResult(
            input_requests=_ask(f"How many people on {date}?", "party", "integer"),
            request_state=_dump(draft).decode(),
        )
    party = _accepted(ctx, "party")  # round 3: the party size came back
    if not isinstance(party, int) or isinstance(party, bool) or party < 1:
        return "Booking cancelled."
    log.info("confirming supplier hold for %s", draft.restaurant)  # the hold stays server-side
    return f"Booked a table for {party} at {draft.restaurant} on {draft.date}."


def build_server() -> MCPServer:
    """The booking server over shared keys (or ephemeral ones, with a warning)."""
    server: MCPServer = MCPServer("booking")
    protect(server, _codec())
    server.tool()(book_table)
    return server


def main() -> None:
    """Serve over stdio (default) or streamable HTTP on loopback."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)  # stdout is the stdio protocol
    try:
        server = build_server()
    except ValueError as error:  # the deployment's configuration (REQUESTSTATE_*): say what to fix
        raise SystemExit(f"error: {error}") from None
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.port)
    else:
        server.run()


if __name__ == "__main__":
    main()
