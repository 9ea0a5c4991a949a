"""The contract every replay guard passes, as Django's ``BaseCacheTests`` runs against every cache.

Each store (memory; the SQLite file, Redis, a Redis Cluster and PostgreSQL, each sync and
asyncio) is a ``Store`` below: how to build its guard, make it forget, and make it stop
answering. Every test runs on every store; a store is added by adding a ``Store``.
The rules behind the answers are tested once, in tests/test_ledger.py. Exactly-once
redemptions (``redeem`` and ``keep``: the answer kept with the claim) are part of the contract.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import requeststate as rs
from requeststate.postgres import AsyncPostgresGuard, PostgresGuard
from requeststate.redis import AsyncRedisGuard, RedisGuard
from requeststate.sqlite import AsyncSQLiteGuard, SQLiteGuard
from scripts.redis_servers import Server, running_cluster
from tests.support import postgres_server, redis_server

KEYS = secrets.token_bytes(32)


class OnALoop:
    """An asyncio guard called from sync code, on an event loop of its own."""

    def __init__(self, guard: Any) -> None:
        self.guard = guard
        self._loop = asyncio.new_event_loop()
        self._lock = threading.Lock()  # one loop, called from the race's threads one at a time

    def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        with self._lock:
            return bool(self._loop.run_until_complete(self.guard.claim(claimed, expires_at, now)))

    def begin(self, now: int | None = None) -> int:
        with self._lock:
            return int(self._loop.run_until_complete(self.guard.begin(now)))

    def redeem(
        self, claimed: rs.ClaimId, expires_at: int, now: int, request: str, lease_until: int, /
    ) -> str | None:
        with self._lock:
            kept: str | None = self._loop.run_until_complete(
                self.guard.redeem(claimed, expires_at, now, request, lease_until)
            )
            return kept

    def keep(self, claimed: rs.ClaimId, request: str, answer: str, /) -> None:
        with self._lock:
            self._loop.run_until_complete(self.guard.keep(claimed, request, answer))

    def close(self) -> None:
        self._loop.run_until_complete(self.guard.aclose())
        self._loop.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.guard, name)


@dataclass
class Store:
    """A store under the contract: its guards, and the faults it can be put through."""

    name: str
    build: Callable[..., Any]
    """A guard on the store (``namespace``, ``clock_skew`` and ``timeout`` by keyword)."""
    forget: Callable[[], None]
    """Make the store lose its memory of the claims (for memory: the process restarts)."""
    silent: Callable[[], contextlib.AbstractContextManager[Any]] | None
    """A guard on a store that does not answer (``None``: no I/O to wait for)."""
    shared: bool = True
    """Whether two guards built alike share their claims (processes of one fleet)."""


def close(guard: Any) -> None:
    closer = getattr(guard, "close", None)
    if callable(closer):
        closer()


@pytest.fixture(scope="module")
def redis_server_running() -> Iterator[Server]:
    with redis_server.or_skip(redis_server.running_server()) as server:
        yield server


@pytest.fixture(scope="module")
def postgres_running() -> Iterator[postgres_server.Server]:
    with postgres_server.servers_or_skip() as servers:
        yield servers.primary()


@pytest.fixture(scope="module")
def cluster_url() -> Iterator[str]:
    with redis_server.or_skip(running_cluster(masters=3)) as cluster:
        yield redis_server.cluster_url(cluster).replace("redis://", "redis+cluster://")


def memory_store() -> Store:
    # A monotonic clock that runs with the tests' jumps of `now`, so that purging follows them.
    ticks = itertools.count(step=10_000)
    built: list[rs.MemoryGuard] = []
    restarted = False

    def build(**options: Any) -> rs.MemoryGuard:
        options.pop("namespace", None)
        options.pop("timeout", None)
        if built:
            return built[-1]
        # A restarted process's memory begins when it starts: a second after the test's `now` (the
        # first second its guard accepted), as if it restarted then, rather than wait for it.
        offset = 1.0 if restarted else 0.0
        guard = rs.MemoryGuard(
            clock=lambda: time.time() + offset, monotonic=lambda: float(next(ticks)), **options
        )
        built.append(guard)
        return guard

    def forget() -> None:
        nonlocal restarted
        built.clear()
        restarted = True

    return Store("memory", build, forget, None, shared=False)


def sqlite_store(tmp_path: Path, flavour: str) -> Store:
    path = tmp_path / f"claims-{uuid.uuid4().hex}.db"
    kind = SQLiteGuard if flavour == "sync" else AsyncSQLiteGuard

    def build(**options: Any) -> Any:
        guard = kind(path, **options)
        return guard if flavour == "sync" else OnALoop(guard)

    def forget() -> None:
        path.unlink()

    @contextlib.contextmanager
    def silent() -> Iterator[Any]:
        guard = build(timeout=0.2)
        guard.begin()
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as holder:
            holder.execute("BEGIN EXCLUSIVE")  # another process holds the file's lock
            yield guard
            holder.execute("ROLLBACK")
        close(guard)

    return Store(f"sqlite-{flavour}", build, forget, silent)


@contextlib.contextmanager
def unanswered_port() -> Iterator[int]:
    """A loopback port whose listening socket nobody serves: the kernel completes the handshake,
    and nothing ever answers (a store "slow" forever)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


