"""requeststate.mcp end to end: the SDK's real Client against real servers, in memory, over stdio and HTTP."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import anyio
import httpx2
import uvicorn
from mcp import Client
from mcp.client._memory import InMemoryTransport
from mcp.client.context import ClientRequestContext
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer, Server
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.request_state import InvalidRequestState, RequestStateBoundary
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    CallToolResult,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    RequestParamsMeta,
    TextContent,
)
from pydantic import AnyHttpUrl

import requeststate as rs
from requeststate.mcp import Boundary, SDKCodec, protect, request_target, use_codec
from tests.support import spec_tokens as spec
from tests.support.mcp_flow import (
    KEYS,
    MODES,
    NOW_PLUS,
    OTHER_SECRET,
    ROOT,
    SECRET,
    answer,
    assert_frozen,
    b64_secret,
    bounded,
    connect,
    echo,
    echo_refused,
    finish,
    first_round,
    leaks_reason,
    plaintext_seen,
    replies,
    request_context,
    tamper,
    text_of,
)
from tests.support.mcp_servers import MARKER, SHAPES, TIERS, Built, Shape, Tier, build
from tests.support.mcp_wiretap import WireTap
from tests.support.memory_guard import memory_guard
from tests.support.processes import free_port, serving

pytestmark = pytest.mark.anyio


everywhere = pytest.mark.parametrize(
    ("tier", "shape", "mode"), [(t, s, m) for t in TIERS for s in SHAPES for m in MODES]
)


# --- the full flow --------------------------------------------------------------------------------------


@everywhere
async def test_full_multi_round_flow_completes(tier: Tier, shape: Shape, mode: rs.ModeName) -> None:
    built = build(tier, shape, KEYS, mode)

    async def run() -> str:
        async with connect(built) as client:
            return text_of(await client.call_tool("wizard", {"topic": "x"}))

    assert await bounded(run) == "done: first,second"
    assert len(built.seen) == 3


@everywhere
async def test_handler_reads_plaintext_state_it_minted(tier: Tier, shape: Shape, mode: rs.ModeName) -> None:
    built = build(tier, shape, KEYS, mode)

    async def run() -> None:
        async with connect(built) as client:
            await client.call_tool("wizard", {"topic": "x"})

    await bounded(run)
    assert built.seen[0] is None
    assert plaintext_seen(built) == [
        f'{{"step":1,"marker":"{MARKER}","answers":[]}}',
        f'{{"step":2,"marker":"{MARKER}","answers":["first"]}}',
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_prompt_flow_completes(mode: rs.ModeName) -> None:
    built = build("mcpserver", "boundary", KEYS, mode)

    async def run() -> str:
        async with connect(built) as client:
            result = await client.get_prompt("wizard", {})
            content = result.messages[0].content
            assert isinstance(content, TextContent)
            return content.text

    assert await bounded(run) == "done: first,second"


@pytest.mark.parametrize("shape", SHAPES)
async def test_resource_flow_completes(shape: Shape) -> None:
    built = build("mcpserver", shape, KEYS, "encrypted")

    async def run() -> str:
        async with connect(built) as client:
            result = await client.read_resource("res://a")
            return str(getattr(result.contents[0], "text", ""))

    assert await bounded(run) == "done: first,second"


# --- refusals -------------------------------------------------------------------------------------------


@everywhere
async def test_tampered_echo_is_refused_before_the_handler(
    tier: Tier, shape: Shape, mode: rs.ModeName
) -> None:
    built = build(tier, shape, KEYS, mode)

    async def run() -> None:
        async with connect(built) as client:
            token = await first_round(client)
            await echo_refused(client, tamper(token))

    await bounded(run)
    assert built.seen == [None]


@everywhere
async def test_echo_from_another_user_is_refused(tier: Tier, shape: Shape, mode: rs.ModeName) -> None:
    built = build(tier, shape, KEYS, mode)

    async def run() -> None:
        async with connect(built) as client:
            built.auth.subject = "alice"
            token = await first_round(client)
            built.auth.subject = "bob"
            await echo_refused(client, token)

    await bounded(run)
    assert built.seen == [None]


@pytest.mark.parametrize("shape", SHAPES)
async def test_anonymous_token_is_refused_once_a_user_is_authenticated(shape: Shape) -> None:
    built = build("mcpserver", shape, KEYS, "encrypted")

    async def run() -> None:
        async with connect(built) as client:
            token = await first_round(client)
            built.auth.subject = "alice"
            await echo_refused(client, token)

    await bounded(run)
    assert built.seen == [None]


@pytest.mark.parametrize("shape", SHAPES)
async def test_subject_claimed_in_meta_is_ignored(shape: Shape) -> None:
    built = build("mcpserver", shape, KEYS, "encrypted")

    async def run() -> None:
        async with connect(built) as client:
            built.auth.subject = "alice"
            token = await first_round(client)
            built.auth.subject = "bob"
            with pytest.raises(MCPError) as error:
                await client.session.call_tool(
                    "wizard",
                    {"topic": "x"},
                    allow_input_required=True,
                    request_state=token,
                    input_responses=replies(1),
                    meta=cast(RequestParamsMeta, {"subject": "alice", "sub": "alice", "user": "alice"}),
                )
            assert_frozen(error)

    await bounded(run)
    assert built.seen == [None]


@everywhere
async def test_echo_replayed_into_another_tool_is_refused(
    tier: Tier, shape: Shape, mode: rs.ModeName
) -> None:
    built = build(tier, shape, KEYS, mode)

    async def run() -> None:
        async with connect(built) as client:
            token = await first_round(client, "wizard")
            await echo_refused(client, token, "other")

    await bounded(run)
    assert built.seen == [None]


@pytest.mark.parametrize("shape", SHAPES)
async def test_tool_token_is_refused_by_the_prompt_of_the_same_name(shape: Shape) -> None:
    built = build("mcpserver", shape, KEYS, "encrypted")

    async def run() -> None:
        async with connect(built) as client:
            token = await first_round(client, "wizard")
            with pytest.raises(MCPError) as error:
                await client.session.get_prompt("wizard", {}, allow_input_required=True, request_state=token)
            assert_frozen(error)

    await bounded(run)
    assert built.seen == [None]


@pytest.mark.parametrize("shape", SHAPES)
async def test_resource_token_is_refused_at_another_uri(shape: Shape) -> None:
    built = build("mcpserver", shape, KEYS, "encrypted")

    async def run() -> None:
        async with connect(built) as client:
            first = await client.session.read_resource("res://a", allow_input_required=True)
            assert isinstance(first, InputRequiredResult)
            assert first.request_state is not None
            with pytest.raises(MCPError) as error:
                await client.session.read_resource(
                    "res://b", allow_input_required=True, request_state=first.request_state
                )
            assert_frozen(error)

    await bounded(run)
    assert built.seen == [None]


def _expired_copy(token: str, shape: Shape, mode: rs.ModeName, user: str | None = None) -> str:
    """The same state re-minted under the same key and binding, expired 100 seconds ago."""
    wizard = spec.boundary_tool("tools/call", "wizard", {"topic": "x"}, "tests", user is not None)
    tool = wizard if shape == "boundary" else spec.SDK_CODEC_TOOL
    subject = spec.principal(user) if shape == "boundary" else ""
    state = rs.verify(token, KEYS, mode=mode, subject=subject, tool=tool)
    now = int(time.time())
    return rs.encode(state, KEYS, mode=mode, subject=subject, tool=tool, ttl=1, now=now - 101)


@everywhere
async def test_expired_echo_is_refused(tier: Tier, shape: Shape, mode: rs.ModeName) -> None:
    built = build(tier, shape, KEYS, mode)

    async def run() -> None:
        async with connect(built) as client:
            token = await first_round(client)
            await echo_refused(client, _expired_copy(token, shape, mode))

    await bounded(run)
    assert built.seen == [None]


@pytest.mark.parametrize("mode", MODES)
async def test_token_past_its_ttl_is_refused_by_an_injected_clock(mode: rs.ModeName) -> None:
    clock = [float(time.time())]
    server: MCPServer[Any] = MCPServer("clocked")
    seen: list[str | None] = []

    @server.tool()
    async def wizard(ctx: Context, topic: str = "x") -> str | InputRequiredResult:
        seen.append(ctx.request_state)
        return InputRequiredResult(request_state="s") if ctx.request_state is None else "done"

    chain = server.middleware
    index = next(i for i, m in enumerate(chain) if isinstance(m, RequestStateBoundary))
    chain[index] = Boundary(KEYS, mode=mode, ttl=60, clock=lambda: clock[0], audience="clocked")
    built = Built(server=server, auth=build("lowlevel", "boundary", KEYS, mode).auth, seen=seen)

    async def run() -> None:
        async with connect(built) as client:
            token = await first_round(client)
            clock[0] += 61
            await echo_refused(client, token)

    await bounded(run)
    assert seen == [None]


@pytest.mark.parametrize("shape", SHAPES)
async def test_garbage_and_non_string_echoes_are_refused(shape: Shape) -> None:
    built = build("lowlevel", shape, KEYS, "encrypted")

    async def run() -> None:
        async with connect(built) as client:
            for bogus in ("", "garbage", "v1e.AAAA", "v1." + "A" * 100):
                await echo_refused(client, bogus)

    await bounded(run)
    assert built.seen == []


# --- the wire -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("tier", "shape"), [(t, s) for t in TIERS for s in SHAPES])
async def test_encrypted_state_never_appears_on_the_wire(tier: Tier, shape: Shape) -> None:
    built = build(tier, shape, KEYS, "encrypted")
    tap = WireTap(InMemoryTransport(built.server))

    async def run() -> str:
        async with connect(built, tap) as client:
            return text_of(await client.call_tool("wizard", {"topic": "x"}))

    assert await bounded(run) == "done: first,second"
    assert len(tap.request_states()) == 4  # two results out, two echoes back
    assert not tap.reveals(MARKER)


@pytest.mark.parametrize(("shape", "mode"), [(s, m) for s in SHAPES for m in MODES])
async def test_refusal_on_the_wire_carries_no_reason(shape: Shape, mode: rs.ModeName) -> None:
    built = build("mcpserver", shape, KEYS, mode)
    tap = WireTap(InMemoryTransport(built.server))

    async def run() -> None:
        async with connect(built, tap) as client:
            built.auth.subject = "alice"
            token = await first_round(client)
            built.auth.subject = "bob"
            expired = _expired_copy(token, shape, mode, "alice")
            for bad in (tamper(token), token, expired):
                with pytest.raises(MCPError):
                    await echo(client, bad)

    await bounded(run)
    errors = [frame for frame in tap.frames if '"error"' in frame]
    assert len(errors) == 3
    for frame in errors:
        assert '"code":-32602' in frame
        assert '"message":"Invalid or expired requestState"' in frame
        assert '"data":{"reason":"invalid_request_state"}' in frame
        assert not leaks_reason(frame)
        assert "alice" not in frame
        assert "bob" not in frame


async def test_refusal_reason_goes_to_the_server_log(caplog: pytest.LogCaptureFixture) -> None:
    built = build("lowlevel", "boundary", KEYS, "encrypted")

    async def run() -> None:
        async with connect(built) as client:
            token = await first_round(client)
            with pytest.raises(MCPError):
                await echo(client, tamper(token))

    with caplog.at_level(logging.WARNING, logger="requeststate.mcp"):
        await bounded(run)
    refusals = [r.getMessage() for r in caplog.records if r.name == "requeststate.mcp"]
    assert len(refusals) == 1
    assert re.fullmatch(
        r"requestState refused: method=tools/call target='wizard' id=\d+ reason=bad_signature "
        rf"pid={os.getpid()}",
        refusals[0],
    )


# --- re-elicit ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tier", TIERS)
async def test_reelicit_hands_the_handler_no_state_and_asks_again(tier: Tier) -> None:
    built = build(tier, "boundary", KEYS, "encrypted", on_invalid="reelicit")

    async def run() -> Any:
        async with connect(built) as client:
            built.auth.subject = "alice"
            token = await first_round(client)
            built.auth.subject = "bob"
            return await echo(client, token)

    again = await bounded(run)
    assert isinstance(again, InputRequiredResult)
    assert again.input_requests is not None
    assert list(again.input_requests) == ["q1"]
    assert built.seen == [None, None]


async def test_reelicit_flow_completes_after_a_refused_echo() -> None:
    built = build("mcpserver", "boundary", KEYS, "encrypted", on_invalid="reelicit")

    async def run() -> str:
        async with connect(built) as client:
            token = await first_round(client)
            again = await echo(client, tamper(token))
            assert isinstance(again, InputRequiredResult)
            assert again.request_state is not None
            second = await echo(client, again.request_state)
            assert isinstance(second, InputRequiredResult)
            assert second.request_state is not None
            return await finish(client, second.request_state)

    assert await bounded(run) == "done: a1,a2"


# --- single-use tokens ----------------------------------------------------------------------------------


async def test_guard_refuses_a_second_redemption() -> None:
    built = build("mcpserver", "boundary", KEYS, "encrypted", guard=memory_guard())

    async def run() -> None:
        async with connect(built) as client:
            token = await first_round(client)
            assert isinstance(await echo(client, token), InputRequiredResult)
            await echo_refused(client, token)

    await bounded(run)
    assert plaintext_seen(built) == [f'{{"step":1,"marker":"{MARKER}","answers":[]}}']


# --- fail closed on our own side ------------------------------------------------------------------------


async def test_failing_subject_source_refuses_to_seal() -> None:
    def broken(ctx: Any) -> str | None:
        raise RuntimeError("identity provider down")

    built = build("lowlevel", "boundary", KEYS, "encrypted", subject=broken)
    tap = WireTap(InMemoryTransport(built.server))

    async def run() -> None:
        async with connect(built, tap) as client:
            with pytest.raises(MCPError) as error:
                await client.session.call_tool("wizard", {"topic": "x"}, allow_input_required=True)
            assert error.value.error.code == INTERNAL_ERROR

    await bounded(run)
    assert not tap.reveals(MARKER)
    assert "identity provider down" not in tap.text()


async def test_failing_subject_source_refuses_the_echo() -> None:
    calls = [0]

    def flaky(ctx: Any) -> str | None:
        calls[0] += 1
        if calls[0] > 1:
            raise RuntimeError("identity provider down")
        return "alice"

    built = build("lowlevel", "boundary", KEYS, "encrypted", subject=flaky)

    async def run() -> None:
        async with connect(built) as client:
            token = await first_round(client)
            await echo_refused(client, token)

    await bounded(run)
    assert built.seen == [None]


# --- installation ---------------------------------------------------------------------------------------


def test_protect_replaces_the_sdk_boundary_in_place() -> None:
    server: MCPServer[Any] = MCPServer("svc")
    before = [type(m).__name__ for m in server.middleware]
    boundary = protect(server, KEYS)
    after = [type(m).__name__ for m in server.middleware]
    assert before.index("RequestStateBoundary") == after.index("Boundary")
    assert "RequestStateBoundary" not in after
    assert server.middleware[after.index("Boundary")] is boundary


def test_protect_puts_the_boundary_after_telemetry_on_the_lowlevel_server() -> None:
    server: Server[Any] = Server("svc")
    protect(server, KEYS)
    assert [type(m).__name__ for m in server.middleware] == ["OpenTelemetryMiddleware", "Boundary"]


def test_use_codec_installs_the_sdk_boundary_on_the_lowlevel_server() -> None:
    server: Server[Any] = Server("svc")
    use_codec(server, KEYS)
    assert [type(m).__name__ for m in server.middleware] == [
        "OpenTelemetryMiddleware",
        "RequestStateBoundary",
    ]


def test_protect_twice_is_refused() -> None:
    server: MCPServer[Any] = MCPServer("svc")
    protect(server, KEYS)
    with pytest.raises(ValueError, match="already protected"):
        protect(server, KEYS)


def test_protect_refuses_a_str_key() -> None:
    with pytest.raises(TypeError, match="keys must be a KeyRing or bytes"):
        protect(MCPServer("svc"), "not-bytes-not-a-ring")  # type: ignore[arg-type]


def test_protect_refuses_a_non_server() -> None:
    with pytest.raises(TypeError, match="server must be an mcp MCPServer or Server"):
        protect(object(), KEYS)  # type: ignore[arg-type]


def test_protect_accepts_a_raw_secret() -> None:
    assert protect(MCPServer("svc"), SECRET).keys.fingerprint == rs.KeyRing(SECRET).fingerprint


def test_repr_shows_no_key_bytes() -> None:
    ring = f"KeyRing(keys=1, minting={rs.KeyRing(SECRET).fingerprint!r})"
    assert (repr(protect(MCPServer("svc"), SECRET)), repr(SDKCodec(SECRET))) == (
        f"Boundary(keys={ring}, mode=encrypted, ttl=300, bind=request, audience='svc', on_invalid=error)",
        f"SDKCodec(keys={ring}, mode=encrypted, ttl=300)",
    )


def test_ephemeral_keys_warn_at_install(caplog: pytest.LogCaptureFixture) -> None:
    keys = rs.KeyRing.ephemeral()
    with caplog.at_level(logging.WARNING, logger="requeststate.mcp"):
        protect(MCPServer("svc"), keys)
    assert caplog.record_tuples == [
        (
            "requeststate.mcp",
            logging.WARNING,
            f"requestState keys are ephemeral (KeyRing {keys.fingerprint}): every token dies with this "
            "process. That is right for one stdio process only; behind HTTP with several workers, replicas "
            "or any restart, every multi-round retry will be refused. Share one KeyRing between all workers "
            "(KeyRing.from_env() or a secret store).",
        )
    ]


def test_shared_keys_do_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="requeststate.mcp"):
        protect(MCPServer("svc"), KEYS)
        use_codec(Server("svc"), KEYS)
    assert [r for r in caplog.records if r.name == "requeststate.mcp"] == []


# --- the codec seam -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_codec_round_trips_the_sdk_envelope(mode: rs.ModeName) -> None:
    codec = SDKCodec(KEYS, mode=mode)
    assert codec.unseal(codec.seal(b'{"v":1,"s":"x"}')) == b'{"v":1,"s":"x"}'


def test_codec_refusal_carries_only_a_reason_code() -> None:
    codec = SDKCodec(KEYS)
    with pytest.raises(InvalidRequestState, match=r"^bad_signature$") as error:
        codec.unseal(tamper(codec.seal(b'{"v":1,"s":"' + MARKER.encode() + b'"}')))
    assert error.value.__cause__ is None


def test_codec_refuses_a_token_of_another_key() -> None:
    token = SDKCodec(OTHER_SECRET).seal(b"{}")
    with pytest.raises(InvalidRequestState, match=r"^bad_signature$"):
        SDKCodec(KEYS).unseal(token)


@pytest.mark.parametrize("mode", ["signed", "encrypted", "xchacha"])
def test_codec_round_trips_bytes_that_are_not_utf8(mode: rs.ModeName) -> None:
    codec = SDKCodec(KEYS, mode=mode)
    payload = bytes(range(256))
    assert codec.unseal(codec.seal(payload)) == payload


def test_codec_refuses_an_authentic_state_that_seal_never_writes() -> None:
    # Under the codec's own binding, but not base64url: only a writer other than seal makes one.
    token = spec.mint(SECRET, "not base64!", NOW_PLUS, "", spec.SDK_CODEC_TOOL, "encrypted")
    with pytest.raises(InvalidRequestState, match=r"^malformed$"):
        SDKCodec(KEYS).unseal(token)


@pytest.mark.parametrize("mode", ["signed", "encrypted", "xchacha"])
def test_codec_seals_a_64_kib_payload_by_default(mode: rs.ModeName) -> None:
    # The largest payload the SDK's own suite seals: SDKCodec's default cap holds it in every mode.
    codec = SDKCodec(KEYS, mode=mode)
    payload = bytes(range(256)) * 256
    assert codec.unseal(codec.seal(payload)) == payload


def test_codec_refuses_to_seal_past_a_lower_cap() -> None:
    with pytest.raises(ValueError, match=r"over max_token_bytes=100000$"):
        SDKCodec(KEYS, max_token_bytes=100_000).seal(bytes(65_536))


def test_codec_exposes_its_size_limit() -> None:
    codec = SDKCodec(KEYS, max_token_bytes=1 << 20)
    assert codec.max_token_bytes == 1 << 20
    assert len(codec.unseal(codec.seal(bytes(200_000)))) == 200_000


async def test_use_codec_carries_a_large_state_within_max_token_bytes() -> None:
    # 48 KB of JSON text: the SDK escapes it into its envelope, which travels as base64url in our token.
    server: MCPServer[Any] = MCPServer("big")
    big = json.dumps({"rows": ["x" * 40] * 1100})
    seen: list[str | None] = []

    @server.tool()
    async def wizard(ctx: Context, topic: str = "x") -> str | InputRequiredResult:
        seen.append(ctx.request_state)
        return InputRequiredResult(request_state=big) if ctx.request_state is None else "done"

    use_codec(server, KEYS, max_token_bytes=256 * 1024)
    built = Built(server=server, auth=build("lowlevel", "boundary", KEYS, "signed").auth, seen=seen)

    async def run() -> Any:
        async with connect(built) as client:
            return await echo(client, await first_round(client))

    assert text_of(await bounded(run)) == "done"
    assert seen == [None, big]


# --- HTTP, with real bearer authentication on loopback --------------------------------------------------


class StaticVerifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        subject = {"tok-alice": "alice", "tok-bob": "bob"}.get(token)
        if subject is None:
            return None
        return AccessToken(
            token=token, client_id="cli", scopes=["mcp"], subject=subject, claims={"iss": "https://as.test"}
        )


@asynccontextmanager
async def http_server(
    keys: rs.KeyRing, name: str = "httpsvc", **options: Any
) -> AsyncIterator[tuple[str, list[str | None]]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    seen: list[str | None] = []
    server: MCPServer[Any] = MCPServer(
        name,
        token_verifier=StaticVerifier(),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl("https://as.test"),
            resource_server_url=AnyHttpUrl(url),
            validate_token_resource=False,
        ),
    )

    @server.tool()
    async def wizard(ctx: Context, topic: str = "x") -> str | InputRequiredResult:
        seen.append(ctx.request_state)
        return InputRequiredResult(request_state=MARKER) if ctx.request_state is None else "done"

    @server.tool()
    async def other(ctx: Context, topic: str = "x") -> str | InputRequiredResult:
        seen.append(ctx.request_state)
        return InputRequiredResult(request_state=MARKER) if ctx.request_state is None else "done"

    protect(server, keys, **options)
    config = uvicorn.Config(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="error")
    web = uvicorn.Server(config)
    async with anyio.create_task_group() as group:
        group.start_soon(web.serve)
        while not web.started:
            await anyio.sleep(0.02)
        try:
            yield url, seen
        finally:
            web.should_exit = True


@asynccontextmanager
async def http_client(url: str, bearer: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {bearer}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def test_http_echo_from_another_bearer_is_refused() -> None:
    async def run() -> list[str | None]:
        async with http_server(KEYS) as (url, seen):
            async with http_client(url, "tok-alice") as alice:
                assert text_of(await alice.call_tool("wizard", {"topic": "x"})) == "done"
                token = await first_round(alice)
            async with http_client(url, "tok-bob") as bob:
                await echo_refused(bob, token)
            return seen

    assert await bounded(run) == [None, MARKER, None]


@pytest.mark.parametrize("difference", ["tool", "arguments", "user", "audience"])
async def test_http_misbound_echo_is_refused_and_the_legitimate_retry_completes(difference: str) -> None:
    guard = memory_guard()  # shared by both servers, as a RedisGuard would be

    async def run() -> list[str | None]:
        async with (
            http_server(KEYS, guard=guard) as (url, seen),
            http_server(KEYS, name="elsewhere", guard=guard) as (elsewhere_url, elsewhere_seen),
            http_client(url, "tok-alice") as alice,
            http_client(url, "tok-bob") as bob,
            http_client(elsewhere_url, "tok-alice") as alice_elsewhere,
        ):
            token = await first_round(alice)
            client, name, arguments = {
                "tool": (alice, "other", None),
                "arguments": (alice, "wizard", {"topic": "y"}),
                "user": (bob, "wizard", None),
                "audience": (alice_elsewhere, "wizard", None),
            }[difference]
            await echo_refused(client, token, name=name, arguments=arguments)
            final = await echo(alice, token)
            assert isinstance(final, CallToolResult)
            assert text_of(final) == "done"
            return seen + elsewhere_seen

    assert await bounded(run) == [None, MARKER]


async def test_ephemeral_keys_warn_on_the_first_http_request(caplog: pytest.LogCaptureFixture) -> None:
    keys = rs.KeyRing.ephemeral()

    async def run() -> None:
        async with http_server(keys) as (url, _), http_client(url, "tok-alice") as alice:
            caplog.clear()
            await first_round(alice)
            await first_round(alice)

    with caplog.at_level(logging.WARNING, logger="requeststate.mcp"):
        await bounded(run)
    warnings = [r.getMessage() for r in caplog.records if r.name == "requeststate.mcp"]
    assert warnings == [
        f"requestState keys are ephemeral (KeyRing {keys.fingerprint}) on an HTTP transport: a retry that "
        "reaches another worker or replica, or arrives after a restart, is refused. Share one KeyRing "
        "between all workers (KeyRing.from_env() or a secret store)."
    ]


# --- stdio subprocesses: the real transport, and several instances sharing a key ------------------------


def stdio_params(
    mode: rs.ModeName, *, secret: bytes = SECRET, shape: Shape = "boundary", tier: Tier = "mcpserver"
) -> Any:
    env = {
        "REQUESTSTATE_KEYS": b64_secret(secret),
        "RS_TEST_TIER": tier,
        "RS_TEST_SHAPE": shape,
        "RS_TEST_MODE": mode,
        "PYTHONPATH": str(ROOT),
    }
    return StdioServerParameters(
        command=sys.executable, args=["-m", "tests.support.mcp_stdio_server"], env=env, cwd=ROOT
    )


# A stdio server process of each configuration starts once for the module's tests of it, on each
# xdist worker that runs one: each test's flows are its own, and a test that reads the wire reads
# the frames of its own flows (those recorded since it began).
class StdioConfig(NamedTuple):
    mode: rs.ModeName
    shape: Shape = "boundary"
    tier: Tier = "mcpserver"
    secret: bytes = SECRET


@dataclass(frozen=True)
class StdioServer:
    """A client of a stdio server process, how that process was configured, and the frames on its wire."""

    config: StdioConfig
    client: Client
    tap: WireTap


def configs(*chosen: StdioConfig) -> pytest.MarkDecorator:
    """Parametrize a test's ``stdio_server`` with ``chosen``."""
    return pytest.mark.parametrize(
        "stdio_server",
        chosen,
        indirect=True,
        ids=lambda c: "-".join([c.mode, c.shape, c.tier, *(["other-key"] if c.secret != SECRET else [])]),
    )


