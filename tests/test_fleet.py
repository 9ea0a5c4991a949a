"""A fleet configured by its environment alone: examples/fleet_server.py (the SDK) and fleet_fastmcp.py.

Server processes share ``REQUESTSTATE_KEYS`` and ``REQUESTSTATE_GUARD``, as workers or replicas
do, on a brand-new store: the first flow after the start completes, a token redeemed on one is
refused on every other, a paused Redis or PostgreSQL answers -32603, and a bad or unreachable
guard stops the start, saying why. The store is a parameter (``STORES``): a Redis, a SQLite file,
and a namespace of its own in a PostgreSQL database. A fleet of
each kind on each store starts once for the module (``fleets``); a test about a start (over
stdio, a restart, a start that fails) starts its own processes. A test over kinds and stores runs
make test's covering set of them (tests/support/combinations.py), every kind and every store once;
make matrix runs every combination.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

pytest.importorskip("fastmcp", reason="the fastmcp extra is not installed")
pytest.importorskip("redis", reason="the redis extra is not installed")

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
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
from tests.support.combinations import covering
from tests.support.processes import free_port, serving_all, uvicorn
from tests.support.reference import b64
from tests.support.stdio_servers import clients

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
SERVERS = {"sdk": "examples.fleet_server", "fastmcp": "examples.fleet_fastmcp"}
KINDS = sorted(SERVERS)
# A bound on a hang: flows over processes that start (and import the MCP SDK) on a loaded machine.
TIMEOUT = 60
DATE: dict[str, Any] = {"date": ElicitResult(action="accept", content={"date": "2026-12-01"})}
BOOKED = "booked Ada (for:Ada)"


REFUSED = (INVALID_PARAMS, INVALID_MESSAGE)


@pytest.fixture(scope="module")
def redis() -> Iterator[redis_server.Server]:
    """One redis-server for the module: each brand-new store on it is a namespace nobody used."""
    with redis_server.or_skip(redis_server.running_server()) as running:
        yield running


@pytest.fixture(scope="module")
def postgres() -> Iterator[postgres_server.Server]:
    """A PostgreSQL primary for the module: each brand-new store on it is a namespace nobody used."""
    with postgres_server.servers_or_skip() as servers:
        yield servers.primary()


STORES = ("redis", "postgres", "sqlite")
"""In this order, make test's covering set of ``KINDS`` and ``STORES`` holds that of ``KINDS`` and
``PAUSABLE``: the paused-store test uses fleets the first-flow test started, and no other."""


def new_store(request: pytest.FixtureRequest, store: str, directory: Path) -> str:
    """The URL of a brand-new ``store``: a namespace nobody used on the module's Redis or PostgreSQL,
    or a new file."""
    if store == "redis":
        server: redis_server.Server = request.getfixturevalue("redis")
        return f"{server.url}?namespace=fleet-{uuid.uuid4().hex}"
    if store == "postgres":
        database: postgres_server.Server = request.getfixturevalue("postgres")
        return f"{database.url()}?namespace=fleet-{uuid.uuid4().hex}"
    return f"sqlite:///{directory / uuid.uuid4().hex}.db"


@pytest.fixture
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A brand-new store of the kind the test's parameter names, whose guards begin within a second
    (``clock_skew=0``): the wait is the fleets' subject, not that of a test which starts its own
    processes."""
    url = new_store(request, request.param, tmp_path)
    return f"{url}{'&' if '?' in url else '?'}clock_skew=0"


def environment(guard: str) -> dict[str, str]:
    """A worker's environment: the fleet's keys and guard, and nothing else of requeststate's."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("REQUESTSTATE_")}
    return {**env, rs.ENV_KEYS: b64(SECRET), rs.ENV_GUARD: guard, "PYTHONPATH": str(ROOT)}


def app(kind: str) -> str:
    """The ASGI app of ``kind``, for uvicorn."""
    return f"{SERVERS[kind]}:app"


@contextmanager
def http_workers(kind: str, guard: str, count: int) -> Iterator[list[str]]:
    """``count`` uvicorn processes serving ``kind`` on ports of their own; their MCP URLs once each serves."""
    with serving_all([uvicorn(app(kind)) for _ in range(count)], environment(guard), ROOT) as urls:
        yield urls


@asynccontextmanager
async def over_http(url: str) -> AsyncIterator[Client]:
    async with Client(streamable_http_client(url)) as client:
        yield client


def over_stdio(kind: str, guard: str) -> StdioServerParameters:
    """``kind`` served over stdio, a process of its own, with ``guard``."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", SERVERS[kind]], env=environment(guard), cwd=ROOT
    )


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


@dataclass(frozen=True)
class Fleet:
    """Two servers started together on a brand-new store, and what the first flow after the start got."""

    workers: str
    """docs/deployment.md's command, ``uvicorn --workers 2``: the kernel picks the worker of a request."""
    worker: str
    """One more uvicorn process, on a port of its own."""
    first_flow: list[object]
    """The first flow after the start: minted by ``workers``, redeemed on ``worker``, replayed on both."""


async def first_flow(workers: str, worker: str) -> list[object]:
    async with over_http(workers) as many, over_http(worker) as one:
        token = await first_round(many)
        return [
            await redeem(one, token),
            *[await redeem(many, token) for _ in range(5)],
            await redeem(one, token),
        ]


