"""A fleet configured by its environment alone: examples/fleet_server.py (the SDK) and fleet_fastmcp.py.

Two server processes share ``REQUESTSTATE_KEYS`` and ``REQUESTSTATE_GUARD``, as two workers or
replicas do, each on a brand-new store: the first flow after start completes, a token redeemed on
one is refused on the other, a paused Redis answers -32603, and a bad or unreachable guard stops
the start, saying why. The store is a parameter (``STORES``): a Redis, a SQLite file, and a
namespace of its own in a PostgreSQL database.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Protocol

import pytest

pytest.importorskip("fastmcp", reason="the fastmcp extra is not installed")
pytest.importorskip("redis", reason="the redis extra is not installed")

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)

import requeststate as rs
from requeststate.mcp import INVALID_MESSAGE, UNCHECKED_MESSAGE
from tests.conftest import SECRET
from tests.support import postgres_server, redis_server
from tests.support.processes import free_port, serving
from tests.support.reference import b64

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
SERVERS = {"sdk": "examples.fleet_server", "fastmcp": "examples.fleet_fastmcp"}
KINDS = sorted(SERVERS)
TIMEOUT = 30
DATE: dict[str, Any] = {"date": ElicitResult(action="accept", content={"date": "2026-12-01"})}
BOOKED = "booked Ada (for:Ada)"


@pytest.fixture
def redis() -> Iterator[redis_server.Server]:
    """A brand-new redis-server, for one test."""
    with redis_server.or_skip(redis_server.running_server()) as running:
        yield running


@pytest.fixture(scope="module")
def postgres() -> Iterator[postgres_server.Server]:
    """A PostgreSQL primary for the module: each test's store is a namespace of its own in it."""
    with postgres_server.servers_or_skip() as servers:
        yield servers.primary()


# The stores a fleet shares, each a URL of a brand-new store.
STORES: dict[str, Callable[[pytest.FixtureRequest, Path], str]] = {
    "redis": lambda request, tmp_path: request.getfixturevalue("redis").url,
    "sqlite": lambda request, tmp_path: f"sqlite:///{tmp_path}/claims.db",
    "postgres": lambda request, tmp_path: (
        f"{request.getfixturevalue('postgres').url()}?namespace={tmp_path.name}"
    ),
}


@pytest.fixture(params=sorted(STORES))
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return STORES[request.param](request, tmp_path)


