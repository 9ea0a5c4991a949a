"""The docs' complete two-round tools over HTTP with bearer-token users, run as a reader runs them.

docs/mcp.md and docs/fastmcp.md show these files whole (tests/test_docs_examples.py checks that
they are these files): each server under uvicorn in a process of its own, each client's
``book_as`` (what its command line prints) in this one.
"""

from __future__ import annotations

import importlib
import os
import re
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

pytest.importorskip("fastmcp", reason="the fastmcp extra is not installed")

import anyio
import httpx2

import requeststate as rs
from tests.conftest import SECRET
from tests.support import processes
from tests.support.reference import b64

ROOT = Path(__file__).resolve().parent.parent
# Each server module, and the client that the docs pair with it.
EXAMPLES = {
    "sdk": ("examples.bearer_server:app", "examples.bearer_client"),
    "fastmcp": ("examples.fastmcp_bearer_server:app", "examples.fastmcp_bearer_client"),
}
BOOKED = re.compile(r"Booked Chez Ada on 2026-12-01 for alice \(hold H-[0-9a-f]{8}\)\.")


def environment() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("REQUESTSTATE_")}
    return {**env, rs.ENV_KEYS: b64(SECRET)}


def uvicorn(app: str) -> AbstractContextManager[str]:
    """``uvicorn APP --port PORT`` until the block ends; its MCP URL once it serves."""
    return processes.serving(*processes.uvicorn(app), environment(), ROOT)


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_a_bearer_users_client_completes_both_rounds_and_an_unknown_token_gets_401(example: str) -> None:
    app, client = EXAMPLES[example]
    book_as = importlib.import_module(client).book_as
    with uvicorn(app) as url:
        booked = anyio.run(book_as, url, "tok-alice", "Chez Ada", "2026-12-01")
        # Before any tool runs: the server's auth refuses a token it does not know.
        unknown = httpx2.post(url, headers={"Authorization": "Bearer tok-mallory"}, json={}, timeout=10)
    assert BOOKED.fullmatch(booked), booked
    assert unknown.status_code == 401
