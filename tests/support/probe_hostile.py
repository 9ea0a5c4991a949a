"""A hostile MCP server over stdio, for tests/test_probe.py: ``python -m tests.support.probe_hostile KIND``.

It speaks JSON-RPC by hand (no SDK: it must be able to break the protocol, and it starts
in a blink). Its tool ``ask`` is sound: it keeps each state it hands out in memory, bound
to the tool that minted it, and refuses any other with -32602. Then KIND makes it
misbehave towards the probe:

- ``deep_state``: each state is JSON nested 20,000 deep (sound otherwise);
- ``inflating_parts``: each state is 16 dot-separated parts, 15 of them base64url(zlib) of 1 MiB
  of JSON (a 21 KB state; sound otherwise);
- ``deep_message``: ``tools/list`` answers with a result nested 20,000 deep;
- ``endless_pages``: every listing (tools, prompts, resources, templates) always has a next
  page, each one near the probe's bounds on a message (4 MiB, 50,000 JSON values); ``ask`` is
  on the first page of tools, and the only tool that answers a call (a filler called is unknown:
  probed, each would add a second and prove nothing about the listing);
- ``endless_line``: ``tools/list`` is answered with a line that never ends;
- ``many_values``: ``tools/list`` is answered with a line of a million JSON values;
- ``garbage``: ``tools/list`` is answered with text that is not JSON;
- ``malformed_result``: ``tools/call`` answers with a result of the wrong shape;
- ``unstructured``: ``ask`` declares an output schema its results do not follow (the SDK
  refuses such a result, yet the tool completed);
- ``parse_error``: ``ask`` refuses a state it did not mint with -32700 "Parse error", not
  -32602 (a refusal all the same: it is sound);
- ``many_parts``: each state is ``MANY_PARTS`` dot-separated parts of base64url (1.8 MB; sound otherwise);
- ``stderr_flood``: writes to stderr without end, and never answers;
- ``needs_elicitation``: asks its question only of a client that declares elicitation (in the
  request's ``_meta``), as the TypeScript SDK does, and refuses any other with -32021;
- ``refuses_all``: answers every call with -32050 "Tool unavailable".

Any other KIND (``sound``, say) misbehaves in no way.
"""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
import sys
import zlib
from typing import Any, Final

