"""A nemesis test of single use, in the manner of Jepsen: redeem tokens from a fleet while its store fails.

``python -m scripts.nemesis`` starts real redis-servers on loopback (scripts/redis_servers.py) in
three topologies (one server; a master and its replica, behind an address a failover moves; a
cluster of three masters, each with a replica), a fourth, one SQLite file on one host, a
fifth, a PostgreSQL primary (scripts/postgres_servers.py), and two more, a PostgreSQL primary
and its streaming standby behind an address a promotion moves (``postgres-standby``:
asynchronous replication; ``postgres-sync-standby``: the standby synchronous,
``synchronous_standby_names = '*'`` and ``synchronous_commit = on``), and, on each, for a
bounded time (``--seconds``, 40 by default):

- worker processes, each with its own guard (``RedisGuard``, ``SQLiteGuard``, ``PostgresGuard``)
  and its own clock offset (within
  ``clock_skew`` of each other), mint tokens on their clocks and redeem them: each token once
  as it is minted (or, for one token in five, 0.5 to 3 s later, as a client's next call carries
  it: the tokens in flight when a fault strikes), and again later (its own worker's replays, and
  other workers', shared);
- a nemesis, seeded, injects a fault at random every few seconds: ``kill -9`` and a restart
  with or without the snapshot taken earlier (an RDB restore), ``FLUSHALL``, an eviction burst
  (``allkeys-random`` under a small ``maxmemory``), ``SIGSTOP``/``SIGCONT`` of Redis, a
  failover, a failback (the master made a replica of a replica detached earlier, then
  promoted back), a ``SWAPDB`` with another deployment's set in db 1, a step of one worker's
  clock, a paused verifier (a worker stopped right after it read its clock, resumed after a
  ``FLUSHALL`` as the first to claim, with that stale clock), and a verifier whose settings
  differ from the namespace's (another leeway or clock_skew), every claim of which is refused
  while the namespace holds a live claim (an SQLite namespace with none takes its terms, as a
  loss: docs/sqlite-guard.md); on the SQLite file: the file deleted, replaced by a new one, or
  truncated under the running workers, and a process killed (``kill -9``) in the middle of its claims;
  on PostgreSQL: the primary killed (``immediate``, as a crash) and restarted, its claims table
  dropped, and the primary paused (``SIGSTOP`` of every process); on a primary and its standby,
  first each of their own faults once, then at random: the primary killed (``immediate``) and the
  standby promoted, the workers' address moved to it, and a new standby made of it; and a
  restore: a base backup taken, claims made after it, the primary and its standby stopped, and
  the backup restored with archive recovery to its end (point-in-time recovery: a new
  timeline). A backup started without archive recovery is the same memory rolled back, which
  the guard cannot see and which would accept its replays (docs/postgres-guard.md, "Not
  covered"): not injected;
- every redemption is recorded in a history, and a checker counts what single use forbids: a
  token accepted twice. It reports how long after each loss a flow started after it succeeds
  again, the share of first redemptions refused as collateral, and how many claims of the
  mismatched verifier were accepted; and per kind of fault: the resume times, the tokens in
  flight at it (minted before it struck, first redeemed after) and how many of them were
  refused, and the replays after it of tokens accepted before it.

Exit status 1 if any token was accepted twice. ``--json FILE`` writes the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import heapq
import json
import logging
import multiprocessing
import os
import queue
import random
import signal
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from multiprocessing.sharedctypes import Synchronized
from typing import Any

import redis

import requeststate as rs
from requeststate import DEFAULT_CLOCK_SKEW
from requeststate.postgres import PostgresGuard
from requeststate.redis import RedisGuard
from requeststate.sqlite import SQLiteGuard
from scripts import postgres_servers, redis_servers
from scripts.redis_servers import Link, Server

KEY = bytes.fromhex("9c1f3a7e5b2d4c6f8a0e1b3d5f7a9c2e4b6d8f0a1c3e5a7b9d0f2e4c6a8b1d3f")
TTL = 20
# Each worker's clock runs within +-OFFSET of the wall clock: two of them differ by at most
# 2 * OFFSET, inside the guard's clock_skew.
OFFSET = DEFAULT_CLOCK_SKEW / 2 - 0.5
# A share of the tokens minted is redeemed a while later, as a client's next call carries it: the
# tokens in flight when a fault strikes, whose refusals after it the report counts per fault.
IN_FLIGHT = 0.2
IN_FLIGHT_SECONDS = (0.5, 3.0)
# The history's worker number of the verifiers whose settings differ from the namespace's.
MISMATCHED = -1
TOPOLOGIES = (
    "standalone",
    "replicated",
    "cluster",
    "sqlite",
    "postgres",
    "postgres-standby",
    "postgres-sync-standby",
)
# The faults every topology gets, which run() injects itself: they act on the workers.
WORKER_FAULTS = ("clock", "paused-verifier", "mismatched-verifier")
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
# A paused verifier stays stopped this long past clock_skew: its clock is then that stale.
STALE_PAST_SKEW = (1.0, 3.0)


@dataclass
class Redemption:
    """One redemption in the history."""

    token_id: str
    worker: int
    first: bool
    """The token's first redemption, by the worker that minted it; else a replay."""
    minted: float
    """The wall clock when the token was minted."""
    at: float
    """The wall clock when the redemption was answered."""
    outcome: str
    """``ACCEPTED``, or the reason it was refused (``InvalidToken.reason``): ``replayed``,
    ``outside_memory`` (minted before the store's memory began), ``guard_unavailable`` (the store
    did not answer, or the terms differ), ... Every reason is a refusal."""


