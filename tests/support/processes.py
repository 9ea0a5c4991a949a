"""A server process on a free loopback port, for tests that drive a real HTTP transport."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from scripts.redis_servers import free_loopback_port as free_port

__all__ = ["free_port", "serving"]


@contextmanager
def serving(
    argv: Sequence[str], port: int, env: Mapping[str, str], cwd: Path, *, stderr: IO[str] | None = None
) -> Iterator[str]:
    """Run ``argv`` (a server listening on ``port``) until the block ends; yield its MCP URL.

    Its stderr goes to ``stderr`` (a file the test reads once the server stopped), else nowhere.
    """
    server = subprocess.Popen(
        list(argv),
        env=dict(env),
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL if stderr is None else stderr,
    )
    try:
        # 60 s: two uvicorn workers that wait out clock_skew took over 30 s to start on 2 loaded cores.
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, f"{argv[-3:]} exited"
            assert time.monotonic() < deadline, f"{argv[-3:]} did not start"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
