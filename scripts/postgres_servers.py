"""Throwaway PostgreSQL servers on loopback ports, for the PostgreSQL tests.

A primary, a streaming standby of it (``pg_basebackup -R``) that a test promotes, a copy of a
base backup started on its own (with or without archive recovery: point-in-time recovery), and
a new cluster (``initdb``). Each server runs in a temporary directory it owns, with ``fsync``
off (nothing here outlives the test), and is stopped on exit. The directories are in RAM where
the host has room there (``/dev/shm``), and each primary is a copy of one ``initdb``: a test
module starts a dozen servers, and on a loaded disk their files cost more than the servers.
A server cannot run as root: when the tests run as root, every server runs as the ``postgres``
user that Debian's package creates.
Nothing here is pytest's: tests/support/postgres_server.py adds the skip-or-fail rule.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from scripts.redis_servers import free_loopback_port, system_packages_skipped

INSTALLER = "scripts/postgres-test-server.sh"
START_SECONDS = 30.0
RAM_DISK = Path("/dev/shm")  # noqa: S108 (a parent for tempfile's own private directory)
RAM_DISK_ROOM = 2 * 2**30
"""The free bytes ``RAM_DISK`` must have to hold the servers: test_postgres.py's, together, take
about a third of this (with 1 MB WAL segments: ``initdb --wal-segsize=1``)."""
SUPERUSER = "postgres"
PASSWORD_ROLE = "guard_with_password"  # noqa: S105 (a role's name)
"""A role that logs in with a password over TCP (scram-sha-256); every other role is trusted on loopback."""


RECOVERY_TARGETS = (
    "recovery_target",
    "recovery_target_lsn",
    "recovery_target_name",
    "recovery_target_time",
    "recovery_target_xid",
)
"""The settings that end a recovery (one at most): ``Servers.recover``'s ``targets``."""


class PostgresUnavailable(Exception):
    """No PostgreSQL to test against."""


def find_bindir() -> Path:
    """The directory of ``postgres``, ``initdb``, ``pg_ctl`` and ``pg_basebackup``: Debian's, the newest."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True):
        if (Path(candidate) / "postgres").exists() and (Path(candidate) / "pg_basebackup").exists():
            return Path(candidate)
    on_path = shutil.which("pg_basebackup")
    if on_path is not None and shutil.which("postgres") is not None:
        return Path(on_path).parent
    if system_packages_skipped():
        raise PostgresUnavailable(
            "SKIPPING THE POSTGRESQL TESTS: no PostgreSQL server is installed, and NO_SYSTEM_PACKAGES=1 "
            "(make test NO_SYSTEM_PACKAGES=1) skipped its install: drop the switch to run them"
        )
    raise PostgresUnavailable(f"no PostgreSQL server is installed: run {INSTALLER} (make test does)")


def _version_key(path: str) -> int:
    version = Path(path).parent.name
    return int(version) if version.isdigit() else 0


def wait_until(check: Callable[[], bool], what: str, seconds: float = START_SECONDS) -> None:
    """Poll ``check`` until it is true; ``PostgresUnavailable`` naming ``what`` if it never is."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise PostgresUnavailable(f"{what} within {seconds} s")
        time.sleep(0.05)


