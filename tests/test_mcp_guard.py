"""requeststate.mcp and replay guards: a sync guard never blocks the event loop; the SDK seam refuses one."""

from __future__ import annotations

import logging
import os
import re
import socket
import time
import traceback
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import redis

pytest.importorskip("mcp", reason="the mcp extra is not installed")
pytest.importorskip("redis", reason="the redis extra is not installed")

import anyio
import fastmcp
from mcp import Client
from mcp.server import MCPServer, Server
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, InputRequiredResult

import requeststate as rs
from requeststate.mcp import Boundary, SDKCodec, protect, sdk_security, use_codec
from requeststate.redis import RedisGuard
from tests.conftest import SECRET
from tests.support import redis_server
from tests.support.fastmcp_booking import booking
from tests.support.mcp_flow import (
    KEYS,
    bounded,
    connect,
    echo,
    echo_refused,
    echo_unchecked,
    finish,
    first_round,
    open_round,
    seal_round,
    text_of,
)
from tests.support.mcp_servers import Tier, build
from tests.support.memory_guard import memory_guard

pytestmark = pytest.mark.anyio

REDIS_TIMEOUT = 0.5
GUARD: Any = memory_guard()  # typed Any: the codec seam types guard as None, and refuses one at runtime


@pytest.mark.parametrize(
    "build_boundary",
    [
        lambda **options: protect(MCPServer("svc"), KEYS, **options),
        lambda **options: Boundary(KEYS, audience=None, **options),
    ],
    ids=["protect", "Boundary"],
)
def test_a_guard_that_would_refuse_every_token_is_refused_when_the_boundary_is_built(
    build_boundary: Any,
) -> None:
    # The boundary runs a sync guard off the event loop, wrapped: the codec told the guard its
    # leeway before, and the guard, which serves another codec's, refuses it.
    guard = RedisGuard(redis.Redis())
    rs.Codec(KEYS, guard=guard, leeway=0)
    with pytest.raises(ValueError, match=r"^this guard serves codecs with leeway=0, not 30: a claim is held"):
        build_boundary(leeway=30, guard=guard)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


class ClaimsOnly:
    """A sync guard with ``claim`` alone: a Redis guard's claims, with no ``begin`` to hold the start."""

    def __init__(self, guard: RedisGuard) -> None:
        self.claim = guard.claim


async def test_a_hung_sync_guard_never_stalls_the_event_loop(silent_port: int) -> None:
    guard = ClaimsOnly(RedisGuard.from_url(f"redis://127.0.0.1:{silent_port}/0", timeout=REDIS_TIMEOUT))
    built = build("lowlevel", "boundary", KEYS, "encrypted", guard=guard)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    async def run() -> int:
        async with connect(built) as client, anyio.create_task_group() as group:
            token = await first_round(client)
            group.start_soon(ticker)
            await anyio.sleep(0)  # the ticker starts before the echo
            before = ticks
            await echo_unchecked(
                client, token
            )  # the guard waits REDIS_TIMEOUT for a Redis that never answers
            group.cancel_scope.cancel()
        return ticks - before

    # On the loop, the claim would hold it for the whole wait: not one tick. Off it, the loop
    # ticks all along (about 50 times in 0.5 s; a loaded machine still ticks several times).
    assert await bounded(run) >= 3


@pytest.mark.parametrize(
    "install",
    [
        lambda: SDKCodec(KEYS, guard=GUARD),
        lambda: sdk_security(KEYS, guard=GUARD),
        lambda: use_codec(MCPServer("svc"), KEYS, guard=GUARD),
        lambda: use_codec(Server("svc"), KEYS, guard=GUARD),
    ],
    ids=["SDKCodec", "sdk_security", "use_codec-mcpserver", "use_codec-lowlevel"],
)
def test_the_sdk_codec_seam_refuses_a_guard_and_points_to_protect(install: Any) -> None:
    with pytest.raises(ValueError, match=r"protect\(server, keys, guard="):
        install()


def test_use_codec_leaves_the_server_untouched_when_it_refuses_a_guard() -> None:
    server: MCPServer[Any] = MCPServer("svc")
    before = list(server.middleware)
    with pytest.raises(ValueError, match="replay guard"):
        use_codec(server, KEYS, guard=GUARD)
    assert server.middleware == before


class AsyncMemoryGuard:
    """An ``AsyncGuard``: a ``MemoryGuard`` behind a coroutine, with its claims counted."""

    def __init__(self) -> None:
        self.inner = memory_guard()
        self.claims = 0

    async def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        self.claims += 1
        await anyio.sleep(0)
        return self.inner.claim(claimed, expires_at, now)


