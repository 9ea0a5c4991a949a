"""``protect(..., exactly_once=...)``: a tool whose action runs once per state, and whose identical retries
get the first call's answer (docs/exactly-once.md), on the SDK's real server and client, in memory.

Across processes and stores, a dropped response and a killed worker: tests/test_exactly_once_fleet.py.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import anyio
from mcp import Client
from mcp.client._memory import InMemoryTransport
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    RequestParamsMeta,
    TextContent,
)

import requeststate as rs
from requeststate.mcp import INVALID_MESSAGE, protect
from requeststate.mcp._once import exactly_once_targets
from tests.conftest import SECRET

pytestmark = pytest.mark.anyio

TIMEOUT = 20
YES: dict[str, Any] = {"confirm": ElicitResult(action="accept", content={"confirm": True})}
NO: dict[str, Any] = {"confirm": ElicitResult(action="accept", content={"confirm": False})}
_ASK = ElicitRequest(
    params=ElicitRequestFormParams(
        message="Book it?",
        requested_schema={"type": "object", "properties": {"confirm": {"type": "boolean"}}},
    )
)


class Bookings:
    """A server with ``book`` (exactly once) and ``plain`` (single use), the actions' runs counted."""

    def __init__(self, *, lease: int = 60, hold: anyio.Event | None = None, **options: Any) -> None:
        self.runs: list[str] = []
        self.server: MCPServer[Any] = MCPServer("bookings")
        self._ids = itertools.count(1)
        self._hold = hold
        for name in ("book", "plain", "fail"):
            self.server.tool(name=name)(self._tool(name))
        codec = rs.Codec(SECRET, guard=rs.MemoryGuard(), lease=lease, metrics=None)
        protect(self.server, codec, exactly_once={"book", "fail"}, **options)

    def _tool(self, name: str) -> Any:
        async def tool(item: str, ctx: Context) -> str | InputRequiredResult:
            if ctx.request_state is None:
                return InputRequiredResult(input_requests={"confirm": _ASK}, request_state=item)
            reply = (ctx.input_responses or {}).get("confirm")
            confirmed = isinstance(reply, ElicitResult) and (reply.content or {}).get("confirm") is True
            self.runs.append(f"{name}:{item}:{confirmed}")
            if self._hold is not None:
                await self._hold.wait()
            if name == "fail":
                raise MCPError(code=-32001, message="the supplier refused", data={"item": item})
            return f"booked {ctx.request_state} #{next(self._ids)} confirmed={confirmed}"

        return tool


@asynccontextmanager
async def client_of(bookings: Bookings) -> AsyncIterator[Client]:
    async with Client(InMemoryTransport(bookings.server)) as client:
        yield client


def meta_of(user: str | None) -> RequestParamsMeta | None:
    """The request's ``_meta``, naming ``user`` for ``user_in_meta``; none without one."""
    return None if user is None else cast("RequestParamsMeta", {"user": user})


async def round_one(client: Client, tool: str = "book", item: str = "room 7", user: str | None = None) -> str:
    result = await client.session.call_tool(
        tool, {"item": item}, allow_input_required=True, meta=meta_of(user)
    )
    assert isinstance(result, InputRequiredResult)
    assert result.request_state is not None
    return result.request_state


async def round_two(
    client: Client,
    token: str,
    *,
    tool: str = "book",
    item: str = "room 7",
    replies: Any = YES,
    user: str | None = None,
) -> object:
    """The final round: the tool's text, or the JSON-RPC error's (code, message, data)."""
    try:
        result = await client.session.call_tool(
            tool,
            {"item": item},
            allow_input_required=True,
            request_state=token,
            input_responses=replies,
            meta=meta_of(user),
        )
    except MCPError as error:
        return error.error.code, error.error.message, error.error.data
    assert isinstance(result, CallToolResult)
    assert isinstance(result.content[0], TextContent)
    return result.content[0].text


async def test_an_identical_retry_gets_the_first_answer_and_the_action_runs_once() -> None:
    bookings = Bookings()
    with anyio.fail_after(TIMEOUT):
        async with client_of(bookings) as client:
            token = await round_one(client)
            answers = [await round_two(client, token) for _ in range(3)]
    assert (answers, bookings.runs) == (["booked room 7 #1 confirmed=True"] * 3, ["book:room 7:True"])


async def test_concurrent_identical_retries_run_the_action_once_and_get_its_answer_or_in_progress() -> None:
    hold = anyio.Event()
    bookings = Bookings(hold=hold)
    answers: list[object] = []
    with anyio.fail_after(TIMEOUT):
        async with client_of(bookings) as client:
            token = await round_one(client)

            async def retry() -> None:
                answers.append(await round_two(client, token))

            async with anyio.create_task_group() as group:
                for _ in range(8):
                    group.start_soon(retry)
                while len(answers) < 7:  # the seven that did not run are told at once
                    await anyio.sleep(0.01)
                hold.set()
            after = await round_two(client, token)
    in_progress = (
        INTERNAL_ERROR,
        "requestState is being redeemed by an earlier identical call: retry",
        {"reason": "request_state_in_progress"},
    )
    assert sorted(map(str, answers)) == sorted([str(in_progress)] * 7 + ["booked room 7 #1 confirmed=True"])
    assert (after, bookings.runs) == ("booked room 7 #1 confirmed=True", ["book:room 7:True"])


