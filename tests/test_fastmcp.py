"""``protect()`` on a FastMCP server, driven end to end by FastMCP's own ``Client``.

In memory, over stdio (examples/fastmcp_server.py) and over streamable HTTP with a bearer
token verifier and two users: each round, tampering, a replay under a guard, another user,
other arguments, expiry and re-elicit.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import fastmcp
import pytest
import uvicorn
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from mcp.shared.exceptions import MCPError
from mcp_types import (
    ElicitResult,
    InputRequiredResult,
    InputResponses,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import requeststate as rs
from requeststate.mcp import INVALID_MESSAGE, protect
from tests.conftest import SECRET
from tests.support.fastmcp_booking import booking
from tests.support.memory_guard import memory_guard
from tests.support.processes import free_port
from tests.support.reference import b64
from tests.test_metrics import point, points

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "fastmcp_server.py"
ANSWER: InputResponses = {"date": ElicitResult(action="accept", content={"date": "2026-12-01"})}


async def first_round(client: Client[Any], restaurant: str = "Ada") -> str:
    result = await client.session.call_tool("book", {"restaurant": restaurant}, allow_input_required=True)
    assert isinstance(result, InputRequiredResult)
    assert result.request_state is not None
    return result.request_state


async def retry(client: Client[Any], state: str, restaurant: str = "Ada") -> object:
    """The retry's result, or the JSON-RPC error it was answered with."""
    try:
        result = await client.session.call_tool(
            "book",
            {"restaurant": restaurant},
            request_state=state,
            input_responses=ANSWER,
            allow_input_required=True,
        )
    except MCPError as refused:
        return (refused.error.code, refused.error.message)
    if isinstance(result, InputRequiredResult):
        return "input required again"
    text = result.content[0]
    return getattr(text, "text", text)


REFUSED = (-32602, INVALID_MESSAGE)


def tampered(token: str) -> str:
    middle = len(token) // 2
    return token[:middle] + ("A" if token[middle] != "A" else "B") + token[middle + 1 :]


# --- in memory ------------------------------------------------------------------------------------


async def test_protect_takes_the_place_of_the_boundary_fastmcp_installed() -> None:
    mcp, _ = booking()
    protect(mcp, rs.Codec(SECRET))
    assert [type(entry).__name__ for entry in mcp._mcp_server.middleware] == [
        "FastMCPServerMiddleware",
        "Boundary",
    ]


async def test_a_two_round_tool_completes_and_its_handler_sees_only_plaintext() -> None:
    mcp, seen = booking()
    protect(mcp, rs.Codec(SECRET))
    async with Client(mcp) as client:
        token = await first_round(client)
        assert (token[:4], await retry(client, token)) == ("v1e.", "booked Ada (for:Ada)")
    assert seen == [None, "for:Ada"]


async def test_a_tampered_state_is_refused_before_the_handler() -> None:
    mcp, seen = booking()
    protect(mcp, rs.Codec(SECRET))
    async with Client(mcp) as client:
        assert await retry(client, tampered(await first_round(client))) == REFUSED
    assert seen == [None]


async def test_a_state_minted_for_other_arguments_is_refused() -> None:
    mcp, seen = booking()
    protect(mcp, rs.Codec(SECRET))
    async with Client(mcp) as client:
        assert await retry(client, await first_round(client, "Ada"), restaurant="Babbage") == REFUSED
    assert seen == [None]


async def test_a_replay_is_refused_under_a_guard() -> None:
    mcp, _ = booking()
    protect(mcp, rs.Codec(SECRET, guard=memory_guard()))
    async with Client(mcp) as client:
        token = await first_round(client)
        assert [await retry(client, token), await retry(client, token)] == ["booked Ada (for:Ada)", REFUSED]


async def test_an_expired_state_is_refused() -> None:
    now = [2_000_000_000.0]
    mcp, _ = booking()
    protect(mcp, rs.Codec(SECRET, ttl=60, clock=lambda: now[0]))
    async with Client(mcp) as client:
        token = await first_round(client)
        now[0] += 61
        assert await retry(client, token) == REFUSED


async def test_reelicit_asks_again_instead_of_refusing() -> None:
    mcp, seen = booking()
    protect(mcp, rs.Codec(SECRET), on_invalid="reelicit")
    async with Client(mcp) as client:
        assert await retry(client, tampered(await first_round(client))) == "input required again"
    assert seen == [None, None]


async def test_mcpd_binding_completes_a_round() -> None:
    mcp, _ = booking()
    protect(mcp, rs.Codec(SECRET), bind="mcpd")
    async with Client(mcp) as client:
        assert await retry(client, await first_round(client)) == "booked Ada (for:Ada)"


async def test_a_refusal_is_logged_with_method_target_and_reason(caplog: pytest.LogCaptureFixture) -> None:
    mcp, _ = booking()
    protect(mcp, rs.Codec(SECRET))
    async with Client(mcp) as client:
        token = tampered(await first_round(client))
        with caplog.at_level(logging.WARNING, logger="requeststate.mcp"):
            await retry(client, token)
    assert [
        (record.name, record.getMessage().split(" id=")[0], record.getMessage().split(" reason=")[1])
        for record in caplog.records
        if record.name == "requeststate.mcp"
    ] == [
        (
            "requeststate.mcp",
            "requestState refused: method=tools/call target='book'",
            f"bad_signature pid={os.getpid()}",
        )
    ]