class _Runner:
    """Runs PostgreSQL's programs as an unprivileged user: ``postgres`` when this process is root."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.user: str | None = None
        if os.geteuid() == 0:
            try:
                pwd.getpwnam(SUPERUSER)
            except KeyError:
                raise PostgresUnavailable(
                    f"running as root, and there is no user {SUPERUSER!r} to run PostgreSQL as"
                ) from None
            self.user = SUPERUSER

    def own(self, path: Path) -> None:
        """Give ``path`` to the user the servers run as."""
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def run(self, program: str, *args: str) -> None:
        self._run(str(self.bindir / program), *args)

    def copy(self, source: Path, target: Path) -> None:
        """Copy the directory ``source`` to ``target``, as the user the servers run as."""
        self._run("/bin/cp", "-a", str(source), str(target))

    def _run(self, executable: str, *args: str) -> None:
        program = Path(executable).name
        completed = subprocess.run(  # noqa: S603 (PostgreSQL's own programs, and cp)
            [executable, *args],
            user=self.user,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=START_SECONDS * 2,
            check=False,
        )
        if completed.returncode != 0:
            output = (completed.stdout + completed.stderr).decode(errors="replace")[-2000:]
            raise PostgresUnavailable(f"{program} failed ({completed.returncode}):\n{output}")

    def launch(self, data: Path, log: Path) -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            return subprocess.Popen(  # noqa: S603 (the postgres server)
                [str(self.bindir / "postgres"), "-D", str(data)],
                user=self.user,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )


@dataclass
class Server:
    """One postgres process (its postmaster) on a loopback port, and its data directory."""

    runner: _Runner
    data: Path
    port: int
    archive: Path
    """Where its WAL is archived (``archive_command``): its cluster's, which a copy shares."""
    process: subprocess.Popen[bytes] | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.data.parent / f"{self.data.name}.log"

    def url(self, user: str = SUPERUSER, dbname: str = "postgres", password: str | None = None) -> str:
        from urllib.parse import quote

        secret = f":{quote(password, safe='')}" if password is not None else ""
        return f"postgresql://{user}{secret}@127.0.0.1:{self.port}/{dbname}"

    def conninfo(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname={dbname} connect_timeout=5"

    def connect(self, dbname: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
        """A superuser's connection of the test's own, in autocommit."""
        return psycopg.connect(self.conninfo(dbname), autocommit=True)

    def execute(self, sql: str, *params: object, dbname: str = "postgres") -> list[tuple[object, ...]]:
        """Run ``sql`` (with ``params``) on a connection of its own; its rows (none for a command)."""
        with self.connect(dbname) as connection:
            cursor = connection.execute(sql.encode(), params or None)
            return cursor.fetchall() if cursor.description else []

    def start(self) -> None:
        self.process = self.runner.launch(self.data, self.log)
        wait_until(self.answers, f"postgres did not answer on port {self.port} (log: {self.tail()})")

    def answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise PostgresUnavailable(f"postgres exited ({self.process.returncode}): {self.tail()}")
        try:
            with psycopg.connect(self.conninfo(), connect_timeout=2) as connection:
                connection.execute("SELECT 1")
        except psycopg.Error:
            return False
        return True

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""

    @property
    def postmaster(self) -> int:
        """The postmaster's process id."""
        assert self.process is not None
        return self.process.pid

    def pause(self) -> None:
        """SIGSTOP the postmaster and every backend: connections stay open and nothing answers."""
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)

    def _signal(self, number: signal.Signals) -> None:
        for pid in self._pids():
            with contextlib.suppress(ProcessLookupError):  # a backend that ended meanwhile
                os.kill(pid, number)

    def _pids(self) -> list[int]:
        """The postmaster and its children (the backends and the server's own processes)."""
        children = subprocess.run(  # noqa: S603 (ps, fixed arguments)
            ["/bin/ps", "-o", "pid=", "--ppid", str(self.postmaster)],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()
        return [self.postmaster, *(int(pid) for pid in children)]

    def promote(self) -> None:
        """Promote a standby (``SELECT pg_promote()``, which waits until it is a primary)."""
        rows = self.execute("SELECT pg_promote(wait => true, wait_seconds => 30)")
        if rows != [(True,)]:
            raise PostgresUnavailable(f"the standby on port {self.port} was not promoted")

    def reconfigure(self, **settings: str) -> None:
        """``ALTER SYSTEM SET`` each of ``settings``, then reload: a running server's new settings."""
        with self.connect() as connection:
            for name, value in settings.items():
                connection.execute(f"ALTER SYSTEM SET {name} = '{value}'".encode())
            connection.execute("SELECT pg_reload_conf()")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``immediate``: at once, as a crash, with recovery at its next start)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.resume()
        self.process.send_signal({"fast": signal.SIGINT, "immediate": signal.SIGQUIT}[mode])
        try:
            self.process.wait(START_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Servers:
    """Starts servers in one temporary directory; every server it started is stopped on exit."""

    def __init__(self, directory: Path, runner: _Runner) -> None:
        self.directory = directory
        self.runner = runner
        self.started: list[Server] = []
        self._count = 0
        self._template: Path | None = None

    def _data(self, name: str) -> Path:
        self._count += 1
        return self.directory / f"{name}-{self._count}"

    def primary(self, *settings: str, port: int | None = None, new_system: bool = False) -> Server:
        """A new cluster, started; ``settings``: more ``postgresql.conf`` lines.

        Each is a copy of one ``initdb`` (a second of CPU each, saved), so the primaries of one
        ``Servers`` share a system identifier; ``new_system``: an ``initdb`` of its own, whose
        identifier is another (a new cluster, not a copy of an old one). ``port``: where it
        listens (another server's, stopped: a new cluster at the same address).
        """
        data = self._data("primary")
        if new_system:
            self._initdb(data)
        else:
            if self._template is None:
                self._template = self.directory / "template"
                self._initdb(self._template)
            self.runner.copy(self._template, data)
        archive = data.with_name(f"{data.name}-archive")
        archive.mkdir()
        self.runner.own(archive)
        server = Server(self.runner, data, port or free_loopback_port(), archive)
        _configure(server, *_defaults(server), *settings, f"archive_command = 'cp %p {archive}/%f'")
        _hba(server)
        return self._start(server)

    def _initdb(self, data: Path) -> None:
        self.runner.run(
            "initdb", "-D", str(data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-sync",
            "--wal-segsize=1",
        )  # fmt: skip

    def standby(self, primary: Server, *settings: str) -> Server:
        """A streaming standby of ``primary`` (``pg_basebackup -R``), started and replaying."""
        server = self._copy(primary, "standby", "-R")
        # A copy of a recovered server has its recovery target: a standby stopped (promoted) at it.
        _configure(server, *(f"{target} = ''" for target in RECOVERY_TARGETS), *settings)
        self._start(server)
        wait_until(
            lambda: (
                primary.execute("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
                != [(0,)]
            ),
            "the standby did not stream from its primary",
        )
        return server

    def base_backup(self, primary: Server, *settings: str) -> Server:
        """A base backup of ``primary`` (WAL included), not started: ``start`` it, or recover it first."""
        backup = self._copy(primary, "backup")
        _configure(backup, *settings)
        return backup

    def recover(self, backup: Server, **targets: str) -> Server:
        """Archive recovery of ``backup`` from its cluster's WAL archive, to ``targets``, then promotion."""
        lines = [
            f"restore_command = 'cp {backup.archive}/%f %p'",
            "recovery_target_action = 'promote'",
        ]
        lines += [f"{name} = '{value}'" for name, value in targets.items()]
        _configure(backup, *lines)
        signal_file = backup.data / "recovery.signal"
        signal_file.touch()
        self.runner.own(signal_file)
        return self._start(backup)

    def _copy(self, primary: Server, name: str, *extra: str) -> Server:
        data = self._data(name)
        self.runner.run(
            "pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", SUPERUSER,
            "-D", str(data), "-X", "stream", "-c", "fast", "--no-sync", *extra,
        )  # fmt: skip
        server = Server(self.runner, data, free_loopback_port(), primary.archive)
        _configure(server, f"port = {server.port}")
        return server

    def _start(self, server: Server) -> Server:
        server.start()
        self.started.append(server)
        return server

    def stop_all(self) -> None:
        for server in reversed(self.started):
            server.stop("immediate")


def _scratch() -> Path | None:
    """Where the servers' directories go: ``RAM_DISK`` where it has ``RAM_DISK_ROOM``; else (``None``)
    tempfile's own. On a shared disk, deleting a module's servers took 37 s of writeback."""
    try:
        room = shutil.disk_usage(RAM_DISK).free
    except OSError:  # no such directory: not Linux
        return None
    return RAM_DISK if room >= RAM_DISK_ROOM and os.access(RAM_DISK, os.W_OK) else None


def _defaults(server: Server) -> list[str]:
    """A new cluster's settings; a copy (a standby, a backup) has them from its primary."""
    return [
        f"port = {server.port}",
        "listen_addresses = '127.0.0.1'",
        f"unix_socket_directories = '{server.data}'",
        "fsync = off",
        "full_page_writes = off",
        "shared_buffers = 16MB",
        "max_connections = 60",
        "wal_level = replica",
        "archive_mode = on",
        "max_wal_senders = 4",
        "logging_collector = off",
    ]


def _configure(server: Server, *lines: str) -> None:
    """Append ``lines`` to the server's ``postgresql.auto.conf``: each overrides what it had."""
    with (server.data / "postgresql.auto.conf").open("a") as conf:
        conf.write("\n".join(lines) + "\n")


def _hba(server: Server) -> None:
    (server.data / "pg_hba.conf").write_text(
        f"host all {PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\n"
        "host all all 127.0.0.1/32 trust\n"
        "host replication all 127.0.0.1/32 trust\n"
        "local all all trust\n"
    )


@contextmanager
def postgres_servers() -> Iterator[Servers]:
    """A starter of servers in one temporary directory, each stopped on exit.

    Raises ``PostgresUnavailable`` if PostgreSQL is not installed, or a server does not start.
    """
    runner = _Runner(find_bindir())
    with tempfile.TemporaryDirectory(prefix="requeststate-postgres-", dir=_scratch()) as directory:
        path = Path(directory)
        runner.own(path)
        servers = Servers(path, runner)
        try:
            yield servers
        finally:
            servers.stop_all()
