"""A throwaway redis-server on a loopback port for the Redis tests, and the race's worker process."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import redis

from requeststate.redis import RedisGuard

INSTALLER = "scripts/redis-test-server.sh"
START_SECONDS = 10.0
STOP_SECONDS = 5.0
MIN_VERSION = (6, 2)  # SET ... EXAT


class RedisUnavailable(Exception):
    """No redis-server to test against."""


def system_packages_skipped() -> bool:
    """``make test NO_SYSTEM_PACKAGES=1``: nothing was installed, so nothing is required."""
    return os.environ.get("NO_SYSTEM_PACKAGES", "") not in {"", "0"}


def must_run() -> bool:
    """Under CI the Redis tests must run, unless NO_SYSTEM_PACKAGES=1 turned their server's install off."""
    return os.environ.get("CI", "").lower() in {"true", "1", "yes"} and not system_packages_skipped()


def find_redis_server() -> str:
    executable = shutil.which("redis-server")
    if executable is None and system_packages_skipped():
        raise RedisUnavailable(
            "SKIPPING THE REDIS TESTS: redis-server is not on PATH, and NO_SYSTEM_PACKAGES=1 "
            "(make test NO_SYSTEM_PACKAGES=1) skipped its install: drop the switch to run them"
        )
    if executable is None:
        raise RedisUnavailable(
            f"redis-server is not on PATH: run {INSTALLER} (make test does) "
            "or install Redis >= 6.2 to run the Redis tests"
        )
    return executable


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _answers_ping(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
    try:
        return bool(client.ping())
    except redis.exceptions.RedisError:
        return False
    finally:
        client.close()


def _start(executable: str, directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_loopback_port()
    url = f"redis://127.0.0.1:{port}/0"
    log = directory / f"redis-{port}.log"
    args = [executable, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    args += ["--daemonize", "no", "--dir", str(directory), "--logfile", str(log)]
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        if _answers_ping(url):
            return process, url
        time.sleep(0.05)
    _stop(process)
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise RedisUnavailable(f"redis-server did not answer PING on {url}:\n{tail}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _check_version(url: str) -> None:
    client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
    try:
        info: Any = client.info("server")
        version = str(info["redis_version"])
    finally:
        client.close()
    if tuple(int(part) for part in version.split(".")[:2]) < MIN_VERSION:
        raise RedisUnavailable(f"redis-server {version} is too old: RedisGuard needs Redis >= 6.2 (EXAT)")


@contextmanager
def running_redis() -> Iterator[str]:
    """Start redis-server on a free loopback port; yield its URL; stop it.

    Raises ``RedisUnavailable`` if there is no redis-server, or it does not start.
    """
    executable = find_redis_server()
    with tempfile.TemporaryDirectory(prefix="requeststate-redis-") as directory:
        # Another process may take the free port between the probe and the bind: try again.
        for attempt in range(3):
            try:
                process, url = _start(executable, Path(directory))
                break
            except RedisUnavailable:
                if attempt == 2:
                    raise
        try:
            _check_version(url)
            yield url
        finally:
            _stop(process)


def claim_all(
    url: str, namespace: str, ids: list[str], now: int, start: Barrier, results: Queue[list[str]]
) -> None:
    """The race's worker, run in its own process: claim every id, report the ones this process won."""
    guard = RedisGuard.from_url(url, timeout=5.0, namespace=namespace)
    try:
        start.wait(timeout=30)
        results.put([token_id for token_id in ids if guard.claim(token_id, now + 300, now)])
    finally:
        guard.close()