async def test_an_async_guard_is_awaited_and_refuses_a_second_redemption() -> None:
    guard = AsyncMemoryGuard()
    built = build("mcpserver", "boundary", KEYS, "signed", guard=guard)

    async def run() -> None:
        async with connect(built) as client:
            token = await first_round(client)
            await echo(client, token)
            await echo_refused(client, token)

    await bounded(run)
    assert guard.claims == 2


@pytest.mark.parametrize("arguments", [[], 0, False, ""], ids=repr)
@pytest.mark.parametrize("method", ["tools/call", "prompts/get"])
async def test_a_request_the_sdk_refuses_for_its_arguments_claims_nothing(
    method: str, arguments: object
) -> None:
    # Before: such arguments digest as {} (as in the SDK), the guard claimed the token's id, and the
    # SDK then refused the request (-32602): the token was burnt by a request that never ran.
    guard = AsyncMemoryGuard()
    boundary = Boundary(KEYS, audience="svc", guard=guard)
    token = await seal_round(boundary, {"name": "wizard", "arguments": {}}, method=method)
    handed = await open_round(boundary, {"name": "wizard", "arguments": arguments}, token, method=method)
    redeemed = await open_round(boundary, {"name": "wizard", "arguments": {}}, token, method=method)
    assert (handed, guard.claims, redeemed) == (None, 1, "s")


# --- an outage is not a forgery -------------------------------------------------------------------


class DownGuard:
    """An ``AsyncGuard`` whose store never answers: every claim raises ``GuardUnavailable``."""

    async def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        raise rs.GuardUnavailable("the store did not answer")


@pytest.mark.parametrize("on_invalid", ["error", "reelicit"])
async def test_an_echo_the_guard_cannot_check_answers_internal_error_saying_to_retry(on_invalid: str) -> None:
    # Before: -32602, as for a forgery, and a client could not know that a retry would work.
    # Under "reelicit" too: re-eliciting would ask the user again for what the state holds.
    built = build("mcpserver", "boundary", KEYS, "encrypted", guard=DownGuard(), on_invalid=on_invalid)

    async def run() -> None:
        async with connect(built) as client:
            await echo_unchecked(client, await first_round(client))

    await bounded(run)
    assert built.seen == [None]  # the handler never ran for the echo


# --- the guard begins with the server -------------------------------------------------------------


class BeginningGuard(AsyncMemoryGuard):
    """An ``AsyncGuard`` whose ``begin`` says its tokens are accepted ``delay`` seconds from now."""

    def __init__(self, delay: int = 0) -> None:
        super().__init__()
        self.delay = delay
        self.begun: list[float] = []
        self.ready = 0

    async def begin(self, now: int | None = None) -> int:
        self.begun.append(time.time())
        self.ready = int(time.time()) + self.delay
        return self.ready


@pytest.mark.parametrize("tier", ["mcpserver", "lowlevel"])
async def test_the_guard_begins_before_the_first_request_is_served(tier: Tier) -> None:
    guard = BeginningGuard()
    built = build(tier, "boundary", KEYS, "encrypted", guard=guard)
    handled: list[float] = []

    async def run() -> None:
        async with connect(built) as client:
            await first_round(client)
            handled.append(time.time())

    await bounded(run)
    assert len(guard.begun) == 1
    assert guard.begun[0] < handled[0]


async def test_a_fastmcp_begins_its_guard_before_the_first_request_is_served() -> None:
    guard = BeginningGuard()
    mcp, seen = booking()
    protect(mcp, rs.Codec(SECRET, guard=guard))

    async def run() -> None:
        async with fastmcp.Client(mcp) as client:
            assert guard.begun != []
            assert seen == []
            await client.session.call_tool("book", {"restaurant": "Ada"}, allow_input_required=True)

    await bounded(run)
    assert (len(guard.begun), seen) == (1, [None])


async def test_the_users_own_lifespan_still_runs_after_the_guard_began() -> None:
    guard = BeginningGuard()
    entered: list[float] = []

    @asynccontextmanager
    async def lifespan(server: MCPServer[Any]) -> AsyncIterator[dict[str, str]]:
        entered.append(time.time())
        yield {"db": "open"}

    server: MCPServer[Any] = MCPServer("svc", lifespan=lifespan)

    @server.tool()
    async def db(ctx: Context) -> str:
        return str(ctx.request_context.lifespan_context["db"])

    protect(server, KEYS, guard=guard)

    async def run() -> object:
        async with Client(server) as client:
            return await client.call_tool("db", {})

    result = await bounded(run)
    assert isinstance(result, CallToolResult)
    assert text_of(result) == "open"
    assert len(entered) == 1
    assert guard.begun[0] <= entered[0]


