"""requeststate.mcp bindings: refused when they differ, accepted when they match; one context per use."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any, cast

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.request_state import InvalidRequestState
from mcp.server.request_state import authenticated_principal as sdk_authenticated_principal
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, InputRequiredResult, RequestParamsMeta

import requeststate as rs
from requeststate.mcp import Boundary, BoundaryOptions, SDKCodec, arguments_digest, protect
from requeststate.mcp._binding import authenticated_principal
from requeststate.mcp._boundary import _logged_id
from tests.support import spec_tokens as spec
from tests.support.mcp_flow import (
    KEYS,
    MODES,
    NOW_PLUS,
    SECRET,
    assert_frozen,
    bounded,
    connect,
    echo,
    echo_refused,
    first_round,
    open_round,
    plaintext_seen,
    replies,
    request_context,
)
from tests.support.mcp_servers import MARKER, SHAPES, Shape, build
from tests.support.memory_guard import memory_guard

pytestmark = pytest.mark.anyio

DIFFERENCES = ("tool", "arguments", "user", "audience")
STATE = f'{{"step":1,"marker":"{MARKER}","answers":[]}}'
# Every use below carries this same state text (SDKCodec carries its bytes as base64url), so
# only the binding can tell their tokens apart.
CARRIED = spec.b64(STATE.encode())


# --- end to end, in memory: every binding, both shapes ---------------------------------------------------


@pytest.mark.parametrize("difference", DIFFERENCES)
@pytest.mark.parametrize(("shape", "mode"), [(s, m) for s in SHAPES for m in MODES])
async def test_misbound_echo_is_refused_and_the_legitimate_retry_then_completes(
    shape: Shape, mode: rs.ModeName, difference: str
) -> None:
    # A guard (ours only: the SDK's seam refuses one) shared by both servers, as a RedisGuard would be:
    # the legitimate retry completing proves the misbound echo consumed nothing.
    options: dict[str, Any] = {"guard": memory_guard()} if shape == "boundary" else {}
    home = build("mcpserver", shape, KEYS, mode, **options)
    away = build("mcpserver", shape, KEYS, mode, name="elsewhere", **options)
    home.auth.subject = away.auth.subject = "alice"

    async def run() -> None:
        async with connect(home) as client, connect(away) as elsewhere:
            token = await first_round(client)
            if difference == "user":
                home.auth.subject = "bob"
            target, name, arguments = {
                "tool": (client, "other", None),
                "arguments": (client, "wizard", {"topic": "y"}),
                "user": (client, "wizard", None),
                "audience": (elsewhere, "wizard", None),
            }[difference]
            await echo_refused(target, token, name=name, arguments=arguments)
            home.auth.subject = "alice"
            retried = await echo(client, token)
            assert isinstance(retried, InputRequiredResult)
            assert list(retried.input_requests or {}) == ["q2"]

    await bounded(run)
    assert plaintext_seen(home) == [STATE]
    assert plaintext_seen(away) == []


@pytest.mark.parametrize("shape", SHAPES)
async def test_echo_with_other_meta_and_responses_is_accepted(shape: Shape) -> None:
    # What a client legitimately changes between rounds is outside the arguments digest.
    built = build("mcpserver", shape, KEYS, "encrypted")

    async def run() -> Any:
        async with connect(built) as client:
            token = await first_round(client)
            return await client.session.call_tool(
                "wizard",
                {"topic": "x"},
                allow_input_required=True,
                request_state=token,
                input_responses={**replies(1), "extra": replies(2)["q2"]},
                meta=cast(RequestParamsMeta, {"progressToken": "p-1"}),
            )

    assert isinstance(await bounded(run), InputRequiredResult)


async def test_arguments_are_reordered_freely() -> None:
    # Canonical JSON: the digest ignores member order.
    built = build("lowlevel", "boundary", KEYS, "signed")

    async def run() -> Any:
        async with connect(built) as client:
            token = await first_round(client, arguments={"topic": "x", "when": "now"})
            return await echo(client, token, arguments={"when": "now", "topic": "x"})

    assert isinstance(await bounded(run), InputRequiredResult)


async def test_target_binding_accepts_other_arguments() -> None:
    built = build("mcpserver", "boundary", KEYS, "encrypted", bind="target")

    async def run() -> Any:
        async with connect(built) as client:
            token = await first_round(client)
            return await echo(client, token, arguments={"topic": "y"})

    assert isinstance(await bounded(run), InputRequiredResult)


async def test_audience_none_lets_servers_of_other_names_share_tokens() -> None:
    home = build("mcpserver", "boundary", KEYS, "encrypted", audience=None)
    away = build("mcpserver", "boundary", KEYS, "encrypted", name="elsewhere", audience=None)

    async def run() -> Any:
        async with connect(home) as client, connect(away) as elsewhere:
            return await echo(elsewhere, await first_round(client))

    assert isinstance(await bounded(run), InputRequiredResult)


async def test_subject_none_binds_no_principal() -> None:
    built = build("mcpserver", "boundary", KEYS, "encrypted", subject=None)
    built.auth.subject = "alice"

    async def run() -> Any:
        async with connect(built) as client:
            token = await first_round(client)
            built.auth.subject = "bob"
            return await echo(client, token)

    assert isinstance(await bounded(run), InputRequiredResult)


async def test_boundary_binds_the_documented_identity() -> None:
    # The layout in docs/wire-format.md, "MCP bindings", checked with the wire format's own formulas.
    built = build("mcpserver", "boundary", KEYS, "signed")
    built.auth.subject = "alice"

    async def run() -> str:
        async with connect(built) as client:
            return await first_round(client, arguments={"topic": "x", "n": [1, "é"]})

    token = await bounded(run)
    tool = spec.boundary_tool("tools/call", "wizard", {"n": [1, "é"], "topic": "x"}, "tests", True)
    assert spec.open_token(SECRET, token, spec.principal("alice"), tool)["s"] == STATE


PRINCIPALS = [
    {"client_id": "c", "subject": "alice", "claims": {"iss": "https://as"}},
    {"client_id": "c", "subject": None, "claims": {"iss": "https://as"}},
    {"client_id": "c", "subject": "alice", "claims": None},
    {"client_id": "c", "subject": "alice", "claims": {"iss": 7}},
    {"client_id": 'c"\n\u2028', "subject": "é 状態 \ud800", "claims": {"iss": "\x00"}},
]


@pytest.mark.parametrize("claims", PRINCIPALS)
def test_the_principal_is_the_string_the_sdk_writes(claims: dict[str, Any]) -> None:
    # The default principal source writes the SDK's authenticated_principal itself: same bytes.
    token = AccessToken(token="opaque", scopes=[], **claims)
    reset = auth_context_var.set(AuthenticatedUser(token))
    try:
        ctx = request_context({"name": "wizard"})
        assert authenticated_principal(ctx) == sdk_authenticated_principal(ctx)
    finally:
        auth_context_var.reset(reset)


def test_an_anonymous_request_has_no_principal() -> None:
    assert authenticated_principal(request_context({"name": "wizard"})) is None


ARGUMENTS = [
    None,
    {},
    {"b": {"z": 1, "a": [True, None, False]}, "a": "x"},
    {"n": [0.1, -0.0, 1e16, 2**70, float("nan"), float("inf"), -float("inf")]},
    {"é": "状態", "c": 'q"\\\n\x00\u2028', "s": "\ud800"},
]


@pytest.mark.parametrize("arguments", ARGUMENTS)
def test_the_arguments_digest_is_that_of_the_sdks_canonical_json(arguments: dict[str, Any] | None) -> None:
    canonical = json.dumps(arguments or {}, sort_keys=True, separators=(",", ":"))
    expected = hashlib.sha256(canonical.encode("ascii")).hexdigest()
    assert arguments_digest("tools/call", {"name": "t", "arguments": arguments}) == expected


async def test_a_request_with_cyclic_arguments_is_refused() -> None:
    # Only Python code (a middleware outside the boundary) can make them: they have no digest.
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with pytest.raises(MCPError) as error:
        await open_round(Boundary(KEYS, audience=None), {"name": "t", "arguments": cyclic}, "v1e.AAAA")
    assert_frozen(error)


# --- the mcpd profile: vectors from the wire format ------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_mcpd_binding_seals_under_the_bare_sub_and_the_tool_name(mode: rs.ModeName) -> None:
    built = build("mcpserver", "boundary", KEYS, mode, bind="mcpd")
    built.auth.subject = "alice"

    async def run() -> str:
        async with connect(built) as client:
            return await first_round(client)

    assert spec.open_token(SECRET, await bounded(run), "alice", "wizard")["s"] == STATE


@pytest.mark.parametrize("mode", MODES)
async def test_mcpd_binding_accepts_a_token_minted_as_mcpd_mints_it(mode: rs.ModeName) -> None:
    built = build("lowlevel", "boundary", KEYS, mode, bind="mcpd")
    built.auth.subject = "alice"
    token = spec.mint(SECRET, STATE, NOW_PLUS, "alice", "wizard", mode)

    async def run() -> Any:
        async with connect(built) as client:
            return await echo(client, token)

    second = await bounded(run)
    assert isinstance(second, InputRequiredResult)
    assert list(second.input_requests or {}) == ["q2"]


@pytest.mark.parametrize(("subject", "tool"), [("bob", "wizard"), ("alice", "other"), ("", "wizard")])
async def test_mcpd_binding_refuses_another_sub_or_tool(subject: str, tool: str) -> None:
    built = build("lowlevel", "boundary", KEYS, "encrypted", bind="mcpd")
    built.auth.subject = "alice"
    token = spec.mint(SECRET, STATE, NOW_PLUS, subject, tool, "encrypted")

    async def run() -> None:
        async with connect(built) as client:
            await echo_refused(client, token)

    await bounded(run)
    assert built.seen == []


async def test_mcpd_binding_binds_resources_read_to_the_empty_tool() -> None:
    built = build("mcpserver", "boundary", KEYS, "signed", bind="mcpd")
    built.auth.subject = "alice"

    async def run() -> str:
        async with connect(built) as client:
            first = await client.session.read_resource("res://one", allow_input_required=True)
            assert isinstance(first, InputRequiredResult)
            return first.request_state or ""

    assert spec.open_token(SECRET, await bounded(run), "alice", "")["s"] == STATE


async def test_mcpd_binding_refuses_to_mint_for_a_token_without_sub(caplog: pytest.LogCaptureFixture) -> None:
    # mcp.d would bind such a token as "", the identity every anonymous user shares.
    built = build("mcpserver", "boundary", KEYS, "encrypted", bind="mcpd")
    built.auth.without_sub = True

    async def run() -> None:
        async with connect(built) as client:
            with pytest.raises(MCPError) as error:
                await first_round(client)
            assert error.value.error.code == INTERNAL_ERROR

    with caplog.at_level(logging.ERROR, logger="requeststate.mcp"):
        await bounded(run)
    assert "the access token has no sub" in caplog.text
    assert "allow_missing_sub=True" in caplog.text


async def test_mcpd_binding_refuses_to_mint_for_a_token_whose_sub_is_empty() -> None:
    # Before: only a missing sub was refused; sub "" bound the anonymous users' subject all the same.
    built = build("mcpserver", "boundary", KEYS, "encrypted", bind="mcpd")
    built.auth.subject = ""

    async def run() -> None:
        async with connect(built) as client:
            with pytest.raises(MCPError) as error:
                await first_round(client)
            assert error.value.error.code == INTERNAL_ERROR

    await bounded(run)


async def test_mcpd_binding_refuses_an_echo_for_a_token_without_sub() -> None:
    # A token bound to the empty subject, as an anonymous round or mcp.d mints it for such a client.
    built = build("lowlevel", "boundary", KEYS, "encrypted", bind="mcpd")
    built.auth.without_sub = True
    token = spec.mint(SECRET, STATE, NOW_PLUS, "", "wizard", "encrypted")

    async def run() -> None:
        async with connect(built) as client:
            await echo_refused(client, token)

    await bounded(run)
    assert built.seen == []


@pytest.mark.parametrize("mode", MODES)
async def test_mcpd_allow_missing_sub_binds_the_empty_subject(mode: rs.ModeName) -> None:
    built = build("mcpserver", "boundary", KEYS, mode, bind="mcpd", allow_missing_sub=True)
    built.auth.without_sub = True

    async def run() -> str:
        async with connect(built) as client:
            return await first_round(client)

    assert spec.open_token(SECRET, await bounded(run), "", "wizard")["s"] == STATE


async def test_mcpd_binding_shares_states_between_clients_of_one_sub() -> None:
    # Documented (docs/mcp.md): mcp.d binds the bare sub, so client c1's alice and client c2's
    # alice accept each other's states. bind="request" binds the client too.
    built = build("mcpserver", "boundary", KEYS, "encrypted", bind="mcpd")
    built.auth.subject = "alice"

    async def run() -> Any:
        async with connect(built) as client:
            built.auth.client_id = "c1"
            token = await first_round(client)
            built.auth.client_id = "c2"
            return await echo(client, token)

    second = await bounded(run)
    assert isinstance(second, InputRequiredResult)
    assert plaintext_seen(built) == [STATE]


# --- a context per use of a key: a token minted by one use is refused by every other ---------------------


REQUEST = {"name": "wizard", "arguments": {"topic": "x"}}


def _boundary_use(
    mode: rs.ModeName, **options: Any
) -> tuple[Callable[[], Awaitable[str]], Callable[[str], Awaitable[bool]]]:
    boundary = Boundary(KEYS, mode=mode, on_invalid="reelicit", subject=lambda ctx: "alice", **options)

    async def mint() -> str:
        async def handler(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
            return InputRequiredResult(request_state=CARRIED)

        sealed = await boundary(request_context(REQUEST), handler)
        assert isinstance(sealed, InputRequiredResult)
        return sealed.request_state or ""

    async def accepts(token: str) -> bool:
        handed: list[Any] = []

        async def handler(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
            handed.append((ctx.params or {}).get("requestState"))
            return {"content": [], "resultType": "complete"}

        await boundary(request_context({**REQUEST, "requestState": token}), handler)
        return handed == [CARRIED]

    return mint, accepts


def _bare_use(
    mode: rs.ModeName, **identity: Any
) -> tuple[Callable[[], Awaitable[str]], Callable[[str], Awaitable[bool]]]:
    async def mint() -> str:
        return rs.encode(CARRIED, KEYS, mode=mode, **identity)

    async def accepts(token: str) -> bool:
        state: str | None = rs.decode(token, KEYS, mode=mode, **identity)
        return state == CARRIED

    return mint, accepts


def _codec_use(mode: rs.ModeName) -> tuple[Callable[[], Awaitable[str]], Callable[[str], Awaitable[bool]]]:
    codec = SDKCodec(KEYS, mode=mode)

    async def mint() -> str:
        return codec.seal(STATE.encode())

    async def accepts(token: str) -> bool:
        try:
            return codec.unseal(token) == STATE.encode()
        except InvalidRequestState:
            return False

    return mint, accepts


USES: dict[
    str, Callable[[rs.ModeName], tuple[Callable[[], Awaitable[str]], Callable[[str], Awaitable[bool]]]]
] = {
    "bare": lambda mode: _bare_use(mode),
    "bare-subject": lambda mode: _bare_use(mode, subject="alice"),
    "bare-tool": lambda mode: _bare_use(mode, subject="alice", tool="wizard"),
    "boundary-request": lambda mode: _boundary_use(mode, audience="svc"),
    "boundary-target": lambda mode: _boundary_use(mode, audience="svc", bind="target"),
    "boundary-mcpd": lambda mode: _boundary_use(mode, bind="mcpd"),
    "sdk-codec": _codec_use,
}
# mcpd binds exactly (sub, params.name), as the bare functions do for that pair: that is what lets an
# mcp.d server share tokens. The one pair of uses that is the same identity by design.
SAME_BY_DESIGN = {frozenset({"bare-tool", "boundary-mcpd"})}
PAIRS = [(a, b) for a in USES for b in USES if a != b and frozenset({a, b}) not in SAME_BY_DESIGN]


@pytest.mark.parametrize("mode", ["signed", "encrypted", "xchacha"])
@pytest.mark.parametrize(("minter", "verifier"), PAIRS)
async def test_a_token_of_one_use_is_refused_by_every_other(
    minter: str, verifier: str, mode: rs.ModeName
) -> None:
    token = await USES[minter](mode)[0]()
    assert await USES[verifier](mode)[1](token) is False


@pytest.mark.parametrize("mode", ["signed", "encrypted"])
@pytest.mark.parametrize("use", list(USES))
async def test_each_use_accepts_its_own_token(use: str, mode: rs.ModeName) -> None:
    # The control for the test above: each verifier does accept what it should.
    mint, accepts = USES[use](mode)
    assert await accepts(await mint()) is True


@pytest.mark.parametrize("mode", ["signed", "encrypted", "xchacha"])
@pytest.mark.parametrize("wrapped", [False, True], ids=["envelope", "base64-envelope"])
async def test_a_forged_sdk_envelope_from_the_bare_functions_is_refused(
    mode: rs.ModeName, wrapped: bool
) -> None:
    # Every claim of the SDK's envelope is computable without the key. An attacker who controls a
    # state that one use of the key mints unbound (rs.encode(state, keys)) shapes it as the envelope.
    built = build("mcpserver", "codec", KEYS, mode)
    now = time.time()
    digest = hashlib.sha256(
        json.dumps({"topic": "x"}, sort_keys=True, separators=(",", ":")).encode()
    ).digest()
    envelope = {
        "v": 1,
        "iat": now,
        "exp": now + 600,
        "m": "tools/call",
        "t": "wizard",
        "a": base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode(),
        "aud": "tests",
        "s": json.dumps({"step": 1, "marker": "paid", "answers": []}),
    }
    text = json.dumps(envelope, separators=(",", ":"))
    forged = rs.encode(spec.b64(text.encode()) if wrapped else text, KEYS, mode=mode)

    async def run() -> None:
        async with connect(built) as client:
            await echo_refused(client, forged)

    await bounded(run)
    assert built.seen == []


# --- notifications -----------------------------------------------------------------------------------------


class CountingGuard:
    """A MemoryGuard that counts its claims."""

    def __init__(self) -> None:
        self.inner = memory_guard()
        self.claims = 0

    def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        self.claims += 1
        return self.inner.claim(claimed, expires_at, now)


class _Notification:
    """Duck-types the SDK's notification models for ``send_notification``: any method and params."""

    def __init__(self, method: str, params: dict[str, Any]) -> None:
        self.data = {"method": method, "params": params}

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return dict(self.data)


