"""The topologies the nemesis runs (real redis-servers, an SQLite file, PostgreSQL and its standbys) and
how it breaks each: every store fault it injects."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import signal
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess

import redis

import requeststate as rs
from requeststate import DEFAULT_CLOCK_SKEW
from requeststate.redis import RedisGuard
from requeststate.sqlite import SQLiteGuard
from scripts import postgres_servers, redis_servers
from scripts.nemesis.workers import TTL
from scripts.redis_servers import Link, Server

__all__ = ["FAULTS", "OWN_FAULTS_FIRST", "SETUPS", "TOPOLOGIES", "Inject", "Target", "signal_process"]

TOPOLOGIES = (
    "standalone",
    "replicated",
    "cluster",
    "sqlite",
    "postgres",
    "postgres-standby",
    "postgres-sync-standby",
)
FAULTS = {
    "standalone": ("kill-restart-empty", "kill-restart-rdb", "flushall", "eviction", "pause", "swapdb"),
    "replicated": ("failover", "failback", "flushall", "eviction", "pause"),
    "cluster": ("cluster-failover", "flushall", "eviction", "pause"),
    "sqlite": ("delete-file", "replace-file", "truncate-file", "kill-claimer"),
    "postgres": ("kill-restart", "drop-table", "pause"),
    "postgres-standby": ("promote", "restore-pitr"),
    "postgres-sync-standby": ("promote", "restore-pitr"),
}
# The topologies whose own faults come first, once each in FAULTS's order, before the random draws:
# each of them takes seconds (it builds a new standby), so that a bounded run has each.
OWN_FAULTS_FIRST = frozenset({"postgres-standby", "postgres-sync-standby"})

# A fault, injected: when Redis lost claims (the wall clock), or None if it lost none.
Inject = Callable[[random.Random], float | None]


@dataclass
class Target:
    """A running topology: the guard URL the workers connect to, and how the nemesis breaks it."""

    url: str
    inject: dict[str, Inject] = field(default_factory=dict)


def _pause(server: Server, chance: random.Random, longest: float = 1.5) -> None:
    server.pause()
    time.sleep(chance.uniform(0.3, longest))
    server.resume()


def _flush(*servers: Server) -> float:
    for server in servers:
        server.execute("FLUSHALL")
    return time.time()


def _evict(server: Server, chance: random.Random) -> float:
    """An eviction burst: a small maxmemory under allkeys-random, and 1 KiB values until it evicts."""
    used = int(server.execute("INFO", "memory")["used_memory"])
    server.execute("CONFIG", "SET", "maxmemory", used + 1024 * 1024)
    server.execute("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
    client = server.client()
    try:
        for start in range(0, 6_000, 500):
            with client.pipeline(transaction=False) as batch:
                for index in range(start, start + 500):
                    batch.set(f"junk:{chance.random()}:{index}", "x" * 1024, ex=5)
                batch.execute()
    except redis.RedisError:  # a cluster node that moved a slot meanwhile: the burst is partial
        pass
    finally:
        client.close()
        server.execute("CONFIG", "SET", "maxmemory", 0)
        server.execute("CONFIG", "SET", "maxmemory-policy", "noeviction")
    return time.time()


@contextmanager
def _standalone() -> Iterator[Target]:
    with redis_servers.running_server("--dbfilename", "nemesis.rdb") as server:
        directory = server.args[server.args.index("--dir") + 1]
        snapshot = os.path.join(directory, "nemesis.rdb")

        def restart(chance: random.Random, keep_snapshot: bool) -> float:
            server.execute("SAVE")  # the snapshot an RDB restart goes back to: its claims, not later ones
            time.sleep(chance.uniform(0.5, 2.0))  # claims made after it, lost by the restart
            server.kill()
            lost = time.time()
            if not keep_snapshot:
                os.remove(snapshot)
            server.restart()
            return lost

        other_url = server.url.removesuffix("/0") + "/1"

        def swapdb(chance: random.Random) -> float:
            # Another deployment's set in db 1, under the same (default) namespace, swapped in.
            _another_deployment(other_url)
            server.execute("SWAPDB", 0, 1)
            lost = time.time()
            # Db 1 holds this deployment's set now: swapped back later, it would be a rollback that
            # no marker sees (docs/replay-guards.md, "Not covered"). Another deployment's again.
            _flushdb(other_url)
            _another_deployment(other_url)
            return lost

        yield Target(
            server.url,
            {
                "kill-restart-empty": lambda chance: restart(chance, keep_snapshot=False),
                "kill-restart-rdb": lambda chance: restart(chance, keep_snapshot=True),
                "flushall": lambda chance: _flush(server),
                "eviction": lambda chance: _evict(server, chance),
                "pause": lambda chance: _pause(server, chance),
                "swapdb": swapdb,
            },
        )


def _another_deployment(url: str) -> None:
    """Begin another deployment's memory at ``url`` (its marker, under the default namespace)."""
    guard = RedisGuard.from_url(url, timeout=2.0)
    try:
        guard.begin()
    finally:
        guard.close()