def redis_store(url: str, flavour: str, flush: Callable[[], None], name: str) -> Store:
    namespace = f"contract-{uuid.uuid4().hex}"

    def build(**options: Any) -> Any:
        options.setdefault("namespace", namespace)
        options.setdefault("timeout", 5.0)  # a loaded 2-core machine can hold Redis back past 0.25 s
        if flavour == "sync":
            return RedisGuard.from_url(url, **options)
        return OnALoop(AsyncRedisGuard.from_url(url, **options))

    @contextlib.contextmanager
    def silent() -> Iterator[Any]:
        with unanswered_port() as port:
            silent_url = f"redis://127.0.0.1:{port}/0"
            guard = (RedisGuard if flavour == "sync" else AsyncRedisGuard).from_url(silent_url, timeout=0.2)
            claimer = guard if flavour == "sync" else OnALoop(guard)
            yield claimer
            close(claimer)

    # A cluster client reads its slot map from a node first: a silent one fails its construction
    # (sync) or its first claim; tests/test_redis_fleet.py stalls a cluster's master instead.
    return Store(name, build, flush, None if "+cluster" in url else silent)


def postgres_store(server: postgres_server.Server, flavour: str) -> Store:
    namespace = f"contract-{uuid.uuid4().hex}"

    def build(**options: Any) -> Any:
        options.setdefault("namespace", namespace)
        options.setdefault("timeout", 5.0)  # a loaded 2-core machine can hold a commit back past 1 s
        if flavour == "sync":
            return PostgresGuard.from_url(server.url(), **options)
        return OnALoop(AsyncPostgresGuard.from_url(server.url(), **options))

    def forget() -> None:  # the tables dropped: the marker goes with them
        server.execute("DROP TABLE IF EXISTS requeststate_claims, requeststate_markers, requeststate_answers")

    @contextlib.contextmanager
    def silent() -> Iterator[Any]:
        with unanswered_port() as port:
            silent_url = f"postgresql://guard@127.0.0.1:{port}/app"
            guard = (PostgresGuard if flavour == "sync" else AsyncPostgresGuard).from_url(
                silent_url, timeout=0.2
            )
            claimer = guard if flavour == "sync" else OnALoop(guard)
            yield claimer
        # Closed once nobody listens: the pool's connect still under way is refused at once, where
        # close() would wait it out (libpq's connect_timeout, 2 s at least).
        close(claimer)

    return Store(f"postgres-{flavour}", build, forget, silent)


STORES = [
    "memory",
    "sqlite-sync",
    "sqlite-async",
    "redis-sync",
    "redis-async",
    "cluster-sync",
    "cluster-async",
    "postgres-sync",
    "postgres-async",
]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    name: str = request.param
    if name == "memory":
        return memory_store()
    kind, flavour = name.split("-")
    if kind == "sqlite":
        return sqlite_store(tmp_path, flavour)
    if kind == "postgres":
        return postgres_store(request.getfixturevalue("postgres_running"), flavour)
    if kind == "redis":
        server: Server = request.getfixturevalue("redis_server_running")
        return redis_store(server.url, flavour, lambda: server.execute("FLUSHALL"), name)
    url: str = request.getfixturevalue("cluster_url")

    def flush_cluster() -> None:
        import redis.cluster

        client = redis.cluster.RedisCluster.from_url(url.replace("redis+cluster://", "redis://"))
        try:
            client.flushall(target_nodes=redis.cluster.RedisCluster.PRIMARIES)
        finally:
            client.close()

    return redis_store(url, flavour, flush_cluster, name)


