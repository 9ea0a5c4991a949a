"""A protected server's log lines under uvicorn, started as docs/deployment.md starts it, read from stderr.

uvicorn configures its own loggers only (``--log-level`` too), so a ``requeststate`` record
reaches Python's last-resort handler, which prints WARNING and above, bare. What an operator
must see without configuring anything is therefore a WARNING: a refusal, and a start that waits
for the guard. Each names the worker's process. ``examples/uvicorn_logging.json``, uvicorn's own
configuration plus the ``requeststate`` logger, shows the INFO line too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("fastmcp", reason="the fastmcp extra is not installed")

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult, InputResponses

import requeststate as rs
from tests.conftest import SECRET
from tests.support import processes
from tests.support.reference import b64

ROOT = Path(__file__).resolve().parent.parent
APPS = {"sdk": "examples.fleet_server:app", "fastmcp": "examples.fleet_fastmcp:app"}
WORKER = re.compile(r"Started server process \[(\d+)\]")
WAITED = re.compile(
    r"requestState guard AsyncSQLiteGuard began in process (\d+): the tokens this server mints are "
    r"accepted in \d+\.\d s, when it serves"
)
BEGAN = re.compile(
    r"requestState guard AsyncSQLiteGuard began in process (\d+): the tokens this server mints are "
    r"accepted (?:in \d+\.\d s, when it serves|at once)"
)
AT_ONCE = re.compile(
    r"INFO: +requestState guard AsyncSQLiteGuard began in process (\d+): the tokens this server mints "
    r"are accepted at once"
)
REFUSED = re.compile(
    r"requestState refused: method=tools/call target='book' id=\d+ reason=malformed pid=(\d+)"
)


@contextmanager
def uvicorn(app: str, claims: Path, stderr: Path, *options: str) -> Generator[str]:
    """``uvicorn APP --port PORT OPTIONS`` on a SQLite guard's file until the block ends; its MCP URL."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("REQUESTSTATE_")}
    # COLUMNS: the SDK's MCPServer logs through rich, which wraps at 80 columns where no terminal is.
    env |= {rs.ENV_KEYS: b64(SECRET), rs.ENV_GUARD: f"sqlite:///{claims}", "COLUMNS": "400"}
    argv, port = processes.uvicorn(app, *options)
    with stderr.open("w") as sink, processes.serving(argv, port, env, ROOT, stderr=sink) as url:
        yield url


def send_a_forged_state(url: str) -> None:
    async def send() -> None:
        async with Client(url) as client:
            answer: InputResponses = {"date": ElicitResult(action="accept", content={"date": "2026-12-01"})}
            with pytest.raises(MCPError, match="Invalid or expired requestState"):
                await client.session.call_tool(
                    "book",
                    {"restaurant": "Ada"},
                    request_state="v1e.forged",
                    input_responses=answer,
                    allow_input_required=True,
                )

    anyio.run(send)


def test_sdk_workers_under_uvicorn_name_themselves_at_start_and_in_each_refusal(tmp_path: Path) -> None:
    # docs/deployment.md's own command. Its MCPServer puts rich's handler on the root logger, at INFO:
    # every line shows. Which worker waits depends on when each began (a loaded machine starts one late).
    log = tmp_path / "stderr.log"
    with uvicorn(APPS["sdk"], tmp_path / "claims.db", log, "--workers", "2") as url:
        send_a_forged_state(url)
    printed = log.read_text()
    workers = set(WORKER.findall(printed))
    assert len(workers) == 2, printed
    assert set(BEGAN.findall(printed)) == workers, printed
    [refused_by] = REFUSED.findall(printed)
    assert refused_by in workers, printed


def test_fastmcp_under_uvicorn_defaults_and_under_the_documented_logging_config(
    tmp_path: Path,
) -> None:
    # FastMCP configures no root handler: uvicorn's defaults are Python's last-resort handler alone.
    # On a new file the worker waits out clock_skew: a WARNING, which that handler shows.
    claims = tmp_path / "claims.db"
    log = tmp_path / "defaults.log"
    with uvicorn(APPS["fastmcp"], claims, log) as url:
        send_a_forged_state(url)
    printed = log.read_text()
    [worker] = WORKER.findall(printed)
    assert WAITED.findall(printed) == [worker], printed
    assert REFUSED.findall(printed) == [worker], printed
    # The file is now a store in use, whose start is an INFO line: shown by the documented config.
    log = tmp_path / "configured.log"
    config = str(ROOT / "examples" / "uvicorn_logging.json")
    with uvicorn(APPS["fastmcp"], claims, log, "--log-config", config) as url:
        send_a_forged_state(url)
    printed = log.read_text()
    [worker] = WORKER.findall(printed)
    assert AT_ONCE.findall(printed) == [worker], printed
    assert re.search(r"WARNING: +" + REFUSED.pattern, printed) is not None, printed
