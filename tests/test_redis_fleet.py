"""RedisGuard across a fleet: a Redis Cluster, a master with a replica, outages, failovers and load.

Every server is a real redis-server on loopback, started by support/redis_server.py.
A double redemption is an id accepted (claimed ``True``) twice: once before a
failure, once by the server that took over.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from itertools import islice
from typing import Any

import pytest
import redis.asyncio.cluster
import redis.cluster

import requeststate as rs
from requeststate import GuardUnavailable, InvalidToken
from requeststate.redis import CLUSTER_BUCKETS, AsyncRedisGuard, RedisGuard, claim_location

from .support import redis_server
from .support.redis_guards import FLAVOURS, OUTSIDE_MEMORY, build, minted, outcome
from .support.redis_server import Cluster, Replicated, Server, cluster_url

NOW = 2_000_000_000
BEGUN = NOW - 60
ID = minted(NOW)
# For a claim that must succeed: it returns as soon as it is answered, and a loaded 2-core
# machine can hold a server back past the default 250 ms.
PATIENT_SECONDS = 5.0
RACE_PROCESSES = 4
RACE_SECONDS = 300.0  # a bound against a hang, not a timing: the load volume took 102 to 115 s alone


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    # Three masters, each with a replica; the tests that kill a node build their own.
    with redis_server.or_skip(redis_server.running_cluster(masters=3, replicas=1)) as running:
        yield running


@pytest.fixture
def namespace() -> str:
    return f"test-{uuid.uuid4().hex}"


@pytest.fixture
def cluster_guard(cluster: Cluster, namespace: str) -> Iterator[RedisGuard]:
    guard = RedisGuard.from_url(cluster_url(cluster), namespace=namespace, timeout=PATIENT_SECONDS)
    guard.begin(BEGUN)
    yield guard
    guard.close()


@pytest.fixture
def replicated() -> Iterator[Replicated]:
    with redis_server.or_skip(redis_server.running_replicated()) as running:
        yield running


@pytest.fixture
def cuttable() -> Iterator[Replicated]:
    with redis_server.or_skip(redis_server.running_replicated(cuttable=True)) as running:
        yield running


def fresh_ids(count: int, at: int = NOW) -> list[rs.ClaimId]:
    return [minted(at) for _ in range(count)]


def bucket_of(namespace: str, token_id: rs.ClaimId) -> str:
    return claim_location(namespace, token_id, CLUSTER_BUCKETS).key


def id_on(cluster: Cluster, namespace: str, master: Server, at: int = NOW) -> rs.ClaimId:
    """An id, of a token minted at ``at``, whose claim lives on ``master``."""
    return next(
        token_id
        for token_id in iter(lambda: minted(at), None)
        if cluster.master_of(bucket_of(namespace, token_id)) == master
    )


def holds(server: Server, namespace: str, token_id: rs.ClaimId, buckets: int = 1) -> bool:
    """Whether ``server`` (a replica included: READONLY) holds the claim of ``token_id``."""
    key, member = claim_location(namespace, token_id, buckets)
    client = server.client()
    try:
        if buckets > 1:
            client.execute_command("READONLY")  # type: ignore[no-untyped-call]  # untyped in redis-py
        return client.zscore(key, member) is not None
    finally:
        client.close()


def redeem_again(url: str, namespace: str, accepted: list[rs.ClaimId]) -> int:
    """How many ids accepted before a failover the server that took over (at guard URL ``url``) accepts again.

    The guard is a new one, as in a process started after the failover: it never saw the store.
    """
    guard = RedisGuard.from_url(url, namespace=namespace, timeout=PATIENT_SECONDS)
    try:
        return sum(outcome(guard, token_id, NOW + 300, NOW + 10) is True for token_id in accepted)
    finally:
        guard.close()


# --- Redis Cluster --------------------------------------------------------------------------------


def test_cluster_first_claim_wins_and_second_is_a_replay(
    cluster: Cluster, cluster_guard: RedisGuard, namespace: str
) -> None:
    # The replay through another guard: the first refuses a replay of its own claim without asking.
    other = RedisGuard.from_url(cluster_url(cluster), namespace=namespace, timeout=PATIENT_SECONDS)
    try:
        assert [cluster_guard.claim(ID, NOW + 300, NOW), other.claim(ID, NOW + 300, NOW)] == [True, False]
    finally:
        other.close()


def test_cluster_spreads_claims_over_every_master(
    cluster: Cluster, cluster_guard: RedisGuard, namespace: str
) -> None:
    for token_id in fresh_ids(60):
        cluster_guard.claim(token_id, NOW + 300, NOW)

    def claims_on(master: Server) -> int:
        # Each bucket holds its marker (begun in every bucket) and its claims.
        client = master.client()
        try:
            return sum(client.zcard(key) - 1 for key in client.scan_iter(match=f"{namespace}:claims:*"))
        finally:
            client.close()

    held = [claims_on(master) for master in cluster.masters]
    assert sum(held) == 60
    assert min(held) > 0, held


def test_cluster_guard_on_an_existing_client(cluster: Cluster, namespace: str) -> None:
    # Two guards on the client: a guard refuses a replay of its own claim without asking Redis.
    client = redis.cluster.RedisCluster(host="127.0.0.1", port=cluster.masters[1].port)
    guard, other = RedisGuard(client, namespace=namespace), RedisGuard(client, namespace=namespace)
    try:
        guard.begin(BEGUN)
        assert [guard.claim(ID, NOW + 300, NOW), other.claim(ID, NOW + 300, NOW)] == [True, False]
    finally:
        guard.close()


def test_async_cluster_concurrent_claims_of_each_id_win_once(cluster: Cluster, namespace: str) -> None:
    ids = fresh_ids(20)

    async def claims() -> list[bool]:
        guard = AsyncRedisGuard.from_url(cluster_url(cluster), namespace=namespace, timeout=PATIENT_SECONDS)
        try:
            await guard.begin(BEGUN)
            return await asyncio.gather(*(guard.claim(i, NOW + 300, NOW) for i in ids * 5))
        finally:
            await guard.aclose()

    won = asyncio.run(claims())
    assert Counter(token_id for token_id, claimed in zip(ids * 5, won, strict=True) if claimed) == Counter(
        ids
    )


def test_async_cluster_guard_on_an_existing_client(cluster: Cluster, namespace: str) -> None:
    async def claims() -> list[bool]:
        # Two guards on the client: a guard refuses a replay of its own claim without asking Redis.
        client = redis.asyncio.cluster.RedisCluster.from_url(cluster.url)
        guard, other = (
            AsyncRedisGuard(client, namespace=namespace),
            AsyncRedisGuard(client, namespace=namespace),
        )
        try:
            await guard.begin(BEGUN)
            return [await guard.claim(ID, NOW + 300, NOW), await other.claim(ID, NOW + 300, NOW)]
        finally:
            await guard.aclose()

    assert asyncio.run(claims()) == [True, False]


def test_cluster_paused_master_fails_closed_for_its_keys_only(cluster: Cluster, namespace: str) -> None:
    paused = cluster.masters[0]
    on_paused = id_on(cluster, namespace, paused)
    elsewhere = id_on(cluster, namespace, cluster.masters[1])
    guard = RedisGuard.from_url(cluster_url(cluster), namespace=namespace, timeout=0.5)
    guard.begin(BEGUN)
    paused.pause()
    try:
        with pytest.raises(GuardUnavailable, match="TimeoutError"):
            guard.claim(on_paused, NOW + 300, NOW)
        assert guard.claim(elsewhere, NOW + 300, NOW) is True
    finally:
        paused.resume()
        guard.close()


def test_cluster_failover_lets_no_token_be_redeemed_again_without_waiting_for_replicas(
    namespace: str,
) -> None:
    # Before the marker: a claim the replica had not copied was lost in the failover, and a process
    # that never saw the store accepted its replay. The promoted replica's memory is another's
    # (run_id), so every token minted before it began is refused: WAIT adds nothing.
    with redis_server.or_skip(redis_server.running_cluster(masters=3, replicas=1)) as own:
        victim = own.masters[0]
        ids = [id_on(own, namespace, victim) for _ in range(20)]
        # The first claims after the failover find the new master and begin its memory (at NOW + 10);
        # the tokens minted later are served.
        finding = [id_on(own, namespace, victim, NOW + 10) for _ in range(5)]
        later = [id_on(own, namespace, victim, NOW + 20) for _ in range(10)]
        successor = own.replica_of(victim)

        def fail_over() -> None:
            victim.kill()
            successor.execute("CLUSTER", "FAILOVER", "TAKEOVER")
            redis_server.wait_until(
                lambda: successor.execute("INFO", "replication")["role"] == "master", "no takeover"
            )

        async def scenario() -> tuple[list[rs.ClaimId], list[bool | str], list[bool | str]]:
            options: dict[str, Any] = {"namespace": namespace, "timeout": PATIENT_SECONDS}
            before = RedisGuard.from_url(cluster_url(own), **options)
            before.begin(BEGUN)
            accepted = [token_id for token_id in ids if before.claim(token_id, NOW + 300, NOW)]
            before.close()
            # Both guards read the slot map before the failover, and must find the new master after.
            after = RedisGuard.from_url(cluster_url(own), **options)
            aafter = AsyncRedisGuard.from_url(cluster_url(own), **options)
            with contextlib.suppress(GuardUnavailable):  # it reads the slot map at its first claim
                await aafter.claim(id_on(own, namespace, own.masters[1]), NOW + 300, NOW)
            fail_over()
            for token_id in finding:
                outcome(after, token_id, NOW + 310, NOW + 10)
            outcomes = [outcome(after, token_id, NOW + 320, NOW + 20) for token_id in later[:5]]
            aoutcomes: list[bool | str] = []
            for token_id in later[5:]:
                try:
                    aoutcomes.append(await aafter.claim(token_id, NOW + 320, NOW + 20))
                except GuardUnavailable as error:
                    aoutcomes.append(str(error))
                except InvalidToken as refused:
                    aoutcomes.append(refused.reason)
            after.close()
            await aafter.aclose()
            return accepted, outcomes, aoutcomes

        accepted, outcomes, aoutcomes = asyncio.run(scenario())
        assert len(accepted) == 20
        # The guards found the new master (the first claims failed closed while they reread the slot map).
        assert (outcomes[-1], aoutcomes[-1]) == (True, True), (outcomes, aoutcomes)
        assert redeem_again(cluster_url(successor), namespace, accepted) == 0


def node_id(server: Server) -> str:
    return str(server.execute("CLUSTER", "MYID").decode())


def migrate_slot(cluster: Cluster, key: str, target: Server) -> None:
    """Move ``key``'s slot, with its keys, to ``target``, as ``redis-cli --cluster reshard`` does."""
    source = cluster.master_of(key)
    slot = source.execute("CLUSTER", "KEYSLOT", key)
    target.execute("CLUSTER", "SETSLOT", slot, "IMPORTING", node_id(source))
    source.execute("CLUSTER", "SETSLOT", slot, "MIGRATING", node_id(target))
    keys = source.execute("CLUSTER", "GETKEYSINSLOT", slot, 1000)
    source.execute("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", *keys)
    for master in cluster.masters:
        master.execute("CLUSTER", "SETSLOT", slot, "NODE", node_id(target))