async def test_the_server_serves_once_the_tokens_it_mints_are_accepted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    guard = BeginningGuard(delay=2)
    built = build("lowlevel", "boundary", KEYS, "encrypted", guard=guard)
    served: list[float] = []

    async def run() -> None:
        async with connect(built) as client:
            token = await first_round(client)
            served.append(time.time())
            await echo(client, token)  # minted once the guard accepts it: the first flow completes

    with caplog.at_level(logging.INFO, logger="requeststate.mcp"):
        await bounded(run)
    assert served[0] >= guard.ready
    # A WARNING: the one level that shows where no handler was configured (uvicorn's default).
    [line] = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert re.fullmatch(
        rf"requestState guard BeginningGuard began in process {os.getpid()}: the tokens this server "
        r"mints are accepted in [12]\.\d s, when it serves",
        line,
    )


async def test_a_store_in_use_serves_at_once(caplog: pytest.LogCaptureFixture) -> None:
    built = build("lowlevel", "boundary", KEYS, "encrypted", guard=BeginningGuard(delay=-60))
    with caplog.at_level(logging.INFO, logger="requeststate.mcp"):

        async def run() -> None:
            async with connect(built) as client:
                await first_round(client)

        await bounded(run)
    assert [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "requeststate.mcp"] == [
        (
            logging.INFO,
            f"requestState guard BeginningGuard began in process {os.getpid()}: the tokens this server "
            "mints are accepted at once",
        )
    ]


class UnreachableGuard:
    """A guard whose store is down at start: ``begin`` raises as a Redis guard's does."""

    def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        raise AssertionError("never claimed: the server never started")

    def begin(self, now: int | None = None) -> int:
        try:
            raise ConnectionRefusedError("Error 111 connecting to 127.0.0.1:6390. Connection refused.")
        except ConnectionRefusedError as error:
            raise rs.GuardUnavailable(
                "Redis did not record when its memory began (ConnectionError)"
            ) from error


async def test_a_guard_that_cannot_begin_stops_the_start_saying_why_and_where() -> None:
    boundary = protect(Server("svc"), KEYS, guard=UnreachableGuard())
    with pytest.raises(rs.GuardUnavailable) as refused:
        await boundary.begin()
    # What the crash prints: the store's own words, the address among them, and no private module.
    assert traceback.format_exception(refused.value)[-1] == (
        "requeststate.GuardUnavailable: the replay guard did not begin, so the server does not start: "
        "Redis did not record when its memory began (ConnectionError): "
        "Error 111 connecting to 127.0.0.1:6390. Connection refused.\n"
    )


# --- a store that lost its memory ------------------------------------------------------------------


@pytest.fixture(scope="module")
def redis_server_url() -> Iterator[tuple[str, Any]]:
    with redis_server.or_skip(redis_server.running_server()) as server:
        yield server.url, server


async def test_a_state_minted_before_a_flush_is_refused_as_a_forgery_is_not_as_an_outage(
    redis_server_url: tuple[str, Any],
) -> None:
    # Issue 40: a pre-loss state was answered -32603 "retry", a retry that could never succeed.
    url, server = redis_server_url
    guard = RedisGuard.from_url(f"{url}?clock_skew=0&namespace=flush-{time.time_ns()}", timeout=5)
    built = build("mcpserver", "boundary", KEYS, "encrypted", guard=guard)

    async def run() -> None:
        async with connect(built) as client:
            token = await first_round(client)
            server.execute("FLUSHALL")
            await echo_refused(client, token)

    try:
        await bounded(run)
    finally:
        guard.close()
    assert built.seen == [None]  # the handler never ran for the echo


async def test_under_reelicit_a_flow_whose_state_predates_a_flush_is_asked_again_and_completes(
    redis_server_url: tuple[str, Any],
) -> None:
    url, server = redis_server_url
    guard = RedisGuard.from_url(f"{url}?clock_skew=0&namespace=flush-{time.time_ns()}", timeout=5)
    built = build("mcpserver", "boundary", KEYS, "encrypted", guard=guard, on_invalid="reelicit")

    async def run() -> str:
        async with connect(built) as client:
            token = await first_round(client)
            server.execute("FLUSHALL")
            # A worker's next claim or begin() dates the new memory; a state minted in its first
            # second is refused too (docs/replay-guards.md), so the user answers a second later.
            ready = guard.begin()
            await anyio.sleep(max(0.0, ready - time.time()))
            again = await echo(client, token)
            assert isinstance(again, InputRequiredResult)
            assert again.request_state is not None
            second = await echo(client, again.request_state)
            assert isinstance(second, InputRequiredResult)
            assert second.request_state is not None
            return await finish(client, second.request_state)

    try:
        assert await bounded(run) == "done: a1,a2"
    finally:
        guard.close()
