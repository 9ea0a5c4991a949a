"""``requeststate probe``: a black-box check of any MCP server's ``requestState`` handling.

The probe is an MCP client (the official SDK's, protocol 2026-07-28). It finds a
tool that answers "input required" with a ``requestState``, then echoes back
mutated copies of that state, each on a fresh first round, and reports for each
whether the server accepted it. It needs nothing from the server but the wire:
any MCP server can be probed, whatever protects (or fails to protect) its state.

How an answer is judged:

- **Refused**: a JSON-RPC error (the spec's -32602 "Invalid or expired
  requestState", or any other server error), a tool error result
  (``isError: true``), or a re-elicit: an input-required result that asks
  exactly what the tool asks on a call without any ``requestState``. That last
  rule needs the server to answer a valid echo differently from a first call;
  the probe checks this on the unmodified state and stops with a setup error
  when it cannot tell the two apart.
- **Accepted**: anything else, a normal result or an input-required that moves
  on (asks something else).
- A lost connection or a timeout is neither: the check reports ERROR.

The module imports ``mcp``; the command line imports it only when ``probe`` runs.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final, Literal, TextIO, TypeAlias

import anyio
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    CallToolResult,
    CreateMessageRequest,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequests,
    InputRequiredResult,
    InputResponses,
    ListRootsRequest,
    ListRootsResult,
    TextContent,
    Tool,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["Check", "ProbeError", "Report", "Result", "Target", "probe", "run"]

Result: TypeAlias = Literal["PASS", "FAIL", "INFO", "SKIP", "ERROR"]
"""PASS: refused as it should be. FAIL: accepted a mutated state. INFO: worth knowing, not a
failure. SKIP: not applicable to this server. ERROR: the check could not complete."""

RESULTS: Final[tuple[Result, ...]] = ("PASS", "FAIL", "INFO", "SKIP", "ERROR")
EXIT_OK: Final = 0
EXIT_FAIL: Final = 1
EXIT_SETUP: Final = 2
DEFAULT_TIMEOUT: Final = 20.0

_TRANSPORT_CODES: Final = frozenset({CONNECTION_CLOSED, REQUEST_TIMEOUT})
_KNOWN_PREFIXES: Final = {"v1": "v1e", "v1e": "v1", "v1x": "v1e"}
_PREFIX = re.compile(r"[A-Za-z0-9_-]{1,16}")
_ENCODED = re.compile(r"[A-Za-z0-9_\-+/.=]*")
_PRINTABLE_RUN = re.compile(rb"[\x20-\x7e]{16,}")
_FLIP_AT: Final = (1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6)
_TAG_CHARS: Final = 22  # about 16 bytes of base64url: a MAC or AEAD tag
_SERVER_LOG_LINES: Final = 20


class ProbeError(Exception):
    """The probe could not run: the server did not start, or offers nothing to probe (exit 2)."""


@dataclass(frozen=True)
class Target:
    """Where the server is: a command to spawn over stdio, or a streamable HTTP URL."""

    command: Sequence[str] = ()
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """One line naming the server, without header values (they may hold credentials)."""
        if self.url is not None:
            return f"streamable HTTP {self.url}"
        return "stdio: " + " ".join(self.command)


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    id: str
    name: str
    result: Result
    detail: str


@dataclass
class Report:
    """What the probe found; ``exit_code`` is 1 on any FAIL, 2 on an ERROR without a FAIL, else 0."""

    target: Target
    protocol: str = ""
    server: str = ""
    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    asks: list[str] = field(default_factory=list)
    other_tool: str | None = None
    state: str = ""
    baseline: str = ""
    checks: list[Check] = field(default_factory=list)

    def counts(self) -> dict[Result, int]:
        """How many checks ended in each result."""
        return {result: sum(check.result == result for check in self.checks) for result in RESULTS}

    @property
    def exit_code(self) -> int:
        """1 if any check FAILed, else 2 if any check could not complete, else 0."""
        counts = self.counts()
        if counts["FAIL"]:
            return EXIT_FAIL
        return EXIT_SETUP if counts["ERROR"] else EXIT_OK

    def summary(self) -> str:
        """``8 PASS, 0 FAIL, 1 INFO, 1 SKIP``, then the verdict."""
        counts = self.counts()
        shown = [f"{counts[r]} {r}" for r in RESULTS if r != "ERROR" or counts[r]]
        verdict = {
            EXIT_OK: "no mutated state was accepted",
            EXIT_FAIL: "the server accepted a mutated state",
            EXIT_SETUP: "some checks could not complete",
        }[self.exit_code]
        return f"{', '.join(shown)}: {verdict}"

    def table(self) -> str:
        """The human-readable report."""
        arguments = json.dumps(self.arguments, ensure_ascii=True)
        asks = ", ".join(self.asks) or "(nothing: state only)"
        lines = [
            f"requeststate probe: {self.target.describe()}",
            f"server:    {self.server or '(unnamed)'}, protocol {self.protocol}",
            f"tool:      {self.tool} {arguments}, asks for: {asks}",
            f"state:     {self.state}",
            f"baseline:  {self.baseline}",
            "",
        ]
        width = max([len("CHECK"), *(len(check.name) for check in self.checks)])
        lines.append(f"{'CHECK':{width}}  RESULT  DETAIL")
        lines += [f"{check.name:{width}}  {check.result:6}  {check.detail}" for check in self.checks]
        lines += ["", self.summary()]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready document, for CI."""
        target: dict[str, Any] = (
            {"transport": "streamable-http", "url": self.target.url}
            if self.target.url is not None
            else {"transport": "stdio", "command": list(self.target.command)}
        )
        return {
            "target": target,
            "server": self.server,
            "protocol": self.protocol,
            "tool": {"name": self.tool, "arguments": self.arguments, "asks": self.asks},
            "other_tool": self.other_tool,
            "state": self.state,
            "baseline": self.baseline,
            "checks": [
                {"id": c.id, "name": c.name, "result": c.result, "detail": c.detail} for c in self.checks
            ],
            "summary": dict(self.counts()),
            "exit_code": self.exit_code,
        }