PROTOCOL: Final = "2026-07-28"
ASK: Final = {"name": "ask", "inputSchema": {"type": "object"}}
QUESTION: Final = {
    "code": {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": "Code?",
            "requestedSchema": {"type": "object", "properties": {"code": {"type": "string"}}},
        },
    }
}
LISTING: Final = {"resultType": "complete", "cacheScope": "private", "ttlMs": 0}
DEPTH: Final = 20_000  # deep enough to break a recursive parser, yet under the probe's bound on values
# Read part by part (the probe's part budget taken out), 600,000 parts peaked at 612 MiB here (2026-11-29),
# over the memory test's PEAK_KIB (320 MiB); 300,000 at 330 MiB, too near.
MANY_PARTS: Final = 600_000


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def result(request_id: object, body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": {"resultType": "complete", **body}})


def deep(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def inflating_parts() -> str:
    """15 parts, each of 1.4 KB that inflates to 1 MiB of JSON (340,000 empty objects)."""
    inflating = zlib.compress(("[" + ",".join(["{}"] * 340_000) + "]").encode(), 9)
    return ".".join([base64.urlsafe_b64encode(inflating).decode().rstrip("=")] * 15)


_FILLERS: Final[dict[str, tuple[str, dict[str, Any]]]] = {
    "tools/list": ("tools", {"inputSchema": {"type": "object"}, "outputSchema": {"x": [{}] * 24_000}}),
    "prompts/list": ("prompts", {"arguments": [{"name": "a"}] * 12_000}),
    "resources/list": (
        "resources",
        {"uri": "file:///r", "mimeType": "text/plain", "annotations": {"x": [{}] * 24_000}},
    ),
    "resources/templates/list": (
        "resourceTemplates",
        {"uriTemplate": "file:///t/{x}", "annotations": {"x": [{}] * 24_000}},
    ),
}


def filler_page(method: str, number: int) -> str:
    """One page of a listing just under the probe's bounds (a long description, many small
    objects), and a next one; ``ask`` is on the first page of tools."""
    field, extra = _FILLERS[method]
    item = {"name": f"filler{number}", "description": "x" * (3 << 20), **extra}
    items = [ASK, item] if number == 1 and field == "tools" else [item]
    body = {**LISTING, field: items, "nextCursor": str(number + 1)}
    return json.dumps({"jsonrpc": "2.0", "id": "ID", "result": body}, separators=(",", ":"))


def endless(method: str, request_id: object, cursor: object) -> None:
    page = filler_page(method, int(cursor) if isinstance(cursor, str) else 1)
    sys.stdout.write(page.replace('"ID"', json.dumps(request_id), 1) + "\n")
    sys.stdout.flush()


def list_tools(kind: str, request_id: object, cursor: object) -> None:
    if kind == "deep_message":
        sys.stdout.write(f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"result":{deep(DEPTH)}}}\n')
    elif kind == "endless_pages":
        endless("tools/list", request_id, cursor)
    elif kind == "endless_line":
        chunk = "x" * (1 << 16)
        sys.stdout.write(f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"result":{{"tools":["')
        while True:  # until the probe hangs up: a broken pipe ends this process
            sys.stdout.write(chunk)
    elif kind == "many_values":
        sys.stdout.write(f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"result":{{"tools":[],"x":[')
        sys.stdout.write("0," * 1_000_000 + "0]}}\n")
    elif kind == "garbage":
        sys.stdout.write("Server ready! Listening...\n")
    else:
        tool = {**ASK, "outputSchema": {"type": "object"}} if kind == "unstructured" else ASK
        send({"jsonrpc": "2.0", "id": request_id, "result": {**LISTING, "tools": [tool]}})
    sys.stdout.flush()


CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"


def refused_up_front(kind: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The error a server of ``kind`` answers a call with up front, if any."""
    if kind == "refuses_all":
        return {"code": -32050, "message": "Tool unavailable"}
    if kind == "endless_pages" and params.get("name") != ASK["name"]:
        return {"code": -32602, "message": "Unknown tool"}
    declared = (params.get("_meta") or {}).get(CLIENT_CAPABILITIES) or {}
    if kind == "needs_elicitation" and "elicitation" not in declared:
        return {"code": -32021, "message": "Client does not support elicitation"}
    return None


def call_tool(kind: str, request_id: object, params: dict[str, Any], minted: set[tuple[str, str]]) -> None:
    state, tool = params.get("requestState"), str(params.get("name"))
    refused = refused_up_front(kind, params)
    if refused is not None:
        send({"jsonrpc": "2.0", "id": request_id, "error": refused})
    elif state is None:
        made = {
            "deep_state": deep(DEPTH),
            "inflating_parts": inflating_parts(),
            "many_parts": ".".join(["QQ"] * MANY_PARTS),
        }.get(kind, "{}")
        token = f"{secrets.token_urlsafe(16)}.{made}"
        minted.add((tool, token))
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"resultType": "input_required", "inputRequests": QUESTION, "requestState": token},
            }
        )
    elif kind == "malformed_result":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"resultType": "complete", "content": "done"}})
    elif (tool, state) in minted:
        result(request_id, {"content": [{"type": "text", "text": "done"}]})
    else:
        error = {"code": -32602, "message": "Invalid or expired requestState"}
        if kind == "parse_error":
            error = {"code": -32700, "message": "Parse error"}
        send({"jsonrpc": "2.0", "id": request_id, "error": error})


def flood_stderr() -> None:
    line = ("the server is busy " * 50 + "\n").encode()
    chunk = line * 64
    while True:  # until the probe ends this process
        sys.stderr.buffer.write(chunk)


def serve(kind: str) -> None:
    if kind == "stderr_flood":
        flood_stderr()
    minted: set[tuple[str, str]] = set()
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if request_id is None:
            continue  # a notification
        if method == "server/discover":
            capabilities: dict[str, Any] = {"tools": {}}
            if kind == "endless_pages":
                capabilities.update(prompts={}, resources={})
            result(request_id, {"supportedVersions": [PROTOCOL], "capabilities": capabilities})
        elif kind == "endless_pages" and method in _FILLERS and method != "tools/list":
            endless(method, request_id, params.get("cursor"))
        elif method == "tools/list":
            list_tools(kind, request_id, params.get("cursor"))
        elif method == "tools/call":
            call_tool(kind, request_id, params, minted)
        else:
            send(
                {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}}
            )


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):  # the probe hung up on this server, as it should
        serve(sys.argv[1])