def _flushdb(url: str) -> None:
    client = redis.Redis.from_url(url, socket_timeout=2.0)
    try:
        client.flushdb()
    finally:
        client.close()


def _link_up(server: Server) -> bool:
    return bool(server.execute("INFO", "replication").get("master_link_status") == "up")


@contextmanager
def _replicated() -> Iterator[Target]:
    with redis_servers.running_replicated() as pair:
        roles = {"master": pair.master, "replica": pair.replica}
        front = Link(pair.master.port)  # the address the workers know: a failover moves it

        def failover(chance: random.Random) -> float:
            old, new = roles["master"], roles["replica"]
            old.kill()
            lost = time.time()
            redis_servers.promote(new)
            front.point_at(new.port)
            old.args = [*_without_replicaof(old.args), "--replicaof", "127.0.0.1", str(new.port)]
            old.restart()  # the old master comes back as the new one's replica
            roles["master"], roles["replica"] = new, old
            redis_servers.wait_until(lambda: _link_up(old), "no resync", 30)
            return lost

        def failback(chance: random.Random) -> float:
            # The replica detached, claims it never sees, then the master made its replica (its
            # dataset replaced by that older copy, its run_id kept) and promoted back.
            master, replica = roles["master"], roles["replica"]
            redis_servers.promote(replica)
            time.sleep(chance.uniform(0.5, 2.0))
            master.execute("REPLICAOF", "127.0.0.1", replica.port)
            redis_servers.wait_until(lambda: _link_up(master), "no failback resync", 30)
            redis_servers.promote(master)
            lost = time.time()
            replica.execute("REPLICAOF", "127.0.0.1", master.port)
            redis_servers.wait_until(lambda: _link_up(replica), "no resync", 30)
            return lost

        try:
            yield Target(
                front.url,
                {
                    "failover": failover,
                    "failback": failback,
                    "flushall": lambda chance: _flush(roles["master"]),
                    "eviction": lambda chance: _evict(roles["master"], chance),
                    "pause": lambda chance: _pause(roles["master"], chance),
                },
            )
        finally:
            front.close()


def _without_replicaof(args: list[str]) -> list[str]:
    if "--replicaof" not in args:
        return args
    at = args.index("--replicaof")
    return args[:at] + args[at + 3 :]


@contextmanager
def _cluster() -> Iterator[Target]:
    with redis_servers.running_cluster(masters=3, replicas=1) as cluster:
        nodes = [*cluster.masters, *cluster.replicas]

        def masters() -> list[Server]:
            return [node for node in nodes if node.execute("INFO", "replication")["role"] == "master"]

        def failover(chance: random.Random) -> float:
            victim = chance.choice(masters())
            heir = _replica_of(nodes, victim)
            victim.kill()
            lost = time.time()
            heir.execute("CLUSTER", "FAILOVER", "TAKEOVER")
            redis_servers.wait_until(
                lambda: heir.execute("INFO", "replication")["role"] == "master", "no takeover"
            )
            victim.restart()  # rejoins, from its nodes file, as the new master's replica
            redis_servers.wait_until(lambda: _cluster_ok(nodes), "the cluster did not heal", 30)
            return lost

        yield Target(
            cluster.url.replace("redis://", "redis+cluster://", 1),
            {
                "cluster-failover": failover,
                "flushall": lambda chance: _flush(*masters()),
                "eviction": lambda chance: _evict(chance.choice(masters()), chance),
                "pause": lambda chance: _pause(chance.choice(masters()), chance, longest=1.2),
            },
        )


