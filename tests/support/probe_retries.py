"""Retries and races kept by hand, right and wrong, for the probe's race and exactly-once checks:
``python -m tests.support.probe_retries KIND`` serves one over stdio.

Each server has one tool, ``book(item)``: round 1 asks for a confirmation; round 2 books and answers
``booked <id> runs=<n>`` (``n``: how many times the action has run in this server). A state is a
random handle the server minted for the item (any other, or another item: -32602), kept server-side
as a store would. KIND is one of:

- ``check-then-claim``: single use kept as a set of redeemed states, checked, then (after a store's
  round trip) claimed: a second redemption in a row is refused, one sent at the same time is not;
- ``atomic``: the same, checked and claimed in one step;

and, emulating by hand the wire behaviour of ``requeststate.mcp``'s exactly-once tools (issue 44), a
dict of answers keyed by the state (a request is the state, the arguments and the ``inputResponses``):

- ``exactly-once``: right: the first call of a state runs the action and keeps its answer with its
  request; an identical retry gets that answer again (while the action runs: -32603, reason
  ``request_state_in_progress``); any other request with that state is refused (-32602, reason
  ``invalid_request_state``);
- ``runs-again``: keeps no answer: an identical retry runs the action again;
- ``other-answer``: an identical retry gets another answer (``already booked``), the action not run;
- ``accepts-changed``: keeps the answer by the state alone: a retry with other answers gets it;
- ``too-large``: keeps no answer, as of one too large to keep: a retry is told so (-32602, reason
  ``request_state_answer_too_large``);
- ``stuck``: never keeps the answer: a retry is told in progress, however late;
- ``late-keep``: keeps the answer ``KEEP_LAG`` after it answered (a store written late): a retry
  meanwhile is told in progress, then gets it.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from typing import Any, Final

import anyio
from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.request_state import RequestStateBoundary
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    TextContent,
)

EXACTLY_ONCE: Final = (
    "exactly-once",
    "runs-again",
    "other-answer",
    "accepts-changed",
    "too-large",
    "stuck",
    "late-keep",
)
SINGLE_USE: Final = ("atomic", "check-then-claim")
ACTION_SECONDS: Final = 0.05
"""How long the action runs: long enough for identical calls sent at once to meet it running."""
KEEP_LAG: Final = 0.3
"""How long after answering a ``late-keep`` server keeps its answer."""
STORE_SECONDS: Final = 0.01
"""A store's round trip, between a check-then-claim guard's check and its claim."""
_CONFIRM: Final = ElicitRequest(
    params=ElicitRequestFormParams(
        message="Book it?",
        requested_schema={"type": "object", "properties": {"confirm": {"type": "boolean"}}},
    )
)


def _invalid() -> MCPError:
    return MCPError(
        code=INVALID_PARAMS,
        message="Invalid or expired requestState",
        data={"reason": "invalid_request_state"},
    )


def _in_progress() -> MCPError:
    return MCPError(
        code=INTERNAL_ERROR,
        message="the first call with this requestState is still running: retry",
        data={"reason": "request_state_in_progress"},
    )


class ByHand:
    """Middleware answering every echo of a ``book`` state, as ``kind`` gets single use or exactly once
    right or wrong."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.minted: dict[str, dict[str, Any]] = {}  # state -> the arguments it was minted for
        self.redeemed: set[str] = set()  # single use
        self.kept: dict[
            str, tuple[str, CallToolResult | None]
        ] = {}  # state -> request, answer (None: running)
        self.runs = 0
        self.late: dict[str, tuple[float, CallToolResult]] = {}  # state -> when its answer is kept, and it

    async def _book(self, item: object) -> CallToolResult:
        await anyio.sleep(ACTION_SECONDS)
        self.runs += 1
        text = f"booked {item}-{secrets.token_hex(3)} runs={self.runs}"
        return CallToolResult(content=[TextContent(type="text", text=text)])

    async def _claim(self, state: str) -> None:
        if state in self.redeemed:
            raise _invalid()
        if self.kind == "check-then-claim":
            await anyio.sleep(STORE_SECONDS)
        self.redeemed.add(state)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params or {}
        state = params.get("requestState")
        if ctx.method != "tools/call" or state is None:
            return await call_next(ctx)
        arguments = params.get("arguments") or {}
        if self.minted.get(state) != arguments:
            raise _invalid()
        if self.kind in SINGLE_USE:
            await self._claim(state)
            return await self._book(arguments.get("item"))
        request = json.dumps([arguments, params.get("inputResponses")], sort_keys=True)
        if state not in self.kept:
            self.kept[state] = (request, None)
            booked = await self._book(arguments.get("item"))
            if self.kind == "late-keep":
                self.late[state] = (time.monotonic() + KEEP_LAG, booked)
            elif self.kind != "stuck":
                self.kept[state] = (request, booked)
            return booked
        first, answer = self.kept[state]
        if state in self.late and time.monotonic() >= self.late[state][0]:
            answer = self.late[state][1]
        if first != request and self.kind != "accepts-changed":
            raise _invalid()
        if self.kind == "too-large":
            raise MCPError(
                code=INVALID_PARAMS,
                message="requestState was redeemed by an earlier call whose answer was too large to keep",
                data={"reason": "request_state_answer_too_large"},
            )
        if self.kind == "runs-again":
            return await self._book(arguments.get("item"))
        if answer is None:
            raise _in_progress()
        if self.kind == "other-answer":
            return CallToolResult(content=[TextContent(type="text", text="already booked")])
        return answer


def server(kind: str) -> MCPServer[Any]:
    """``book(item)``, its states redeemed as ``kind`` says."""
    built: MCPServer[Any] = MCPServer(f"booking, {kind}")
    by_hand = ByHand(kind)
    # No boundary: the middleware keeps the states, as a server-side store would.
    built.middleware[:] = [entry for entry in built.middleware if not isinstance(entry, RequestStateBoundary)]
    built.middleware.insert(0, by_hand)

    @built.tool()
    async def book(item: str, ctx: Context) -> InputRequiredResult:
        handle = secrets.token_urlsafe(16)
        by_hand.minted[handle] = {"item": item}
        return InputRequiredResult(input_requests={"confirm": _CONFIRM}, request_state=handle)

    return built


if __name__ == "__main__":
    server(sys.argv[1]).run()
