"""Throwaway redis-servers on loopback ports, for the Redis tests and the benchmark's Redis rows.

One server, a master with a replica, a cluster, a server still loading its dataset (it answers
-LOADING), and a relay that can be cut, or pointed at another server. Every server runs with no
persistence in a temporary directory and is stopped (or killed) on exit. Nothing here is pytest's:
tests/support/redis_server.py adds the skip-or-fail rule and the races.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

INSTALLER = "scripts/redis-test-server.sh"
START_SECONDS = 10.0
STOP_SECONDS = 5.0
MIN_VERSION = (6, 2)  # the oldest Redis the guards promise (the cluster fixtures need 7.0: --cluster-port)


class RedisUnavailable(Exception):
    """No redis-server to test against."""


def system_packages_skipped() -> bool:
    """``make test NO_SYSTEM_PACKAGES=1``: nothing was installed, so nothing is required."""
    return os.environ.get("NO_SYSTEM_PACKAGES", "") not in {"", "0"}


def find_redis_server() -> str:
    executable = shutil.which("redis-server")
    if executable is None and system_packages_skipped():
        raise RedisUnavailable(
            "SKIPPING THE REDIS TESTS: redis-server is not on PATH, and NO_SYSTEM_PACKAGES=1 "
            "(make test NO_SYSTEM_PACKAGES=1) skipped its install: drop the switch to run them"
        )
    if executable is None:
        raise RedisUnavailable(
            f"redis-server is not on PATH: run {INSTALLER} (make test does) or install Redis >= 6.2"
        )
    return executable


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    """One redis-server process on a loopback port, and the command that started it."""

    process: subprocess.Popen[bytes]
    port: int
    args: list[str]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        """A plain client with short timeouts, for the test's own checks."""
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2, socket_connect_timeout=2)

    def execute(self, *command: str | int) -> Any:
        """Run one command on a client of its own, closed after."""
        client = self.client()
        try:
            return client.execute_command(*command)  # type: ignore[no-untyped-call]  # untyped in redis-py
        finally:
            client.close()

    def version(self) -> str:
        """The server's version, as ``INFO server`` says it (``7.0.15``)."""
        return str(self.execute("INFO", "server")["redis_version"])

    def pause(self) -> None:
        """Stop the process (SIGSTOP): its sockets stay open and nothing answers, as on a cut network."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: the process dies at once, with whatever it had not replicated yet."""
        self.process.kill()
        self.process.wait()

    def restart(self) -> None:
        """Start the server again on its port, after ``kill``: without persistence, it starts empty."""
        self.process = _launch(self.args)
        wait_until(lambda: _answers_ping(self.port), f"redis-server did not restart on port {self.port}")

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.resume()
        self.process.terminate()
        try:
            self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _launch(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)  # noqa: S603 (redis-server)


def _answers_ping(port: int) -> bool:
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=0.5, socket_connect_timeout=0.5)
    try:
        return bool(client.ping())
    except redis.exceptions.RedisError:
        return False
    finally:
        client.close()