@pytest.fixture
def guards(store: Store) -> Iterator[Callable[..., Any]]:
    """Build guards on the store; each begun at once and closed after the test."""
    built: list[Any] = []

    def build(**options: Any) -> Any:
        guard = store.build(**options)
        built.append(guard)
        return guard

    yield build
    for guard in built:
        close(guard)


def dated(minted: int) -> rs.ClaimId:
    return rs.ClaimId(secrets.token_hex(16), minted)


def ready(guard: Any) -> int:
    """The first second whose tokens minted anywhere ``guard`` accepts, once begun."""
    began: int = guard.begin()
    skew: int = guard.clock_skew
    return max(began, int(time.time())) + skew + 1


def refused_as(call: Callable[[], object]) -> rs.Reason:
    with pytest.raises(rs.InvalidToken) as refused:
        call()
    return refused.value.reason


# --- the contract ----------------------------------------------------------------------------------


def test_the_first_claim_wins_and_every_later_one_is_a_replay(
    store: Store, guards: Callable[..., Any]
) -> None:
    guard = guards()
    now = ready(guard)
    token_id = dated(now)
    first = [guard.claim(token_id, now + 300, now), guard.claim(token_id, now + 300, now)]
    another = guards()  # another process of the fleet (for memory: the same process)
    assert [*first, another.claim(token_id, now + 300, now)] == [True, False, False]


def test_exactly_one_of_many_racing_claims_wins(store: Store, guards: Callable[..., Any]) -> None:
    racers = [guards() for _ in range(4)]
    now = ready(racers[0])
    for racer in racers[1:]:
        racer.begin()
    token_ids = [dated(now) for _ in range(20)]
    with ThreadPoolExecutor(8) as pool:
        wins = list(
            pool.map(
                lambda job: job[0].claim(job[1], now + 300, now),
                [(racer, token_id) for token_id in token_ids for racer in racers for _ in range(2)],
            )
        )
    assert [sum(wins[i * 8 : (i + 1) * 8]) for i in range(20)] == [1] * 20


def test_a_claim_is_held_until_its_token_expires_then_pruned(
    store: Store, guards: Callable[..., Any]
) -> None:
    # Pruning follows the earlier of the verifier's clock and the store's: the test waits for the
    # store's to pass the token's expiry, rather than claim in the future. The token is minted in
    # the first second a fresh store accepts, the second after its memory began: the wait is 1 to
    # 2 s. A MemoryGuard has no clock of its own (its purging follows the verifier's and its
    # monotonic clock, which runs fast here): nothing to wait for. Held through clock_skew past
    # the expiry: tests/test_memory.py, tests/test_sqlite.py, tests/test_redis.py.
    guard = guards(clock_skew=0)
    now = guard.begin() if store.shared else ready(guard)  # a MemoryGuard's begin() is its codecs'
    token_id = dated(now)
    assert [guard.claim(token_id, now, now), guards(clock_skew=0).claim(token_id, now, now)] == [True, False]
    late = now + 1
    while store.shared and time.time() < late + 0.02:
        time.sleep(0.02)
    pruned = guards(clock_skew=0).claim(dated(late), late + 300, late)  # prunes what expired by late
    assert [pruned, guards(clock_skew=0).claim(token_id, late + 300, late)] == [True, True]


def test_a_verifier_whose_clock_runs_a_day_ahead_prunes_no_live_claim(
    store: Store, guards: Callable[..., Any]
) -> None:
    # Issue 41's limit: one claim by a verifier a day ahead pruned every live claim (30 of 30).
    if not store.shared:
        pytest.skip(
            "a MemoryGuard purges no faster than its monotonic clock, which this suite's runs fast "
            "(tests/test_memory.py: test_after_a_forward_step_the_purge_clock_catches_up_at_a_bounded_rate)"
        )
    guard = guards()
    now = ready(guard)
    token_ids = [dated(now) for _ in range(30)]
    assert [guard.claim(token_id, now + 300, now) for token_id in token_ids] == [True] * 30
    ahead = now + 86_400
    assert guards().claim(dated(ahead), ahead + 300, ahead) is True
    fresh = guards()  # a verifier that never saw these claims: the store alone answers
    assert [fresh.claim(token_id, now + 300, now) for token_id in token_ids] == [False] * 30


