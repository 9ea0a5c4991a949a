"""requeststate.mcp and replay guards: a sync guard never blocks the event loop; the SDK seam refuses one."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
import redis

pytest.importorskip("mcp", reason="the mcp extra is not installed")
pytest.importorskip("redis", reason="the redis extra is not installed")

import anyio
from mcp.server import MCPServer, Server

import requeststate as rs
from requeststate.mcp import Boundary, SDKCodec, protect, sdk_security, use_codec
from requeststate.redis import RedisGuard
from tests.support.mcp_flow import (
    KEYS,
    bounded,
    connect,
    echo,
    echo_refused,
    first_round,
    open_round,
    seal_round,
)
from tests.support.mcp_servers import build
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


async def test_a_hung_sync_guard_never_stalls_the_event_loop(silent_port: int) -> None:
    guard = RedisGuard.from_url(f"redis://127.0.0.1:{silent_port}/0", timeout=REDIS_TIMEOUT)
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
            await echo_refused(client, token)  # the guard waits REDIS_TIMEOUT for a Redis that never answers
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

    async def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        self.claims += 1
        await anyio.sleep(0)
        return self.inner.claim(token_id, expires_at, now)


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
