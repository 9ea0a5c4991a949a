"""A gallery of MCP servers for tests/test_probe.py: deliberately broken ones, one per failure mode,
and the secure shapes the probe must pass. Each is an in-process ``MCPServer`` (probed in memory).

DELIBERATELY INSECURE: every server in ``BROKEN`` trusts a ``requestState`` it cannot
authenticate, in its own way. Never copy their state handling.

Every server has one tool, ``book_table(restaurant)``, a two-round wizard over the
state ``{"restaurant", "step", "price"}`` (the ``price`` a forger would set to 0). The
broken ones replace the SDK's boundary with a ``Scheme``: how the state is wrapped on
the way out and trusted on the way in. ``user`` stands for the authenticated user (two
server objects with the same ``key`` and different users are one service seen by two
users).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import hmac
import json
import secrets
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
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

KEY: Final = bytes(range(32))


@dataclass(frozen=True)
class Call:
    """What a scheme may bind a state to."""

    method: str
    target: str
    arguments: Mapping[str, Any]
    user: str


class Refused(Exception):
    """A scheme's refusal: the middleware answers -32602."""


Seal = Callable[[str, Call], str]
Open = Callable[[str, Call], str]  # raises Refused (or crashes) on a state it will not trust


def _b64u(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64u(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise Refused from None


def _mac(data: bytes) -> bytes:
    return hmac.new(KEY, data, hashlib.sha256).digest()


# --- keyless encodings: anyone can decode, change and re-encode ---------------------------------------------

KEYLESS: Final[dict[str, tuple[Seal, Open]]] = {
    "json": (lambda s, c: s, lambda t, c: t),
    "base64url(zlib(json))": (
        lambda s, c: _b64u(zlib.compress(s.encode())),
        lambda t, c: zlib.decompress(_unb64u(t)).decode(),
    ),
    "base64(json)": (
        lambda s, c: base64.b64encode(s.encode()).decode(),
        lambda t, c: base64.b64decode(t).decode(),
    ),
    "base64url(gzip(json))": (
        lambda s, c: _b64u(gzip.compress(s.encode())),
        lambda t, c: gzip.decompress(_unb64u(t)).decode(),
    ),
    "hex(json)": (lambda s, c: s.encode().hex(), lambda t, c: bytes.fromhex(t).decode()),
    "hex(zlib(json))": (
        lambda s, c: zlib.compress(s.encode()).hex(),
        lambda t, c: zlib.decompress(bytes.fromhex(t)).decode(),
    ),
}

_NONE_HEADER: Final = _b64u(b'{"alg":"none","typ":"JWT"}')
_HS256_HEADER: Final = _b64u(b'{"alg":"HS256","typ":"JWT"}')


def _jwt_none_open(token: str, call: Call) -> str:
    header, payload, signature = token.split(".")
    if json.loads(_unb64u(header)).get("alg") != "none" or signature:
        raise Refused
    return _unb64u(payload).decode()


def _jwt_hs256_seal(state: str, call: Call) -> str:
    signing = f"{_HS256_HEADER}.{_b64u(state.encode())}"
    return f"{signing}.{_b64u(_mac(signing.encode()))}"


def _jwt_confused_open(token: str, call: Call) -> str:
    """The classic bug: the token names its own algorithm, and ``none`` means no check."""
    header, payload, signature = token.split(".")
    trusted = json.loads(_unb64u(header)).get("alg") == "none"
    if not trusted and not hmac.compare_digest(_unb64u(signature), _mac(f"{header}.{payload}".encode())):
        raise Refused
    return _unb64u(payload).decode()


def _hashed_seal(state: str, call: Call) -> str:
    return f"{_b64u(state.encode())}.{hashlib.sha256(state.encode()).hexdigest()}"


def _hashed_open(token: str, call: Call) -> str:
    """An unkeyed SHA-256 "MAC": it catches typos, not forgers."""
    body, _, digest = token.partition(".")
    state = _unb64u(body)
    if not hmac.compare_digest(hashlib.sha256(state).hexdigest(), digest):
        raise Refused
    return state.decode()


def _mac_optional(prefix: str) -> tuple[Seal, Open]:
    """A real HMAC, checked as a prefix of the expected one: an empty or cut MAC passes."""

    def seal(state: str, call: Call) -> str:
        payload = _b64u(state.encode())
        return f"{prefix}{payload}.{_b64u(_mac(payload.encode()))}"

    def open_(token: str, call: Call) -> str:
        payload, _, mac = token.removeprefix(prefix).partition(".")
        if not _b64u(_mac(payload.encode())).startswith(mac):
            raise Refused
        return _unb64u(payload).decode()

    return seal, open_


def _codec_seal(bind: Callable[[Call], tuple[str, str]]) -> tuple[Seal, Open]:
    """requeststate tokens, bound to ``bind(call)`` = (subject, tool): sound crypto, a binding left out."""

    def seal(state: str, call: Call) -> str:
        subject, tool = bind(call)
        return rs.encode(state, KEY, mode="encrypted", subject=subject, tool=tool)

    def open_(token: str, call: Call) -> str:
        subject, tool = bind(call)
        state = rs.decode(token, KEY, mode="encrypted", subject=subject, tool=tool)
        if state is None:
            raise Refused
        return state

    return seal, open_


def _arguments_digest(call: Call) -> str:
    return hashlib.sha256(json.dumps(dict(call.arguments), sort_keys=True).encode()).hexdigest()


def _form_seal(state: str, call: Call) -> str:
    return "&".join(f"{name}={value}" for name, value in json.loads(state).items())


def _form_open(token: str, call: Call) -> str:
    """Plain text, trusted: the state is whatever the client says it is."""
    fields = dict(piece.split("=", 1) for piece in token.split("&"))
    return json.dumps({name: int(value) if value.isdigit() else value for name, value in fields.items()})


def _expiring_seal(state: str, call: Call) -> str:
    body = _b64u(json.dumps({"s": state, "exp": int(time.time()) + 1}).encode())
    return f"{body}.{_b64u(_mac(body.encode()))}"


def _expiring_open(token: str, call: Call) -> str:
    """Checks the MAC, then forgets to check ``exp``."""
    body, _, mac = token.partition(".")
    if not hmac.compare_digest(_unb64u(mac), _mac(body.encode())):
        raise Refused
    state: str = json.loads(_unb64u(body))["s"]
    return state


BROKEN: Final[dict[str, tuple[Seal, Open]]] = {
    **KEYLESS,
    "jwt alg none": (lambda s, c: f"{_NONE_HEADER}.{_b64u(s.encode())}.", _jwt_none_open),
    "jwt accepting alg none": (_jwt_hs256_seal, _jwt_confused_open),
    "unkeyed hash": (_hashed_seal, _hashed_open),
    "mac optional, two parts": _mac_optional(""),
    "mac optional, three parts": _mac_optional("gx."),
    "no argument binding": _codec_seal(lambda c: (c.user, f"{c.method}:{c.target}")),
    "no user binding": _codec_seal(lambda c: ("", f"{c.method}:{c.target}:{_arguments_digest(c)}")),
    "plaintext echo": (_form_seal, _form_open),
    "expiry not checked": (_expiring_seal, _expiring_open),
}


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
    seal, open_ = BROKEN[kind]
    server = _without_boundary(wizard_server(kind))
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
