"""A gallery of MCP servers for tests/test_probe.py: deliberately broken ones, one per failure mode,
and the secure shapes the probe must pass. Each is an in-process ``MCPServer`` (probed in memory).

DELIBERATELY INSECURE: every server built on a scheme of ``BROKEN`` (tests/support/probe_schemes.py)
trusts a ``requestState`` it cannot authenticate, in its own way. Never copy their state handling.

Every server has one tool, ``book_table(restaurant)``, a two-round wizard over the
state ``{"restaurant", "step", "price"}`` (the ``price`` a forger would set to 0). The
broken ones replace the SDK's boundary with a scheme: how the state is wrapped on
the way out and trusted on the way in. ``user`` stands for the authenticated user (two
server objects with the same ``key`` and different users are one service seen by two
users).
"""

from __future__ import annotations

import json
import secrets
import zlib
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequests,
    InputRequiredResult,
)
from mcp_types.methods import INPUT_REQUIRED_METHODS, is_input_required

import requeststate as rs
from requeststate.mcp import protect
from tests.support.mcp_servers import FakeAuth
from tests.support.probe_schemes import BROKEN, KEY, SOUND_BUT_LENIENT, Call, Open, Refused, Seal


class SchemeBoundary:
    """Middleware in place of the SDK's boundary: a scheme seals and opens every state."""

    def __init__(self, seal: Seal, open_: Open, user: str) -> None:
        self._seal, self._open, self._user = seal, open_, user

    def _call(self, ctx: ServerRequestContext[Any, Any]) -> Call:
        params = ctx.params or {}
        target = str(params.get("uri") if ctx.method == "resources/read" else params.get("name"))
        return Call(ctx.method, target, params.get("arguments") or {}, self._user)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method not in INPUT_REQUIRED_METHODS:
            return await call_next(ctx)
        call = self._call(ctx)
        params = ctx.params or {}
        if params.get("requestState") is not None:
            try:
                state = self._open(params["requestState"], call)
            except (Refused, ValueError, KeyError, UnicodeDecodeError, zlib.error, OSError, EOFError):
                raise MCPError(code=INVALID_PARAMS, message="Invalid or expired requestState") from None
            ctx = replace(ctx, params={**params, "requestState": state})
        result = await call_next(ctx)
        if not is_input_required(result):
            return result
        if isinstance(result, Mapping):
            return {**result, "requestState": self._seal(result["requestState"], call)}
        assert result.request_state is not None
        return result.model_copy(update={"request_state": self._seal(result.request_state, call)})


def _ask(field: str, kind: str) -> InputRequests:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return {
        field: ElicitRequest(params=ElicitRequestFormParams(message=f"{field}?", requested_schema=schema))
    }


def _wizard(restaurant: str, state: str | None) -> str | InputRequiredResult:
    """Round 1 asks the date, round 2 the party size, round 3 books at the state's price."""
    if state is None:
        draft = {"restaurant": restaurant, "step": 1, "price": 20}
        return InputRequiredResult(input_requests=_ask("date", "string"), request_state=json.dumps(draft))
    draft = json.loads(state)  # a crash on a state it cannot parse: a tool error (isError)
    if draft["step"] == 1:
        draft = {**draft, "step": 2}
        return InputRequiredResult(input_requests=_ask("party", "integer"), request_state=json.dumps(draft))
    return f"Booked at {draft['restaurant']} for {draft['price']}."


def wizard_server(name: str, security: RequestStateSecurity | None = None) -> MCPServer[Any]:
    """The wizard, under the SDK's own boundary: by default (``security=None``) an ephemeral key."""
    server: MCPServer[Any] = MCPServer(name, request_state_security=security)

    @server.tool()
    async def book_table(restaurant: str, ctx: Context) -> str | InputRequiredResult:
        return _wizard(restaurant, ctx.request_state)

    return server


def _without_boundary(server: MCPServer[Any]) -> MCPServer[Any]:
    server.middleware[:] = [
        entry for entry in server.middleware if not isinstance(entry, RequestStateBoundary)
    ]
    return server


def broken(kind: str, *, user: str = "alice") -> MCPServer[Any]:
    """The wizard under one of the ``BROKEN`` schemes."""
    return under(kind, *BROKEN[kind], user=user)


def lenient() -> MCPServer[Any]:
    """The wizard under a sound scheme that reads base64 leniently (``SOUND_BUT_LENIENT``)."""
    return under("sound but lenient", *SOUND_BUT_LENIENT)


def under(name: str, seal: Seal, open_: Open, *, user: str = "alice") -> MCPServer[Any]:
    """The wizard under the scheme ``seal``, ``open_``, signed in as ``user``."""
    server = _without_boundary(wizard_server(name))
    server.middleware.insert(0, SchemeBoundary(seal, open_, user))
    return server