@pytest.fixture(scope="module")
async def stdio_server(request: pytest.FixtureRequest) -> AsyncIterator[StdioServer]:
    """A stdio server process configured as ``request.param``, and a client of it."""
    config: StdioConfig = request.param
    params = stdio_params(config.mode, secret=config.secret, shape=config.shape, tier=config.tier)
    tap = WireTap(stdio_client(params))
    async with Client(tap, elicitation_callback=answer) as client:
        yield StdioServer(config, client, tap)


@configs(StdioConfig("signed"), StdioConfig("encrypted", tier="lowlevel"))
async def test_stdio_full_flow_completes(stdio_server: StdioServer) -> None:
    async def run() -> str:
        return text_of(await stdio_server.client.call_tool("wizard", {"topic": "x"}))

    assert await bounded(run) == "done: first,second"


@configs(*[StdioConfig("encrypted", shape) for shape in SHAPES])
async def test_stdio_encrypted_state_never_appears_on_the_wire(stdio_server: StdioServer) -> None:
    tap, since = stdio_server.tap, len(stdio_server.tap.frames)

    async def run() -> str:
        return text_of(await stdio_server.client.call_tool("wizard", {"topic": "x"}))

    assert await bounded(run) == "done: first,second"
    assert len(tap.request_states(since)) == 4
    assert not tap.reveals(MARKER, since)


