"""Talking to the server: fresh first rounds, echoes, and the verdict on each answer.

Tools, prompts and resources (listed and templated) all carry ``requestState``;
an ``Endpoint`` is one of them with the arguments (or URI) it is called with.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, TypeAlias, cast

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    InputResponses,
    ReadResourceResult,
)

from ._placeholders import answers


class ProbeError(Exception):
    """The probe could not run: the server did not start, or offers nothing to probe (exit 2)."""


class TransportFailure(Exception):
    """The connection broke or a request timed out: no verdict on the state."""


Kind: TypeAlias = Literal["tool", "prompt", "resource"]
Answer: TypeAlias = CallToolResult | GetPromptResult | ReadResourceResult | InputRequiredResult

# A server whose SDK turns every error a tool handler raises into an isError result (the TypeScript
# SDK's McpServer) cannot answer -32602 from a handler: what it can do instead.
_IS_ERROR_ADVICE: Final = (
    " (where the server's SDK makes every error a handler raises a tool error, as the TypeScript "
    "SDK's McpServer does, the handler can re-elicit instead, asking again as if no state came: "
    "that PASSes)"
)
_TRANSPORT_CODES: Final = frozenset({CONNECTION_CLOSED, REQUEST_TIMEOUT})
# The SDK's HTTP client answers a request whose response body it could not read (one past the probe's
# bounds, say) with a -32700 of its own, worded so. Any other -32700 is the server's: a refusal.
_UNREAD: Final = "Failed to parse JSON response"
NOT_MCP: Final = "the server's answer is not a valid MCP result (the SDK refused its shape)"
_COMPLETED: Final = {
    "tool": "the tool completed",
    "prompt": "the prompt was returned",
    "resource": "the resource was read",
}


@dataclass(frozen=True)
class Outcome:
    """The server's answer to an echo: accepted or not, and how.

    ``crashed``: refused the way a handler crashing on the state answers, a tool error result
    (``isError``) or JSON-RPC -32603, so the refusal proves nothing. ``restarted``: refused by
    a re-elicit.
    """

    accepted: bool
    detail: str
    restarted: bool = False
    crashed: bool = False
    following: InputRequiredResult | None = None  # accepted, and the next round's questions came


@dataclass
class Endpoint:
    """A tool, prompt or resource that answers input-required, and what it is called with."""

    kind: Kind
    name: str  # the URI, for a resource
    arguments: dict[str, Any]
    first: InputRequiredResult
    other_arguments: dict[str, Any] | None = None  # for the argument-binding check; None: no arguments
    restart: str = ""  # signature of a first round: an answer matching it is a re-elicit
    round: int = 1  # the round whose state is attacked: ``first`` is that round's input-required result
    last: bool = False  # the last round of its flow that is probed
    completes: bool = False  # an echo of this round's state completed the flow: its final round

    def label(self) -> str:
        """``tool book_table``, for details."""
        return f"{self.kind} {self.name}"

    def scope(self) -> str:
        """``tool book_table, round 2``: the state a row attacked."""
        return f"{self.label()}, round {self.round}"


def asks(result: InputRequiredResult) -> list[str]:
    """The keys of what an input-required result asks for."""
    return sorted(result.input_requests or {})


def signature(result: InputRequiredResult, *, loose: bool) -> str:
    """What a first round asks, to recognise a re-elicit: in full, or (``loose``) keys and methods only."""
    requests = result.input_requests or {}
    if loose:
        body: object = sorted((key, request.method) for key, request in requests.items())
    else:
        body = {
            key: request.model_dump(mode="json", by_alias=True, exclude_none=True)
            for key, request in requests.items()
        }
    return json.dumps(body, sort_keys=True)


def _unanswered(error: MCPError) -> bool:
    """Whether ``error`` is the client's own, not the server's: the connection failed, or its answer was
    not read."""
    return error.code in _TRANSPORT_CODES or (error.code == PARSE_ERROR and error.message.startswith(_UNREAD))


def error_text(error: MCPError) -> str:
    """``JSON-RPC -32602 Invalid or expired requestState``."""
    return f"JSON-RPC {error.code} {error.message}"


@dataclass(frozen=True)
class Reply:
    """An answer as the wire carried it, to compare with another: a result's JSON, or a JSON-RPC error.

    The result's own ``_meta`` is left out: a server may stamp each response anew (a trace id), and
    a kept answer is the same answer whatever its envelope says.
    """

    result: dict[str, Any] | None = None
    code: int | None = None
    message: str = ""
    reason: object = None  # the error's ``data.reason``, if it gives one

    def describe(self) -> str:
        """``'booked 3 runs=1'`` (a result's first text), ``an input-required result``, or the error."""
        if self.result is None:
            said = f" ({self.reason})" if isinstance(self.reason, str) else ""
            return f"JSON-RPC {self.code} {self.message}{said}"
        if self.result.get("resultType") == "input_required":
            return "an input-required result"
        content: list[dict[str, Any]] = self.result.get("content") or []
        texts = [item["text"] for item in content if isinstance(item.get("text"), str)]
        return repr(texts[0][:_SHOWN_TEXT]) if texts else "a result without text"


_SHOWN_TEXT: Final = 80  # characters of a result's text a detail quotes


class Session:
    """One connection: fresh rounds, echoes, and the verdict on each echo.

    Once it ``cross``es to the other workers of one deployment, every round is still minted on
    ``client`` and every echo sent to the next worker in turn: each check then crosses workers,
    as a client's retries behind a load balancer do.
    """

    def __init__(self, client: Client, *, loose: bool = False) -> None:
        self.client = client
        self.loose = loose
        self._redeemers = [client]
        self._turn = 0

    def cross(self, redeemers: Sequence[Client]) -> None:
        """From now on, send each echo to the next of ``redeemers`` (the deployment's other workers)."""
        self._redeemers = list(redeemers)

    def _redeemer(self) -> Client:
        self._turn += 1
        return self._redeemers[self._turn % len(self._redeemers)]

    async def call(
        self,
        target: Endpoint,
        state: str | None = None,
        replies: InputResponses | None = None,
        *,
        arguments: dict[str, Any] | None = None,
        via: Client | None = None,
    ) -> Answer:
        """Call ``target`` (with other ``arguments``, if given), echoing ``state`` and ``replies``."""
        sent = target.arguments if arguments is None else arguments
        return await self.call_as(target.kind, target.name, sent, state, replies, via=via)

    async def call_as(
        self,
        kind: Kind,
        name: str,
        sent: dict[str, Any],
        state: str | None = None,
        replies: InputResponses | None = None,
        *,
        via: Client | None = None,
    ) -> Answer:
        """Call the tool, prompt or resource ``name`` (over ``via``, default this session's client); a
        lost connection raises ``TransportFailure``."""
        session = (self.client if via is None else via).session
        result: object
        try:
            if kind == "tool":
                try:
                    result = await session.call_tool(
                        name, sent, allow_input_required=True, request_state=state, input_responses=replies
                    )
                except RuntimeError:
                    # The SDK's documented refusal of a completed result whose structured content
                    # fails the tool's output schema: the tool completed all the same.
                    result = CallToolResult(content=[])
            elif kind == "prompt":
                result = await session.get_prompt(
                    name,
                    {key: str(value) for key, value in sent.items()},
                    allow_input_required=True,
                    request_state=state,
                    input_responses=replies,
                )
            else:
                result = await session.read_resource(
                    name, allow_input_required=True, request_state=state, input_responses=replies
                )
        except MCPError as error:
            if _unanswered(error):
                raise TransportFailure(error_text(error)) from None
            raise
        except ValueError:  # pydantic's ValidationError: the answer is no MCP result
            raise TransportFailure(NOT_MCP) from None
        if not isinstance(
            result, CallToolResult | GetPromptResult | ReadResourceResult | InputRequiredResult
        ):
            raise TransportFailure(f"unexpected result type {type(result).__name__}")  # a claimed extension
        return result

    async def new_round(
        self, target: Endpoint, *, arguments: dict[str, Any] | None = None
    ) -> tuple[InputRequiredResult, str]:
        """A new round ``target.round`` of ``target``, walked from a first call with placeholder
        answers: its input-required result, and its state."""
        try:
            result = await self.call(target, arguments=arguments)
            for _ in range(target.round - 1):
                if not isinstance(result, InputRequiredResult) or result.request_state is None:
                    break
                replies = answers(result.input_requests)
                result = await self.call(target, result.request_state, replies, arguments=arguments)
        except MCPError as error:
            raise TransportFailure(f"a new round failed: {error_text(error)}") from None
        if not isinstance(result, InputRequiredResult) or result.request_state is None:
            raise TransportFailure(
                f"{target.label()} no longer answers round {target.round} with a requestState"
            )
        return result, result.request_state

    async def fresh(self, target: Endpoint) -> tuple[str, InputResponses]:
        """A new round ``target.round`` of ``target``: its state, and the answers to what it asks."""
        result, state = await self.new_round(target)
        return state, answers(result.input_requests)

    async def restart_of(self, target: Endpoint, arguments: dict[str, Any] | None = None) -> str:
        """The signature of a first round on this connection (with ``arguments``, if given)."""
        first = replace(target, round=1)
        result, _ = await self.new_round(first, arguments=arguments)
        return signature(result, loose=self.loose)

    async def echo(
        self,
        target: Endpoint,
        state: str,
        replies: InputResponses,
        *,
        arguments: dict[str, Any] | None = None,
        restart: str | None = None,
        via: Client | None = None,
    ) -> Outcome:
        """Send ``state`` to ``target`` (over ``via``, default the next worker) and judge the answer
        (see the package docstring).

        ``restart`` is the first-round signature a re-elicit would match (default: the target's).
        """
        try:
            sent = self._redeemer() if via is None else via
            result = await self.call(target, state, replies, arguments=arguments, via=sent)
        except MCPError as error:
            if error.code == INTERNAL_ERROR:
                return Outcome(
                    False, f"refused by an internal error, not -32602: {error_text(error)}", crashed=True
                )
            return Outcome(False, f"refused: {error_text(error)}")
        if isinstance(result, CallToolResult) and result.is_error:
            # Its text is left out: an error from a handler that parsed the state may quote the state.
            return Outcome(
                False, f"refused by a tool error (isError), not -32602{_IS_ERROR_ADVICE}", crashed=True
            )
        if not isinstance(result, InputRequiredResult):
            return Outcome(True, f"accepted: {_COMPLETED[target.kind]}")
        if signature(result, loose=self.loose) == (target.restart if restart is None else restart):
            return Outcome(False, "refused: re-elicited (asked the first round's questions again)", True)
        what = ", ".join(asks(result)) or "nothing, state only"
        return Outcome(True, f"accepted: the next round asks for {what}", following=result)

    async def reply(
        self, target: Endpoint, state: str, replies: InputResponses, *, via: Client | None = None
    ) -> Reply:
        """Send ``state`` to ``target`` (over ``via``, default the next worker): the answer as it came."""
        try:
            result = await self.call(target, state, replies, via=self._redeemer() if via is None else via)
        except MCPError as error:
            data: object = error.error.data
            reason = cast("dict[str, object]", data).get("reason") if isinstance(data, dict) else None
            return Reply(code=error.code, message=error.message, reason=reason)
        answer = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        answer.pop("_meta", None)
        return Reply(answer)


# --- discovery ---------------------------------------------------------------------------------------------