def environment(guard: str) -> dict[str, str]:
    """A worker's environment: the fleet's keys and guard, and nothing else of requeststate's."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("REQUESTSTATE_")}
    return {**env, rs.ENV_KEYS: b64(SECRET), rs.ENV_GUARD: guard, "PYTHONPATH": str(ROOT)}


@contextmanager
def http_workers(kind: str, guard: str, count: int = 2) -> Iterator[list[str]]:
    """``count`` uvicorn processes serving ``kind`` on ports of their own; their MCP URLs once each serves."""
    with ExitStack() as stack:
        urls = []
        for _ in range(count):
            port = free_port()
            argv = [sys.executable, "-m", "uvicorn", f"{SERVERS[kind]}:app", "--port", str(port)]
            urls.append(stack.enter_context(serving(argv, port, environment(guard), ROOT)))
        yield urls


@asynccontextmanager
async def over_http(url: str) -> AsyncIterator[Client]:
    async with Client(streamable_http_client(url)) as client:
        yield client


def over_stdio(kind: str, guard: str) -> Client:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", SERVERS[kind]], env=environment(guard), cwd=ROOT
    )
    return Client(stdio_client(params))


async def first_round(client: Client) -> str:
    result = await client.session.call_tool("book", {"restaurant": "Ada"}, allow_input_required=True)
    assert isinstance(result, InputRequiredResult)
    assert result.request_state is not None
    return result.request_state


async def redeem(client: Client, token: str) -> object:
    """The retry with ``token``: the tool's text, or the JSON-RPC error's (code, message)."""
    try:
        result = await client.session.call_tool(
            "book",
            {"restaurant": "Ada"},
            allow_input_required=True,
            request_state=token,
            input_responses=DATE,
        )
    except MCPError as error:
        return error.error.code, error.error.message
    assert isinstance(result, CallToolResult)
    assert isinstance(result.content[0], TextContent)
    return result.content[0].text


async def bounded(run: Callable[[], Any]) -> Any:
    with anyio.fail_after(TIMEOUT):
        return await run()


@pytest.mark.parametrize("kind", KINDS)
async def test_over_http_a_token_redeemed_on_one_worker_is_refused_on_the_other(
    kind: str, store_url: str
) -> None:
    # The first flow after start on a new store completes: each worker served once its tokens
    # are accepted. Before: the first flow was refused once, -32602.
    with http_workers(kind, store_url) as (first, second):

        async def run() -> list[object]:
            async with over_http(first) as one, over_http(second) as other:
                token = await first_round(one)
                return [await redeem(other, token), await redeem(one, token)]

        assert await bounded(run) == [BOOKED, (INVALID_PARAMS, INVALID_MESSAGE)]


@pytest.mark.parametrize("kind", KINDS)
async def test_two_uvicorn_workers_complete_the_first_flow_and_refuse_every_replay(
    kind: str, store_url: str
) -> None:
    # docs/deployment.md's command. Which worker takes a request is the kernel's choice: every
    # replay is refused, whichever takes it.
    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", f"{SERVERS[kind]}:app", "--workers", "2", "--port", str(port)]
    with serving(argv, port, environment(store_url), ROOT) as url:

        async def run() -> list[object]:
            async with over_http(url) as client:
                token = await first_round(client)
                return [await redeem(client, token) for _ in range(6)]

        assert await bounded(run) == [BOOKED, *[(INVALID_PARAMS, INVALID_MESSAGE)] * 5]


@pytest.mark.parametrize("kind", KINDS)
async def test_after_a_restart_of_every_worker_a_redeemed_token_stays_refused_and_a_pending_flow_completes(
    kind: str, tmp_path: Path
) -> None:
    # The SQLite file keeps the claims and when its memory began: a restarted fleet serves at once,
    # and neither forgets a redemption nor refuses a flow that was waiting for its user. (A Redis
    # fleet's restart: tests/test_redis.py.)
    store_url = f"sqlite:///{tmp_path}/claims.db"

    async def two_rounds(url: str) -> tuple[str, str, object]:
        async with over_http(url) as client:
            redeemed, pending = await first_round(client), await first_round(client)
            return redeemed, pending, await redeem(client, redeemed)

    with http_workers(kind, store_url) as (first, _):
        redeemed, pending, answer = await bounded(lambda: two_rounds(first))
    with http_workers(kind, store_url) as restarted:

        async def run() -> list[object]:
            async with over_http(restarted[0]) as one, over_http(restarted[1]) as other:
                return [
                    await redeem(one, redeemed),
                    await redeem(other, redeemed),
                    await redeem(other, pending),
                ]

        assert [answer, *await bounded(run)] == [BOOKED, *[(INVALID_PARAMS, INVALID_MESSAGE)] * 2, BOOKED]


@pytest.mark.parametrize("kind", KINDS)
async def test_over_stdio_a_token_redeemed_on_one_process_is_refused_on_the_other(
    kind: str, store_url: str
) -> None:
    async def run() -> list[object]:
        async with over_stdio(kind, store_url) as one, over_stdio(kind, store_url) as other:
            token = await first_round(one)
            return [await redeem(other, token), await redeem(one, token)]

    assert await bounded(run) == [BOOKED, (INVALID_PARAMS, INVALID_MESSAGE)]


class Pausable(Protocol):
    def pause(self) -> None: ...
    def resume(self) -> None: ...


# The stores a test can pause (every process of the server stopped), and a guard's URL of each.
PAUSABLE: dict[str, Callable[[pytest.FixtureRequest, Path], tuple[Pausable, str]]] = {
    "redis": lambda request, tmp_path: (
        request.getfixturevalue("redis"),
        request.getfixturevalue("redis").url,
    ),
    "postgres": lambda request, tmp_path: (
        request.getfixturevalue("postgres"),
        f"{request.getfixturevalue('postgres').url()}?namespace={tmp_path.name}&timeout=0.5",
    ),
}


@pytest.mark.parametrize("store", sorted(PAUSABLE))
@pytest.mark.parametrize("kind", KINDS)
async def test_a_paused_store_answers_internal_error_not_a_refusal(
    kind: str, store: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    # Before: -32602, as for a forgery, and a client could not know that a retry might work.
    server, url = PAUSABLE[store](request, tmp_path)
    with http_workers(kind, url, count=1) as (worker,):

        async def run() -> object:
            async with over_http(worker) as client:
                token = await first_round(client)
                server.pause()
                try:
                    return await redeem(client, token)
                finally:
                    server.resume()

        assert await bounded(run) == (INTERNAL_ERROR, UNCHECKED_MESSAGE)


def started(kind: str, guard: str) -> subprocess.CompletedProcess[str]:
    """``kind`` run over stdio with ``guard``, its stdin closed: what it prints if it cannot start."""
    return subprocess.run(
        [sys.executable, "-m", SERVERS[kind]],
        env=environment(guard),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


BAD_GUARDS = {
    "unknown scheme": (
        "memcached://127.0.0.1:11211",
        "ValueError: REQUESTSTATE_GUARD must be memory, redis://host:port/db, rediss://host:port/db, "
        "redis+cluster://host:port, rediss+cluster://host:port, sqlite:////absolute/path.db, or "
        "postgresql://user@host:port/dbname: its scheme is none of these",
    ),
    "relative sqlite path": (
        "sqlite:///claims.db",
        "ValueError: REQUESTSTATE_GUARD: the guard URL must name the SQLite file by its absolute path, "
        "after four slashes: "
        "sqlite:////var/lib/app/claims.db (workers may not share a working directory)",
    ),
    "unknown option": (
        "redis://:hunter2@127.0.0.1:6390/0?fail_open=true",
        "ValueError: REQUESTSTATE_GUARD: the guard URL may carry the options ?namespace=, ?timeout=, "
        "?clock_skew=, each once; "
        "its query has another",
    ),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bad", sorted(BAD_GUARDS))
def test_a_bad_guard_stops_the_start_naming_the_variable(kind: str, bad: str) -> None:
    guard, line = BAD_GUARDS[bad]
    done = started(kind, guard)
    assert (done.returncode, done.stderr.splitlines()[-1]) == (1, line)


@pytest.mark.parametrize("kind", KINDS)
def test_an_unreachable_postgres_stops_the_start_and_shows_no_password(kind: str) -> None:
    done = started(kind, f"postgresql://guard:hunter2@127.0.0.1:{free_port()}/app?timeout=0.5")
    assert done.returncode == 1
    assert (
        "requeststate.GuardUnavailable: the replay guard did not begin, so the server does not start: "
        "PostgreSQL did not record when its memory began (PoolTimeout): couldn't get a connection after "
        "0.50 sec"
    ) in done.stderr
    assert "requeststate._" not in done.stderr
    assert "hunter2" not in done.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_an_unreachable_redis_stops_the_start_saying_where_and_no_password(kind: str) -> None:
    port = free_port()
    done = started(kind, f"redis://:hunter2@127.0.0.1:{port}/0")
    assert done.returncode == 1
    assert (
        "requeststate.GuardUnavailable: the replay guard did not begin, so the server does not start: "
        "Redis did not record when its memory began (ConnectionError): "
        f"Error 111 connecting to 127.0.0.1:{port}."
    ) in done.stderr
    assert "requeststate._" not in done.stderr
    assert "hunter2" not in done.stderr