ACCEPTED = "accepted"
# The refusals the report counts apart: a replay, a token the store's memory cannot vouch for, an outage.
REFUSALS = (rs.Reason.REPLAYED.value, rs.Reason.OUTSIDE_MEMORY.value, rs.Reason.GUARD_UNAVAILABLE.value)


def _worker(
    index: int,
    url: str,
    deadline: float,
    offset: Synchronized[float],
    frozen: Synchronized[float],
    serving: Synchronized[int],
    shared: multiprocessing.Queue[tuple[str, str]],
    history: multiprocessing.Queue[list[Redemption]],
    seed: int,
) -> None:
    """Mint and redeem until ``deadline`` on a clock ``offset`` from the wall clock; report the history.

    While ``frozen`` is not 0, the worker's clock reads it: the time it read before it was paused.
    ``serving`` counts the workers whose tokens are accepted from now on.
    """
    chance = random.Random(seed)
    _quiet_logs()
    guard = _guard(url)
    codec = rs.Codec(
        KEY, mode="encrypted", ttl=TTL, guard=guard, clock=lambda: frozen.value or time.time() + offset.value
    )
    # A server begins its guard's memory at start, and serves once the tokens it mints (on its own
    # clock, which may run behind) are accepted: else its first flows are refused, and counted as
    # collateral of no fault.
    with contextlib.suppress(rs.GuardUnavailable):
        time.sleep(max(0.0, guard.begin() - (time.time() + offset.value)))
    with serving.get_lock():
        serving.value += 1
    records: list[Redemption] = []
    mine: list[tuple[str, str, float]] = []  # (token, id, minted) this worker redeemed
    in_flight: list[tuple[float, str, str, float]] = []  # a heap of (due, token, id, minted)

    def redeem(token: str, token_id: str, minted: float, first: bool) -> bool:
        return _redeem(codec, records, index, token, token_id, minted, first)

    def redeem_first(token: str, token_id: str, minted: float) -> None:
        if redeem(token, token_id, minted, first=True):
            mine.append((token, token_id, minted))
            if chance.random() < 0.3:
                with contextlib.suppress(queue.Full):
                    shared.put_nowait((token, json.dumps([token_id, minted])))

    while time.time() < deadline:
        minted = time.time()
        token, token_id = _mint(codec, index, len(records))
        if chance.random() < IN_FLIGHT:
            heapq.heappush(in_flight, (minted + chance.uniform(*IN_FLIGHT_SECONDS), token, token_id, minted))
        else:
            redeem_first(token, token_id, minted)
        while in_flight and in_flight[0][0] <= time.time():
            _, token, token_id, minted = heapq.heappop(in_flight)
            redeem_first(token, token_id, minted)
        if mine and chance.random() < 0.5:
            redeem(*chance.choice(mine[-500:]), first=False)
        with contextlib.suppress(queue.Empty):
            other, about = shared.get_nowait()
            other_id, other_minted = json.loads(about)
            redeem(other, other_id, other_minted, first=False)
        time.sleep(chance.random() * 0.004)  # the client's answer, a few milliseconds
    guard.close()
    history.put(records)