@configs(StdioConfig("encrypted"))
@pytest.mark.parametrize("difference", ["tool", "arguments"])
async def test_stdio_misbound_echo_is_refused_and_the_legitimate_retry_completes(
    stdio_server: StdioServer, difference: str
) -> None:
    client = stdio_server.client

    async def run() -> Any:
        token = await first_round(client)
        name, arguments = ("other", None) if difference == "tool" else ("wizard", {"topic": "y"})
        await echo_refused(client, token, name=name, arguments=arguments)
        return await echo(client, token)

    second = await bounded(run)
    assert isinstance(second, InputRequiredResult)
    assert list(second.input_requests or {}) == ["q2"]


@configs(StdioConfig("encrypted"))
async def test_stdio_tampered_echo_is_refused(stdio_server: StdioServer) -> None:
    client, tap, since = stdio_server.client, stdio_server.tap, len(stdio_server.tap.frames)

    async def run() -> None:
        token = await first_round(client)
        await echo_refused(client, tamper(token))

    await bounded(run)
    assert not leaks_reason(tap.text(since))


@configs(*[StdioConfig(mode) for mode in MODES])
async def test_token_minted_here_is_accepted_by_another_process_with_the_same_key(
    stdio_server: StdioServer,
) -> None:
    # What another instance (or an mcp.d server with the same secret) would hand out for round 1.
    mode = stdio_server.config.mode
    state = f'{{"step":1,"marker":"{MARKER}","answers":[]}}'
    wizard = spec.boundary_tool("tools/call", "wizard", {"topic": "x"}, "tests", False)
    token = spec.mint(SECRET, state, NOW_PLUS, "", wizard, mode)

    async def run() -> Any:
        return await echo(stdio_server.client, token)

    second = await bounded(run)
    assert isinstance(second, InputRequiredResult)
    assert second.input_requests is not None
    assert list(second.input_requests) == ["q2"]


