"""MCP servers for tests/test_mcp.py: the same two-question flow on each SDK tier and shape.

A tool, a prompt and a resource template each ask two questions over two
rounds, carrying a msgspec-typed state whose ``marker`` appears nowhere else
on the wire. Handlers record every ``requestState`` they are handed, so tests
can assert that no refused echo ever reached one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import msgspec
from mcp.server import MCPServer, Server
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

import requeststate as rs
from requeststate.mcp import protect, use_codec

MARKER = "PLAINTEXT-7f3a9c"
"""Travels only inside the state: seeing it on the wire means the state leaked."""

Tier: TypeAlias = Literal["mcpserver", "lowlevel"]
Shape: TypeAlias = Literal["boundary", "codec"]
TIERS: tuple[Tier, ...] = ("mcpserver", "lowlevel")
SHAPES: tuple[Shape, ...] = ("boundary", "codec")


class Step(msgspec.Struct, forbid_unknown_fields=True):
    """The handlers' typed state."""

    step: int
    marker: str
    answers: list[str]


_dump = msgspec.json.Encoder().encode
_load = msgspec.json.Decoder(Step).decode


def _question(text: str) -> ElicitRequest:
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    return ElicitRequest(params=ElicitRequestFormParams(message=text, requested_schema=schema))


def next_round(
    state: str | None, responses: Mapping[str, Any] | None, seen: list[str | None]
) -> str | InputRequiredResult:
    """Round 1 asks q1, round 2 asks q2, round 3 answers ``done: a1,a2``."""
    seen.append(state)
    if state is None:
        return InputRequiredResult(
            input_requests={"q1": _question("First question?")},
            request_state=_dump(Step(step=1, marker=MARKER, answers=[])).decode(),
        )
    current = _load(state)
    reply = (responses or {}).get(f"q{current.step}")
    if not isinstance(reply, ElicitResult) or reply.action != "accept" or reply.content is None:
        return "cancelled"
    answers = [*current.answers, str(reply.content["answer"])]
    if current.step == 1:
        return InputRequiredResult(
            input_requests={"q2": _question("Second question?")},
            request_state=_dump(Step(step=2, marker=MARKER, answers=answers)).decode(),
        )
    return "done: " + ",".join(answers)


class FakeAuth:
    """Sets the SDK's auth context as its HTTP auth middleware would; ``subject=None`` is anonymous.

    Installed at position 0 of the chain, outside the boundary, like the real
    Starlette middleware that runs before every MCP middleware.
    """

    def __init__(self) -> None:
        self.subject: str | None = None
        self.client_id = "test-client"
        self.without_sub = False
        """Signed in (as ``client_id``) with an access token that has no ``sub``; ``subject`` unused."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if self.subject is None and not self.without_sub:
            return await call_next(ctx)
        token = AccessToken(
            token="opaque",
            client_id=self.client_id,
            scopes=["mcp"],
            subject=None if self.without_sub else self.subject,
            claims={"iss": "https://issuer.test"},
        )
        reset = auth_context_var.set(AuthenticatedUser(token))
        try:
            return await call_next(ctx)
        finally:
            auth_context_var.reset(reset)


@dataclass
class Built:
    """A server under test, what its handlers saw, and the auth knob."""

    server: MCPServer[Any] | Server[Any]
    auth: FakeAuth
    seen: list[str | None] = field(default_factory=list)


def _mcpserver(built_seen: list[str | None], name: str) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(name)

    @server.tool()
    async def wizard(ctx: Context, topic: str = "x") -> str | InputRequiredResult:
        return next_round(ctx.request_state, ctx.input_responses, built_seen)

    @server.tool()
    async def other(ctx: Context, topic: str = "x") -> str | InputRequiredResult:
        return next_round(ctx.request_state, ctx.input_responses, built_seen)

    @server.prompt(name="wizard")
    async def wizard_prompt(ctx: Context) -> str | InputRequiredResult:
        return next_round(ctx.request_state, ctx.input_responses, built_seen)

    @server.resource("res://{item}")
    async def item(item: str, ctx: Context) -> str | InputRequiredResult:
        return next_round(ctx.request_state, ctx.input_responses, built_seen)

    return server


def _lowlevel(built_seen: list[str | None], name: str) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        schema = {"type": "object", "properties": {"topic": {"type": "string"}}}
        return ListToolsResult(tools=[Tool(name=n, input_schema=schema) for n in ("wizard", "other")])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        outcome = next_round(params.request_state, params.input_responses, built_seen)
        if isinstance(outcome, InputRequiredResult):
            return outcome
        return CallToolResult(content=[TextContent(type="text", text=outcome)])

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


def build(
    tier: Tier,
    shape: Shape,
    keys: rs.KeyRing,
    mode: rs.Modes,
    *,
    name: str = "tests",
    **options: Any,
) -> Built:
    """A server ``name`` of ``tier`` protected in ``shape``, with ``FakeAuth`` outermost."""
    seen: list[str | None] = []
    make = _mcpserver if tier == "mcpserver" else _lowlevel
    server: MCPServer[Any] | Server[Any] = make(seen, name)
    if shape == "boundary":
        protect(server, keys, mode=mode, **options)
    else:
        use_codec(server, keys, mode=mode, **options)
    auth = FakeAuth()
    server.middleware.insert(0, auth)
    return Built(server=server, auth=auth, seen=seen)
