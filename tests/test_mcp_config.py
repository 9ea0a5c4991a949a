"""requeststate.mcp options: a ``requeststate.Codec`` in place of keys, the deployment's choice."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp.server import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

import requeststate as rs
from requeststate.mcp import Boundary, protect
from tests.support import spec_tokens as spec
from tests.support.mcp_flow import KEYS, SECRET, assert_frozen, b64_secret, open_round, seal_round
from tests.support.memory_guard import memory_guard

pytestmark = pytest.mark.anyio

NOW = 2_000_000_000
PARAMS = {"name": "wizard", "arguments": {"topic": "x"}}
TOOL = spec.boundary_tool("tools/call", "wizard", {"topic": "x"}, "svc", False)


async def mint(boundary: Boundary, state: str = "s") -> str:
    return await seal_round(boundary, PARAMS, state)


async def redeem(boundary: Boundary, token: str) -> str | None:
    return await open_round(boundary, PARAMS, token)


class Clock:
    def __init__(self) -> None:
        self.now = float(NOW)

    def __call__(self) -> float:
        return self.now


async def test_protect_takes_the_codec_the_environment_configures() -> None:
    environ = {"REQUESTSTATE_KEYS": b64_secret(SECRET), "REQUESTSTATE_MODE": "signed"}
    boundary = protect(MCPServer("svc"), rs.Codec.from_env(environ=environ))
    token = await mint(boundary)
    assert token.startswith("v1.")
    assert spec.open_token(SECRET, token, "", TOOL)["s"] == "s"


async def test_a_codec_ttl_and_clock_set_the_expiry_of_boundary_tokens() -> None:
    codec = rs.Codec(KEYS, mode="signed", ttl=60, clock=Clock())
    token = await mint(Boundary(codec, audience="svc"))
    assert spec.open_token(SECRET, token, "", TOOL)["exp"] == NOW + 60


async def test_a_codec_leeway_accepts_a_token_that_far_past_its_expiry() -> None:
    clock = Clock()
    boundary = Boundary(rs.Codec(KEYS, mode="encrypted", ttl=60, leeway=30, clock=clock), audience="svc")
    token = await mint(boundary)
    clock.now += 85
    assert await redeem(boundary, token) == "s"


async def test_a_codec_max_token_bytes_caps_the_boundary_tokens() -> None:
    boundary = Boundary(rs.Codec(KEYS, mode="encrypted", max_token_bytes=400), audience="svc")
    assert len(await mint(boundary, "s" * 10)) <= 400
    with pytest.raises(MCPError) as error:
        await mint(boundary, "s" * 400)
    assert error.value.error.code == INTERNAL_ERROR


async def test_a_codec_guard_makes_boundary_tokens_single_use() -> None:
    boundary = Boundary(rs.Codec(KEYS, mode="encrypted", guard=memory_guard()), audience="svc")
    token = await mint(boundary)
    assert await redeem(boundary, token) == "s"
    with pytest.raises(MCPError) as error:
        await redeem(boundary, token)
    assert_frozen(error)


class ThreadNotingGuard:
    """A synchronous guard (as RedisGuard is) that notes the thread each claim runs in."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        self.threads.append(threading.current_thread())
        return True


async def test_a_codec_sync_guard_is_claimed_off_the_event_loop() -> None:
    guard = ThreadNotingGuard()
    boundary = Boundary(rs.Codec(KEYS, mode="encrypted", guard=guard), audience="svc")
    assert await redeem(boundary, await mint(boundary)) == "s"
    assert len(guard.threads) == 1
    assert guard.threads[0] is not threading.current_thread()


def test_codec_options_beside_a_codec_are_refused_by_name() -> None:
    codec = rs.Codec(KEYS, mode="encrypted")
    with pytest.raises(TypeError, match=r"^mode, ttl cannot be passed beside a Codec, which carries its own"):
        protect(MCPServer("svc"), codec, ttl=60, mode="signed")


def test_an_unknown_option_beside_a_codec_is_refused() -> None:
    with pytest.raises(TypeError, match=r"^unexpected option\(s\) ttl_seconds; "):
        Boundary(rs.Codec(KEYS, mode="encrypted"), audience="svc", ttl_seconds=5)  # type: ignore[call-arg]
