"""examples/exactly_once_server.py, run as docs/exactly-once.md shows it: over stdio, configured by its env.

A retry of the final round gets the first booking's answer, and the action has run once; a second
flow books again, the action's second run.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, ElicitResult, InputRequiredResult, TextContent

import requeststate as rs
from tests.conftest import SECRET
from tests.support.reference import b64

ROOT = Path(__file__).resolve().parent.parent
YES: dict[str, Any] = {"confirm": ElicitResult(action="accept", content={"confirm": True})}
BOOKED = re.compile(r"booked [0-9a-f]{8} runs=(\d+)")


async def flow(client: Client, item: str, *, retries: int) -> list[str]:
    """Both rounds of ``book(item)``, then the final round ``retries`` times again: each answer's text."""
    asked = await client.session.call_tool("book", {"item": item}, allow_input_required=True)
    assert isinstance(asked, InputRequiredResult)
    texts = []
    for _ in range(1 + retries):
        result = await client.session.call_tool(
            "book",
            {"item": item},
            allow_input_required=True,
            request_state=asked.request_state,
            input_responses=YES,
        )
        assert isinstance(result, CallToolResult)
        assert isinstance(result.content[0], TextContent)
        texts.append(result.content[0].text)
    return texts


def test_a_retry_gets_the_first_booking_and_the_action_runs_once_per_flow() -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("REQUESTSTATE_")}
    params = StdioServerParameters(
        command=sys.executable,
        args=["examples/exactly_once_server.py"],
        env={**env, rs.ENV_KEYS: b64(SECRET), "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )

    async def run() -> list[list[str]]:
        with anyio.fail_after(60):
            async with Client(stdio_client(params)) as client:
                return [await flow(client, "room 7", retries=2), await flow(client, "room 8", retries=0)]

    first, second = anyio.run(run)
    assert [BOOKED.fullmatch(text) is not None for text in [*first, *second]] == [True] * 4
    assert (len(set(first)), first[0].endswith(" runs=1"), second[0].endswith(" runs=2")) == (1, True, True)