def test_a_loss_refuses_what_predates_it_and_nothing_after_it(
    store: Store, guards: Callable[..., Any]
) -> None:
    guard = guards(clock_skew=0)
    now = ready(guard)
    redeemed = dated(now)
    assert guard.claim(redeemed, now + 300, now) is True
    store.forget()
    if store.shared:
        after = guards(clock_skew=0)  # a worker that begins after the loss, at `now`
        began = after.begin(now) - 1  # the first second accepted is the one after the memory began
    else:  # the restarted process: its memory begins when it is built, after `now`
        after = guards(clock_skew=0)
        began = after.begin()
    later = began + 1
    reasons = [
        refused_as(lambda: after.claim(redeemed, later + 300, later)),
        refused_as(lambda: after.claim(dated(began), later + 300, later)),
    ]
    assert (reasons, after.claim(dated(later), later + 300, later)) == ([rs.Reason.OUTSIDE_MEMORY] * 2, True)


def test_a_token_minted_past_clock_skew_in_the_verifiers_future_is_refused(
    store: Store, guards: Callable[..., Any]
) -> None:
    guard = guards(clock_skew=1)
    now = ready(guard)
    assert refused_as(lambda: guard.claim(dated(now + 2), now + 300, now)) is rs.Reason.OUTSIDE_MEMORY
    assert guard.claim(dated(now + 1), now + 300, now) is True


def test_begin_returns_a_second_from_which_a_codecs_tokens_are_accepted(
    store: Store, guards: Callable[..., Any]
) -> None:
    guard = guards()
    codec = rs.Codec(KEYS, guard=guard if not isinstance(guard, OnALoop) else guard.guard)
    first = guard.begin()
    token = codec.encode("state", now=first)
    if isinstance(guard, OnALoop):
        state = guard._loop.run_until_complete(codec.adecode(token, now=first))
    else:
        state = codec.decode(token, now=first)
    assert state == "state"


def test_verifiers_of_one_namespace_with_other_terms_are_refused(
    store: Store, guards: Callable[..., Any]
) -> None:
    if not store.shared:
        pytest.skip("a MemoryGuard's memory is its own: it has no namespace to share")
    guard = guards()
    now = ready(guard)
    assert guard.claim(dated(now), now + 300, now) is True
    other = guards(clock_skew=guard.clock_skew + 1)
    with pytest.raises(rs.GuardUnavailable, match=r"^the namespace's verifiers use clock_skew="):
        other.claim(dated(now), now + 300, now)
    with pytest.raises(rs.GuardUnavailable, match=r"^the namespace's verifiers use clock_skew="):
        other.begin()


def test_a_store_that_does_not_answer_within_its_timeout_fails_closed(store: Store) -> None:
    if store.silent is None:
        pytest.skip("no silent store of this kind here (a MemoryGuard waits for none)")
    with store.silent() as guard:
        now = int(time.time()) + 10
        started = time.monotonic()
        with pytest.raises(rs.GuardUnavailable):
            guard.claim(dated(now), now + 300, now)
        assert time.monotonic() - started < 3.0  # a 0.2 s timeout, on a loaded machine


def test_the_options_read_back_as_given(store: Store, guards: Callable[..., Any]) -> None:
    guard = guards(clock_skew=3, namespace=f"ns-{uuid.uuid4().hex}", timeout=0.5)
    read = [guard.clock_skew]
    if store.shared:
        read += [guard.timeout, guard.namespace.startswith("ns-")]
    assert read == ([3, 0.5, True] if store.shared else [3])


def test_a_closed_guard_can_be_closed_again(store: Store, guards: Callable[..., Any]) -> None:
    guard = store.build()
    now = ready(guard)
    assert guard.claim(dated(now), now + 300, now) is True
    close(guard)
    if not isinstance(guard, OnALoop):  # an asyncio guard's loop is closed with it
        close(guard)


# --- exactly once: the answer kept with the claim ----------------------------------------------------