def _replica_of(nodes: list[Server], master: Server) -> Server:
    for node in nodes:
        if node is not master and node.execute("INFO", "replication").get("master_port") == master.port:
            return node
    raise redis_servers.RedisUnavailable(f"the master on port {master.port} has no replica")


def _cluster_ok(nodes: list[Server]) -> bool:
    try:
        return all(b"cluster_state:ok" in node.execute("CLUSTER", "INFO") for node in nodes)
    except redis.RedisError:
        return False


@contextmanager
def _sqlite_file() -> Iterator[Target]:
    with tempfile.TemporaryDirectory(prefix="nemesis-sqlite-") as directory:
        path = os.path.join(directory, "claims.db")
        url = f"sqlite:///{path}"  # four slashes: the path is absolute
        claimers: list[BaseProcess] = []

        def delete(chance: random.Random) -> float:
            os.unlink(path)
            return time.time()

        def replace(chance: random.Random) -> float:
            new_file = os.path.join(directory, f"new-{chance.randrange(10**9)}.db")
            sqlite3.connect(new_file).close()
            os.replace(new_file, path)
            return time.time()

        def truncate(chance: random.Random) -> float:
            with (
                contextlib.suppress(sqlite3.Error),
                contextlib.closing(sqlite3.connect(path, timeout=2.0)) as checkpointing,
            ):
                checkpointing.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            with open(path, "r+b") as file:
                file.truncate(0)
            return time.time()

        def kill_claimer(chance: random.Random) -> None:
            # A process claiming in a loop on the file, killed in the middle of its claims (inside a
            # transaction, most likely): the file stays whole, and its lock is released.
            claimer = multiprocessing.get_context("spawn").Process(
                target=_claimer, args=(path, time.time() + 30), daemon=True
            )
            claimer.start()
            claimers.append(claimer)
            time.sleep(chance.uniform(0.3, 1.5))
            signal_process(claimer, signal.SIGKILL)
            claimer.join(timeout=10)

        yield Target(
            url,
            {
                "delete-file": delete,
                "replace-file": replace,
                "truncate-file": truncate,
                "flushall": delete,  # what the paused verifier resumes after
                "kill-claimer": kill_claimer,
            },
        )


def _claimer(path: str, deadline: float) -> None:
    """Claim fresh ids on the file until killed (or ``deadline``), under the workers' terms."""
    guard = SQLiteGuard(path, timeout=0.5, clock_skew=DEFAULT_CLOCK_SKEW)
    while time.time() < deadline:
        now = int(time.time())
        # Refused while the file's memory is new (outside_memory), or while it is locked: go on.
        with contextlib.suppress(rs.GuardUnavailable, rs.InvalidToken):
            guard.claim(rs.ClaimId(os.urandom(16).hex(), now), now + TTL, now)


@contextmanager
def _postgres() -> Iterator[Target]:
    # A primary with fsync on: a crash and a restart lose no claim (the memory, its system
    # identifier, timeline and database, is the same), so nothing is refused after one (with
    # fsync off, each start would be a loss); a dropped claims table is a loss (its file node
    # names the memory). A promotion of a standby, and a restore, are the standby topologies'.
    with postgres_servers.postgres_servers() as servers:
        primary = servers.primary("fsync = on")

        def kill_restart(chance: random.Random) -> None:
            primary.stop("immediate")
            time.sleep(chance.uniform(0.2, 1.0))
            primary.start()

        def drop_table(chance: random.Random) -> float:
            primary.execute("DROP TABLE IF EXISTS requeststate_claims")
            return time.time()

        def pause(chance: random.Random) -> None:
            primary.pause()
            time.sleep(chance.uniform(0.3, 1.5))
            primary.resume()

        yield Target(
            primary.url(),
            {
                "kill-restart": kill_restart,
                "drop-table": drop_table,
                "flushall": drop_table,  # what the paused verifier resumes after
                "pause": pause,
            },
        )