def crashing() -> MCPServer[Any]:
    """Keeps the state server-side under a random id, and crashes (a tool error) on an unknown id."""
    server: MCPServer[Any] = _without_boundary(MCPServer("crash on bad state"))
    drafts: dict[str, str] = {}

    @server.tool()
    async def book_table(restaurant: str, ctx: Context) -> str | InputRequiredResult:
        state = None if ctx.request_state is None else drafts[ctx.request_state]  # KeyError: isError
        result = _wizard(restaurant, state)
        if isinstance(result, InputRequiredResult) and result.request_state is not None:
            handle = secrets.token_urlsafe(16)
            drafts[handle] = result.request_state
            return result.model_copy(update={"request_state": handle})
        return result

    return server


def protected(*, user: str = "alice", keys: rs.KeyRing | None = None, **options: Any) -> MCPServer[Any]:
    """The wizard under ``requeststate.mcp.protect`` (a shared ``keys`` ring), signed in as ``user``."""
    server = wizard_server("protected")
    protect(server, keys if keys is not None else rs.KeyRing(KEY), **options)
    _sign_in(server, user)
    return server


def sdk_shared(*, user: str = "alice") -> MCPServer[Any]:
    """The wizard under the SDK's own boundary with a shared key, signed in as ``user``."""
    server = wizard_server("sdk-shared", RequestStateSecurity(keys=[KEY]))
    _sign_in(server, user)
    return server


def _sign_in(server: MCPServer[Any], user: str) -> None:
    auth = FakeAuth()
    auth.subject = user
    server.middleware.insert(0, auth)


def prompt_only(*, secure: bool) -> MCPServer[Any]:
    """No tool: a prompt carries the wizard (plain JSON, trusted, unless ``secure``)."""
    server: MCPServer[Any] = MCPServer("prompt-only")
    if not secure:
        _without_boundary(server)

    @server.prompt(name="plan")
    async def plan(ctx: Context) -> str | InputRequiredResult:
        return _wizard("probe", ctx.request_state)

    return server


def resource_only(*, secure: bool) -> MCPServer[Any]:
    """No tool: a resource template carries the wizard (plain JSON, trusted, unless ``secure``)."""
    server: MCPServer[Any] = MCPServer("resource-only")
    if not secure:
        _without_boundary(server)

    @server.resource("booking://{restaurant}")
    async def booking(restaurant: str, ctx: Context) -> str | InputRequiredResult:
        return _wizard(restaurant, ctx.request_state)

    return server


def _bound_to(call: Call) -> str:
    """What a sealing scheme binds a state to: the target and its arguments."""
    return f"{call.target} {json.dumps(call.arguments, sort_keys=True)}"


def sealed(*, fail_open: bool = False) -> MCPServer[Any]:
    """Seals every state under the shared ``KEY``, bound to the target and its arguments; refuses a
    state that does not verify, unless ``fail_open``: then it carries on with a new draft, as a worker
    that takes a refusal for a missing state would."""
    codec = rs.Codec(KEY)

    def open_(token: str, call: Call) -> str:
        state = codec.decode(token, tool=_bound_to(call))
        if state is None and fail_open:
            return json.dumps({"restaurant": "probe", "step": 1, "price": 0})
        if state is None:
            raise Refused
        return state

    return under("sealed", lambda state, call: codec.encode(state, tool=_bound_to(call)), open_)


def trusts_round_two() -> MCPServer[Any]:
    """Seals the first round's state as ``sealed`` does, and hands out the second's as plain JSON,
    trusted when it comes back."""
    codec = rs.Codec(KEY)

    def seal(state: str, call: Call) -> str:
        return codec.encode(state, tool=_bound_to(call)) if json.loads(state)["step"] == 1 else state

    def open_(token: str, call: Call) -> str:
        if token.startswith("v1e."):
            state = codec.decode(token, tool=_bound_to(call))
        else:  # round 2's state, trusted as it comes
            state = token if json.loads(token)["step"] == 2 else None
        if state is None:
            raise Refused
        return state

    return under("trusts round two", seal, open_)


class _Except:
    """A boundary that lets the calls of one tool through untouched: that tool's state is trusted."""

    def __init__(self, tool: str, boundary: ServerMiddleware[Any]) -> None:
        self._tool, self._boundary = tool, boundary

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if (ctx.params or {}).get("name") == self._tool:
            return await call_next(ctx)
        return await self._boundary(ctx, call_next)


def one_bad_tool() -> MCPServer[Any]:
    """Three wizards, ``book_table``, ``order`` and ``quote``, under ``protect``, but ``quote``'s state
    is let through the boundary: plain JSON, trusted."""
    server = wizard_server("one bad tool")
    for name in ("order", "quote"):

        async def wizard(restaurant: str, ctx: Context) -> str | InputRequiredResult:
            return _wizard(restaurant, ctx.request_state)

        server.tool(name=name)(wizard)
    boundary = protect(server, rs.KeyRing(KEY))
    server.middleware[server.middleware.index(boundary)] = _Except("quote", boundary)
    return server