def _quiet_logs() -> None:
    """Each loss's warning (once per guard) and each broken connection's (the PostgreSQL pool's): quiet."""
    logging.getLogger("requeststate").setLevel(logging.ERROR)
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)


def _guard(url: str, clock_skew: int = DEFAULT_CLOCK_SKEW) -> RedisGuard | SQLiteGuard | PostgresGuard:
    """A worker's guard on the topology's store, from its guard URL: its Redis (``redis+cluster`` for
    a cluster), its SQLite file or its PostgreSQL database, with 0.5 s timeouts."""
    scheme = url.split(":", 1)[0]
    if scheme == "sqlite":
        return SQLiteGuard.from_url(url, timeout=0.5, clock_skew=clock_skew)
    if scheme == "postgresql":
        return PostgresGuard.from_url(url, timeout=0.5, clock_skew=clock_skew)
    return RedisGuard.from_url(url, timeout=0.5, clock_skew=clock_skew)


def _mint(codec: rs.Codec, worker: int, step: int) -> tuple[str, str]:
    """A fresh token, and the history's name for it."""
    token = codec.encode({"worker": worker, "step": step})
    return token, hashlib.sha256(token.encode()).hexdigest()[:24]


def _redeem(
    codec: rs.Codec,
    records: list[Redemption],
    worker: int,
    token: str,
    token_id: str,
    minted: float,
    first: bool,
) -> bool:
    """Redeem ``token`` through ``codec``, record it in ``records``; whether it was accepted."""
    try:
        codec.verify(token)
        outcome = ACCEPTED
    except rs.InvalidToken as refused:
        outcome = refused.reason.value
    records.append(Redemption(token_id, worker, first, minted, time.time(), outcome))
    return outcome == ACCEPTED


@dataclass
class Fault:
    """One fault the nemesis injected: what, when it began and ended, and when Redis lost claims."""

    kind: str
    began: float
    ended: float = 0.0
    lost: float | None = None
    """The wall clock when Redis forgot (a kill, a flush, the end of an eviction burst), if it did."""


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
            _signal(claimer, signal.SIGKILL)
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


