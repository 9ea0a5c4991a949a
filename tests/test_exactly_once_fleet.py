"""Exactly once across a fleet: two worker processes (tests/support/once_worker.py) on one store, each store.

A response dropped by a proxy after the action ran, then the retry on the other worker gets the
first answer; eight identical retries at once over both workers, one action; a worker killed after
the action and before its answer, then the retry is told it is in progress, and past the lease that
its outcome is unknown. The action's runs are counted over the whole fleet (``RUNS_FILE``). The
fleet of each store starts once for the module; the worker a test kills is a third, its own.
"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")
pytest.importorskip("redis", reason="the redis extra is not installed")

import anyio
from mcp import Client
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
from tests.conftest import SECRET
from tests.support import postgres_server, redis_server
from tests.support.balancer import balancing
from tests.support.processes import serving_all, uvicorn
from tests.support.reference import b64

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 30
YES: dict[str, Any] = {"confirm": ElicitResult(action="accept", content={"confirm": True})}
IN_PROGRESS = (INTERNAL_ERROR, "request_state_in_progress")
OUTCOME_UNKNOWN = (INVALID_PARAMS, "request_state_outcome_unknown")
STORES = ("sqlite", "redis", "postgres")


@pytest.fixture(scope="module")
def redis() -> Iterator[redis_server.Server]:
    with redis_server.or_skip(redis_server.running_server()) as running:
        yield running


@pytest.fixture(scope="module")
def postgres() -> Iterator[postgres_server.Server]:
    with postgres_server.servers_or_skip() as servers:
        yield servers.primary()


@dataclass
class Fleet:
    """Two workers on one brand-new store, their environment, and the file their actions' runs are
    appended to."""

    urls: list[str]
    runs: Path
    environment: dict[str, str]

    def ran(self, item: str) -> list[str]:
        """The runs of the action for ``item`` on every worker: ``<pid> <item>`` each."""
        lines = self.runs.read_text(encoding="utf-8").splitlines() if self.runs.exists() else []
        return [line for line in lines if line.split(" ", 1)[1] == item]


def workers(count: int) -> list[tuple[list[str], int]]:
    """The commands of ``count`` workers of tests/support/once_worker.py, each on a port of its own."""
    return [uvicorn("tests.support.once_worker:app") for _ in range(count)]


@contextmanager
def started(request: pytest.FixtureRequest, store: str, directory: Path) -> Iterator[Fleet]:
    """Two workers of tests/support/once_worker.py on a brand-new ``store``, until the block ends."""
    namespace = f"?namespace=once-{uuid.uuid4().hex}&clock_skew=0"
    if store == "redis":
        guard = f"{request.getfixturevalue('redis').url}{namespace}"
    elif store == "postgres":
        guard = f"{request.getfixturevalue('postgres').url()}{namespace}"
    else:
        guard = f"sqlite:///{directory / 'claims.db'}"
    runs = directory / "runs"
    env = {name: value for name, value in os.environ.items() if not name.startswith("REQUESTSTATE_")}
    env |= {
        rs.ENV_KEYS: b64(SECRET),
        rs.ENV_GUARD: guard,
        "RUNS_FILE": str(runs),
        # A file no test creates: the fleet's workers never hold an answer back.
        "HOLD_FILE": str(directory / "hold"),
        "PYTHONPATH": str(ROOT),
    }
    with serving_all(workers(2), env, ROOT) as urls:
        yield Fleet(urls, runs, env)


@pytest.fixture(scope="module")
def fleets(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str], Fleet]]:
    """The fleet of a store, started on first use and kept for the module's tests (each test redeems
    items of its own, and a worker a test kills is one it started)."""
    with ExitStack() as stack:
        running: dict[str, Fleet] = {}

        def fleet(store: str) -> Fleet:
            if store not in running:
                running[store] = stack.enter_context(started(request, store, tmp_path_factory.mktemp(store)))
            return running[store]

        yield fleet


async def round_one(url: str, item: str) -> str:
    async with Client(streamable_http_client(url)) as client:
        result = await client.session.call_tool("book", {"item": item}, allow_input_required=True)
    assert isinstance(result, InputRequiredResult)
    assert result.request_state is not None
    return result.request_state


async def round_two(url: str, token: str, item: str) -> object:
    """The final round on ``url``: the tool's text, or the JSON-RPC error's (code, data reason)."""
    async with Client(streamable_http_client(url)) as client:
        try:
            result = await client.session.call_tool(
                "book", {"item": item}, allow_input_required=True, request_state=token, input_responses=YES
            )
        except MCPError as error:
            return error.error.code, (error.error.data or {}).get("reason")
    assert isinstance(result, CallToolResult)
    assert isinstance(result.content[0], TextContent)
    return result.content[0].text


def bounded(run: Any) -> Any:
    async def within() -> Any:
        with anyio.fail_after(TIMEOUT):
            return await run()

    return anyio.run(within)


@pytest.mark.parametrize("store", STORES)
def test_a_response_dropped_after_the_action_is_answered_to_the_retry_on_another_worker(
    fleets: Callable[[str], Fleet], store: str
) -> None:
    fleet = fleets(store)
    one, other = fleet.urls

    async def run() -> tuple[list[str], object]:
        token = await round_one(one, "room 7")
        with balancing([one], lose_answer_to=b"requestState") as lossy, pytest.raises(ExceptionGroup) as lost:
            await round_two(lossy.url, token, "room 7")
        return [str(error) for error in lost.value.exceptions], await round_two(other, token, "room 7")

    lost, answer = bounded(run)
    (ran,) = fleet.ran("room 7")
    pid = ran.split()[0]
    assert lost == ["Server disconnected without sending a response."]  # the answer never arrived
    assert (answer, ran) == (f"booked room 7 by {pid}", f"{pid} room 7")


@pytest.mark.parametrize("store", STORES)
def test_eight_identical_retries_at_once_over_both_workers_run_the_action_once(
    fleets: Callable[[str], Fleet], store: str
) -> None:
    fleet = fleets(store)

    async def run() -> tuple[list[object], object]:
        token = await round_one(fleet.urls[0], "room 8")
        answers: list[object] = []

        async def retry(url: str) -> None:
            answers.append(await round_two(url, token, "room 8"))

        async with anyio.create_task_group() as group:
            for url in fleet.urls * 4:
                group.start_soon(retry, url)
        return answers, await round_two(fleet.urls[1], token, "room 8")

    answers, last = bounded(run)
    (ran,) = fleet.ran("room 8")
    booked = f"booked room 8 by {ran.split()[0]}"
    assert (last, sorted(set(map(str, answers)) - {str(IN_PROGRESS)})) == (booked, [booked])


@pytest.mark.parametrize("store", STORES)
def test_a_worker_killed_after_the_action_and_before_its_answer_leaves_a_retry_in_progress_then_unknown(
    fleets: Callable[[str], Fleet], tmp_path: Path, store: str
) -> None:
    fleet = fleets(store)
    hold = tmp_path / "hold"
    hold.touch()
    # A worker of its own joins the fleet's store, holds its answer back and dies; the fleet's own
    # worker hears the retries.
    with serving_all(workers(1), {**fleet.environment, "HOLD_FILE": str(hold)}, ROOT) as (doomed,):
        killed = killed_mid_action(fleet, doomed, fleet.urls[1])
    assert killed == ([IN_PROGRESS, OUTCOME_UNKNOWN], 1)


def killed_mid_action(fleet: Fleet, doomed: str, other: str) -> tuple[list[object], int]:
    """A flow whose final round's worker, ``doomed``, is killed after the action; what the retries on
    ``other`` got, within the lease and past it, and how many times the action ran."""

    async def run() -> list[object]:
        token = await round_one(doomed, "room 9")
        async with anyio.create_task_group() as group:
            group.start_soon(round_two, doomed, token, "room 9")
            while not fleet.ran("room 9"):
                await anyio.sleep(0.05)
            os.kill(
                int(fleet.ran("room 9")[0].split()[0]), signal.SIGKILL
            )  # after the action, before the answer
            group.cancel_scope.cancel()
        during = await round_two(other, token, "room 9")
        await anyio.sleep(3.1)  # past the lease (2 s) and its second
        return [during, await round_two(other, token, "room 9")]

    return bounded(run), len(fleet.ran("room 9"))
