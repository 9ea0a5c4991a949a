"""Flows per second a real MCP server serves over HTTP, protected or not: ``python -m benchmarks.http_load``.

The check on ``requeststate bench``'s verdict, made the way a user sees their
fleet: a separate ``uvicorn`` process serves an ``MCPServer`` behind bearer
authentication on loopback (``app``, configured by ``HTTP_LOAD_SERVER``), and
this process runs ``--flows`` concurrent client flows for ``--seconds``: each
flow calls a two-round tool, then retries with the ``requestState`` it was
given, and counts once the retry is answered. The settings are measured in
turn (which goes first rotates), ``--repeats`` times; each one's median counts, and its
median ratio to the server as shipped in the same repeat:

- ``none``: the server as the SDK ships it (its own request-state boundary);
- ``protect``: ``protect()`` with no guard;
- ``memory``: ``protect()`` with a ``MemoryGuard``;
- ``redis``: ``protect()`` with an ``AsyncRedisGuard`` on a throwaway loopback
  redis-server (scripts/redis_servers.py), when one starts.

A guard that bounds a round shows as fewer flows/s than ``none``; when all are
alike, the transport bounds it (docs/performance.md, "The verdict beside a load").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any, Final

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import AnyHttpUrl

import requeststate as rs
from requeststate.mcp import protect

__all__ = ["app", "main"]

_ENV: Final = "HTTP_LOAD_SERVER"
_BEARER: Final = "load-bearer"
_ISSUER: Final = "https://issuer.invalid"
_STATE: Final = '{"step":1,"data":"' + "x" * 45 + '"}'  # 64 bytes
_KEY_ENV: Final = "HTTP_LOAD_KEY"


class _Verifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        if token != _BEARER:
            return None
        return AccessToken(token=token, client_id="load", scopes=[], subject="alice", claims={"iss": _ISSUER})


def _server(setting: str, url: str) -> Any:
    server: MCPServer[Any] = MCPServer(
        "load",
        token_verifier=_Verifier(),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(_ISSUER), resource_server_url=AnyHttpUrl(url), validate_token_resource=False
        ),
        log_level="ERROR",
    )

    @server.tool()
    async def book(ctx: Context, restaurant: str) -> str | InputRequiredResult:
        return InputRequiredResult(request_state=_STATE) if ctx.request_state is None else "booked"

    if setting != "none":
        guard: rs.Guard | rs.AsyncGuard | None = None
        if setting == "memory":
            guard = rs.MemoryGuard()
        elif setting != "protect":
            guard = rs.guard_from_url(setting, asyncio=True)
        protect(server, rs.Codec(rs.KeyRing(bytes.fromhex(os.environ[_KEY_ENV])), guard=guard))
    return server.streamable_http_app()


def app() -> Any:
    """What ``uvicorn --factory`` serves, as ``HTTP_LOAD_SERVER`` names it (a setting, then the URL)."""
    setting, _, url = os.environ[_ENV].partition(" ")
    return _server(setting, url)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def _serving(setting: str) -> Iterator[str]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {**os.environ, _ENV: f"{setting} {url}", _KEY_ENV: os.urandom(32).hex()}
    argv = [sys.executable, "-m", "uvicorn", "--factory", "benchmarks.http_load:app", "--port", str(port)]
    argv += ["--log-level", "warning", "--no-access-log"]
    process = subprocess.Popen(argv, env=env)  # noqa: S603 (our interpreter, our module)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server for {setting} did not start")
            time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


async def _flows(url: str, flows: int, seconds: float) -> float:
    """Flows completed per second by ``flows`` concurrent clients in ``seconds``, once all connected."""
    arguments = {"restaurant": "Ada"}
    done = [0]
    connected = asyncio.Semaphore(0)
    go = asyncio.Event()
    deadline = [0.0]

    async def flow_loop() -> None:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {_BEARER}"}) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            connected.release()
            await go.wait()
            while time.monotonic() < deadline[0]:
                first = await client.session.call_tool("book", arguments, allow_input_required=True)
                if not isinstance(first, InputRequiredResult):
                    raise RuntimeError(f"the first round answered {first}")
                final = await client.session.call_tool(
                    "book",
                    arguments,
                    allow_input_required=True,
                    request_state=first.request_state,
                    input_responses={},
                )
                if not isinstance(final, CallToolResult) or final.is_error:
                    raise RuntimeError(f"a flow failed: {final}")
                done[0] += 1

    tasks = [asyncio.create_task(flow_loop()) for _ in range(flows)]
    for _ in range(flows):
        await connected.acquire()
    started = time.monotonic()
    deadline[0] = started + seconds
    go.set()
    await asyncio.gather(*tasks)
    return done[0] / (time.monotonic() - started)


def main(argv: Sequence[str] | None = None) -> int:
    """Print each setting's flows/s."""
    description = __doc__.split("\n\n")[0] if __doc__ else None
    parser = argparse.ArgumentParser(prog="python -m benchmarks.http_load", description=description)
    parser.add_argument("--flows", type=int, default=16, help="concurrent client flows (default 16)")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per measurement (default 10)")
    parser.add_argument(
        "--repeats", type=int, default=3, help="measurements of each setting, in turn (default 3)"
    )
    parser.add_argument("--no-redis", action="store_true", help="leave the Redis guard out")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        settings = {"none": "none", "protect": "protect", "memory": "memory"}
        if not args.no_redis:
            from scripts import redis_servers

            # A 2 s timeout: on a busy machine the default 0.25 s refuses claims (not what is measured).
            settings["redis"] = f"{stack.enter_context(redis_servers.running_server()).url}?timeout=2"
        urls = {name: stack.enter_context(_serving(setting)) for name, setting in settings.items()}
        rates: dict[str, list[float]] = {name: [] for name in urls}
        names = list(urls)
        for repeat in range(args.repeats):
            shift = repeat % len(names)  # rotate which setting goes first
            for name in names[shift:] + names[:shift]:
                url = urls[name]
                rates[name].append(asyncio.run(_flows(url, args.flows, args.seconds)))
                print(f"{name:>7}: {rates[name][-1]:7.1f} flows/s", flush=True)
    # Each setting against the one as shipped of the same repeat (seconds apart), then the median:
    # a machine whose load drifts moves both sides of a ratio together.
    for name, measured in rates.items():
        ratios = [rate / shipped for rate, shipped in zip(measured, rates["none"], strict=True)]
        print(
            f"median {name:>7}: {statistics.median(measured):7.1f} flows/s, "
            f"{statistics.median(ratios):.2f}x none in the same repeat (from {min(ratios):.2f}x to "
            f"{max(ratios):.2f}x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