@dataclass
class Run:
    """One topology's run: its history, the faults injected, and the checker's figures."""

    topology: str
    seconds: float
    history: list[Redemption]
    faults: list[Fault]
    mismatched: list[Redemption]
    """The claims of the verifiers whose settings differ from the namespace's: each must be refused."""

    def doubles(self) -> int:
        """Tokens accepted more than once: what single use forbids."""
        accepted = Counter(r.token_id for r in self.history if r.outcome == ACCEPTED)
        return sum(1 for count in accepted.values() if count > 1)

    def resume_times(self) -> list[float]:
        """For each loss, seconds from the loss until a token minted after it was accepted."""
        return [time for times in self.resume_by_fault().values() for time in times]

    def resume_by_fault(self) -> dict[str, list[float]]:
        """Per kind of fault, for each of its losses: seconds until a token minted after it was accepted."""
        firsts = sorted((r.at, r.minted) for r in self.history if r.first and r.outcome == ACCEPTED)
        times: dict[str, list[float]] = defaultdict(list)
        for fault in self.faults:
            if fault.lost is not None:
                after = [at for at, minted in firsts if minted > fault.lost]
                if after:
                    times[fault.kind].append(min(after) - fault.lost)
        return dict(times)

    def in_flight_by_fault(self) -> dict[str, tuple[int, int]]:
        """Per kind of fault: the tokens in flight at it, and how many of them were refused.

        A token is in flight at a fault when it was minted before the fault struck (its loss, or
        its beginning if it lost nothing) and first redeemed after: a refusal of it is the fault's
        collateral. A token in flight at several faults counts for the last.
        """
        table: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        strikes = sorted(
            (fault.began if fault.lost is None else fault.lost, fault.kind) for fault in self.faults
        )
        for record in self.history:
            struck = [kind for at, kind in strikes if record.minted < at <= record.at]
            if record.first and struck:
                row = table[struck[-1]]
                row[0] += 1
                row[1] += record.outcome != ACCEPTED
        return {kind: (row[0], row[1]) for kind, row in table.items()}

    def summary(self) -> dict[str, Any]:
        firsts = [r for r in self.history if r.first]
        refused = Counter(r.outcome for r in firsts if r.outcome != ACCEPTED)
        replays = [r for r in self.history if not r.first]
        resume = self.resume_times()
        return {
            "topology": self.topology,
            "seconds": round(self.seconds, 1),
            "redemptions": len(self.history),
            "first redemptions": len(firsts),
            "replays": len(replays),
            "replays accepted": sum(r.outcome == ACCEPTED for r in replays),
            "double redemptions": self.doubles(),
            "faults": dict(Counter(fault.kind for fault in self.faults)),
            "resume p50 s": round(statistics.median(resume), 1) if resume else None,
            "resume max s": round(max(resume), 1) if resume else None,
            "collateral": round(sum(refused.values()) / max(1, len(firsts)), 3),
            "first refused by reason": dict(refused),
            "refused by reason": self.refusals(),
            "mismatched claims": len(self.mismatched),
            "mismatched accepted": sum(r.outcome == ACCEPTED for r in self.mismatched),
        }

    def refusals(self) -> dict[str, int]:
        """Every redemption refused (first or replay), by reason: never counted as accepted."""
        return dict(Counter(r.outcome for r in self.history if r.outcome != ACCEPTED))

    def by_fault(self) -> dict[str, tuple[int, int]]:
        """Per kind of fault: replays after it of tokens accepted before it, and how many were accepted."""
        accepted_at: dict[str, float] = {}
        for record in sorted(self.history, key=lambda r: r.at):
            if record.outcome == ACCEPTED:
                accepted_at.setdefault(record.token_id, record.at)
        table: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        faults = sorted(self.faults, key=lambda f: f.began)
        for record in self.history:
            if record.first:
                continue
            before = [
                f for f in faults if accepted_at.get(record.token_id, float("inf")) < f.began <= record.at
            ]
            if before:
                row = table[before[-1].kind]
                row[0] += 1
                row[1] += record.outcome == ACCEPTED
        return {kind: (row[0], row[1]) for kind, row in table.items()}