def test_a_slot_migrated_to_another_master_refuses_every_token_redeemed_before(namespace: str) -> None:
    # MIGRATE moves a set of claims with its marker, which names the master it left: on the
    # master it reached, that memory is another's, a loss. The claims came along: their replays
    # are replays; a token minted before and redeemed nowhere is refused as minted before the loss.
    with redis_server.or_skip(redis_server.running_cluster(masters=3)) as own:
        source, target = own.masters[0], own.masters[1]
        first = id_on(own, namespace, source)
        bucket = bucket_of(namespace, first)
        others = (
            token_id
            for token_id in iter(lambda: minted(NOW), None)
            if bucket_of(namespace, token_id) == bucket
        )
        ids = [first, *islice(others, 2)]
        guard = RedisGuard.from_url(cluster_url(own), namespace=namespace, timeout=PATIENT_SECONDS)
        try:
            guard.begin(BEGUN)
            assert [guard.claim(token_id, NOW + 300, NOW) for token_id in ids] == [True] * 3
        finally:
            guard.close()
        migrate_slot(own, bucket, target)
        later = RedisGuard.from_url(cluster_url(own), namespace=namespace, timeout=PATIENT_SECONDS)
        try:
            replays = [outcome(later, token_id, NOW + 300, NOW + 10) for token_id in ids]
            unredeemed = outcome(later, next(others), NOW + 300, NOW + 10)
        finally:
            later.close()
        assert (own.master_of(bucket), replays, unredeemed) == (target, [False] * 3, OUTSIDE_MEMORY)