@pytest.mark.parametrize("on_invalid", ["error", "reelicit"])
async def test_a_retry_with_other_input_responses_is_refused_as_a_replay(on_invalid: str) -> None:
    bookings = Bookings(on_invalid=on_invalid)
    with anyio.fail_after(TIMEOUT):
        async with client_of(bookings) as client:
            token = await round_one(client)
            first = await round_two(client, token, replies=NO)
            if on_invalid == "error":
                other = await round_two(client, token, replies=YES)
            else:  # asked again: a new round one, whose state is new
                asked = await client.session.call_tool(
                    "book",
                    {"item": "room 7"},
                    allow_input_required=True,
                    request_state=token,
                    input_responses=YES,
                )
                other = type(asked).__name__
    expected = (INVALID_PARAMS, INVALID_MESSAGE, {"reason": "invalid_request_state"})
    assert (first, other, bookings.runs) == (
        "booked room 7 #1 confirmed=False",
        expected if on_invalid == "error" else "InputRequiredResult",
        ["book:room 7:False"],
    )


def user_in_meta(ctx: Any) -> str | None:
    """A principal source for these tests only: the user the request's ``_meta`` names (no auth here)."""
    user: str | None = ((ctx.params or {}).get("_meta") or {}).get("user")
    return user


@pytest.mark.parametrize(
    ("item", "user"),
    [("room 8", "alice"), ("room 7", "mallory")],
    ids=["other-arguments", "another-principal"],
)
async def test_a_retry_with_other_arguments_or_by_another_principal_is_refused(item: str, user: str) -> None:
    bookings = Bookings(subject=user_in_meta)
    with anyio.fail_after(TIMEOUT):
        async with client_of(bookings) as client:
            token = await round_one(client, user="alice")
            first = await round_two(client, token, user="alice")
            other = await round_two(client, token, item=item, user=user)
            again = await round_two(client, token, user="alice")
    assert (first, other, again, bookings.runs) == (
        "booked room 7 #1 confirmed=True",
        (INVALID_PARAMS, INVALID_MESSAGE, {"reason": "invalid_request_state"}),
        "booked room 7 #1 confirmed=True",
        ["book:room 7:True"],
    )


async def test_the_first_call_s_error_is_every_identical_retry_s_error() -> None:
    bookings = Bookings()
    with anyio.fail_after(TIMEOUT):
        async with client_of(bookings) as client:
            token = await round_one(client, tool="fail")
            answers = [await round_two(client, token, tool="fail") for _ in range(2)]
    assert (answers, bookings.runs) == (
        [(-32001, "the supplier refused", {"item": "room 7"})] * 2,
        ["fail:room 7:True"],
    )


async def test_a_tool_not_named_exactly_once_stays_single_use() -> None:
    bookings = Bookings()
    with anyio.fail_after(TIMEOUT):
        async with client_of(bookings) as client:
            token = await round_one(client, tool="plain")
            answers = [await round_two(client, token, tool="plain") for _ in range(2)]
    assert answers == [
        "booked room 7 #1 confirmed=True",
        (INVALID_PARAMS, INVALID_MESSAGE, {"reason": "invalid_request_state"}),
    ]


async def test_a_retry_past_the_lease_of_a_first_call_with_no_answer_is_told_its_outcome_is_unknown() -> None:
    hold = anyio.Event()
    bookings = Bookings(hold=hold, lease=1)
    with anyio.fail_after(TIMEOUT):
        async with client_of(bookings) as client:
            token = await round_one(client)
            async with anyio.create_task_group() as group:
                group.start_soon(round_two, client, token)
                while not bookings.runs:
                    await anyio.sleep(0.01)
                await anyio.sleep(2.1)  # past the lease of 1 s, the first call still running
                late = await round_two(client, token)
                hold.set()
            kept = await round_two(client, token)  # the first call answered late: its answer is kept
    assert late == (
        INVALID_PARAMS,
        "requestState was redeemed by an earlier call that did not answer: its outcome is unknown",
        {"reason": "request_state_outcome_unknown"},
    )
    assert (kept, bookings.runs) == ("booked room 7 #1 confirmed=True", ["book:room 7:True"])


def test_exactly_once_without_a_guard_is_refused_when_protect_runs() -> None:
    with pytest.raises(
        ValueError, match=r"^exactly_once needs a guard that keeps answers .*: this codec has none$"
    ):
        protect(MCPServer("svc"), rs.Codec(SECRET, metrics=None), exactly_once={"book"})


def test_exactly_once_names_tools_prompts_and_resources() -> None:
    assert exactly_once_targets(["book", "prompts/get:summary", "resources/read:file:///x"]) == {
        ("tools/call", "book"),
        ("prompts/get", "summary"),
        ("resources/read", "file:///x"),
    }


@pytest.mark.parametrize(
    ("names", "error", "message"),
    [
        ("book", TypeError, r"^exactly_once must be a collection of names"),
        ([""], TypeError, r"^exactly_once names a target by a non-empty str, not ''$"),
        (
            ["prompts/get:"],
            ValueError,
            r"^exactly_once names 'prompts/get:', with no target after its method$",
        ),
    ],
)
def test_exactly_once_refuses_what_names_no_target(
    names: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        exactly_once_targets(names)


def failing_on_the_echo(ctx: Any) -> str | None:
    """A principal source that fails on the round that echoes a state (a broken auth lookup, say)."""
    if (ctx.params or {}).get("requestState") is not None:
        raise RuntimeError("the principal could not be read")
    return "alice"


async def test_a_principal_that_cannot_be_read_on_the_echo_refuses_it_and_runs_nothing() -> None:
    bookings = Bookings(subject=failing_on_the_echo)
    with anyio.fail_after(TIMEOUT):
        async with client_of(bookings) as client:
            token = await round_one(client)
            answer = await round_two(client, token)
    assert (answer, bookings.runs) == (
        (INVALID_PARAMS, INVALID_MESSAGE, {"reason": "invalid_request_state"}),
        [],
    )