async def mint_in_this_process(shape: Shape) -> str:
    """Round 1 from an instance of the server in this process, under ``SECRET``."""
    async with connect(build("mcpserver", shape, KEYS, "encrypted")) as here:
        return await first_round(here)


@configs(*[StdioConfig("encrypted", shape) for shape in SHAPES])
async def test_token_from_one_instance_completes_on_another(stdio_server: StdioServer) -> None:
    there = stdio_server.client

    async def run() -> str:
        token = await mint_in_this_process(stdio_server.config.shape)
        after = await echo(there, token)
        assert isinstance(after, InputRequiredResult)
        assert after.request_state is not None
        return await finish(there, after.request_state)

    assert await bounded(run) == "done: a1,a2"


@configs(*[StdioConfig("encrypted", shape, secret=OTHER_SECRET) for shape in SHAPES])
async def test_token_is_refused_by_an_instance_with_another_key(stdio_server: StdioServer) -> None:
    async def run() -> None:
        await echo_refused(stdio_server.client, await mint_in_this_process(stdio_server.config.shape))

    await bounded(run)


# --- the example ----------------------------------------------------------------------------------------


async def test_example_booking_server_completes_over_stdio() -> None:
    async def guest(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        if "date" in params.message.lower():
            return ElicitResult(action="accept", content={"date": "2026-12-01"})
        return ElicitResult(action="accept", content={"party": 4})

    params = StdioServerParameters(
        command=sys.executable,
        args=[str(ROOT / "examples" / "booking_server.py")],
        env={"REQUESTSTATE_KEYS": b64_secret(SECRET), "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    tap = WireTap(stdio_client(params))

    async def run() -> str:
        async with Client(tap, elicitation_callback=guest) as client:
            return text_of(await client.call_tool("book_table", {"restaurant": "Chez Ada"}))

    outcome = await bounded(run)
    assert outcome == "Booked a table for 4 at Chez Ada on 2026-12-01."
    assert not tap.reveals("hold-")


@pytest.mark.parametrize(
    ("example", "variables", "message"),
    [
        (
            "booking_http_server.py",
            {"BOOKING_USERS": "t:alice"},
            "error: REQUESTSTATE_KEYS is not set, or empty: set it to base64url secrets separated by "
            "commas, newest first (generate one with: requeststate keygen)",
        ),
        (
            "booking_server.py",
            {"REQUESTSTATE_KEYS": "short"},
            "error: REQUESTSTATE_KEYS: secret 0 is not base64url",
        ),
        (
            "booking_server.py",
            {"REQUESTSTATE_KEYS": b64_secret(SECRET), "REQUESTSTATE_TTL": "0"},
            "error: REQUESTSTATE_TTL must be whole seconds from 1 to 86400 (a day); its value is not: "
            "set it as REQUESTSTATE_TTL=300, for five minutes",
        ),
    ],
)
def test_example_servers_stop_on_a_configuration_error_with_one_line(
    example: str, variables: dict[str, str], message: str
) -> None:
    # They printed a whole traceback for a key that was missing or short.
    env = {key: value for key, value in os.environ.items() if not key.startswith("REQUESTSTATE_")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / example)],
        env={**env, **variables, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (1, f"{message}\n")


@pytest.fixture
def http_booking_example() -> Iterator[str]:
    """examples/booking_http_server.py on a free loopback port, users alice and bob; its URL."""
    port = free_port()
    env = {
        **os.environ,
        "REQUESTSTATE_KEYS": b64_secret(SECRET),
        "BOOKING_USERS": "tok-alice:alice,tok-bob:bob",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("REDIS_URL", None)
    argv = [sys.executable, str(ROOT / "examples" / "booking_http_server.py"), "--port", str(port)]
    with serving(argv, port, env, ROOT) as url:
        yield url


async def test_example_http_server_binds_per_user_and_redeems_once(http_booking_example: str) -> None:
    date: dict[str, Any] = {"date": ElicitResult(action="accept", content={"date": "2026-12-01"})}
    args = {"restaurant": "Chez Ada"}

    async def run() -> Any:
        async with (
            http_client(http_booking_example, "tok-alice") as alice,
            http_client(http_booking_example, "tok-bob") as bob,
        ):
            first = await alice.session.call_tool("book_table", args, allow_input_required=True)
            assert isinstance(first, InputRequiredResult)
            token = first.request_state or ""

            async def retry(client: Client) -> Any:
                return await client.session.call_tool(
                    "book_table", args, allow_input_required=True, request_state=token, input_responses=date
                )

            with pytest.raises(MCPError) as foreign:
                await retry(bob)
            assert_frozen(foreign)
            assert isinstance(await retry(alice), InputRequiredResult)  # bob's echo burnt nothing
            with pytest.raises(MCPError) as replayed:
                await retry(alice)
            assert_frozen(replayed)

    await bounded(run)


# --- the middleware alone ---------------------------------------------------------------------------------


def returning(result: HandlerResult) -> CallNext:
    async def call_next(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        return result

    return call_next


async def test_boundary_seals_a_result_model() -> None:
    sealed = await Boundary(KEYS, audience=None)(
        request_context({"name": "wizard"}), returning(InputRequiredResult(request_state="s"))
    )
    assert isinstance(sealed, InputRequiredResult)
    tool = spec.boundary_tool("tools/call", "wizard", {}, None, False)
    assert spec.open_token(SECRET, sealed.request_state or "", "", tool)["s"] == "s"


async def test_the_handler_sees_the_request_context_with_only_its_params_changed() -> None:
    token = spec.mint(
        SECRET, "s", NOW_PLUS, "", spec.boundary_tool("tools/call", "wizard", {}, None, False), "encrypted"
    )
    given = ServerRequestContext(
        session=cast(Any, "session"),
        lifespan_context={"db": "pool"},
        protocol_version="2026-07-28",
        method="tools/call",
        params={"name": "wizard", "requestState": token},
        request_id=7,
        meta=RequestParamsMeta(progress_token="p"),
        request=cast(Any, "http request"),
    )
    handed: list[ServerRequestContext[Any, Any]] = []

    async def handler(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        handed.append(ctx)
        return {"resultType": "complete", "content": []}

    await Boundary(KEYS, audience=None)(given, handler)
    assert handed[0] is not given
    assert vars(handed[0]) == {**vars(given), "params": {"name": "wizard", "requestState": "s"}}
    assert given.params == {"name": "wizard", "requestState": token}


async def test_boundary_refuses_to_seal_a_non_string_state() -> None:
    odd = {"resultType": "input_required", "requestState": 5}
    with pytest.raises(MCPError) as error:
        await Boundary(KEYS, audience=None)(request_context({"name": "wizard"}), returning(odd))
    assert error.value.error.code == INTERNAL_ERROR


async def test_boundary_refuses_to_seal_for_a_non_string_subject() -> None:
    boundary = Boundary(KEYS, audience=None, subject=lambda ctx: cast(Any, 42))
    with pytest.raises(MCPError) as error:
        await boundary(request_context({"name": "wizard"}), returning(InputRequiredResult(request_state="s")))
    assert error.value.error.code == INTERNAL_ERROR


async def test_boundary_refuses_to_seal_without_a_tool_name() -> None:
    with pytest.raises(MCPError) as error:
        await Boundary(KEYS, audience=None)(
            request_context({}), returning(InputRequiredResult(request_state="s"))
        )
    assert error.value.error.code == INTERNAL_ERROR


async def test_reelicit_drops_the_echo_when_the_subject_source_fails() -> None:
    def broken(ctx: Any) -> str | None:
        raise RuntimeError("identity provider down")

    handed: list[Any] = []

    async def handler(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        handed.append(dict(ctx.params or {}))
        return {"content": [], "resultType": "complete"}

    token = spec.mint(
        SECRET, "s", NOW_PLUS, "", spec.boundary_tool("tools/call", "wizard", {}, None, True), "encrypted"
    )
    params = {"name": "wizard", "requestState": token, "inputResponses": {"q1": {}}}
    await Boundary(KEYS, audience=None, on_invalid="reelicit", subject=broken)(
        request_context(params), handler
    )
    assert handed == [{"name": "wizard"}]


def test_request_target_needs_a_string_name() -> None:
    with pytest.raises(ValueError, match=r"params\.name"):
        request_target("tools/call", {"name": 7})


@pytest.mark.parametrize(
    ("method", "params", "target"),
    [
        ("tools/call", {"name": "book"}, "book"),
        ("prompts/get", {"name": "book"}, "book"),
        ("resources/read", {"uri": "res://a", "name": "x"}, "res://a"),
    ],
)
def test_request_target_is_the_name_or_the_uri(method: str, params: dict[str, Any], target: str) -> None:
    assert request_target(method, params) == target