@contextmanager
def _postgres_standby(*, synchronous: bool) -> Iterator[Target]:
    # A primary (fsync on) and its streaming standby, behind an address a promotion moves, as the
    # replicated Redis pair's. Synchronous: the primary's commits wait for the standby to flush
    # them (synchronous_standby_names = '*', synchronous_commit = on), so a promotion loses no
    # claim the primary acknowledged; it is a loss all the same (a new timeline), and refuses the
    # tokens in flight as an asynchronous one does (docs/postgres-guard.md, "Failover").
    with postgres_servers.postgres_servers() as servers:
        first = servers.primary("fsync = on")
        roles = {"primary": first, "standby": _standby_of(servers, first, synchronous=synchronous)}
        front = Link(first.port)  # the address the workers know: a promotion or a restore moves it

        def promote(chance: random.Random) -> float:
            old, new = roles["primary"], roles["standby"]
            old.stop("immediate")  # a crash: the standby has what was streamed (and, synchronous, flushed)
            lost = time.time()
            new.promote()
            front.point_at(new.port)
            roles["primary"] = new
            roles["standby"] = _standby_of(servers, new, synchronous=synchronous)
            return lost

        def restore(chance: random.Random) -> float:
            # A base backup; claims made after it; the primary and its standby gone; the backup
            # restored with archive recovery to its end (point-in-time recovery: a new timeline),
            # which forgets those claims; a new standby of it.
            old = roles["primary"]
            backup = servers.base_backup(old, "synchronous_standby_names = ''")
            time.sleep(chance.uniform(0.5, 2.0))
            old.stop("immediate")
            roles["standby"].stop("immediate")
            lost = time.time()
            restored = servers.recover(backup, recovery_target="immediate")
            postgres_servers.wait_until(
                lambda: restored.execute("SELECT pg_is_in_recovery()") == [(False,)],
                "the restored backup was not promoted",
            )
            front.point_at(restored.port)
            roles["primary"] = restored
            roles["standby"] = _standby_of(servers, restored, synchronous=synchronous)
            return lost

        def drop_table(chance: random.Random) -> float:
            roles["primary"].execute("DROP TABLE IF EXISTS requeststate_claims")
            return time.time()

        try:
            yield Target(
                f"postgresql://{postgres_servers.SUPERUSER}@127.0.0.1:{front.port}/postgres",
                {"promote": promote, "restore-pitr": restore, "flushall": drop_table},
            )
        finally:
            front.close()


def _standby_of(
    servers: postgres_servers.Servers, primary: postgres_servers.Server, *, synchronous: bool
) -> postgres_servers.Server:
    """A new streaming standby of ``primary``; ``synchronous``: then named the one its commits wait for."""
    # A copy has its primary's settings: a standby promoted must not wait for a standby of its own.
    standby = servers.standby(primary, "synchronous_standby_names = ''")
    if synchronous:
        primary.reconfigure(synchronous_standby_names="*", synchronous_commit="on")
        postgres_servers.wait_until(
            lambda: primary.execute("SELECT sync_state FROM pg_stat_replication") == [("sync",)],
            "the standby did not become synchronous",
        )
    return standby


SETUPS: dict[str, Callable[[], contextlib.AbstractContextManager[Target]]] = {
    "standalone": _standalone,
    "replicated": _replicated,
    "cluster": _cluster,
    "sqlite": _sqlite_file,
    "postgres": _postgres,
    "postgres-standby": lambda: _postgres_standby(synchronous=False),
    "postgres-sync-standby": lambda: _postgres_standby(synchronous=True),
}


def signal_process(process: BaseProcess, number: signal.Signals) -> None:
    """Send ``number`` to ``process``, unless it ended meanwhile."""
    if process.pid is not None:
        with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
            os.kill(process.pid, number)
