"""The client side of the MCP tests: the SDK's real Client driving the wizard of support/mcp_servers.py."""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
import pytest
from mcp import Client
from mcp.client._memory import InMemoryTransport
from mcp.client.context import ClientRequestContext
from mcp.server.context import HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)

import requeststate as rs
from requeststate.mcp import INVALID_MESSAGE, UNCHECKED_MESSAGE
from tests.conftest import OTHER_SECRET as OTHER_SECRET  # re-exported: the MCP tests take their keys here
from tests.conftest import SECRET as SECRET
from tests.support.mcp_servers import Built
from tests.support.mcp_wiretap import WireTap

ROOT = Path(__file__).resolve().parent.parent.parent
KEYS = rs.KeyRing(SECRET)
MODES: tuple[rs.ModeName, ...] = ("signed", "encrypted")
TIMEOUT = 20
FROZEN = {"reason": "invalid_request_state"}
UNCHECKED = {"reason": "request_state_unchecked"}
REASONS = [reason.value for reason in rs.Reason]
T = TypeVar("T")
NOW_PLUS = int(time.time()) + 3600


def b64_secret(secret: bytes) -> str:
    return base64.urlsafe_b64encode(secret).rstrip(b"=").decode()


async def answer(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    """The user: answers each question with its first word."""
    return ElicitResult(action="accept", content={"answer": params.message.split()[0].lower()})


def replies(n: int) -> dict[str, Any]:
    return {f"q{n}": ElicitResult(action="accept", content={"answer": f"a{n}"})}


def text_of(result: CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text


def tamper(token: str) -> str:
    middle = len(token) // 2
    return token[:middle] + ("A" if token[middle] != "A" else "B") + token[middle + 1 :]


async def bounded(step: Callable[[], Awaitable[T]]) -> T:
    with anyio.fail_after(TIMEOUT):
        return await step()


@asynccontextmanager
async def connect(built: Built, tap: WireTap | None = None) -> AsyncIterator[Client]:
    transport = tap if tap is not None else WireTap(InMemoryTransport(built.server))
    async with Client(transport, elicitation_callback=answer) as client:
        yield client


async def first_round(client: Client, name: str = "wizard", arguments: dict[str, Any] | None = None) -> str:
    """Round 1 of ``name``: its sealed ``requestState``."""
    args = {"topic": "x"} if arguments is None else arguments
    result = await client.session.call_tool(name, args, allow_input_required=True)
    assert isinstance(result, InputRequiredResult)
    assert result.request_state is not None
    return result.request_state


async def echo(
    client: Client, token: str, name: str = "wizard", arguments: dict[str, Any] | None = None
) -> Any:
    """Round 2 of ``name`` with ``token`` echoed: the result, or ``MCPError``."""
    args = {"topic": "x"} if arguments is None else arguments
    return await client.session.call_tool(
        name, args, allow_input_required=True, request_state=token, input_responses=replies(1)
    )


async def finish(client: Client, token: str) -> str:
    """Answer the wizard's last question with ``token`` echoed; the tool's final text."""
    final = await client.session.call_tool(
        "wizard", {"topic": "x"}, allow_input_required=True, request_state=token, input_responses=replies(2)
    )
    assert isinstance(final, CallToolResult)
    return text_of(final)


def assert_frozen(error: pytest.ExceptionInfo[MCPError]) -> None:
    assert error.value.error.code == INVALID_PARAMS
    assert error.value.error.message == INVALID_MESSAGE
    assert error.value.error.data == FROZEN


async def echo_refused(
    client: Client, token: str, name: str = "wizard", arguments: dict[str, Any] | None = None
) -> None:
    """Round 2 of ``name`` with ``token`` echoed, refused with the one frozen error."""
    with pytest.raises(MCPError) as error:
        await echo(client, token, name, arguments)
    assert_frozen(error)


async def echo_unchecked(
    client: Client, token: str, name: str = "wizard", arguments: dict[str, Any] | None = None
) -> None:
    """Round 2 of ``name`` with ``token`` echoed, which the guard could not check: -32603, retry."""
    with pytest.raises(MCPError) as error:
        await echo(client, token, name, arguments)
    assert (error.value.error.code, error.value.error.message, error.value.error.data) == (
        INTERNAL_ERROR,
        UNCHECKED_MESSAGE,
        UNCHECKED,
    )


def leaks_reason(wire: str) -> bool:
    # "expired" is a reason code and also a word of the frozen message: look outside the message.
    rest = wire.replace(INVALID_MESSAGE, "")
    return any(f'"{reason}"' in rest or f" {reason}" in rest or f":{reason}" in rest for reason in REASONS)


def plaintext_seen(built: Built) -> list[str]:
    return [state for state in built.seen if state is not None]


def request_context(
    params: dict[str, Any], *, request_id: int | None = 1, method: str = "tools/call"
) -> ServerRequestContext[Any, Any]:
    """A request's context (``tools/call`` by default), for calling a boundary directly (no transport)."""
    return ServerRequestContext(
        session=cast(Any, None),
        lifespan_context={},
        protocol_version="2026-07-28",
        method=method,
        params=params,
        request_id=request_id,
    )


async def seal_round(
    boundary: ServerMiddleware[Any], params: dict[str, Any], state: str = "s", method: str = "tools/call"
) -> str:
    """A first round through ``boundary``, called directly: the token it seals ``state`` into."""

    async def handler(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        return {"resultType": "input_required", "requestState": state}

    sealed = await boundary(request_context(dict(params), method=method), handler)
    assert isinstance(sealed, dict)
    token: str = sealed["requestState"]
    return token


async def open_round(
    boundary: ServerMiddleware[Any], params: dict[str, Any], token: str, method: str = "tools/call"
) -> str | None:
    """A retry through ``boundary`` echoing ``token``: the state its handler is handed (or ``MCPError``)."""
    handed: list[str | None] = []

    async def handler(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        handed.append((ctx.params or {}).get("requestState"))
        return {"resultType": "complete", "content": []}

    await boundary(request_context({**params, "requestState": token}, method=method), handler)
    return handed[0]
