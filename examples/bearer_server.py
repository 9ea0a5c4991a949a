"""A two-round tool over streamable HTTP with bearer-token users, on the MCP SDK: the server.

Round 1 of ``book`` holds a table and asks for the date; round 2 reads the hold from the
``requestState`` round 1 handed out, and books it for that date. ``protect`` seals the state
and binds it to the signed-in user, this server, the tool and its arguments. The server takes
bearer tokens through the SDK's ``TokenVerifier``, here a fixed table that stands in for your
authorization server; ``bearer_client.py`` sends one in the ``Authorization`` header.

Run::

    export REQUESTSTATE_KEYS=$(requeststate keygen)    # REQUESTSTATE_GUARD=... for single use
    uvicorn examples.bearer_server:app --port 8000
    python examples/bearer_client.py http://127.0.0.1:8000/mcp tok-alice "Chez Ada" 2026-12-01
"""

from __future__ import annotations

import secrets

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult
from pydantic import AnyHttpUrl

import requeststate as rs
from requeststate.mcp import protect

ISSUER = "https://auth.example.com"
RESOURCE = "http://127.0.0.1:8000/mcp"  # this server's URL, which each access token is issued for
USERS = {"tok-alice": "alice", "tok-bob": "bob"}  # bearer token -> user: your authorization server's job
DATE = {"type": "object", "properties": {"date": {"type": "string"}}, "required": ["date"]}


class StaticTokens:
    """A ``TokenVerifier``: the claims of a known bearer token, else ``None`` (the SDK answers 401)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        user = USERS.get(token)
        if user is None:
            return None
        claims = {"iss": ISSUER}
        return AccessToken(
            token=token,
            client_id="booking-app",
            scopes=["book"],
            subject=user,
            claims=claims,
            resource=RESOURCE,
        )


server = MCPServer(
    "booking",
    token_verifier=StaticTokens(),
    auth=AuthSettings(
        issuer_url=AnyHttpUrl(ISSUER),
        resource_server_url=AnyHttpUrl(RESOURCE),
        validate_token_resource=True,  # a token issued for another server is refused
        required_scopes=["book"],
    ),
)


@server.tool()
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


protect(server, rs.Codec.from_env(asyncio=True))  # REQUESTSTATE_KEYS, _MODE, _TTL, _GUARD
app = server.streamable_http_app(stateless_http=True)
