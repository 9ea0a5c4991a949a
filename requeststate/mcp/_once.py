"""Exactly-once targets: which requests run their action once per state, what makes a retry identical,
and the answer kept for it (docs/exactly-once.md).

A target is named as ``protect(..., exactly_once=...)`` takes it: a tool's name, or
``"prompts/get:NAME"``, or ``"resources/read:URI"``. An identical retry is the same state from
the same principal in a request of the same method whose params are the same apart from
``requestState`` and ``_meta`` (a progress token, a trace): the same target, arguments and
input responses. Its answer is the first call's, kept as JSON text: the result as the SDK's
runner writes it, or the JSON-RPC error the handler raised.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any, Final

from mcp.server.context import HandlerResult
from mcp.shared.exceptions import MCPError
from mcp_types.methods import INPUT_REQUIRED_METHODS
from pydantic import BaseModel

from ._binding import canonical_json

_NAMED: Final = tuple(method for method in INPUT_REQUIRED_METHODS if method != "tools/call")
# What a retry may change without being another request: its state (the key) and its _meta.
_NOT_THE_REQUEST: Final = ("requestState", "_meta")


def exactly_once_targets(names: object) -> frozenset[tuple[str, str]]:
    """The ``(method, target)`` pairs ``names`` declares exactly-once; ``TypeError``/``ValueError`` if bad.

    ``"book"`` is the tool ``book``; ``"prompts/get:NAME"`` and ``"resources/read:URI"`` name the others.
    """
    if isinstance(names, str) or not isinstance(names, Collection):
        raise TypeError(
            "exactly_once must be a collection of names, such as {'book'} (a tool), "
            "'prompts/get:NAME' or 'resources/read:URI'"
        )
    targets = set()
    for name in names:
        if not isinstance(name, str) or not name:
            raise TypeError(f"exactly_once names a target by a non-empty str, not {name!r}")
        method = next((method for method in _NAMED if name.startswith(f"{method}:")), "tools/call")
        target = name if method == "tools/call" else name[len(method) + 1 :]
        if not target:
            raise ValueError(f"exactly_once names {name!r}, with no target after its method")
        targets.add((method, target))
    return frozenset(targets)


def request_of(method: str, params: Mapping[str, Any], principal: str) -> str:
    """What makes a retry identical: the principal, the method, and the params but ``requestState``
    and ``_meta``."""
    rest = {key: value for key, value in params.items() if key not in _NOT_THE_REQUEST}
    return canonical_json([principal, method, rest])


def answer_of_result(result: HandlerResult) -> str:
    """The first call's result, as the answer its retries get: JSON, as the SDK's runner writes it."""
    if isinstance(result, BaseModel):
        result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return json.dumps({"result": result}, separators=(",", ":"))


def answer_of_error(error: MCPError) -> str:
    """The JSON-RPC error the first call raised, as the answer its retries get."""
    return json.dumps(
        {"error": error.error.model_dump(by_alias=True, mode="json", exclude_none=True)},
        separators=(",", ":"),
    )


def replayed(answer: str) -> HandlerResult:
    """The first call's answer, again: its result, or its error raised."""
    kept = json.loads(answer)
    if "error" in kept:
        error = kept["error"]
        raise MCPError(code=error["code"], message=error["message"], data=error.get("data"))
    result: HandlerResult = kept["result"]
    return result
