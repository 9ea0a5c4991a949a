"""MCP servers for tests/test_probe.py, over stdio: ``python -m tests.support.probe_server KIND``.

KIND is one of:

- ``guarded``: the two-tool server of tests/support/mcp_servers.py, protected with
  single-use tokens (a ``MemoryGuard``) and ``on_invalid="reelicit"``, so every
  refusal is a re-elicit rather than an error;
- ``refusing``: a tool that hands out a state and refuses every echo, even of
  its own state (the probe cannot judge anything and must say so);
- ``plain``: a tool that never asks for input;
- ``varying``: a protected tool whose first round differs each time (a nonce
  in its question) and which completes on a valid echo, refusals re-elicit;
  beside it a tool annotated destructive, which discovery must not call;
- ``crashing``: a tool that dies (the process exits) on any state but its own;
- ``amnesiac``: a tool that asks the same question whatever state comes back.

Logs go to stderr; stdout is the protocol.
"""

from __future__ import annotations

import os
import secrets
import sys
from typing import Any

from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.request_state import RequestStateBoundary
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    ToolAnnotations,
)

import requeststate as rs
from requeststate.mcp import protect
from tests.support.mcp_servers import build


def guarded() -> MCPServer[Any]:
    """Two protected tools, single-use tokens, refusals re-elicit."""
    built = build(
        "mcpserver",
        "boundary",
        rs.KeyRing(os.urandom(32)),
        "encrypted",
        guard=rs.MemoryGuard(),
        on_invalid="reelicit",
    )
    assert isinstance(built.server, MCPServer)
    return built.server


async def _refuse_every_echo(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    if (ctx.params or {}).get("requestState") is not None:
        raise MCPError(code=INVALID_PARAMS, message="Invalid or expired requestState")
    return await call_next(ctx)


def refusing() -> MCPServer[Any]:
    """Hands out a state, refuses every echo."""
    server: MCPServer[Any] = MCPServer("refusing")
    server.middleware.insert(0, _refuse_every_echo)

    @server.tool()
    async def ask(ctx: Context) -> str | InputRequiredResult:
        return InputRequiredResult(request_state="step-1") if ctx.request_state is None else "done"

    return server


def plain() -> MCPServer[Any]:
    """No tool asks for input."""
    server: MCPServer[Any] = MCPServer("plain")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    return server


def varying(destructive_calls: list[str] | None = None) -> MCPServer[Any]:
    """A question with a nonce in it, a completion on a valid echo, and a destructive tool (each of
    whose calls is appended to ``destructive_calls``, then raises)."""
    server: MCPServer[Any] = MCPServer("varying")
    protect(server, rs.KeyRing(os.urandom(32)), on_invalid="reelicit")
    schema = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}

    @server.tool()
    async def ask(ctx: Context) -> str | InputRequiredResult:
        if ctx.request_state is None:
            question = ElicitRequestFormParams(
                message=f"Code {secrets.token_hex(4)}?", requested_schema=schema
            )
            return InputRequiredResult(
                input_requests={"code": ElicitRequest(params=question)}, request_state="s"
            )
        return "done"

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    async def wipe(ctx: Context) -> str | InputRequiredResult:
        if destructive_calls is not None:
            destructive_calls.append("wipe")
        raise AssertionError("discovery called a tool annotated destructive")

    return server


def crashing() -> MCPServer[Any]:
    """Exits the process on any state but the one it minted."""
    server: MCPServer[Any] = MCPServer("crashing")

    @server.tool()
    async def ask(ctx: Context) -> str | InputRequiredResult:
        if ctx.request_state is None:
            return InputRequiredResult(request_state="mine")
        if ctx.request_state != "mine":
            os._exit(3)
        return "done"

    # No boundary: the tool itself sees (and dies of) whatever comes back.
    server.middleware[:] = [
        entry for entry in server.middleware if not isinstance(entry, RequestStateBoundary)
    ]
    return server


def amnesiac() -> MCPServer[Any]:
    """Asks the same question whatever comes back."""
    server: MCPServer[Any] = MCPServer("amnesiac")
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}

    @server.tool()
    async def ask(ctx: Context) -> InputRequiredResult:
        question = ElicitRequestFormParams(message="Name?", requested_schema=schema)
        return InputRequiredResult(input_requests={"name": ElicitRequest(params=question)}, request_state="s")

    return server


if __name__ == "__main__":
    kinds = {
        "amnesiac": amnesiac,
        "guarded": guarded,
        "refusing": refusing,
        "plain": plain,
        "varying": varying,
        "crashing": crashing,
    }
    kinds[sys.argv[1]]().run()