# RACE_PROCESSES claims of each id: 4,000 in make test, which proves exactly-once over every master
# in seconds; the load volume, 100,000, runs under make nemesis (pytest -m load).
@pytest.mark.parametrize(
    "count",
    [pytest.param(1_000, id="4000-claims"), pytest.param(25_000, id="100000-claims", marks=pytest.mark.load)],
)
def test_processes_racing_on_the_cluster_claim_each_id_exactly_once(
    cluster: Cluster, namespace: str, count: int
) -> None:
    ids = fresh_ids(count)
    won = redis_server.race(
        cluster_url(cluster), namespace, ids, processes=RACE_PROCESSES, seconds=RACE_SECONDS
    )
    assert Counter(won) == Counter(ids)


# --- a master and its replica ---------------------------------------------------------------------


def test_master_dying_behind_a_cut_replica_link_lets_no_token_be_redeemed_again_without_wait(
    cuttable: Replicated, namespace: str
) -> None:
    # The replica falls behind (its link is cut), the master keeps answering, then dies and the
    # replica is promoted. Before the marker, every claim made after the cut was redeemable again
    # (10 of 10) unless each claim waited for the replica (WAIT): the promoted replica is another
    # server, so its memory begins again, and nothing needs WAIT.
    guard = RedisGuard.from_url(cuttable.master.url, namespace=namespace, timeout=PATIENT_SECONDS)
    guard.begin(BEGUN)
    before, after = fresh_ids(20), fresh_ids(10)
    accepted = [token_id for token_id in before if guard.claim(token_id, NOW + 300, NOW)]
    guard.close()
    redis_server.wait_for_sync(cuttable)
    assert cuttable.link is not None
    cuttable.link.cut()
    guard = RedisGuard.from_url(cuttable.master.url, namespace=namespace, timeout=PATIENT_SECONDS)
    outcomes = [outcome(guard, token_id, NOW + 300, NOW) for token_id in after]
    accepted += [token_id for token_id, claimed in zip(after, outcomes, strict=True) if claimed is True]
    guard.close()
    cuttable.master.kill()
    redis_server.promote(cuttable.replica)
    assert (outcomes, redeem_again(cuttable.replica.url, namespace, accepted)) == ([True] * 10, 0)