async def test_a_notification_never_redeems_a_state(caplog: pytest.LogCaptureFixture) -> None:
    guard = CountingGuard()
    built = build("mcpserver", "boundary", KEYS, "encrypted", guard=guard)
    passed: list[dict[str, Any]] = []

    async def recorder(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None and ctx.method == "tools/call":
            passed.append(dict(ctx.params or {}))
        return await call_next(ctx)

    built.server.middleware.append(recorder)

    async def run() -> Any:
        async with connect(built) as client:
            token = await first_round(client)
            for bad in (token, "garbage"):
                params = {
                    "name": "wizard",
                    "arguments": {"topic": "x"},
                    "requestState": bad,
                    "inputResponses": {},
                }
                await client.session.send_notification(cast(Any, _Notification("tools/call", params)))
            while len(passed) < 2:
                await anyio.sleep(0.01)
            return await echo(client, token)

    with caplog.at_level(logging.DEBUG):
        retried = await bounded(run)
    assert isinstance(retried, InputRequiredResult)
    assert guard.claims == 1
    assert len(passed) == 2
    assert [sorted(set(params) & {"requestState", "inputResponses"}) for params in passed] == [[], []]
    assert [r for r in caplog.records if r.exc_info is not None] == []
    assert [r.getMessage() for r in caplog.records if r.name == "requeststate.mcp"] == []


# --- refusal log lines ----------------------------------------------------------------------------------


async def test_a_refusal_logs_one_line_with_method_target_id_and_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    built = build("mcpserver", "boundary", KEYS, "signed")
    built.auth.subject = "alice"

    async def run() -> None:
        async with connect(built) as client:
            token = await first_round(client)
            with pytest.raises(MCPError, match=r"^Invalid or expired requestState$"):
                await echo(client, token, arguments={"topic": "y"})

    with caplog.at_level(logging.DEBUG, logger="requeststate"):
        await bounded(run)
    # The request's JSON-RPC id (the session's third request), never the token, the state or the user.
    assert caplog.record_tuples == [
        (
            "requeststate.mcp",
            logging.WARNING,
            "requestState refused: method=tools/call target='wizard' id=3 reason=wrong_binding "
            f"pid={os.getpid()}",
        )
    ]


# --- setup ----------------------------------------------------------------------------------------------


BAD_OPTIONS: list[tuple[dict[str, Any], type[Exception], str]] = [
    (
        {"guard": rs.MemoryGuard},
        TypeError,
        "guard must be an instance, such as MemoryGuard(), not the class itself",
    ),
    (
        {"guard": object()},
        TypeError,
        "guard must have a claim(claimed, expires_at, now) method; a object has none",
    ),
    ({"bind": "subject"}, ValueError, "bind must be one of ('request', 'target', 'mcpd'), got 'subject'"),
    ({"audience": b"svc"}, TypeError, "audience must be a str or None, not bytes"),
    ({"ttl": 0}, ValueError, "ttl must be an int from 1 to 86400, got 0"),
    ({"max_token_bytes": 0}, ValueError, "max_token_bytes must be an int from 1 to 2**63-1, got 0"),
    (
        {"mode": "plain"},
        ValueError,
        "mode must be a Mode or one of 'signed', 'encrypted', 'xchacha', got 'plain'",
    ),
    (
        {"ttl_seconds": 5},
        TypeError,
        "unexpected option(s) ttl_seconds; the options are clock, guard, lease, leeway, max_token_bytes, "
        "metrics, mode, ttl",
    ),
    (
        {"allow_missing_sub": True},
        ValueError,
        "allow_missing_sub=True applies to bind='mcpd' with its default subject source only: the other "
        "bindings bind the client too, and a subject= source decides for itself",
    ),
    ({"allow_missing_sub": "yes"}, TypeError, "allow_missing_sub must be a bool, not str"),
    (
        {"on_invalid": "ignore"},
        ValueError,
        "on_invalid must be one of ('error', 'reelicit'), got 'ignore'",
    ),
    (
        {"bind": "everything"},
        ValueError,
        "bind must be one of ('request', 'target', 'mcpd'), got 'everything'",
    ),
    (
        {"bind": "subject_and_tool"},
        ValueError,
        "bind must be one of ('request', 'target', 'mcpd'), got 'subject_and_tool'",
    ),
    (
        {"mode": "rot13"},
        ValueError,
        "mode must be a Mode or one of 'signed', 'encrypted', 'xchacha', got 'rot13'",
    ),
    ({"mode": ()}, ValueError, "mode must name at least one Mode"),
    ({"ttl": True}, TypeError, "ttl must be an int, not bool"),
    ({"leeway": -1}, ValueError, "leeway must be an int from 0 to 86400, got -1"),
    ({"subject": "alice"}, TypeError, "subject must be a callable taking the request context, or None"),
    ({"audience": 7}, TypeError, "audience must be a str or None, not int"),
    (
        {"bind": "mcpd", "audience": "svc"},
        ValueError,
        "bind='mcpd' binds no audience (mcp.d does not): leave audience unset",
    ),
    (
        {"gaurd": memory_guard()},
        TypeError,
        "unexpected option(s) gaurd; the options are clock, guard, lease, leeway, max_token_bytes, "
        "metrics, mode, ttl",
    ),
    ({"clock": 5}, TypeError, "clock must be a callable returning unix seconds, not int"),
]


@pytest.mark.parametrize(("options", "error", "message"), BAD_OPTIONS)
def test_boundary_refuses_what_protect_refuses(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    # One declaration (BoundaryOptions) for both: the same options fail the same way.
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        Boundary(KEYS, **{"audience": "svc", **options})
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        protect(MCPServer("svc"), KEYS, **options)


def test_protect_and_boundary_take_every_option_of_the_codec() -> None:
    # One declaration: a codec option added to the core is a boundary option at once.
    assert set(rs.CodecOptions.__optional_keys__) < set(BoundaryOptions.__optional_keys__)


def test_allow_missing_sub_is_refused_beside_a_subject_source() -> None:
    # The source decides what a token without sub binds: the option would change nothing.
    with pytest.raises(ValueError, match=r"a subject= source decides for itself$"):
        Boundary(KEYS, bind="mcpd", subject=lambda ctx: "x", allow_missing_sub=True)


def test_boundary_built_directly_needs_an_audience() -> None:
    with pytest.raises(
        TypeError, match=r"^Boundary needs audience=: the server's name \(protect\(\) passes it\), or None$"
    ):
        Boundary(KEYS)


async def test_protect_binds_the_server_name_as_audience() -> None:
    # A token sealed by protect(MCPServer("svc")) is read by a boundary for audience "svc" only.
    async def mint(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        return InputRequiredResult(request_state=CARRIED)

    sealed = await protect(MCPServer("svc"), KEYS)(request_context(REQUEST), mint)
    assert isinstance(sealed, InputRequiredResult)
    echoed = request_context({**REQUEST, "requestState": sealed.request_state})

    async def handed(audience: str) -> Any:
        seen: list[Any] = []

        async def handler(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
            seen.append((ctx.params or {}).get("requestState"))
            return {"content": [], "resultType": "complete"}

        await Boundary(KEYS, audience=audience, on_invalid="reelicit")(echoed, handler)
        return seen

    assert (await handed("svc"), await handed("other")) == ([CARRIED], [None])


def test_a_refusal_log_bounds_the_id_the_client_chose() -> None:
    # A 1 MB JSON-RPC id once made a 1 MB log line per refused request.
    logged = _logged_id(cast(Any, SimpleNamespace(request_id="x" * 1_000_000)))
    assert logged == "'" + "x" * 199
