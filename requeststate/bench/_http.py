"""One MCP round over streamable HTTP on loopback, in process: ``http_rounds``.

What a deployment adds to the layers: HTTP, the SDK's server and its session,
bearer authentication, JSON-RPC framing. Two real ``MCPServer`` s, each behind
a token verifier (one bearer token, random), served by uvicorn on a free
loopback port of this process: ``SDK boundary`` (the server as shipped: the
SDK's own request-state boundary) and ``protect()`` (the same server after
``protect(server, codec)``, no guard). Real ``mcp`` clients call one tool over
streamable HTTP: each round is a retry that echoes the last ``requestState``,
which the server opens, hands the handler, and seals again (the handler asks
again every time).

``HTTP_CLIENTS`` clients per server, each its own session, call at once, as
concurrent users do. The two servers are timed in turn, slice after slice,
so that both see the same machine. Clients and servers share this process
and its core: a server alone serves more rounds than this, so the figure is
a floor of what HTTP allows, and the gap between the two servers is what
``protect()`` costs a round over HTTP.

Needs the mcp extra (and uvicorn, which the SDK installs).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import requeststate as rs

from ._mcp import ARGUMENTS, PROTECT, SDK_BOUNDARY
from ._timing import percentile_us

if TYPE_CHECKING:
    from mcp.client import Client

__all__ = ["HTTP_CLIENTS", "HTTP_SERVERS", "SLICES", "HttpResult", "http_rounds"]

HTTP_CLIENTS: Final = 4
"""Clients per server calling at once, each its own MCP session."""
HTTP_SERVERS: Final = (SDK_BOUNDARY, PROTECT)
SLICES: Final = 6
"""Slices each server is timed in, in turn; every client makes at least one round a slice."""
_TOOL: Final = "book_table"
_ISSUER: Final = "https://issuer.invalid"
_STOP_SECONDS: Final = 5.0


@dataclass(frozen=True)
class HttpResult:
    """Rounds over HTTP through one server: ``HTTP_CLIENTS`` clients at once, for ``seconds`` in all."""

    server: str
    """``SDK boundary`` (as shipped) or ``protect()``."""
    rounds: int
    seconds: float
    """The wall time of its slices."""
    p50_us: float
    p99_us: float

    @property
    def rounds_per_second(self) -> float:
        """Rounds over the wall time of all of them."""
        return self.rounds / self.seconds


def http_rounds(state: str, codec: rs.Codec, seconds: float) -> tuple[HttpResult, ...]:
    """Rounds of ``state`` over HTTP, for about ``seconds``: the SDK's server as shipped, and protected.

    ``protect()`` uses ``codec`` (no guard). Each server is checked first to hand
    its handler the state, and to seal it (``protect()`` in ``codec``'s mode).

    Raises:
        ImportError: the mcp extra, or uvicorn, is missing.
    """
    import uvicorn  # noqa: F401 (missing: ImportError before any server starts)

    try:
        return asyncio.run(_measure(state, codec, seconds))
    except BaseExceptionGroup as group:  # the SDK's task groups wrap what went wrong: raise it
        error: BaseException = group
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        raise error from None


class _Verifier:
    """Accepts one bearer token: the run's own."""

    def __init__(self, bearer: str) -> None:
        self._bearer = bearer

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        if token != self._bearer:
            return None
        return AccessToken(
            token=token, client_id="bench", scopes=[], subject="alice", claims={"iss": _ISSUER}
        )


def _app(name: str, state: str, codec: rs.Codec, url: str, bearer: str, seen: list[str]) -> Any:
    from mcp.server import MCPServer
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import Context
    from mcp_types import InputRequiredResult
    from pydantic import AnyHttpUrl

    from requeststate.mcp import protect

    server: MCPServer[Any] = MCPServer(
        "bench",
        token_verifier=_Verifier(bearer),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(_ISSUER),
            resource_server_url=AnyHttpUrl(url),
            validate_token_resource=False,
        ),
        log_level="ERROR",
    )

    async def book_table(ctx: Context, restaurant: str, party: int) -> InputRequiredResult:
        if ctx.request_state is not None and not seen:  # the first retry's, for _check
            seen.append(ctx.request_state)
        return InputRequiredResult(request_state=state)

    # The SDK reads a tool's parameters from its annotations, which this module's future import
    # left as names of imports local to this function.
    book_table.__annotations__ = {
        "ctx": Context,
        "restaurant": str,
        "party": int,
        "return": InputRequiredResult,
    }
    server.add_tool(book_table, name=_TOOL)
    if name == PROTECT:
        protect(server, codec)
    return server.streamable_http_app()


