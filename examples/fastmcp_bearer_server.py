"""A two-round tool over streamable HTTP with bearer-token users, on FastMCP: the server.

``bearer_server.py`` on FastMCP. Round 1 of ``book`` holds a table and asks for the date;
round 2 reads the hold from the ``requestState`` round 1 handed out, and books it for that
date. ``protect`` seals the state and binds it to the signed-in user, this server, the tool and
its arguments. FastMCP's ``StaticTokenVerifier`` stands in for your authorization server (any
FastMCP auth provider works the same way); ``fastmcp_bearer_client.py`` sends a bearer token.

Run::

    export REQUESTSTATE_KEYS=$(requeststate keygen)    # REQUESTSTATE_GUARD=... for single use
    uvicorn examples.fastmcp_bearer_server:app --port 8000
    python examples/fastmcp_bearer_client.py http://127.0.0.1:8000/mcp tok-alice "Chez Ada" 2026-12-01
"""

from __future__ import annotations

import secrets

from fastmcp import Context, FastMCP
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp.server.dependencies import get_access_token
from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult

import requeststate as rs
from requeststate.mcp import protect

ISSUER = "https://auth.example.com"
# Bearer token -> its claims: your authorization server's job (StaticTokenVerifier is for development).
TOKENS = {
    "tok-alice": {"client_id": "booking-app", "sub": "alice", "iss": ISSUER, "scopes": ["book"]},
    "tok-bob": {"client_id": "booking-app", "sub": "bob", "iss": ISSUER, "scopes": ["book"]},
}
DATE = {"type": "object", "properties": {"date": {"type": "string"}}, "required": ["date"]}

mcp = FastMCP("booking", auth=StaticTokenVerifier(tokens=TOKENS, required_scopes=["book"]))


@mcp.tool
async def book(restaurant: str, ctx: Context) -> str | InputRequiredResult:
    """Book a table: round 1 holds one and asks for the date, round 2 books the hold."""
    if ctx.request_state is None:  # round 1: ask, and hand the client the state of this booking
        hold = f"H-{secrets.token_hex(4)}"  # your booking system's provisional hold
        ask = ElicitRequest(params=ElicitRequestFormParams(message="Which date?", requested_schema=DATE))
        return InputRequiredResult(input_requests={"date": ask}, request_state=hold)
    # Round 2: the state is the plaintext round 1 returned (protect verified it first),
    # the answer is the client's.
    hold = ctx.request_state
    answer = (ctx.input_responses or {}).get("date")
    if not isinstance(answer, ElicitResult) or answer.action != "accept" or not answer.content:
        return f"Not booked: no date given (hold {hold} released)."
    token = get_access_token()
    user = token.subject if token is not None else "nobody"
    return f"Booked {restaurant} on {answer.content['date']} for {user} (hold {hold})."


protect(mcp, rs.Codec.from_env(asyncio=True))  # REQUESTSTATE_KEYS, _MODE, _TTL, _GUARD
app = mcp.http_app(stateless_http=True)