@pytest.fixture(scope="module")
def fleets(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str, str], Fleet]]:
    """The fleet of a kind on a store, started on first use and kept for the module's tests.

    Per xdist worker: where the module's tests are split over two, a fleet may start on each.
    """
    with ExitStack() as stack:
        started: dict[tuple[str, str], Fleet] = {}

        def fleet(kind: str, store: str) -> Fleet:
            if (kind, store) not in started:
                guard = new_store(request, store, tmp_path_factory.mktemp("fleet"))
                servers = [uvicorn(app(kind), "--workers", "2"), uvicorn(app(kind))]
                workers, worker = stack.enter_context(serving_all(servers, environment(guard), ROOT))
                # Right after the start, before any test uses it: the first flow, on the new store.
                flow = anyio.run(bounded, lambda: first_flow(workers, worker))
                started[kind, store] = Fleet(workers, worker, flow)
            return started[kind, store]

        yield fleet


@pytest.mark.parametrize(("kind", "store"), covering(KINDS, STORES))
def test_the_first_flow_after_the_start_completes_and_every_replay_is_refused_on_every_worker(
    fleets: Callable[[str, str], Fleet], kind: str, store: str
) -> None:
    # Each worker serves once its tokens are accepted. Before: the first flow was refused once,
    # -32602. The token crosses processes (minted by one server, redeemed on the other), and
    # every replay is refused, whichever worker takes it.
    assert fleets(kind, store).first_flow == [BOOKED, *[REFUSED] * 6]


@pytest.mark.parametrize("kind", KINDS)
async def test_after_a_restart_of_every_worker_a_redeemed_token_stays_refused_and_a_pending_flow_completes(
    kind: str, tmp_path: Path
) -> None:
    # The SQLite file keeps the claims and when its memory began: a restarted fleet serves at once,
    # and neither forgets a redemption nor refuses a flow that was waiting for its user. (A Redis
    # fleet's restart: tests/test_redis.py.)
    # clock_skew=0: the first start waits a second at most (the wait is the fleet fixture's subject).
    store_url = f"sqlite:///{tmp_path}/claims.db?clock_skew=0"

    async def two_rounds(url: str) -> tuple[str, str, object]:
        async with over_http(url) as client:
            redeemed, pending = await first_round(client), await first_round(client)
            return redeemed, pending, await redeem(client, redeemed)

    with http_workers(kind, store_url, 1) as (only,):
        redeemed, pending, answer = await bounded(lambda: two_rounds(only))
    with http_workers(kind, store_url, 2) as restarted:

        async def run() -> list[object]:
            async with over_http(restarted[0]) as one, over_http(restarted[1]) as other:
                return [
                    await redeem(one, redeemed),
                    await redeem(other, redeemed),
                    await redeem(other, pending),
                ]

        assert [answer, *await bounded(run)] == [BOOKED, *[REFUSED] * 2, BOOKED]


@pytest.mark.parametrize(("kind", "store_url"), covering(KINDS, STORES), indirect=["store_url"])
async def test_over_stdio_a_token_redeemed_on_one_process_is_refused_on_the_other(
    kind: str, store_url: str
) -> None:
    async def run() -> list[object]:
        async with clients(over_stdio(kind, store_url), over_stdio(kind, store_url)) as (one, other):
            token = await first_round(one)
            return [await redeem(other, token), await redeem(one, token)]

    assert await bounded(run) == [BOOKED, REFUSED]


class Pausable(Protocol):
    def pause(self) -> None: ...
    def resume(self) -> None: ...


PAUSABLE = ("redis", "postgres")
"""The stores a test can pause (every process of the server stopped)."""


@pytest.fixture
def paused_fleet(
    request: pytest.FixtureRequest, fleets: Callable[[str, str], Fleet], kind: str
) -> tuple[Fleet, Pausable]:
    """The module's fleet of ``kind`` on the pausable store the test's parameter names, and that
    store's server (the fleet started, if it is, outside the test's event loop)."""
    store: str = request.param
    return fleets(kind, store), request.getfixturevalue(store)


@pytest.mark.parametrize(("kind", "paused_fleet"), covering(KINDS, PAUSABLE), indirect=["paused_fleet"])
async def test_a_paused_store_answers_internal_error_not_a_refusal(
    paused_fleet: tuple[Fleet, Pausable],
) -> None:
    # Before: -32602, as for a forgery, and a client could not know that a retry might work.
    fleet, server = paused_fleet

    async def run() -> object:
        async with over_http(fleet.worker) as client:
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


@pytest.mark.parametrize("kind", KINDS)
def test_a_bad_guard_stops_the_start_naming_the_variable_and_no_password(kind: str) -> None:
    # Every bad URL is refused by the same call at the start; the messages of each are
    # tests/test_guard_url.py's (an unknown scheme, a relative SQLite path, an unknown option).
    done = started(kind, "redis://:hunter2@127.0.0.1:6390/0?fail_open=true")
    assert (done.returncode, done.stderr.splitlines()[-1]) == (
        1,
        "ValueError: REQUESTSTATE_GUARD: the guard URL may carry the options ?namespace=, ?timeout=, "
        "?clock_skew=, each once; "
        "its query has another",
    )
    assert "hunter2" not in done.stderr


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
