"""The booking wizard over streamable HTTP, with bearer-token users and single-use tokens.

The same ``book_table`` as ``booking_server.py``, served on 127.0.0.1 behind
the SDK's bearer authentication. ``protect`` binds every ``requestState`` to
the signed-in user (client id, issuer and subject of the access token), to
this server, to ``tools/call`` of ``book_table`` and to its arguments; a replay
guard makes each token redeemable once, claimed only after every other check
passed. Another user's echo, a tampered one, one for other arguments or a
replayed one answers -32602 and is logged on ``requeststate.mcp``.

The token verifier here is a stand-in for your authorization server: it maps
the opaque bearer tokens in ``BOOKING_USERS`` (``token:user`` pairs) to users.
The guard is a ``RedisGuard`` when ``REDIS_URL`` is set (several workers), else
a ``MemoryGuard`` (one process).

Run (see examples/README.md)::

    export REQUESTSTATE_KEYS=$(requeststate keygen)
    export BOOKING_USERS="tok-alice:alice,tok-bob:bob"
    python examples/booking_http_server.py --port 8000
    python examples/booking_client.py "Chez Ada" --date 2026-12-01 --party 2 \\
        --url http://127.0.0.1:8000/mcp --bearer tok-alice
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from booking_server import book_table
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from pydantic import AnyHttpUrl

import requeststate as rs
from requeststate.mcp import protect

ISSUER = "https://auth.example.invalid"


class StaticTokens:
    """A ``TokenVerifier`` over a fixed table of opaque tokens: a stand-in for a real authorization server."""

    def __init__(self, users: dict[str, str]) -> None:
        self._users = users

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access token's claims, or ``None`` for an unknown token (the SDK answers 401)."""
        user = self._users.get(token)
        if user is None:
            return None
        return AccessToken(
            token=token, client_id="booking-demo", scopes=["mcp"], subject=user, claims={"iss": ISSUER}
        )


def _users() -> dict[str, str]:
    pairs = (item.split(":", 1) for item in os.environ.get("BOOKING_USERS", "").split(",") if ":" in item)
    users = {token.strip(): user.strip() for token, user in pairs}
    if not users:
        raise SystemExit('set BOOKING_USERS to "token:user" pairs, e.g. "tok-alice:alice,tok-bob:bob"')
    return users


def _guard() -> rs.Guard:
    url = os.environ.get("REDIS_URL")
    if url is None:
        return rs.MemoryGuard()  # one process: its ids are not seen by other workers
    from requeststate.redis import RedisGuard  # the redis extra

    guard = RedisGuard.from_url(url)  # shared by every worker; run off the event loop by protect()
    try:
        guard.begin()  # at start: a new Redis accepts the first tokens minted
    except rs.GuardUnavailable as error:
        raise SystemExit(f"REDIS_URL: {error}") from None
    return guard


def build_server(port: int) -> MCPServer:
    """The booking server on ``port``: bearer auth, shared keys, bound per user, single-use tokens."""
    url = f"http://127.0.0.1:{port}/mcp"
    server: MCPServer = MCPServer(
        "booking",
        token_verifier=StaticTokens(_users()),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(ISSUER),
            resource_server_url=AnyHttpUrl(url),
            validate_token_resource=False,
        ),
    )
    protect(server, rs.Codec.from_env(guard=_guard()))
    server.tool()(book_table)
    return server


def main() -> None:
    """Serve streamable HTTP on 127.0.0.1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)
    try:
        server = build_server(args.port)
    except ValueError as error:  # the deployment's configuration (REQUESTSTATE_*): say what to fix
        raise SystemExit(f"error: {error}") from None
    server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