def test_an_identical_retry_gets_the_answer_kept_for_the_first_call(
    store: Store, guards: Callable[..., Any]
) -> None:
    guard = guards()
    now = ready(guard)
    token_id = dated(now)
    first = guard.redeem(token_id, now + 300, now, "book room 7", now + 60)
    guard.keep(token_id, "book room 7", "answer-1")
    another = guards()  # another worker of the fleet (for memory: the same process)
    retries = [another.redeem(token_id, now + 300, now + 1, "book room 7", now + 61) for _ in range(2)]
    assert [first, *retries] == [None, "answer-1", "answer-1"]


def test_a_retry_before_the_answer_is_kept_is_in_progress_and_past_its_lease_outcome_unknown(
    store: Store, guards: Callable[..., Any]
) -> None:
    guard = guards()
    now = ready(guard)
    token_id = dated(now)
    assert guard.redeem(token_id, now + 300, now, "book", now + 60) is None
    during = refused_as(lambda: guards().redeem(token_id, now + 300, now + 60, "book", now + 120))
    after = refused_as(lambda: guards().redeem(token_id, now + 300, now + 61, "book", now + 121))
    assert [during, after] == [rs.Reason.IN_PROGRESS, rs.Reason.OUTCOME_UNKNOWN]


def test_a_retry_of_another_request_is_a_replay_and_keeps_nothing(
    store: Store, guards: Callable[..., Any]
) -> None:
    guard = guards()
    now = ready(guard)
    token_id = dated(now)
    assert guard.redeem(token_id, now + 300, now, "book room 7", now + 60) is None
    other = refused_as(lambda: guard.redeem(token_id, now + 300, now, "book room 8", now + 60))
    guard.keep(token_id, "book room 8", "answer-8")
    guard.keep(token_id, "book room 7", "answer-7")
    assert (other, guard.redeem(token_id, now + 300, now, "book room 7", now + 60)) == (
        rs.Reason.REPLAYED,
        "answer-7",
    )


def test_the_first_answer_kept_stays(store: Store, guards: Callable[..., Any]) -> None:
    guard = guards()
    now = ready(guard)
    token_id = dated(now)
    assert guard.redeem(token_id, now + 300, now, "book", now + 60) is None
    guard.keep(token_id, "book", "first")
    guards().keep(token_id, "book", "second")
    assert guard.redeem(token_id, now + 300, now, "book", now + 60) == "first"


def test_a_claim_of_single_use_and_an_exactly_once_redemption_of_one_id_exclude_each_other(
    store: Store, guards: Callable[..., Any]
) -> None:
    guard = guards()
    now = ready(guard)
    claimed, redeemed = dated(now), dated(now)
    assert guard.claim(claimed, now + 300, now) is True
    assert (
        refused_as(lambda: guards().redeem(claimed, now + 300, now, "book", now + 60)) is rs.Reason.REPLAYED
    )
    assert guard.redeem(redeemed, now + 300, now, "book", now + 60) is None
    assert guards().claim(redeemed, now + 300, now) is False


def test_exactly_one_of_many_racing_identical_redemptions_runs(
    store: Store, guards: Callable[..., Any]
) -> None:
    racers = [guards() for _ in range(4)]
    now = ready(racers[0])
    for racer in racers[1:]:
        racer.begin()
    token_ids = [dated(now) for _ in range(10)]

    def redeem(job: tuple[Any, str]) -> str:
        try:
            return "run" if job[0].redeem(job[1], now + 300, now, "book", now + 60) is None else "kept"
        except rs.InvalidToken as refused:
            return refused.reason.value

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(
            pool.map(redeem, [(racer, token_id) for token_id in token_ids for racer in racers * 2])
        )
    per_token = [sorted(outcomes[i * 8 : (i + 1) * 8]) for i in range(10)]
    assert per_token == [["in_progress"] * 7 + ["run"]] * 10


def test_a_loss_refuses_a_retry_of_what_predates_it(store: Store, guards: Callable[..., Any]) -> None:
    guard = guards(clock_skew=0)
    now = ready(guard)
    token_id = dated(now)
    assert guard.redeem(token_id, now + 300, now, "book", now + 60) is None
    guard.keep(token_id, "book", "answer")
    store.forget()
    if store.shared:
        after = guards(clock_skew=0)
        later = after.begin(now)
    else:  # the restarted process: its memory begins when it is built, after `now`
        after = guards(clock_skew=0)
        later = after.begin() + 1
    assert refused_as(lambda: after.redeem(token_id, later + 300, later, "book", later + 60)) is (
        rs.Reason.OUTSIDE_MEMORY
    )
