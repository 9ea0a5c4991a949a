"""One MCP round through each boundary, called directly (no transport): ``boundary_rounds``.

One round is what a boundary does for one retry of a multi-round tool call:
open the echoed ``requestState`` (verify it, check every binding), run the
handler, seal the next state. Each case is a real boundary called in process,
for a signed-in user and two arguments; the handler's result reaches it as the
SDK's runner hands it to every middleware, already shaped for the wire (a
mapping). Our boundaries count on OpenTelemetry as installed.

- ``SDK boundary``: the SDK's ``RequestStateBoundary`` with its built-in
  AES-256-GCM codec (``MCPServer``'s default): method, target, arguments,
  audience, principal;
- ``protect()``: our ``Boundary`` on the codec given, default ``bind="request"``:
  the same five bindings in the bind tag;
- ``protect(bind="mcpd")``: our ``Boundary`` binding only the bare ``sub`` and
  the tool name (mcp.d's binding): the floor the added bindings cost against;
- ``use_codec()``: the SDK's boundary with ``SDKCodec``;
- ``FastMCP's boundary`` and ``protect(FastMCP)``: the boundary in a ``FastMCP``'s
  chain as FastMCP installs it (the SDK's, with an ephemeral key), and as
  ``protect()`` leaves it (when fastmcp is installed).

Needs the mcp extra; ``requeststate bench`` and the repository's
``benchmarks.mcp_rounds`` both time these cases.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, cast

import requeststate as rs

if TYPE_CHECKING:
    from mcp.server.context import HandlerResult, ServerMiddleware, ServerRequestContext

__all__ = [
    "ARGUMENTS",
    "FASTMCP_BOUNDARY",
    "FASTMCP_PROTECT",
    "MCPD",
    "PROTECT",
    "SDK_BOUNDARY",
    "USE_CODEC",
    "boundary_rounds",
    "signed_in",
]

ARGUMENTS: Final = {"restaurant": "Chez Ada", "party": 4}
SDK_BOUNDARY: Final = "SDK boundary"
PROTECT: Final = "protect()"
MCPD: Final = 'protect(bind="mcpd")'
USE_CODEC: Final = "use_codec()"
FASTMCP_BOUNDARY: Final = "FastMCP's boundary"
FASTMCP_PROTECT: Final = "protect(FastMCP)"
_AUDIENCE: Final = "svc"


@contextmanager
def signed_in() -> Iterator[None]:
    """Within it, the request's user is signed in (an access token with a subject and an issuer).

    Raises:
        ImportError: the mcp extra is missing.
    """
    from mcp.server.auth.middleware.auth_context import auth_context_var
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    user = AccessToken(
        token="opaque-access-token",  # noqa: S106 (a stand-in: no server checks it here)
        client_id="client",
        scopes=[],
        subject="alice",
        claims={"iss": "https://as"},
    )
    reset = auth_context_var.set(AuthenticatedUser(user))
    try:
        yield
    finally:
        auth_context_var.reset(reset)


def _finish(coroutine: Coroutine[Any, Any, HandlerResult]) -> HandlerResult:
    # Without a guard no boundary ever suspends: drive the coroutine by hand, no event loop per call.
    try:
        coroutine.send(None)
    except StopIteration as done:
        return cast("HandlerResult", done.value)
    coroutine.close()
    raise RuntimeError("the boundary suspended: a round runs without I/O")


def _context(params: dict[str, Any]) -> ServerRequestContext[Any, Any]:
    from mcp.server.context import ServerRequestContext

    return ServerRequestContext(
        session=cast("Any", None),
        lifespan_context={},
        protocol_version="2026-07-28",
        method="tools/call",
        params=params,
        request_id=1,
    )


def _one_round(boundary: ServerMiddleware[Any], state: str) -> Callable[[], str]:
    """A retry through ``boundary``: open the echo of a token it minted, then seal the next state."""
    from mcp.server.context import CallNext
    from mcp_types import InputRequiredResult

    params = {"name": "book_table", "arguments": ARGUMENTS}
    # What the SDK's runner hands every middleware: the handler's result already shaped for the wire.
    interim = InputRequiredResult(request_state=state).model_dump(
        by_alias=True, mode="json", exclude_none=True
    )

    async def mint(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        return interim

    sealed = _finish(boundary(_context(params), cast("CallNext", mint)))
    token = cast("dict[str, Any]", sealed)["requestState"]
    retry = _context({**params, "requestState": token, "inputResponses": {}})
    seen: list[str] = []

    async def handler(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        seen.append((ctx.params or {})["requestState"])
        return interim

    def round_trip() -> str:
        _finish(boundary(retry, cast("CallNext", handler)))
        return seen.pop()

    return round_trip


def _fastmcp_boundaries(codec: rs.Codec) -> dict[str, ServerMiddleware[Any]]:
    """The boundary a FastMCP server runs, as shipped and once protected; none without fastmcp."""
    from requeststate.mcp import protect

    try:
        from fastmcp import FastMCP
    except ImportError:
        return {}
    shipped, protected = FastMCP(_AUDIENCE), FastMCP(_AUDIENCE)
    protect(protected, codec)
    # The last entry of the chain FastMCP serves through: its request-state boundary.
    return {
        FASTMCP_BOUNDARY: shipped._mcp_server.middleware[-1],
        FASTMCP_PROTECT: protected._mcp_server.middleware[-1],
    }


def boundary_rounds(state: str, codec: rs.Codec) -> dict[str, Callable[[], str]]:
    """Each boundary's round on ``state``, ours on ``codec`` (no guard), checked to hand a handler the state.

    Call the rounds within ``signed_in()``, as they were built.

    Raises:
        ImportError: the mcp extra is missing.
    """
    from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

    from requeststate.mcp import Boundary, sdk_security

    with signed_in():
        boundaries: dict[str, ServerMiddleware[Any]] = {
            SDK_BOUNDARY: RequestStateBoundary(
                RequestStateSecurity(keys=[os.urandom(32)]), default_audience=_AUDIENCE
            ),
            PROTECT: Boundary(codec, audience=_AUDIENCE),
            MCPD: Boundary(codec, bind="mcpd"),
            USE_CODEC: RequestStateBoundary(sdk_security(codec.keys), default_audience=_AUDIENCE),
            **_fastmcp_boundaries(codec),
        }
        rounds = {name: _one_round(boundary, state) for name, boundary in boundaries.items()}
        if any(round_trip() != state for round_trip in rounds.values()):
            raise RuntimeError("a boundary did not hand the handler its state")
    return rounds
