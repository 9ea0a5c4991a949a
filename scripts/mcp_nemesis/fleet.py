"""The nemesis's fleet: protected worker processes under uvicorn, each on a loopback port of its own.

Workers alternate between the SDK's ``MCPServer`` and FastMCP (scripts/mcp_nemesis/worker.py), all
with the same ``REQUESTSTATE_KEYS`` and ``REQUESTSTATE_GUARD``, and each with a clock file the
nemesis steps. A worker is killed (``kill -9``), stopped and continued, or terminated and restarted
on its port, as a process manager would.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requeststate as rs
from scripts.mcp_nemesis.worker import CLOCK_FILE
from scripts.redis_servers import free_loopback_port

ROOT = Path(__file__).resolve().parent.parent.parent
KINDS = ("sdk", "fastmcp")
RESTARTS = 3
START_SECONDS = 120.0
"""A bound on a hang: workers that import the SDK at once on two loaded cores take tens of seconds."""


class Worker:
    """One uvicorn process serving a protected worker on its port, restarted on the same port."""

    def __init__(self, index: int, environment: dict[str, str], directory: Path) -> None:
        self.index = index
        self.kind = KINDS[index % len(KINDS)]
        self.port = free_loopback_port()
        self.clock = directory / f"clock-{index}"
        self.clock.write_text("0")
        self._environment = {**environment, CLOCK_FILE: str(self.clock)}
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        factory = f"scripts.mcp_nemesis.worker:{self.kind}_app"
        self.process = subprocess.Popen(  # noqa: S603 (uvicorn, our arguments)
            [sys.executable, "-m", "uvicorn", "--factory", factory, "--port", str(self.port)],
            env=self._environment,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def wait_serving(self) -> None:
        """Wait until it serves; start it again if it exits, as a process manager does, ``RESTARTS`` times.

        A worker whose guard does not begin exits (docs/deployment.md, "Ready at start"): on two
        loaded cores, a new cluster can take longer than the guard's timeout to answer.
        """
        deadline = time.monotonic() + START_SECONDS
        restarts = RESTARTS
        while not _listens(self.port):
            assert self.process is not None
            if self.process.poll() is not None:
                if not restarts:
                    raise RuntimeError(
                        f"worker {self.index} ({self.kind}) exited ({self.process.returncode})"
                    )
                restarts -= 1
                self.start()
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"worker {self.index} ({self.kind}) did not serve within {START_SECONDS} s"
                )
            time.sleep(0.1)

    def signal(self, number: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(number)

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        """Terminate (uvicorn finishes the requests it has), or kill past 10 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGCONT)
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()

    def step_clock(self, offset: float) -> None:
        """Set this worker's clock ``offset`` seconds from the wall clock (its file, written whole)."""
        fresh = self.clock.with_suffix(".new")
        fresh.write_text(repr(offset))
        os.replace(fresh, self.clock)


def _listens(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def environment(guard: str) -> dict[str, str]:
    """A worker's environment: a fresh key, ``guard``, and nothing else of requeststate's."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("REQUESTSTATE_")}
    key = base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode()
    return {**env, rs.ENV_KEYS: key, rs.ENV_GUARD: guard, "PYTHONPATH": str(ROOT)}


@contextmanager
def running_fleet(count: int, guard: str, directory: Path) -> Iterator[list[Worker]]:
    """``count`` workers on ``guard``, started at once; yielded once every one serves, stopped on exit."""
    env = environment(guard)
    workers = [Worker(index, env, directory) for index in range(count)]
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.wait_serving()
        yield workers
    finally:
        for worker in workers:
            worker.stop()
