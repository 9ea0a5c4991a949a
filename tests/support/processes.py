"""Server processes on free loopback ports, for tests that drive a real HTTP transport."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from scripts.redis_servers import free_loopback_port as free_port

__all__ = ["free_port", "serving", "serving_all", "uvicorn"]


def uvicorn(app: str, *options: str) -> tuple[list[str], int]:
    """The command of a uvicorn serving ``app`` (``module:attribute``) with ``options`` on a free
    loopback port, and that port: a server for ``serving`` or ``serving_all``."""
    port = free_port()
    return [sys.executable, "-m", "uvicorn", app, *options, "--port", str(port)], port


@contextmanager
def serving(
    argv: Sequence[str], port: int, env: Mapping[str, str], cwd: Path, *, stderr: IO[str] | None = None
) -> Iterator[str]:
    """Run ``argv`` (a server listening on ``port``) until the block ends; yield its MCP URL.

    Its stderr goes to ``stderr`` (a file the test reads once the server stopped), else nowhere.
    """
    with serving_all([(argv, port)], env, cwd, stderr=stderr) as (url,):
        yield url


@contextmanager
def serving_all(
    servers: Sequence[tuple[Sequence[str], int]],
    env: Mapping[str, str],
    cwd: Path,
    *,
    stderr: IO[str] | None = None,
) -> Iterator[list[str]]:
    """Run each ``(argv, port)`` until the block ends; yield their MCP URLs once every one listens.

    All start at once: a fleet starts in the time of its slowest server, not of their sum. The
    bound (two minutes) is on a hang, not on speed: on 2 loaded cores, two uvicorn workers that
    wait out clock_skew took over 30 s to start, and servers that each import the MCP SDK at
    once over a minute. Their stderr goes to ``stderr``, else nowhere.
    """
    started: list[subprocess.Popen[bytes]] = []
    try:
        for argv, _ in servers:
            started.append(
                subprocess.Popen(
                    list(argv),
                    env=dict(env),
                    cwd=cwd,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL if stderr is None else stderr,
                )
            )
        deadline = time.monotonic() + 120
        for server, (argv, port) in zip(started, servers, strict=True):
            while True:
                assert server.poll() is None, f"{list(argv[-3:])} exited"
                assert time.monotonic() < deadline, f"{list(argv[-3:])} did not start"
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
        yield [f"http://127.0.0.1:{port}/mcp" for _, port in servers]
    finally:
        for server in started:
            server.terminate()
        for server in started:
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
