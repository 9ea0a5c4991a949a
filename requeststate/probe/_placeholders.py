"""Placeholder values from JSON Schema: arguments for a first call, answers to every input request."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from mcp_types import (
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    InputRequests,
    InputResponses,
    ListRootsRequest,
    ListRootsResult,
    Prompt,
    TextContent,
    Tool,
)

_TEMPLATE_VARIABLE: Final = re.compile(r"\{[^{}]*\}")
PLACEHOLDER: Final = "probe"
# A schema comes from the server: its nesting, array sizes and string lengths are taken only so far.
_MAX_DEPTH: Final = 16
_MAX_ITEMS: Final = 64
_MAX_LENGTH: Final = 1024
MAX_VALUES: Final = 1000
"""The most JSON values in one placeholder (arguments, or an answer to a form): ``minItems`` at each of
nested arrays multiplies, so an array that would pass this bound holds fewer items than its schema asks
for (one, once the bound is reached)."""


class _Room:
    """How many more values a placeholder may hold: one bound for the whole value, not per array."""

    def __init__(self) -> None:
        self.left = MAX_VALUES


def _placeholder(schema: object, depth: int, room: _Room) -> object:
    """A plausible value for ``schema``: the same one every time, so every round is answered alike."""
    room.left -= 1
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return PLACEHOLDER
    for keyword in ("const", "default"):
        if keyword in schema:
            return schema[keyword]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for keyword in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            return _placeholder(branches[0], depth + 1, room)
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
        return _array(schema, depth, room)
    if kind == "object" or "properties" in schema:
        return _object(schema, every_property=False, depth=depth + 1, room=room)
    return _string(schema)


def _array(schema: Mapping[str, Any], depth: int, room: _Room) -> list[object]:
    """``minItems`` copies of the item's placeholder, as many as ``room`` holds (at least one)."""
    wanted = schema.get("minItems")
    wanted = min(wanted, _MAX_ITEMS) if isinstance(wanted, int) else 0
    if wanted <= 0:
        return []
    before = room.left
    item = _placeholder(schema.get("items"), depth + 1, room)
    size = before - room.left
    copies = min(wanted - 1, max(room.left, 0) // size)
    room.left -= copies * size
    return [item] * (1 + copies)


def _string(schema: Mapping[str, Any]) -> str:
    by_format = {
        "date": "2026-12-01",
        "date-time": "2026-12-01T12:00:00Z",
        "time": "12:00:00",
        "email": "probe@example.com",
        "uri": "https://example.com/",
    }
    text = by_format.get(str(schema.get("format")), PLACEHOLDER)
    shortest, longest = schema.get("minLength"), schema.get("maxLength")
    if isinstance(shortest, int):
        text = text.ljust(min(shortest, _MAX_LENGTH), "x")
    if isinstance(longest, int):
        text = text[:longest]
    return text


def _object(
    schema: Mapping[str, Any], *, every_property: bool, depth: int = 0, room: _Room | None = None
) -> dict[str, Any]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    required = schema.get("required")
    wanted = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
    room = _Room() if room is None else room
    return {
        name: _placeholder(sub, depth, room)
        for name, sub in properties.items()
        if every_property or name in wanted
    }


def placeholder_arguments(tool: Tool) -> dict[str, Any]:
    """Arguments for ``tool``: its required properties only, each with a placeholder value."""
    return _object(tool.input_schema, every_property=False)


def every_argument(tool: Tool) -> dict[str, Any]:
    """Arguments for ``tool``: every property it declares, each with a placeholder value."""
    return _object(tool.input_schema, every_property=True)


def prompt_arguments(prompt: Prompt) -> dict[str, Any]:
    """Arguments for ``prompt``: its required arguments, each the placeholder string."""
    return {argument.name: PLACEHOLDER for argument in prompt.arguments or () if argument.required}


def expand(uri_template: str) -> str:
    """``uri_template`` (RFC 6570) with every expression replaced by the placeholder."""
    return _TEMPLATE_VARIABLE.sub(PLACEHOLDER, uri_template)


def _form_value(value: object) -> bool:
    # What a form answer may hold (ElicitResult.content): a scalar, or a list of strings. A form
    # that asks for more is no form the SDK lets a client answer: its other fields are answered.
    if isinstance(value, list):
        return all(isinstance(item, str) for item in value)
    return value is None or isinstance(value, str | int | float | bool)


def answers(requests: InputRequests | None) -> InputResponses:
    """Answer every input request alike: accept each form with placeholder values."""
    replies: InputResponses = {}
    for key, request in (requests or {}).items():
        if isinstance(request, ElicitRequest):
            replies[key] = elicited(request.params)
        elif isinstance(request, CreateMessageRequest):
            replies[key] = sampled()
        elif isinstance(request, ListRootsRequest):
            replies[key] = ListRootsResult(roots=[])
    return replies


def other_answers(replies: InputResponses) -> InputResponses | None:
    """The same questions answered otherwise: each accepted elicitation declined, each sampled message
    another text; ``None`` when no answer can differ (nothing was asked, or roots alone)."""
    other: InputResponses = {}
    for key, reply in replies.items():
        if isinstance(reply, ElicitResult) and reply.action == "accept":
            other[key] = ElicitResult(action="decline")
        elif isinstance(reply, CreateMessageResult):
            text = TextContent(type="text", text=f"{PLACEHOLDER} otherwise")
            other[key] = CreateMessageResult(role="assistant", content=text, model="requeststate-probe")
        else:
            other[key] = reply
    return other if other != replies else None


def elicited(params: ElicitRequestParams) -> ElicitResult:
    """The answer to an elicitation: a form accepted with placeholder values, a URL accepted."""
    if isinstance(params, ElicitRequestFormParams):
        content = _object(params.requested_schema, every_property=True)
        form = {name: value for name, value in content.items() if _form_value(value)}
        return ElicitResult(action="accept", content=form)
    return ElicitResult(action="accept")


def sampled() -> CreateMessageResult:
    """The answer to a sampling request: one placeholder message."""
    text = TextContent(type="text", text=PLACEHOLDER)
    return CreateMessageResult(role="assistant", content=text, model="requeststate-probe")


# The same answers as callbacks: the client's capabilities follow the callbacks it is given, and a
# server refuses to ask a client for what it did not declare (the TypeScript SDK answers -32021).
async def elicitation_callback(context: object, params: ElicitRequestParams) -> ElicitResult:
    """``Client(elicitation_callback=...)``: declares elicitation, answered as ``elicited``."""
    return elicited(params)


async def sampling_callback(context: object, params: CreateMessageRequestParams) -> CreateMessageResult:
    """``Client(sampling_callback=...)``: declares sampling, answered as ``sampled``."""
    return sampled()


async def list_roots_callback(context: object) -> ListRootsResult:
    """``Client(list_roots_callback=...)``: declares roots, and lists none."""
    return ListRootsResult(roots=[])