def flood(guard: RedisGuard, kill: Server, threads: int = 4) -> tuple[list[rs.ClaimId], Counter[str]]:
    """Claim fresh ids from ``threads`` threads; SIGKILL ``kill`` once 400 are accepted.

    The threads stop after 50 attempts made once the server was dead.

    Returns the accepted ids and a count of every outcome after the kill.
    """
    accepted: list[rs.ClaimId] = []
    after_kill: Counter[str] = Counter()
    killed = threading.Event()
    lock = threading.Lock()

    def claimer() -> None:
        while sum(after_kill.values()) < 50:
            token_id = minted(NOW)
            dead = killed.is_set()
            try:
                outcome = "accepted" if guard.claim(token_id, NOW + 300, NOW) else "replay"
            except GuardUnavailable:
                outcome = "unavailable"
            with lock:
                if outcome == "accepted":
                    accepted.append(token_id)
                if dead:
                    after_kill[outcome] += 1

    workers = [threading.Thread(target=claimer) for _ in range(threads)]
    for worker in workers:
        worker.start()
    redis_server.wait_until(lambda: len(accepted) >= 400, "the flood did not start", seconds=30)
    kill.kill()
    killed.set()
    for worker in workers:
        worker.join(timeout=30)
    return accepted, after_kill


def test_master_killed_mid_flood_fails_closed_and_lets_no_token_be_redeemed_again(
    replicated: Replicated, namespace: str
) -> None:
    guard = RedisGuard.from_url(replicated.master.url, namespace=namespace, timeout=PATIENT_SECONDS)
    guard.begin(BEGUN)
    accepted, after_kill = flood(guard, replicated.master)
    guard.close()
    redis_server.promote(replicated.replica)
    doubles = redeem_again(replicated.replica.url, namespace, accepted)
    assert set(after_kill) == {"unavailable"}, after_kill
    assert (len(accepted) >= 400, doubles) == (True, 0)