def run(topology: str, seconds: float, workers: int, seed: int, say: Callable[[str], None]) -> Run:
    """Run one topology for ``seconds`` under the nemesis; its history and faults."""
    chance = random.Random(f"{seed}:{topology}")
    context = multiprocessing.get_context("spawn")
    with SETUPS[topology]() as target:
        offsets = [context.Value("d", chance.uniform(-OFFSET, OFFSET)) for _ in range(workers)]
        frozen = [context.Value("d", 0.0) for _ in range(workers)]
        serving = context.Value("i", 0)
        shared: Any = context.Queue(maxsize=2_000)
        history: Any = context.Queue()
        began = time.time()
        deadline = began + seconds + 2 + DEFAULT_CLOCK_SKEW  # the workers' start-up
        processes = [
            context.Process(
                target=_worker,
                args=(
                    index,
                    target.url,
                    deadline,
                    offsets[index],
                    frozen[index],
                    serving,
                    shared,
                    history,
                    seed + index,
                ),
                daemon=True,
            )
            for index in range(workers)
        ]
        for process in processes:
            process.start()
        faults: list[Fault] = []
        mismatched: list[Redemption] = []
        # The workers begin the store's memory, and serve once it accepts their tokens: the faults
        # begin then (a spawned worker's imports alone take seconds on a loaded machine).
        starting = time.monotonic()
        while serving.value < workers and time.monotonic() - starting < 60:
            time.sleep(0.1)
        time.sleep(1.0)
        kinds = FAULTS[topology] + WORKER_FAULTS
        leading = list(FAULTS[topology]) if topology in OWN_FAULTS_FIRST else []
        while time.time() + 6 + DEFAULT_CLOCK_SKEW + STALE_PAST_SKEW[1] < deadline:
            in_turn = bool(leading)
            kind = leading.pop(0) if in_turn else chance.choice(kinds)
            fault = Fault(kind, time.time())
            if kind == "clock":
                offsets[chance.randrange(workers)].value = chance.uniform(-OFFSET, OFFSET)
            elif kind == "paused-verifier":
                fault.lost = _paused_verifier(target, processes, offsets, frozen, chance)
            elif kind == "mismatched-verifier":
                mismatched += _mismatched_verifier(target, chance)
            else:
                fault.lost = target.inject[kind](chance)
            fault.ended = time.time()
            faults.append(fault)
            say(f"  {topology}: {kind} at +{fault.began - began:.1f} s ({fault.ended - fault.began:.1f} s)")
            # Apart by more than the window a loss opens (clock_skew), so that each loss's resume
            # time is its own; now and then sooner, so that faults also overlap. The leading faults
            # just past that window, so that a 40 s run has each.
            gap = DEFAULT_CLOCK_SKEW + 2.0 if in_turn else chance.uniform(2.0, 3.0 * DEFAULT_CLOCK_SKEW)
            time.sleep(min(gap, max(0.0, deadline - time.time())))  # none past the workers' end
        records: list[Redemption] = []
        for _ in processes:
            records += history.get(timeout=60)
        for process in processes:
            process.join(timeout=10)
        shared.cancel_join_thread()
    return Run(topology, time.time() - began, records, faults, mismatched)


def _paused_verifier(
    target: Target,
    processes: Sequence[BaseProcess],
    offsets: list[Synchronized[float]],
    frozen: list[Synchronized[float]],
    chance: random.Random,
) -> float:
    """A worker stopped right after it read its clock, resumed as the first to claim after a ``FLUSHALL``.

    While it is stopped, the others mint and redeem for longer than ``clock_skew``: the tokens
    a marker dated by its stale clock would take for minted after the loss. The time of the flush.
    """
    victim = chance.randrange(len(processes))
    frozen[victim].value = time.time() + offsets[victim].value
    _signal(processes[victim], signal.SIGSTOP)
    others = [process for index, process in enumerate(processes) if index != victim]
    try:
        time.sleep(DEFAULT_CLOCK_SKEW + chance.uniform(*STALE_PAST_SKEW))
        for process in others:
            _signal(process, signal.SIGSTOP)
        lost = target.inject["flushall"](chance)
        assert lost is not None
    finally:
        _signal(processes[victim], signal.SIGCONT)
        time.sleep(0.5)  # its next claims, with the clock it read before it stopped, come first
        for process in others:
            _signal(process, signal.SIGCONT)
    time.sleep(1.0)
    frozen[victim].value = 0.0
    return lost


def _signal(process: BaseProcess, number: signal.Signals) -> None:
    if process.pid is not None:
        with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
            os.kill(process.pid, number)


def _mismatched_verifier(target: Target, chance: random.Random) -> list[Redemption]:
    """For 1 to 3 s, a verifier with another leeway (or clock_skew) than the namespace's mints and redeems."""
    leeway, skew = (60, DEFAULT_CLOCK_SKEW) if chance.random() < 0.5 else (0, 0)
    guard = _guard(target.url, clock_skew=skew)
    codec = rs.Codec(KEY, mode="encrypted", ttl=TTL, leeway=leeway, guard=guard)
    records: list[Redemption] = []
    end = time.time() + chance.uniform(1.0, 3.0)
    try:
        while time.time() < end:
            minted = time.time()
            token, token_id = _mint(codec, MISMATCHED, len(records))
            _redeem(codec, records, MISMATCHED, token, token_id, minted, first=True)
            time.sleep(chance.random() * 0.004)
    finally:
        guard.close()
    return records


