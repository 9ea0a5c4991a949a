"""Workers of one deployment for the probe's fleet tests: ``python -m tests.support.probe_fleet KIND PORT``.

Each process serves streamable HTTP on ``127.0.0.1:PORT``, stateless (any worker answers any round,
as behind a load balancer); two processes of one KIND are a fleet of two. KIND is one of:

- ``redis``: the correct fleet: keys shared by every worker (tests/support/probe_schemes.py's
  ``KEY``), single use kept in the Redis at ``FLEET_REDIS_URL`` under ``FLEET_NAMESPACE``;
- ``memory``: shared keys, but a ``MemoryGuard`` in each worker: single use per process only;
- ``own-keys``: an ephemeral key ring in each worker: a retry that lands on another is refused;
- ``ten-tools``: ten tools of three rounds each, shared keys: the probe's bound in time.

Every tool asks a question per round (``q1``, ``q2``, ...), then answers ``done``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

import requeststate as rs
from requeststate.mcp import protect
from tests.support.memory_guard import memory_guard
from tests.support.probe_schemes import KEY
from tests.support.processes import free_port, serving_all

REDIS_URL: Final = "FLEET_REDIS_URL"
NAMESPACE: Final = "FLEET_NAMESPACE"


def _question(number: int) -> ElicitRequest:
    field = f"q{number}"
    schema = {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}
    return ElicitRequest(
        params=ElicitRequestFormParams(message=f"Question {number}?", requested_schema=schema)
    )


def next_round(state: str | None, rounds: int) -> str | InputRequiredResult:
    """Round ``n`` asks ``qn``; after ``rounds`` of them, the flow is done."""
    step = 1 if state is None else json.loads(state)["step"] + 1
    if step > rounds:
        return "done"
    return InputRequiredResult(
        input_requests={f"q{step}": _question(step)}, request_state=json.dumps({"step": step})
    )


def flows(name: str, tools: int, rounds: int) -> MCPServer[Any]:
    """A server of ``tools`` tools (``flow0``, ``flow1``, ...), each of ``rounds`` rounds."""
    server: MCPServer[Any] = MCPServer(name)
    for index in range(tools):

        async def flow(ctx: Context, topic: str = "x") -> str | InputRequiredResult:
            return next_round(ctx.request_state, rounds)

        server.tool(name=f"flow{index}")(flow)
    return server


def _guard(kind: str) -> rs.Guard | None:
    if kind == "memory":
        return memory_guard()  # its memory began at the epoch: the worker serves at once
    if kind != "redis":
        return None
    from requeststate.redis import RedisGuard

    # protect() begins it with the server: the port opens once the tokens it mints are accepted,
    # within a second on the new namespace with clock_skew=0 (5 s by default: no test here waits on it).
    return RedisGuard.from_url(os.environ[REDIS_URL], namespace=os.environ[NAMESPACE], clock_skew=0)


def worker(kind: str) -> MCPServer[Any]:
    """One worker of a fleet of ``kind``."""
    if kind == "ten-tools":
        server = flows(kind, tools=10, rounds=3)
        protect(server, rs.KeyRing(KEY))
        return server
    server = flows(kind, tools=1, rounds=2)
    keys = rs.KeyRing.ephemeral() if kind == "own-keys" else rs.KeyRing(KEY)
    protect(server, rs.Codec(keys, guard=_guard(kind)))
    return server


@contextmanager
def fleet(
    kind: str, cwd: Path, env: Mapping[str, str] | None = None, *, workers: int = 2
) -> Iterator[list[str]]:
    """``workers`` workers of ``kind``, processes of their own on free loopback ports, started at once:
    their URLs."""
    environment = {**os.environ, "PYTHONPATH": str(cwd), **(env or {})}
    ports = [free_port() for _ in range(workers)]
    servers = [([sys.executable, "-m", "tests.support.probe_fleet", kind, str(port)], port) for port in ports]
    with serving_all(servers, environment, cwd) as urls:
        yield urls


if __name__ == "__main__":
    worker(sys.argv[1]).run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]), stateless_http=True)
