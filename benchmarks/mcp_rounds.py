"""The cost per round of our MCP bindings against the SDK's boundary: ``python -m benchmarks.mcp_rounds``.

One round is what a boundary does for one retry of a multi-round tool call:
open the echoed ``requestState`` (verify it, check every binding), run the
handler, seal the next state. Each case is a real boundary called directly
(no transport), for a signed-in user, a 64 B state and two arguments; the
handler's result reaches it as the SDK's runner hands it to every middleware,
already shaped for the wire (a mapping). Our boundaries count on OpenTelemetry
as installed: with ``opentelemetry-api`` and no provider set, the API's no-ops.

- ``SDK boundary``: the SDK's ``RequestStateBoundary`` with its built-in
  AES-256-GCM codec (``MCPServer``'s default): method, target, arguments,
  audience, principal;
- ``protect()``: our ``Boundary``, ``"encrypted"``, default ``bind="request"``:
  the same five bindings in the bind tag;
- ``protect(bind="mcpd")``: our ``Boundary`` binding only the bare ``sub`` and
  the tool name (mcp.d's binding): the floor the added bindings cost against;
- ``use_codec()``: the SDK's boundary with ``SDKCodec``;
- ``FastMCP's boundary`` and ``protect(FastMCP)``: the boundary in a ``FastMCP``'s chain as
  FastMCP installs it (the SDK's, with an ephemeral key), and as ``protect()`` leaves it
  (when fastmcp is installed).

The target: ``protect()`` at most ``PROTECT_TARGET`` (0.45x) of the SDK
boundary's time per round, in the same run.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Final, cast

from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp_types import InputRequiredResult

import requeststate as rs
from requeststate.mcp import Boundary, protect, sdk_security

from .cases import make_state
from .timing import measure_interleaved

__all__ = ["PROTECT_TARGET", "main", "round_cases"]

ARGUMENTS = {"restaurant": "Chez Ada", "party": 4}
PROTECT_TARGET: Final = 0.45
"""``protect()``'s best time per round, as a share of the SDK boundary's at most."""


def _finish(coroutine: Coroutine[Any, Any, HandlerResult]) -> HandlerResult:
    # Without a guard no boundary ever suspends: drive the coroutine by hand, no event loop per call.
    try:
        coroutine.send(None)
    except StopIteration as done:
        return cast(HandlerResult, done.value)
    coroutine.close()
    raise RuntimeError("the boundary suspended: this benchmark runs without I/O")


def _context(params: dict[str, Any]) -> ServerRequestContext[Any, Any]:
    return ServerRequestContext(
        session=cast(Any, None),
        lifespan_context={},
        protocol_version="2026-07-28",
        method="tools/call",
        params=params,
        request_id=1,
    )


def _one_round(boundary: ServerMiddleware[Any], state: str) -> Callable[[], str]:
    """A retry through ``boundary``: open the echo of a token it minted, then seal the next state."""
    params = {"name": "book_table", "arguments": ARGUMENTS}

    # What the SDK's runner hands every middleware: the handler's result already shaped for the wire.
    interim = InputRequiredResult(request_state=state).model_dump(
        by_alias=True, mode="json", exclude_none=True
    )

    async def mint(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        return interim

    sealed = _finish(boundary(_context(params), cast(CallNext, mint)))
    token = cast(dict[str, Any], sealed)["requestState"]
    retry = _context({**params, "requestState": token, "inputResponses": {}})
    seen: list[str] = []

    async def handler(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        seen.append((ctx.params or {})["requestState"])
        return interim

    def round_trip() -> str:
        _finish(boundary(retry, cast(CallNext, handler)))
        return seen.pop()

    return round_trip


def _fastmcp_boundaries(ring: rs.KeyRing) -> dict[str, ServerMiddleware[Any]]:
    """The boundary a FastMCP server runs, as shipped and once protected; none without fastmcp."""
    try:
        from fastmcp import FastMCP
    except ImportError:
        return {}
    shipped, protected = FastMCP("svc"), FastMCP("svc")
    protect(protected, ring)
    # The last entry of the chain FastMCP serves through: its request-state boundary.
    return {
        "FastMCP's boundary": shipped._mcp_server.middleware[-1],
        "protect(FastMCP)": protected._mcp_server.middleware[-1],
    }


def round_cases(secret: bytes) -> dict[str, Callable[[], str]]:
    """Each boundary's round, checked to hand the handler the state."""
    ring = rs.KeyRing(secret)
    state = make_state(64)
    boundaries: dict[str, ServerMiddleware[Any]] = {
        "SDK boundary": RequestStateBoundary(RequestStateSecurity(keys=[secret]), default_audience="svc"),
        "protect()": Boundary(ring, audience="svc"),
        'protect(bind="mcpd")': Boundary(ring, bind="mcpd"),
        "use_codec()": RequestStateBoundary(sdk_security(ring), default_audience="svc"),
        **_fastmcp_boundaries(ring),
    }
    cases = {name: _one_round(boundary, state) for name, boundary in boundaries.items()}
    if any(case() != state for case in cases.values()):
        raise RuntimeError("a boundary did not hand the handler its state")
    return cases


def main(argv: Sequence[str] | None = None) -> int:
    """Print each boundary's best µs per round and its ratio to the SDK's boundary."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.mcp_rounds", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--rounds", type=int, default=50, help="interleaved samples per case")
    args = parser.parse_args(argv)
    user = AccessToken(
        token="opaque-access-token",  # noqa: S106 (a stand-in: no server checks it here)
        client_id="client",
        scopes=[],
        subject="alice",
        claims={"iss": "https://as"},
    )
    reset = auth_context_var.set(AuthenticatedUser(user))
    try:
        stats = measure_interleaved(round_cases(os.urandom(32)), rounds=args.rounds, sample_seconds=0.02)
    finally:
        auth_context_var.reset(reset)
    sdk = stats["SDK boundary"].best_us
    for name, one in stats.items():
        ratio = one.best_us / sdk
        target = ""
        if name == "protect()":
            verdict = "PASS" if ratio <= PROTECT_TARGET else "FAIL"
            target = f"  ({ratio:.3f}x, target <= {PROTECT_TARGET:.2f}x: {verdict})"
        print(f"{name:>22}  {one.best_us:7.2f} µs/round  {ratio:5.2f}x SDK boundary{target}")
    if "protect(FastMCP)" in stats:
        fastmcp = stats["protect(FastMCP)"].best_us / stats["FastMCP's boundary"].best_us
        print(f"{'':>22}  protect(FastMCP) is {fastmcp:.2f}x FastMCP's own boundary")
    added = stats["protect()"].best_us - stats['protect(bind="mcpd")'].best_us
    print(f'{"added bindings":>22}  {added:7.2f} µs/round  (protect() minus protect(bind="mcpd"))')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