# --- placeholder values from JSON Schema --------------------------------------------------------------


def _placeholder(schema: object) -> object:
    """A plausible value for ``schema``: the same one every time, so every round is answered alike."""
    if not isinstance(schema, Mapping):
        return "probe"
    for keyword in ("const", "default"):
        if keyword in schema:
            return schema[keyword]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for keyword in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            return _placeholder(branches[0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "integer" or kind == "number":
        low, high = schema.get("minimum"), schema.get("maximum")
        value = low if isinstance(low, int | float) else 1
        return high if isinstance(high, int | float) and high < value else value
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        items = schema.get("items")
        count = schema.get("minItems")
        return [_placeholder(items)] * (count if isinstance(count, int) else 0)
    if kind == "object" or "properties" in schema:
        return _object(schema, every_property=False)
    return _string(schema)


def _string(schema: Mapping[str, Any]) -> str:
    by_format = {
        "date": "2026-12-01",
        "date-time": "2026-12-01T12:00:00Z",
        "time": "12:00:00",
        "email": "probe@example.com",
        "uri": "https://example.com/",
    }
    text = by_format.get(str(schema.get("format")), "probe")
    shortest, longest = schema.get("minLength"), schema.get("maxLength")
    if isinstance(shortest, int):
        text = text.ljust(shortest, "x")
    if isinstance(longest, int):
        text = text[:longest]
    return text


def _object(schema: Mapping[str, Any], *, every_property: bool) -> dict[str, Any]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    required = schema.get("required")
    wanted = set(required) if isinstance(required, list) else set()
    return {name: _placeholder(sub) for name, sub in properties.items() if every_property or name in wanted}


def placeholder_arguments(tool: Tool) -> dict[str, Any]:
    """Arguments for ``tool``: its required properties only, each with a placeholder value."""
    return _object(tool.input_schema, every_property=False)


def answers(requests: InputRequests | None) -> InputResponses:
    """Answer every input request alike: accept each form with placeholder values."""
    replies: InputResponses = {}
    for key, request in (requests or {}).items():
        if isinstance(request, ElicitRequest):
            params = request.params
            if isinstance(params, ElicitRequestFormParams):
                content = _object(params.requested_schema, every_property=True)
                replies[key] = ElicitResult(action="accept", content=content)
            else:
                replies[key] = ElicitResult(action="accept")
        elif isinstance(request, CreateMessageRequest):
            text = TextContent(type="text", text="probe")
            replies[key] = CreateMessageResult(role="assistant", content=text, model="requeststate-probe")
        elif isinstance(request, ListRootsRequest):
            replies[key] = ListRootsResult(roots=[])
    return replies


# --- what the client can read in a state ---------------------------------------------------------------


def _b64decode(part: str) -> bytes | None:
    body = part.rstrip("=").replace("+", "-").replace("/", "_")
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None


def _json_shape(value: object) -> str:
    if isinstance(value, dict):
        keys = sorted(str(k) for k in value)
        shown = ", ".join(keys[:6]) + (", ..." if len(keys) > 6 else "")
        return f"a JSON object (keys: {shown})"
    return f"JSON ({type(value).__name__})"


def _parse_json(raw: str | bytes) -> object | None:
    try:
        value: object = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict | list) else None


def readable(token: str) -> str | None:
    """What of ``token`` the client can read, or ``None`` when it looks opaque.

    A heuristic, since the plaintext is unknown: the token is plain text (it has
    characters no base64 alphabet uses) or JSON, or one of its dot-separated
    parts base64-decodes to JSON or to a run of 16 or more printable characters.
    """
    whole = _parse_json(token)
    if whole is not None:
        return "the state is " + _json_shape(whole)
    if not _ENCODED.fullmatch(token):
        return "the state is plain text, not an encoding"
    parts = token.split(".")
    for index, part in enumerate(parts, start=1):
        raw = _b64decode(part) if part else None
        if raw is None:
            continue
        where = f"part {index} of {len(parts)}" if len(parts) > 1 else "the token"
        decoded = _parse_json(raw)
        if decoded is not None:
            return f"{where} base64-decodes to {_json_shape(decoded)}"
        if _PRINTABLE_RUN.search(raw):
            return f"{where} base64-decodes to readable text"
    return None


def _edit_json(value: object) -> tuple[object, bool]:
    """``value`` with its first non-empty string (else number, else boolean) changed."""
    for wanted in (str, int, bool):
        edited, done = _edit_first(value, wanted)
        if done:
            return edited, True
    return value, False


def _edit_first(value: object, wanted: type) -> tuple[object, bool]:
    if isinstance(value, dict):
        for key, item in value.items():
            edited, done = _edit_first(item, wanted)
            if done:
                return {**value, key: edited}, True
    elif isinstance(value, list):
        for index, item in enumerate(value):
            edited, done = _edit_first(item, wanted)
            if done:
                return [*value[:index], edited, *value[index + 1 :]], True
    elif wanted is str and isinstance(value, str) and value:
        return value + "x", True
    elif wanted is int and isinstance(value, int) and not isinstance(value, bool):
        return value + 1, True
    elif wanted is bool and isinstance(value, bool):
        return not value, True
    return value, False


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def edited(token: str) -> str | None:
    """``token`` with a value of its readable JSON changed and re-encoded, or ``None`` if unreadable."""
    whole = _parse_json(token)
    if whole is not None:
        changed, done = _edit_json(whole)
        return _compact(changed) if done else None
    parts = token.split(".")
    for index, part in enumerate(parts):
        raw = _b64decode(part) if part else None
        decoded = _parse_json(raw) if raw is not None else None
        if decoded is None:
            continue
        changed, done = _edit_json(decoded)
        if not done:
            return None
        encoded = base64.urlsafe_b64encode(_compact(changed).encode()).decode()
        parts[index] = encoded if part.endswith("=") else encoded.rstrip("=")
        return ".".join(parts)
    return None


# --- mutations -----------------------------------------------------------------------------------------

Mutation: TypeAlias = Callable[[str], "str | None"]
"""A change to a token; ``None`` when it does not apply to this token."""


def flip(fraction: float) -> Mutation:
    """Change one base64url character, away from any '.', '=' or part end (a real byte changes)."""

    def mutate(token: str) -> str | None:
        start = max(1, int(len(token) * fraction))
        for index in range(start, len(token) - 1):
            if token[index] not in ".=" and token[index + 1] not in ".=":
                swapped = "A" if token[index] != "A" else "B"
                return token[:index] + swapped + token[index + 1 :]
        return None

    return mutate


def truncated(token: str) -> str | None:
    """Drop the last 4 characters."""
    return token[:-4] if len(token) > 4 else None


def extended(token: str) -> str | None:
    """Append ``AAAA`` (3 zero bytes of base64url)."""
    return token + "AAAA"


def tag_stripped(token: str) -> str | None:
    """Drop the MAC: the last part of a token with 3 or more parts, else the last 22 characters."""
    parts = token.split(".")
    if len(parts) >= 3:
        return ".".join(parts[:-1])
    return token[:-_TAG_CHARS] if len(parts[-1]) > _TAG_CHARS else None


def prefix_swapped(token: str) -> str | None:
    """``v1.`` <-> ``v1e.`` (``v1x.`` -> ``v1e.``); another prefix gets an ``x`` appended."""
    prefix, dot, rest = token.partition(".")
    if not dot or not _PREFIX.fullmatch(prefix):
        return None
    return _KNOWN_PREFIXES.get(prefix, prefix + "x") + "." + rest


def repadded(padding: str) -> Mutation:
    """Append base64 padding."""
    return lambda token: token + padding


# --- talking to the server ------------------------------------------------------------------------------

Answer: TypeAlias = CallToolResult | InputRequiredResult


class _TransportFailure(Exception):
    """The connection broke or a request timed out: no verdict on the state."""


@dataclass(frozen=True)
class _Outcome:
    accepted: bool
    detail: str
    restarted: bool = False


@dataclass
class _Tool:
    name: str
    arguments: dict[str, Any]
    first: InputRequiredResult
    restart: str = ""  # signature of a first round: an answer matching it is a re-elicit


def _asks(result: InputRequiredResult) -> list[str]:
    return sorted(result.input_requests or {})


def _signature(result: InputRequiredResult, *, loose: bool) -> str:
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


def _error_text(error: MCPError) -> str:
    return f"JSON-RPC {error.code} {error.message}"


class _Session:
    """One connection: fresh first rounds, echoes, and the verdict on each echo."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.loose = False

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        state: str | None = None,
        replies: InputResponses | None = None,
    ) -> Answer:
        try:
            result = await self.client.session.call_tool(
                name, arguments, allow_input_required=True, request_state=state, input_responses=replies
            )
        except MCPError as error:
            if error.code in _TRANSPORT_CODES:
                raise _TransportFailure(_error_text(error)) from None
            raise
        if not isinstance(result, CallToolResult | InputRequiredResult):  # a claimed extension result
            raise _TransportFailure(f"unexpected result type {type(result).__name__}")
        return result

    async def first_round(self, tool: _Tool) -> tuple[InputRequiredResult, str]:
        """A new first round of ``tool``: an input-required result, and its state."""
        try:
            result = await self.call(tool.name, tool.arguments)
        except MCPError as error:
            raise _TransportFailure(f"a first round failed: {_error_text(error)}") from None
        if not isinstance(result, InputRequiredResult) or result.request_state is None:
            raise _TransportFailure(f"{tool.name} no longer answers input-required with a requestState")
        return result, result.request_state

    async def fresh(self, tool: _Tool) -> tuple[str, InputResponses]:
        """A new first round of ``tool``: its state, and the answers to what it asks."""
        result, state = await self.first_round(tool)
        return state, answers(result.input_requests)

    def signature(self, result: InputRequiredResult) -> str:
        return _signature(result, loose=self.loose)

    async def echo(self, tool: _Tool, state: str, replies: InputResponses) -> _Outcome:
        """Send ``state`` to ``tool`` and judge the answer (see the module docstring)."""
        try:
            result = await self.call(tool.name, tool.arguments, state, replies)
        except MCPError as error:
            return _Outcome(False, f"refused: {_error_text(error)}")
        if isinstance(result, CallToolResult):
            if result.is_error:
                return _Outcome(False, "refused: a tool error result (isError), not -32602")
            return _Outcome(True, "accepted: the tool completed")
        if self.signature(result) == tool.restart:
            return _Outcome(False, "refused: re-elicited (asked the first round's questions again)", True)
        asks = ", ".join(_asks(result)) or "nothing, state only"
        return _Outcome(True, f"accepted: the next round asks for {asks}")


async def _find_tools(
    session: _Session, tools: list[Tool], wanted: str | None, arguments: dict[str, Any] | None
) -> tuple[_Tool, _Tool | None]:
    """The tool to probe and, for the cross-tool check, a second one that answers input-required."""
    by_name = {tool.name: tool for tool in tools}
    if wanted is not None and wanted not in by_name:
        raise ProbeError(f"the server lists no tool named {wanted!r}")
    order = [by_name[wanted]] if wanted is not None else tools
    found: list[_Tool] = []
    for tool in order:
        if wanted is None and tool.annotations is not None and tool.annotations.destructive_hint is True:
            continue  # discovery never calls a tool that says it is destructive; name it with --tool
        await _try(session, tool, arguments if arguments is not None else placeholder_arguments(tool), found)
        if found:
            break
    if not found:
        what = f"tool {wanted!r}" if wanted is not None else "no listed tool"
        raise ProbeError(
            f"{what} answered input-required with a requestState"
            + (" to these arguments" if arguments is not None else " to placeholder arguments")
            + "; name one with --tool and pass --arguments JSON"
        )
    for tool in tools:
        if tool.name == found[0].name:
            continue
        if tool.annotations is not None and tool.annotations.destructive_hint is True:
            continue
        await _try(session, tool, placeholder_arguments(tool), found)
        if len(found) == 2:
            return found[0], found[1]
    return found[0], None


async def _try(session: _Session, tool: Tool, arguments: dict[str, Any], found: list[_Tool]) -> None:
    try:
        result = await session.call(tool.name, arguments)
    except MCPError:
        return
    if isinstance(result, InputRequiredResult) and result.request_state is not None:
        found.append(_Tool(tool.name, arguments, result))


async def _all_tools(client: Client) -> list[Tool]:
    listed = await client.list_tools()
    tools = list(listed.tools)
    while listed.next_cursor:
        listed = await client.list_tools(cursor=listed.next_cursor)
        tools += listed.tools
    return tools


def _describe_state(token: str) -> str:
    prefix, dot, _ = token.partition(".")
    if dot and _PREFIX.fullmatch(prefix):
        shape = f"{prefix}. token, {token.count('.') + 1} parts"
    elif _parse_json(token) is not None:
        shape = "JSON text"
    else:
        shape = "no prefix"
    return f"{shape}, {len(token)} characters"


# --- the checks -----------------------------------------------------------------------------------------

Verdict: TypeAlias = tuple[Result, str]

_TAMPERING: Final[tuple[tuple[str, str, tuple[Mutation, ...], str], ...]] = (
    ("bit_flip", "one byte flipped", tuple(flip(f) for f in _FLIP_AT), f" (at {len(_FLIP_AT)} positions)"),
    ("truncated", "truncated (-4 chars)", (truncated,), ""),
    ("extended", "extended (+AAAA)", (extended,), ""),
    ("tag_stripped", "MAC/tag stripped", (tag_stripped,), ""),
    ("prefix_swapped", "prefix swapped", (prefix_swapped,), ""),
    ("repadded", "re-padded base64", (repadded("="), repadded("==")), " (with = and ==)"),
    ("edited", "readable state edited", (edited,), ""),
)

_NOT_APPLICABLE: Final = {
    "tag_stripped": "the token is too short to carry a tag",
    "prefix_swapped": "the token has no prefix (no short text before a '.')",
    "edited": "nothing readable to edit (see 'state hidden from the client')",
}


async def _tamper(
    session: _Session, tool: _Tool, id_: str, mutations: Sequence[Mutation], note: str
) -> Verdict:
    """FAIL on the first variant accepted, each on a fresh first round; SKIP when none applies."""
    refusals: list[str] = []
    for mutate in mutations:
        state, replies = await session.fresh(tool)
        candidate = mutate(state)
        if candidate is None or candidate == state:
            continue
        outcome = await session.echo(tool, candidate, replies)
        if outcome.accepted:
            return "FAIL", outcome.detail + _where(state, candidate)
        refusals.append(outcome.detail)
    if not refusals:
        return "SKIP", _NOT_APPLICABLE.get(id_, "does not apply to this token")
    return "PASS", refusals[0] + note


def _where(state: str, candidate: str) -> str:
    """`` (character 9 of 51 changed)`` for a one-character change, else nothing."""
    if len(state) != len(candidate):
        return ""
    changed = [index for index, (a, b) in enumerate(zip(state, candidate, strict=True)) if a != b]
    return f" (character {changed[0] + 1} of {len(state)} changed)" if len(changed) == 1 else ""


async def _cross_tool(session: _Session, tool: _Tool, other: _Tool | None) -> Verdict:
    if other is None:
        return "SKIP", "only one tool answers input-required"
    state, replies = await session.fresh(tool)
    outcome = await session.echo(other, state, replies)
    return ("FAIL" if outcome.accepted else "PASS"), f"{tool.name} -> {other.name}: {outcome.detail}"


async def _replay(session: _Session, tool: _Tool, single_use: bool) -> Verdict:
    state, replies = await session.fresh(tool)
    once = await session.echo(tool, state, replies)
    if not once.accepted:
        return "ERROR", f"the first redemption was not accepted: {once.detail}"
    twice = await session.echo(tool, state, replies)
    if not twice.accepted:
        return "PASS", f"single-use: the second redemption is {twice.detail}"
    if single_use:
        return "FAIL", f"the second redemption is {twice.detail}"
    return "INFO", f"the second redemption is {twice.detail} (not single-use; --single-use makes this a FAIL)"


async def _hidden(session: _Session, tool: _Tool, confidential: bool) -> Verdict:
    state, _ = await session.fresh(tool)
    seen = readable(state)
    if seen is None:
        return "PASS", "nothing readable in the token (opaque to the client)"
    if confidential:
        return "FAIL", f"state readable by the client: {seen}"
    return "INFO", f"state readable by the client: {seen} (--require-confidential makes this a FAIL)"


async def _run_checks(
    session: _Session, tool: _Tool, other: _Tool | None, single_use: bool, confidential: bool, report: Report
) -> None:
    checks: list[tuple[str, str, Callable[[], Awaitable[Verdict]]]] = [
        (id_, name, partial(_tamper, session, tool, id_, mutations, note))
        for id_, name, mutations, note in _TAMPERING
    ]
    checks += [
        ("cross_tool", "state sent to another tool", partial(_cross_tool, session, tool, other)),
        ("replay", "same state redeemed twice", partial(_replay, session, tool, single_use)),
        ("confidential", "state hidden from the client", partial(_hidden, session, tool, confidential)),
    ]
    for id_, name, run_check in checks:
        try:
            result, detail = await run_check()
        except _TransportFailure as failure:
            result, detail = "ERROR", str(failure)
        report.checks.append(Check(id_, name, result, detail))


async def _baseline(session: _Session, tool: _Tool, report: Report) -> None:
    """Check that a valid echo is accepted and can be told apart from a re-elicit."""
    second, _ = await session.first_round(tool)
    if _signature(second, loose=False) != _signature(tool.first, loose=False):
        session.loose = True  # first rounds vary (a nonce in a message?): compare keys and methods only
    tool.restart = session.signature(tool.first)
    assert tool.first.request_state is not None
    outcome = await session.echo(tool, tool.first.request_state, answers(tool.first.input_requests))
    if outcome.restarted:
        raise ProbeError(
            "the server answers the unmodified state exactly as a call without requestState (it asks "
            "the same again), so a re-elicit cannot be told from acceptance: name a tool whose next "
            "round differs (--tool, --arguments)"
        )
    if not outcome.accepted:
        raise ProbeError(
            f"the unmodified state is not accepted ({outcome.detail.removeprefix('refused: ')}), so no "
            "mutation can be judged: check the server's keys and the tool's arguments (--arguments)"
        )
    report.baseline = "the unmodified state is " + outcome.detail


# --- entry points ---------------------------------------------------------------------------------------


@asynccontextmanager
async def _connect(target: Target, server_log: TextIO) -> AsyncIterator[Client]:
    async with AsyncExitStack() as stack:
        if target.url is not None:
            http = await stack.enter_async_context(httpx2.AsyncClient(headers=dict(target.headers)))
            transport: Any = streamable_http_client(target.url, http_client=http)
        else:
            # The command is the user's own, as in a shell: it inherits the environment (its keys
            # included), unlike the SDK's default of a safe subset for servers an app launches.
            command, *args = target.command
            params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
            transport = stdio_client(params, errlog=server_log)
        try:
            client = await stack.enter_async_context(Client(transport, cache=None))
        except Exception as error:  # any failure to start or connect is a setup error
            raise ProbeError(f"could not connect to the server: {_reason(error)}") from None
        yield client


def _reason(error: BaseException) -> str:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}" if str(error) else text


async def probe(
    target: Target,
    *,
    tool: str | None = None,
    arguments: dict[str, Any] | None = None,
    single_use: bool = False,
    require_confidential: bool = False,
    server_log: TextIO,
) -> Report:
    """Probe the server at ``target``; raises ``ProbeError`` when it cannot (exit code 2).

    ``server_log`` receives the stderr of a server spawned over stdio.
    """
    if not target.command and target.url is None:
        raise ProbeError("name a server: a command after --, or --url")
    report = Report(target)
    failure: ProbeError | None = None
    async with _connect(target, server_log) as client:
        # Raised in here, an error would reach the caller wrapped in the transport's exception
        # group: keep it until the connection is closed.
        try:
            await _probe_connected(client, report, tool, arguments, single_use, require_confidential)
        except ProbeError as error:
            failure = error
    if failure is not None:
        raise failure
    return report


async def _probe_connected(
    client: Client,
    report: Report,
    tool: str | None,
    arguments: dict[str, Any] | None,
    single_use: bool,
    require_confidential: bool,
) -> None:
    report.protocol = client.protocol_version
    report.server = client.server_info.name if client.server_info is not None else ""
    if report.protocol not in MODERN_PROTOCOL_VERSIONS:
        raise ProbeError(
            f"the server negotiated protocol {report.protocol}; input-required results need "
            f"{' or '.join(MODERN_PROTOCOL_VERSIONS)}"
        )
    session = _Session(client)
    try:
        first, other = await _find_tools(session, await _all_tools(client), tool, arguments)
        report.tool, report.arguments, report.asks = first.name, first.arguments, _asks(first.first)
        report.other_tool = other.name if other is not None else None
        assert first.first.request_state is not None
        report.state = _describe_state(first.first.request_state)
        await _baseline(session, first, report)
        if other is not None:
            other.restart = session.signature(other.first)
    except (_TransportFailure, MCPError) as error:
        text = _error_text(error) if isinstance(error, MCPError) else str(error)
        raise ProbeError(f"setting up the probe failed: {text}") from None
    await _run_checks(session, first, other, single_use, require_confidential, report)


def _tail(log: TextIO) -> str:
    log.seek(0)
    lines = log.read().splitlines()[-_SERVER_LOG_LINES:]
    return "\n".join(f"  | {line}" for line in lines)


def run(
    target: Target,
    *,
    tool: str | None = None,
    arguments: dict[str, Any] | None = None,
    single_use: bool = False,
    require_confidential: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    as_json: bool = False,
    out: TextIO,
    err: TextIO,
) -> int:
    """Run the probe, print the table (or JSON) to ``out`` and errors to ``err``; return the exit code."""

    async def bounded() -> Report:
        with anyio.fail_after(timeout):
            return await probe(
                target,
                tool=tool,
                arguments=arguments,
                single_use=single_use,
                require_confidential=require_confidential,
                server_log=server_log,
            )

    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as server_log:
        try:
            report = anyio.run(bounded)
        except (ProbeError, TimeoutError) as error:
            message = (
                str(error) if isinstance(error, ProbeError) else f"the probe timed out after {timeout:g} s"
            )
            print(f"error: {message}", file=err)
            tail = _tail(server_log)
            if tail:
                print(f"the server's stderr (last lines):\n{tail}", file=err)
            return EXIT_SETUP
    if as_json:
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=True), file=out)
    else:
        print(report.table(), file=out)
    return report.exit_code