def _start_once(executable: str, directory: Path, extra: list[str]) -> Server:
    port = free_loopback_port()
    log = directory / f"redis-{port}.log"
    args = [executable, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    args += ["--daemonize", "no", "--dir", str(directory), "--logfile", str(log)]
    # A replica syncs at once, not after the default 5 s wait for more replicas to join.
    args += ["--repl-diskless-sync-delay", "0", *extra]
    if "--cluster-enabled" in extra:
        # Name the bus port: port + 10000 may be past 65535 or taken.
        args += ["--cluster-port", str(free_loopback_port()), "--cluster-config-file", f"nodes-{port}.conf"]
    server = Server(_launch(args), port, args)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline and server.process.poll() is None:
        if _answers_ping(port):
            return server
        time.sleep(0.05)
    server.stop()
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise RedisUnavailable(f"redis-server did not answer PING on port {port}:\n{tail}")


def _start(executable: str, directory: Path, *extra: str) -> Server:
    # Another process may take the free port between the probe and the bind: try again.
    for attempt in range(3):
        try:
            return _start_once(executable, directory, list(extra))
        except RedisUnavailable:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _check_version(server: Server) -> None:
    version = server.version()
    if tuple(int(part) for part in version.split(".")[:2]) < MIN_VERSION:
        raise RedisUnavailable(f"redis-server {version} is too old: RedisGuard needs Redis >= 6.2")


def wait_until(check: Callable[[], bool], what: str, seconds: float = START_SECONDS) -> None:
    """Poll ``check`` until it is true; ``RedisUnavailable`` naming ``what`` if it never is."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise RedisUnavailable(f"{what} within {seconds} s")
        time.sleep(0.05)


@contextmanager
def _servers() -> Iterator[Callable[..., Server]]:
    """A starter of servers in one temporary directory; every server it started is stopped on exit."""
    executable = find_redis_server()
    started: list[Server] = []
    with tempfile.TemporaryDirectory(prefix="requeststate-redis-") as directory:

        def start(*extra: str) -> Server:
            server = _start(executable, Path(directory), *extra)
            started.append(server)
            _check_version(server)
            return server

        try:
            yield start
        finally:
            # Replicas first: a master told to stop waits for lagging replicas to catch up.
            for server in reversed(started):
                server.stop()


@contextmanager
def running_redis() -> Iterator[str]:
    """Start redis-server on a free loopback port; yield its URL; stop it.

    Raises ``RedisUnavailable`` if there is no redis-server, or it does not start.
    """
    with running_server() as server:
        yield server.url


@contextmanager
def running_server(*extra: str) -> Iterator[Server]:
    """``running_redis``, yielding the server itself: to reconfigure, pause, kill or restart it.

    ``extra``: more ``redis-server`` arguments (``"--appendonly", "yes"``, for one).
    """
    with _servers() as start:
        yield start(*extra)


# LOADING_KEYS values, each past the 1 KiB of dataset after which a loading server answers
# clients again, loaded one per LOADING_DELAY_US microseconds: about 30 s of -LOADING.
LOADING_KEYS = 3000
LOADING_DELAY_US = 10_000


def _answers_loading(port: int) -> bool:
    # No retries: redis-py retries a -LOADING answer (a ConnectionError) for seconds by default.
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=0.5, retry=Retry(NoBackoff(), 0))
    try:
        client.ping()
    except redis.exceptions.BusyLoadingError:
        return True
    except redis.exceptions.RedisError:
        return False
    finally:
        client.close()
    return False


@contextmanager
def loading_redis() -> Iterator[Server]:
    """A redis-server still loading its dataset from disk: it answers most commands -LOADING.

    A first server saves the dataset; a second loads it, slowed by Redis's own
    ``key-load-delay`` (what Redis's test suite slows loading with). Killed on exit.
    """
    with _servers() as start:
        writer = start("--rdbcompression", "no", "--dbfilename", "loading.rdb")
        value = "x" * 1100
        writer.execute("EVAL", f"for i=1,{LOADING_KEYS} do redis.call('SET', i, '{value}') end", 0)
        writer.execute("SAVE")
        writer.kill()
        args = [*writer.args, "--key-load-delay", str(LOADING_DELAY_US)]
        args += ["--loading-process-events-interval-bytes", "1024"]
        port = free_loopback_port()
        args[args.index("--port") + 1] = str(port)
        loading = Server(_launch(args), port, args)
        try:
            wait_until(lambda: _answers_loading(port), "redis-server did not answer -LOADING")
            yield loading
        finally:
            loading.kill()


def _replica_is_up(master: Server, replica: Server) -> bool:
    synced = replica.execute("INFO", "replication").get("master_link_status") == "up"
    return synced and bool(master.execute("INFO", "replication")["connected_slaves"] >= 1)


class Link:
    """A TCP relay on loopback to a server (a replica's to its master, a guard's), that a test can cut.

    Cut, it keeps both connections open and drops every byte, as a network
    partition does: neither side notices until its own timeouts (a minute).
    Pointed at another server, it closes every connection it relays, as a
    failover of a virtual IP does, and relays new ones to that server.
    """

    def __init__(self, port: int) -> None:
        self._target = port
        self._cut = threading.Event()
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def cut(self) -> None:
        self._cut.set()

    def point_at(self, port: int) -> None:
        """Relay new connections to ``port``; close the ones open now."""
        self._target = port
        sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):  # already closed by its peer
                sock.shutdown(socket.SHUT_RDWR)  # wakes the pump blocked reading it, and tells the peer
            sock.close()

    def close(self) -> None:
        for sock in [self._listener, *self._sockets]:
            sock.close()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self._listener.accept()
            except OSError:  # closed
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self._target))
            except OSError:  # the server is down: the client sees its connection closed
                downstream.close()
                continue
            self._sockets += [downstream, upstream]
            for source, sink in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                if not self._cut.is_set():
                    sink.sendall(data)
        except OSError:  # closed by close(), or by a killed server
            return


@dataclass
class Replicated:
    """A master, its replica, and the link between them (``None`` if the replica dials the master)."""

    master: Server
    replica: Server
    link: Link | None


@contextmanager
def running_replicated(*, cuttable: bool = False) -> Iterator[Replicated]:
    """A master and one replica of it; yield them once the replica is in sync.

    ``cuttable`` puts a ``Link`` between them, so that a test can partition them.
    """
    with _servers() as start:
        master = start()
        link = Link(master.port) if cuttable else None
        try:
            replica = start("--replicaof", "127.0.0.1", str(link.port if link else master.port))
            wait_until(lambda: _replica_is_up(master, replica), "the replica did not sync with its master")
            yield Replicated(master, replica, link)
        finally:
            if link is not None:
                link.close()


def wait_for_sync(replicated: Replicated) -> None:
    """Wait until the replica has every write its master made so far."""

    def offset(server: Server) -> int:
        return int(server.execute("INFO", "replication")["master_repl_offset"])

    target = offset(replicated.master)
    wait_until(lambda: offset(replicated.replica) >= target, "the replica did not catch up")


def promote(replica: Server) -> None:
    """Make a replica a master (REPLICAOF NO ONE), as a failover does."""
    replica.execute("REPLICAOF", "NO", "ONE")


@dataclass
class Cluster:
    """A Redis Cluster on loopback: its masters, and each master's replica if it has one."""

    masters: list[Server]
    replicas: list[Server]

    @property
    def url(self) -> str:
        """The URL of one node: a cluster client finds the others from it."""
        return self.masters[0].url

    def master_of(self, key: str) -> Server:
        """The master that serves ``key``'s slot now."""
        slot = self.masters[0].execute("CLUSTER", "KEYSLOT", key)
        for start, end, master, *_ in self.masters[0].execute("CLUSTER", "SLOTS"):
            if start <= slot <= end:
                return self._by_port(master[1])
        raise AssertionError(f"slot {slot} is not served")

    def replica_of(self, master: Server) -> Server:
        """The replica of ``master``."""
        for replica in self.replicas:
            if replica.execute("INFO", "replication").get("master_port") == master.port:
                return replica
        raise AssertionError(f"the master on port {master.port} has no replica")

    @staticmethod
    def replica_holds(replica: Server, key: str) -> bool:
        """Whether a cluster replica has ``key`` (read with READONLY: it would answer MOVED)."""
        client = replica.client()
        try:
            client.execute_command("READONLY")  # type: ignore[no-untyped-call]  # untyped in redis-py
            return bool(client.exists(key))
        finally:
            client.close()

    def _by_port(self, port: int) -> Server:
        return next(server for server in self.masters + self.replicas if server.port == port)


def _cluster_is_ok(servers: list[Server]) -> bool:
    return all(b"cluster_state:ok" in server.execute("CLUSTER", "INFO") for server in servers)


@contextmanager
def running_cluster(masters: int = 3, replicas: int = 0) -> Iterator[Cluster]:
    """A Redis Cluster of ``masters`` masters, each with ``replicas`` replicas.

    Built as an operator would: redis-server with ``--cluster-enabled yes``, then
    ``redis-cli --cluster create`` (which needs 3 masters); one master without
    replicas is given every slot itself. Yields once every node reports ``cluster_state:ok``.
    """
    cli = shutil.which("redis-cli")
    if cli is None:
        raise RedisUnavailable("redis-cli is not on PATH (Debian ships it in redis-tools, with redis-server)")
    with _servers() as start:
        # A short node timeout, so that a cluster notices a dead node in the failover tests.
        servers = [
            start("--cluster-enabled", "yes", "--cluster-node-timeout", "2000")
            for _ in range(masters * (1 + replicas))
        ]
        nodes = [f"127.0.0.1:{server.port}" for server in servers]
        if len(servers) == 1:
            servers[0].execute("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        else:
            subprocess.run(  # noqa: S603 (redis-cli, fixed arguments)
                [cli, "--cluster", "create", *nodes, "--cluster-replicas", str(replicas), "--cluster-yes"],
                check=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                timeout=START_SECONDS,
            )
        wait_until(lambda: _cluster_is_ok(servers), "the cluster did not reach cluster_state:ok")
        roles = {server.port: server.execute("INFO", "replication")["role"] for server in servers}
        cluster = Cluster(
            [server for server in servers if roles[server.port] == "master"],
            [server for server in servers if roles[server.port] == "slave"],
        )
        wait_until(
            lambda: all(
                replica.execute("INFO", "replication").get("master_link_status") == "up"
                for replica in cluster.replicas
            ),
            "a replica did not sync with its master",
        )
        yield cluster