@contextlib.asynccontextmanager
async def _serving(app: Any, listening: socket.socket) -> AsyncIterator[None]:
    import uvicorn

    # log_config=None: the user's logging stays as it was.
    web = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, lifespan="on"))
    task = asyncio.create_task(web.serve(sockets=[listening]))
    try:
        while not web.started:
            if task.done():
                task.result()  # its error
                raise RuntimeError("uvicorn stopped before it started")
            await asyncio.sleep(0.005)
        yield
    finally:
        web.should_exit = True
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(task, _STOP_SECONDS)


def _listening() -> tuple[socket.socket, str]:
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listening.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    listening.bind(("127.0.0.1", 0))
    listening.listen(128)
    return listening, f"http://127.0.0.1:{listening.getsockname()[1]}/mcp"


@contextlib.asynccontextmanager
async def _client(url: str, bearer: str) -> AsyncIterator[Client]:
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {bearer}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def _round(client: Client, token: str | None) -> str:
    """One call of the tool, echoing ``token`` (none: the first call); the state it seals."""
    from mcp_types import InputRequiredResult

    if token is None:
        result = await client.session.call_tool(_TOOL, ARGUMENTS, allow_input_required=True)
    else:
        result = await client.session.call_tool(
            _TOOL, ARGUMENTS, allow_input_required=True, request_state=token, input_responses={}
        )
    if not isinstance(result, InputRequiredResult) or result.request_state is None:
        raise RuntimeError(f"the tool over HTTP answered {type(result).__name__}, not a sealed state")
    return result.request_state


class _Clients:
    """One server's clients, each with the last state it was sealed; the latencies of its rounds."""

    def __init__(self, name: str, clients: list[Client], tokens: list[str]) -> None:
        self.name = name
        self.clients = clients
        self.tokens = tokens
        self.latencies: list[int] = []
        self.seconds = 0.0

    async def run_slice(self, seconds: float) -> None:
        clock = time.perf_counter_ns
        began = clock()
        deadline = began + int(seconds * 1e9)

        async def worker(index: int) -> None:
            while True:
                start = clock()
                self.tokens[index] = await _round(self.clients[index], self.tokens[index])
                ended = clock()
                self.latencies.append(ended - start)
                if ended >= deadline:
                    return

        await asyncio.gather(*(worker(index) for index in range(len(self.clients))))
        self.seconds += (clock() - began) / 1e9

    def result(self) -> HttpResult:
        ordered = sorted(self.latencies)
        return HttpResult(
            self.name, len(ordered), self.seconds, percentile_us(ordered, 0.5), percentile_us(ordered, 0.99)
        )


async def _measure(state: str, codec: rs.Codec, seconds: float) -> tuple[HttpResult, ...]:
    bearer = os.urandom(16).hex()
    async with contextlib.AsyncExitStack() as stack:
        measured: list[_Clients] = []
        for name in HTTP_SERVERS:
            listening, url = _listening()
            stack.callback(listening.close)
            seen: list[str] = []
            await stack.enter_async_context(_serving(_app(name, state, codec, url, bearer, seen), listening))
            clients = [await stack.enter_async_context(_client(url, bearer)) for _ in range(HTTP_CLIENTS)]
            tokens = [await _round(client, None) for client in clients]
            tokens[0] = await _round(clients[0], tokens[0])  # untimed: the check below
            _check(name, seen, state, tokens[0], codec)
            measured.append(_Clients(name, clients, tokens))
        slice_seconds = seconds / (SLICES * len(measured))
        for index in range(SLICES):
            shift = index % len(measured)  # rotate which server goes first
            for one in measured[shift:] + measured[:shift]:
                await one.run_slice(slice_seconds)
        return tuple(one.result() for one in measured)


def _check(name: str, seen: list[str], state: str, token: str, codec: rs.Codec) -> None:
    # Before timing: the retry handed the handler the state, and protect() sealed it in its mode.
    if seen != [state]:
        raise RuntimeError(f"{name} over HTTP did not hand the handler its state")
    if name == PROTECT and not _sealed_in(token, codec.modes[0]):
        raise RuntimeError("protect() over HTTP did not seal the state with the run's codec")


def _sealed_in(token: str, mode: rs.Mode) -> bool:
    try:
        return rs.peek(token).mode is mode
    except rs.InvalidToken:  # not a token of ours: the SDK's own
        return False