def report(runs: list[Run]) -> str:
    """The history summary as Markdown tables."""
    lines = [
        "| topology | s | redemptions | replays | replays accepted | double redemptions | faults "
        "| resume p50 / max s | collateral | mismatched verifier: accepted of claims "
        f"| refused: {' / '.join(REFUSALS)} / other |",
        "|---|---:|---:|---:|---:|---:|---|---|---:|---:|---|",
    ]
    for one in runs:
        s = one.summary()
        faults = ", ".join(f"{kind} {count}" for kind, count in sorted(s["faults"].items()))
        lines.append(
            f"| {s['topology']} | {s['seconds']} | {s['redemptions']:,} | {s['replays']:,} "
            f"| {s['replays accepted']:,} | **{s['double redemptions']}** | {faults} "
            f"| {s['resume p50 s']} / {s['resume max s']} | {s['collateral']:.1%} "
            f"| {s['mismatched accepted']} of {s['mismatched claims']:,} "
            f"| {_by_reason(s['refused by reason'])} |"
        )
    lines += [
        "",
        "| topology | fault | injected | resume p50 / max s | in flight at it: refused of tokens "
        "| replays of tokens accepted before it | accepted again |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    for one in runs:
        injected = Counter(fault.kind for fault in one.faults)
        resume, in_flight, replayed = one.resume_by_fault(), one.in_flight_by_fault(), one.by_fault()
        for kind in sorted(injected):
            times = resume.get(kind, [])
            resumed = f"{statistics.median(times):.1f} / {max(times):.1f}" if times else "-"
            tokens, refused = in_flight.get(kind, (0, 0))
            replays, again = replayed.get(kind, (0, 0))
            lines.append(
                f"| {one.topology} | {kind} | {injected[kind]} | {resumed} | {refused:,} of {tokens:,} "
                f"| {replays:,} | {again} |"
            )
    return "\n".join(lines)


def _by_reason(refused: dict[str, int]) -> str:
    counts = [refused.get(reason, 0) for reason in REFUSALS]
    counts.append(sum(refused.values()) - sum(counts))
    return " / ".join(f"{count:,}" for count in counts)


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.nemesis", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--seconds", type=float, default=40.0, help="how long each topology runs (default 40)"
    )
    parser.add_argument("--workers", type=int, default=4, help="worker processes (default 4)")
    parser.add_argument("--seed", type=int, default=1, help="the nemesis's seed (default 1)")
    parser.add_argument("--topology", action="append", choices=TOPOLOGIES, help="one topology (repeatable)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--mcp", action="store_true", help="over real MCP flows: scripts/mcp_nemesis/run.py")
    args = parser.parse_args(argv)
    if args.mcp:
        from scripts.mcp_nemesis import run as mcp_run  # it imports this module

        return mcp_run.main(
            args.topology or list(TOPOLOGIES), args.seconds, args.workers, args.seed, args.json
        )
    _quiet_logs()  # the mismatched verifiers' guards run here
    runs = []
    for topology in args.topology or TOPOLOGIES:
        say(f"nemesis: {topology}, {args.seconds:g} s, {args.workers} workers, seed {args.seed}")
        runs.append(run(topology, args.seconds, args.workers, args.seed, say))
    print(report(runs))
    if args.json:
        with open(args.json, "w") as out:
            figures = [
                {
                    **one.summary(),
                    "by fault": one.by_fault(),
                    "resume by fault": one.resume_by_fault(),
                    "in flight by fault": one.in_flight_by_fault(),
                }
                for one in runs
            ]
            json.dump(figures, out, indent=2)
    doubles = sum(one.doubles() for one in runs)
    print(f"\n{doubles} double redemptions in {sum(len(one.history) for one in runs):,} redemptions")
    return 1 if doubles else 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