# --- the network to Redis cut (a paused redis-server) ---------------------------------------------


def test_paused_master_fails_closed_after_the_timeout(replicated: Replicated, namespace: str) -> None:
    guard = RedisGuard.from_url(replicated.master.url, namespace=namespace, timeout=0.2)
    guard.begin(BEGUN)
    guard.claim(ID, NOW + 300, NOW)
    replicated.master.pause()
    try:
        with pytest.raises(GuardUnavailable, match="TimeoutError"):
            guard.claim(fresh_ids(1)[0], NOW + 300, NOW)
    finally:
        replicated.master.resume()
    # Redis answers again: a fresh claim reaches it (a replay of ID this guard refuses by itself).
    assert guard.claim(fresh_ids(1)[0], NOW + 300, NOW) is True
    guard.close()


def test_async_paused_master_fails_closed_after_the_timeout(replicated: Replicated, namespace: str) -> None:
    async def claim() -> bool:
        guard = AsyncRedisGuard.from_url(replicated.master.url, namespace=namespace, timeout=0.2)
        try:
            return await guard.claim(ID, NOW + 300, NOW)
        finally:
            await guard.aclose()

    replicated.master.pause()
    try:
        with pytest.raises(GuardUnavailable, match=r"^Redis did not record the claim \(TimeoutError\)$"):
            asyncio.run(claim())
    finally:
        replicated.master.resume()


# --- a store that forgot: a failover to an empty replica, a cluster master flushed ------------------


def test_a_failover_to_an_empty_replica_refuses_every_token_redeemed_before(
    cuttable: Replicated, namespace: str
) -> None:
    # The replica is cut off before the first claim: promoted, it holds none of them, nor the marker.
    # The guard knows one address (a virtual IP), which the failover points at the promoted replica.
    assert cuttable.link is not None
    cuttable.link.cut()
    front = redis_server.Link(cuttable.master.port)
    guard = RedisGuard.from_url(front.url, namespace=namespace, timeout=PATIENT_SECONDS)
    # A guard that saw the memory too, but claimed none of them: the first refuses them by itself.
    replayer = RedisGuard.from_url(front.url, namespace=namespace, timeout=PATIENT_SECONDS)
    ids = fresh_ids(5)
    try:
        guard.begin(BEGUN)
        replayer.begin(BEGUN)
        first = [outcome(guard, token_id, NOW + 300, NOW) for token_id in ids]
        cuttable.master.kill()
        redis_server.promote(cuttable.replica)
        front.point_at(cuttable.replica.port)
        replays = [outcome(replayer, token_id, NOW + 300, NOW + 5) for token_id in ids]
    finally:
        guard.close()
        replayer.close()
        front.close()
    assert (first, replays) == ([True] * 5, [OUTSIDE_MEMORY] * 5)


