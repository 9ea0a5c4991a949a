"""The nemesis's clients: the SDK's ``Client`` running flows over streamable HTTP, as the docs tell one to.

Each of ``count`` concurrent clients runs flows until the deadline: round 1 through the balancer;
now and then a forged token or the token with another flow's arguments; round 2, through the
balancer or one worker's own address, retried under the documented rule (docs/deployment.md, "What
a client sees": -32603, or no answer, is retried after a pause; -32602 starts the flow over); once
accepted, now and then a replay, to the worker that accepted it or to another. Every request opens a
connection of its own (one HTTP client, keeping no connection alive), so that the balancer spreads
them. Every request and every flow is recorded.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, ElicitResult, InputRequiredResult

from requeststate.mcp import INVALID_MESSAGE, UNCHECKED_MESSAGE
from scripts.mcp_nemesis import history as h

DATE: dict[str, Any] = {"date": ElicitResult(action="accept", content={"date": "2026-12-01"})}
REQUEST_TIMEOUT = 10.0
"""A bound on one request: longer than any pause the nemesis makes (a paused worker answers after)."""
RETRY_FOR = 30.0
"""How long a client retries a round 2 that was not checked (or not answered) before it gives up."""
RETRY_AFTER = 0.5


class Clients:
    """The clients' shared record: the history, and the next flow's number."""

    def __init__(self, http: httpx2.AsyncClient, balancer: str, workers: Sequence[str], seed: int) -> None:
        self.http = http
        self.balancer = balancer
        self.workers = list(workers)
        self.chance = random.Random(seed)
        self.attempts: list[h.Attempt] = []
        self.flows: list[h.Flow] = []
        self._next = 0

    def new_flow(self) -> int:
        self._next += 1
        return self._next

    def address(self, via: str) -> str:
        return self.balancer if via == "balancer" else self.workers[int(via.split()[1])]

    async def call(
        self, flow: int, kind: str, via: str, token: str | None, arguments_of: int
    ) -> tuple[str, str]:
        """Send one request, record it; its outcome, and its token (round 1) or text (round 2)."""
        sent = time.time()
        outcome, payload = await self._send(self.address(via), token, h.restaurant(arguments_of))
        text = payload if kind != h.ROUND1 and outcome == h.ACCEPTED else ""
        self.attempts.append(h.Attempt(flow, kind, via, sent, time.time(), outcome, text))
        return outcome, payload

    async def _send(self, url: str, token: str | None, restaurant: str) -> tuple[str, str]:
        extra: dict[str, Any] = {} if token is None else {"request_state": token, "input_responses": DATE}
        try:
            with anyio.fail_after(REQUEST_TIMEOUT):
                async with Client(streamable_http_client(url, http_client=self.http)) as client:
                    try:
                        result = await client.session.call_tool(
                            "book", {"restaurant": restaurant}, allow_input_required=True, **extra
                        )
                    except MCPError as error:
                        return _refusal(error), ""
        except Exception:  # the connection failed, closed or timed out: no answer, whatever the cause
            return h.NO_ANSWER, ""
        if isinstance(result, InputRequiredResult):
            if token is not None:
                return h.REELICIT, ""
            return h.ACCEPTED, result.request_state or ""
        assert isinstance(result, CallToolResult)
        return h.ACCEPTED, " ".join(getattr(part, "text", "") for part in result.content)


def _refusal(error: MCPError) -> str:
    found = (error.error.code, error.error.message)
    if found == (INVALID_PARAMS, INVALID_MESSAGE):
        return h.INVALID
    if found == (INTERNAL_ERROR, UNCHECKED_MESSAGE):
        return h.UNCHECKED
    return f"error {error.error.code}: {error.error.message}"


def tamper(token: str) -> str:
    middle = len(token) // 2
    return token[:middle] + ("A" if token[middle] != "A" else "B") + token[middle + 1 :]


async def run_flow(clients: Clients) -> None:
    """One flow, from round 1 to its end, with the attacks and replays the dice draw."""
    chance = clients.chance
    flow = clients.new_flow()
    record = h.Flow(flow, time.time(), 0.0, 0.0, completed=False)
    clients.flows.append(record)
    outcome, token = await clients.call(flow, h.ROUND1, "balancer", None, flow)
    if outcome == h.ACCEPTED:
        record.minted = time.time()
        await anyio.sleep(chance.uniform(0.0, 0.5))  # the user answers the question
        every = ["balancer", *(f"worker {index}" for index in range(len(clients.workers)))]
        if chance.random() < 0.1:
            await clients.call(flow, h.FORGED, chance.choice(every), tamper(token), flow)
        if chance.random() < 0.1 and flow > 1:
            await clients.call(flow, h.SWAP, chance.choice(every), token, chance.randrange(1, flow))
        via = chance.choice(["balancer", chance.choice(every[1:])])
        record.completed = await _redeem(clients, flow, via, token, record.started + RETRY_FOR)
        if record.completed and chance.random() < 0.3:
            # To the worker that accepted it (if it is known), and to another.
            again = [via] if via != "balancer" else []
            again.append(chance.choice([other for other in every if other != via]))
            for target in again:
                await clients.call(flow, h.REPLAY, target, token, flow)
    record.ended = time.time()


async def _redeem(clients: Clients, flow: int, via: str, token: str, give_up: float) -> bool:
    """Round 2 under the documented rule: retried while unchecked or unanswered; whether it was accepted."""
    while True:
        outcome, _ = await clients.call(flow, h.REDEEM, via, token, flow)
        if outcome not in (h.UNCHECKED, h.NO_ANSWER) or time.time() > give_up:
            return outcome == h.ACCEPTED
        await anyio.sleep(RETRY_AFTER)


async def run_clients(
    balancer: str, workers: Sequence[str], count: int, deadline: float, seed: int
) -> Clients:
    """``count`` clients running flows until ``deadline`` (each finishes the flow it is in); the history."""
    # No connection kept alive: each request is placed by the balancer anew. The SDK's timeouts.
    limits = httpx2.Limits(max_keepalive_connections=0)
    async with httpx2.AsyncClient(limits=limits, timeout=httpx2.Timeout(30, read=300)) as http:
        clients = Clients(http, balancer, workers, seed)

        async def client() -> None:
            while time.time() < deadline:
                await run_flow(clients)

        async with anyio.create_task_group() as group:
            for _ in range(count):
                group.start_soon(client)
    return clients


def clients_process(
    balancer: str, workers: Sequence[str], count: int, seconds: float, seed: int, ready: Any, out: Any
) -> None:
    """The clients in a process of their own for ``seconds`` once it imported the SDK (``ready`` set
    then): their history put on the queue ``out``."""
    ready.set()
    clients = anyio.run(run_clients, balancer, workers, count, time.time() + seconds, seed)
    out.put((clients.attempts, clients.flows))