async def test_each_token_is_counted_with_its_method() -> None:
    reader = InMemoryMetricReader()
    mcp, _ = booking()
    protect(mcp, rs.Codec(SECRET), metrics=MeterProvider(metric_readers=[reader]).get_meter("requeststate"))
    async with Client(mcp) as client:
        token = await first_round(client)
        await retry(client, tampered(token))
        await retry(client, token)
    minted, accepted = (
        point("tokens.minted", mode="encrypted", method="tools/call"),
        point("tokens.accepted", mode="encrypted", method="tools/call"),
    )
    refused = point("tokens.refused", mode="encrypted", reason="bad_signature", method="tools/call")
    assert points(reader) == {minted: 1, accepted: 1, refused: 1}


# --- what cannot be protected ---------------------------------------------------------------------


async def test_a_fastmcp_older_than_4_1_is_refused_naming_its_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mcp, _ = booking()
    monkeypatch.setattr(fastmcp, "__version__", "4.0.11")
    with pytest.raises(
        TypeError, match=r"^fastmcp 4\.0\.11 cannot be protected: requeststate needs fastmcp >= 4\.1"
    ):
        protect(mcp, rs.Codec(SECRET))


async def test_a_fastmcp_without_the_sdks_boundary_is_refused() -> None:
    mcp, _ = booking()
    mcp._mcp_server.middleware[:] = [mcp._mcp_server.middleware[0]]
    with pytest.raises(
        TypeError, match=r"^this FastMCP has no requestState boundary in its chain to replace$"
    ):
        protect(mcp, rs.Codec(SECRET))


async def test_a_fastmcp_protected_twice_is_refused() -> None:
    mcp, _ = booking()
    protect(mcp, rs.Codec(SECRET))
    with pytest.raises(
        ValueError, match=r"^this server's requestState is already protected by requeststate$"
    ):
        protect(mcp, rs.Codec(SECRET))


def test_requeststate_mcp_never_imports_fastmcp() -> None:
    code = "import sys, requeststate.mcp; print('fastmcp' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "False\n"


# --- stdio: the example, as a separate process ----------------------------------------------------


async def test_the_example_server_completes_a_round_over_stdio_and_refuses_a_tampered_one() -> None:
    env = {**os.environ, rs.ENV_KEYS: b64(SECRET)}
    transport = StdioTransport(command=sys.executable, args=[str(EXAMPLE)], env=env)
    async with Client(transport) as client:
        token = await first_round(client)
        assert await retry(client, tampered(token)) == REFUSED
        assert await retry(client, token) == "Booked Ada on 2026-12-01 (restaurant=Ada)."
        # The example's guard: the same state twice is a replay.
        assert await retry(client, token) == REFUSED


# --- streamable HTTP, two users -------------------------------------------------------------------


@asynccontextmanager
async def served(mcp: FastMCP[Any]) -> AsyncIterator[str]:
    port = free_port()
    web = uvicorn.Server(uvicorn.Config(mcp.http_app(), host="127.0.0.1", port=port, log_level="error"))
    async with anyio.create_task_group() as group:
        group.start_soon(web.serve)
        while not web.started:
            await anyio.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            web.should_exit = True


USERS = {
    "tok-alice": {"client_id": "app", "sub": "alice", "iss": "https://idp.test", "scopes": []},
    "tok-bob": {"client_id": "app", "sub": "bob", "iss": "https://idp.test", "scopes": []},
}


def as_user(url: str, token: str) -> Client[Any]:
    return Client(StreamableHttpTransport(url, auth=token))


async def test_over_http_a_user_completes_and_another_user_is_refused_the_state() -> None:
    mcp, seen = booking(auth=StaticTokenVerifier(tokens=USERS))
    protect(mcp, rs.Codec(SECRET, guard=memory_guard()))
    async with served(mcp) as url, as_user(url, "tok-alice") as alice, as_user(url, "tok-bob") as bob:
        token = await first_round(alice)
        assert await retry(bob, token) == REFUSED
        assert await retry(alice, token) == "booked Ada (for:Ada)"
    assert seen == [None, "for:Ada"]


async def test_over_http_the_principal_is_the_sdks_of_fastmcps_verified_token() -> None:
    # The same sub under another issuer is another principal: the client, issuer and subject are bound.
    others = {"tok-eve": {**USERS["tok-alice"], "iss": "https://other.test"}}
    mcp, _ = booking(auth=StaticTokenVerifier(tokens={**USERS, **others}))
    protect(mcp, rs.Codec(SECRET))
    async with served(mcp) as url, as_user(url, "tok-alice") as alice, as_user(url, "tok-eve") as eve:
        assert await retry(eve, await first_round(alice)) == REFUSED