def test_a_failback_onto_a_detached_replicas_copy_refuses_every_token_redeemed_since(
    replicated: Replicated, namespace: str
) -> None:
    # F4: the replica is detached (its copy holds the marker, none of the claims below); then the
    # master is made its replica, which replaces the master's dataset with that copy, and is
    # promoted back. Its run_id is unchanged. Before, without WAIT, 20 of 20 replays were
    # accepted; the marker names master_replid too, which the resync changed.
    master, replica = replicated.master, replicated.replica
    guard = RedisGuard.from_url(master.url, namespace=namespace, timeout=PATIENT_SECONDS)
    ids = fresh_ids(20)
    try:
        guard.begin(BEGUN)
        redis_server.wait_for_sync(replicated)
        redis_server.promote(replica)
        assert [guard.claim(token_id, NOW + 300, NOW) for token_id in ids] == [True] * 20
    finally:
        guard.close()
    run_id = master.execute("INFO", "server")["run_id"]
    master.execute("REPLICAOF", "127.0.0.1", replica.port)
    redis_server.wait_until(
        lambda: master.execute("INFO", "replication").get("master_link_status") == "up", "no resync"
    )
    redis_server.promote(master)
    later = RedisGuard.from_url(master.url, namespace=namespace, timeout=PATIENT_SECONDS)
    try:
        replays = [outcome(later, token_id, NOW + 300, NOW + 10) for token_id in ids]
    finally:
        later.close()
    assert (master.execute("INFO", "server")["run_id"], replays) == (run_id, [OUTSIDE_MEMORY] * 20)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_cluster_master_that_forgot_refuses_every_token_redeemed_before(
    cluster: Cluster, namespace: str, flavour: str
) -> None:
    guard = build(flavour, cluster_url(cluster), namespace=namespace, timeout=PATIENT_SECONDS)
    guard.begin(BEGUN)
    # A guard that saw the memory too, but claimed none of them: the first refuses them by itself.
    replayer = build(flavour, cluster_url(cluster), namespace=namespace, timeout=PATIENT_SECONDS)
    replayer.begin(BEGUN)
    forgetful = cluster.masters[0]
    ids = [id_on(cluster, namespace, master) for master in cluster.masters for _ in range(5)]
    try:
        assert [guard.claim(token_id, NOW + 300, NOW) for token_id in ids] == [True] * 15
        forgetful.execute("FLUSHALL")  # its replica follows
        replays = [outcome(replayer, token_id, NOW + 300, NOW + 5) for token_id in ids]
    finally:
        guard.close()
        replayer.close()
    # Its ids find no claim and are refused for the loss; the others are replays of claims still held.
    assert replays == [OUTSIDE_MEMORY] * 5 + [False] * 10, replays


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_whole_cluster_flushed_refuses_every_replay_through_a_process_that_never_claimed(
    cluster: Cluster, namespace: str, flavour: str
) -> None:
    # Before: a process that had not claimed in a slot before the loss accepted its replays (19 of 200).
    first = build(flavour, cluster_url(cluster), namespace=namespace, timeout=PATIENT_SECONDS)
    ids = fresh_ids(60)
    try:
        first.begin(BEGUN)
        assert [first.claim(token_id, NOW + 300, NOW) for token_id in ids] == [True] * 60
    finally:
        first.close()
    for master in cluster.masters:
        master.execute("FLUSHALL")
    second = build(flavour, cluster_url(cluster), namespace=namespace, timeout=PATIENT_SECONDS)
    try:
        replays = Counter(outcome(second, token_id, NOW + 300, NOW + 5) for token_id in ids)
        # The first replay began every bucket's memory again (at NOW + 5): a token minted later is served.
        fresh = outcome(second, minted(NOW + 11), NOW + 311, NOW + 11)
    finally:
        second.close()
    assert (replays, fresh) == ({OUTSIDE_MEMORY: 60}, True)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_begin_on_a_cluster_looks_for_claims_of_0_3_on_every_master(
    cluster: Cluster, namespace: str, caplog: pytest.LogCaptureFixture, flavour: str
) -> None:
    # One claim, on the master its slot names: a look at one master alone misses it, 2 times in 3.
    claim = f"{namespace}:{hashlib.sha256(b'a 0.3 claim').hexdigest()}"
    cluster.master_of(claim).execute("SET", claim, "1", "EX", "60")
    guard = build(flavour, cluster_url(cluster), namespace=namespace)
    try:
        guard.begin()
    finally:
        guard.close()
    warned = [record.getMessage() for record in caplog.records if record.name == "requeststate.redis"]
    assert [
        message.startswith("Redis holds claims of requeststate 0.3 in namespace") for message in warned
    ] == [True]
