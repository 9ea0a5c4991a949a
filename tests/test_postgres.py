"""PostgresGuard and AsyncPostgresGuard on real PostgreSQL servers: what is PostgreSQL's own.

What every store does (first claim wins, racing claims, pruning, begin(), terms, a silent store,
the options) is tests/test_guard_contract.py's, which runs it on PostgreSQL too. Here: the races
on a database with no tables yet, pruning by the index, timeouts on a stopped server, URLs and
passwords, and each loss PostgreSQL can show (a promoted standby, point-in-time recovery, a new
cluster, a recreated database or table); the failover tests start servers of their own.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import pytest

import requeststate as rs
from requeststate.postgres import MAX_CONNECTIONS, AsyncPostgresGuard, PostgresGuard
from tests.support.postgres_server import PASSWORD_ROLE, Server, Servers, race, servers_or_skip

# After the servers' clocks (2026), so that the verifier's now dates every new memory here.
NOW = 2_000_000_000
EXPIRES = NOW + 300
PASSWORD = "p/?#@:w0rd-s3cret"
# A claim that waits 0.5 s returns well within this on a loaded machine; psycopg's own
# cancellation of an unanswered query would wait 5 s and more.
SLACK = 2.5
LOST = re.compile(r"^refused: outside_memory$")

Build = Callable[..., PostgresGuard]


def dated(at: int = NOW) -> rs.ClaimId:
    """A claim id as a codec makes it: minted at ``at``."""
    return rs.ClaimId(secrets.token_hex(16), at)


def outcome(guard: PostgresGuard, token_id: rs.ClaimId, now: int = NOW) -> bool | str:
    try:
        return guard.claim(token_id, EXPIRES, now)
    except rs.InvalidToken as refused:  # outside_memory: minted before the store's memory began
        return f"refused: {refused.reason}"
    except rs.GuardUnavailable as refused:
        return f"unavailable: {refused}"


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    with servers_or_skip() as running:
        yield running


@pytest.fixture(scope="module")
def primary(servers: Servers) -> Server:
    return servers.primary()


@pytest.fixture
def namespace() -> str:
    return f"test-{secrets.token_hex(6)}"


@pytest.fixture
def guards(primary: Server, namespace: str) -> Iterator[Build]:
    """Builds guards on the module's primary, in this test's namespace unless told another; closes them."""
    built: list[PostgresGuard] = []

    def build(url: str | None = None, **options: object) -> PostgresGuard:
        options.setdefault("namespace", namespace)
        guard = PostgresGuard(url or primary.url(), **options)  # type: ignore[arg-type]
        built.append(guard)
        return guard

    yield build
    for guard in built:
        guard.close()


def began(guard: PostgresGuard) -> PostgresGuard:
    """``guard``, its namespace's memory begun well before NOW."""
    guard.begin(NOW - 60)
    return guard


# --- single use --------------------------------------------------------------------------------------


def test_namespaces_do_not_share_claims(guards: Build) -> None:
    token_id = dated()
    assert began(guards()).claim(token_id, EXPIRES, NOW) is True
    assert began(guards(namespace="another-app")).claim(token_id, EXPIRES, NOW) is True


def test_exactly_one_of_many_racing_async_claims_wins_each_id(primary: Server, namespace: str) -> None:
    async def run() -> list[bool]:
        # 120 claims at once queue for 8 connections: a timeout for a loaded machine, not a fast one.
        guard = AsyncPostgresGuard(primary.url(), namespace=namespace, timeout=10)
        try:
            await guard.begin(NOW - 60)
            ids = [dated() for _ in range(20)]
            claims = [guard.claim(token_id, EXPIRES, NOW) for token_id in ids * 6]
            return list(await asyncio.gather(*claims))
        finally:
            await guard.aclose()

    assert sorted(asyncio.run(run())) == [False] * 100 + [True] * 20


def test_exactly_one_of_many_racing_processes_wins_each_id_on_a_database_with_no_tables_yet(
    primary: Server,
) -> None:
    # Every process begins at once on a database with no table yet: the schema is made once,
    # under the advisory lock, and no process fails on another's CREATE; then they race.
    database = f"fresh_{secrets.token_hex(4)}"
    primary.execute(f"CREATE DATABASE {database}")
    ids = [dated() for _ in range(30)]
    won = race(f"{primary.url(dbname=database)}?timeout=10", ids, now=NOW, processes=4)
    assert sorted(won) == sorted(ids)


def test_racing_first_claims_on_a_new_namespace_write_one_marker_and_agree_on_it(
    guards: Build, primary: Server, namespace: str
) -> None:
    start = threading.Barrier(6)

    def begin() -> int:
        guard = guards()
        start.wait(timeout=30)
        return guard.begin(NOW)

    with ThreadPoolExecutor(6) as pool:
        firsts = list(pool.map(lambda _: begin(), range(6)))
    assert firsts == [NOW + rs.DEFAULT_CLOCK_SKEW + 1] * 6
    rows = primary.execute("SELECT since FROM requeststate_markers WHERE namespace = %s", namespace)
    assert rows == [(NOW,)]


# --- when the memory began -----------------------------------------------------------------------------


def test_begin_on_a_new_namespace_returns_the_second_after_clock_skew(guards: Build) -> None:
    assert guards().begin(NOW) == NOW + rs.DEFAULT_CLOCK_SKEW + 1


def test_begin_on_a_namespace_in_use_returns_when_its_memory_began(guards: Build) -> None:
    guards().begin(NOW - 100)
    assert guards().begin(NOW) == NOW - 100 + rs.DEFAULT_CLOCK_SKEW + 1


def test_a_token_minted_before_the_memory_began_is_refused(guards: Build) -> None:
    assert re.search(LOST, str(outcome(guards(), dated(NOW - 1))))


def test_a_new_memory_is_dated_by_the_servers_clock_when_the_verifiers_now_is_stale(guards: Build) -> None:
    # A verifier paused after reading its clock (100 s ago) is the first to claim: the memory
    # began at the server's now, not at the stale now, so a token minted 50 s ago is refused.
    stale = int(time.time()) - 100
    assert re.search(LOST, str(outcome(guards(), dated(stale), now=stale)))
    assert re.search(LOST, str(outcome(guards(), dated(stale + 50), now=stale + 51)))


# --- terms ------------------------------------------------------------------------------------------------


def test_a_verifier_with_another_leeway_prunes_nothing_and_claims_nothing(
    guards: Build, primary: Server
) -> None:
    guard = began(guards())
    token_id = dated()
    assert guard.claim(token_id, NOW + 10, NOW) is True
    other = guards()
    other.learn_leeway(60)
    assert str(outcome(other, dated(), now=NOW + 100)).startswith(
        "unavailable: the namespace's verifiers use"
    )
    assert guard.claim(token_id, NOW + 10, NOW + 5) is False  # its claim was not pruned by the other


# --- expiry and pruning ----------------------------------------------------------------------------------


def test_a_claim_is_pruned_once_its_token_expired_clock_skew_ago_and_not_before(
    guards: Build, primary: Server, namespace: str
) -> None:
    # Pruning goes by the server's clock where the verifier's runs ahead of it (the contract suite's
    # day-ahead verifier): the claims are dated by the server's now, read here.
    guard = guards()
    ready = guard.begin()
    now = server_now(primary)
    primary.execute(
        "INSERT INTO requeststate_claims VALUES (%s, 'pruned', %s), (%s, 'kept', %s)",
        namespace, now - 7, namespace, now - 3,
    )  # fmt: skip
    assert guard.claim(dated(ready), ready + 300, ready) is True  # prunes what expired 5 s ago
    members = primary.execute(
        "SELECT member FROM requeststate_claims WHERE namespace = %s AND member IN ('pruned', 'kept')",
        namespace,
    )
    assert members == [("kept",)]


def test_an_answers_record_is_pruned_with_its_claim_once_its_token_expired_clock_skew_ago(
    guards: Build, primary: Server, namespace: str
) -> None:
    guard = guards()
    ready = guard.begin()
    now = server_now(primary)
    primary.execute(
        "INSERT INTO requeststate_answers VALUES (%s, 'pruned', %s, 'r', 0, 'a'), "
        "(%s, 'kept', %s, 'r', 0, 'a')",
        namespace, now - 7, namespace, now - 3,
    )  # fmt: skip
    assert guard.claim(dated(ready), ready + 300, ready) is True  # prunes what expired 5 s ago
    members = primary.execute("SELECT member FROM requeststate_answers WHERE namespace = %s", namespace)
    assert members == [("kept",)]


def server_now(server: Server) -> int:
    ((now,),) = server.execute("SELECT floor(extract(epoch FROM clock_timestamp()))::bigint")
    return int(str(now))


@pytest.mark.parametrize(
    ("table", "record"), [("requeststate_claims", ""), ("requeststate_answers", ", 'request', 0, 'answer'")]
)
def test_pruning_reads_the_expiry_index_and_never_scans_the_table(
    servers: Servers, primary: Server, table: str, record: str
) -> None:
    # auto_explain logs the plan of every statement the claim function runs, in the server's log.
    database = f"pruned_{secrets.token_hex(4)}"
    primary.execute(f"CREATE DATABASE {database}")
    guard = PostgresGuard(primary.url(dbname=database), namespace="app")
    try:
        ready = guard.begin()
        primary.execute(
            f"INSERT INTO {table} SELECT CASE WHEN i %% 10 = 0 THEN 'other' ELSE 'app' END, "  # noqa: S608 (the test's own table names)
            f"md5(i::text), %s - 30000 + i{record} FROM generate_series(1, 20000) i",
            server_now(primary),
            dbname=database,
        )
        primary.execute(f"ANALYZE {table}", dbname=database)
        for setting in (
            "session_preload_libraries = 'auto_explain'",
            "auto_explain.log_min_duration = 0",
            "auto_explain.log_nested_statements = on",
        ):
            primary.execute(f"ALTER DATABASE {database} SET {setting}")
        guard.close()  # the next connection loads auto_explain
        logged = len(primary.log.read_text())
        # Prunes 100 of 18,000 expired, and adds a claim and its record.
        assert guard.redeem(dated(ready), ready + 300, ready, "book", ready + 60) is None
        plans = primary.log.read_text()[logged:]
    finally:
        guard.close()
    delete = plans[plans.index(f"{table} WHERE ctid = ANY") :]  # the pruning DELETE's plan
    assert f"Index Scan using {table}_by_expiry on {table}" in delete
    assert f"Seq Scan on {table}" not in plans
    assert f"Tid Scan on {table}" in delete
    remaining = primary.execute(f"SELECT count(*) FROM {table} WHERE namespace = 'app'", dbname=database)  # noqa: S608
    assert remaining == [(18_000 - 100 + 1,)]


# --- faults fail closed ------------------------------------------------------------------------------------


def test_a_server_that_does_not_answer_fails_closed_within_the_timeout_and_recovers(
    servers: Servers, namespace: str
) -> None:
    server = servers.primary()
    guard = PostgresGuard(server.url(), namespace=namespace, timeout=0.5)
    try:
        began(guard)  # a connection is open: the pause catches the claim on it
        server.pause()
        try:
            started = time.monotonic()
            assert (
                outcome(guard, dated())
                == "unavailable: PostgreSQL did not record the claim (no answer within 0.5 s)"
            )
            assert time.monotonic() - started < SLACK
            # A guard with no connection yet waits for one as long, and no longer.
            fresh = PostgresGuard(server.url(), namespace=namespace, timeout=0.5)
            started = time.monotonic()
            assert outcome(fresh, dated()) == "unavailable: PostgreSQL did not record the claim (PoolTimeout)"
            assert time.monotonic() - started < SLACK
        finally:
            server.resume()
        fresh.close()
        token_id = dated()
        assert [outcome(guard, token_id), outcome(guard, token_id)] == [True, False]
    finally:
        guard.close()


def test_the_async_guard_fails_closed_within_the_timeout_on_a_server_that_does_not_answer(
    servers: Servers, namespace: str
) -> None:
    server = servers.primary()

    async def run() -> tuple[str, float, bool]:
        guard = AsyncPostgresGuard(server.url(), namespace=namespace, timeout=0.5)
        try:
            await guard.begin(NOW - 60)
            server.pause()
            started = time.monotonic()
            try:
                await guard.claim(dated(), EXPIRES, NOW)
            except rs.GuardUnavailable as refused:
                message = str(refused)
            finally:
                server.resume()
            waited = time.monotonic() - started
            return message, waited, await guard.claim(dated(), EXPIRES, NOW)
        finally:
            await guard.aclose()

    message, waited, after = asyncio.run(run())
    assert (message, waited < SLACK, after) == (
        "PostgreSQL did not record the claim (no answer within 0.5 s)",
        True,
        True,
    )
    server.stop()


def test_no_server_at_the_address_fails_closed(servers: Servers) -> None:
    from scripts.redis_servers import free_loopback_port

    guard = PostgresGuard(f"postgresql://postgres@127.0.0.1:{free_loopback_port()}/postgres", timeout=0.5)
    try:
        assert outcome(guard, dated()) == "unavailable: PostgreSQL did not record the claim (PoolTimeout)"
        with pytest.raises(
            rs.GuardUnavailable, match=r"^PostgreSQL did not record when its memory began \(PoolTimeout\)$"
        ):
            guard.begin()
    finally:
        guard.close()


def test_a_role_without_privileges_fails_closed_naming_the_sqlstate(guards: Build, primary: Server) -> None:
    role = f"reader_{secrets.token_hex(4)}"
    primary.execute(f"CREATE ROLE {role} LOGIN")
    began(guards())  # the tables exist, and this role may not write them
    guard = guards(primary.url(user=role))
    assert outcome(guard, dated()) == "unavailable: PostgreSQL did not record the claim (SQLSTATE 42501)"


def test_close_closes_the_pool_and_the_next_claim_opens_another(guards: Build, primary: Server) -> None:
    guard = began(guards())
    token_id = dated()
    assert guard.claim(token_id, EXPIRES, NOW) is True
    guard.close()
    assert guard.claim(token_id, EXPIRES, NOW) is False


# --- URLs, and no password anywhere ---------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_from_url_reads_the_guards_options_from_the_query(scheme: str) -> None:
    guard = PostgresGuard.from_url(
        f"{scheme}://u@db.internal:5433/app?namespace=myapp&timeout=0.5&clock_skew=2"
    )
    assert (type(guard), guard.namespace, guard.timeout, guard.clock_skew) == (PostgresGuard, "myapp", 0.5, 2)
    assert repr(guard) == "PostgresGuard(namespace='myapp', clock_skew=2, timeout=0.5)"


def test_from_url_gives_the_defaults_without_a_query() -> None:
    guard = AsyncPostgresGuard.from_url("postgresql://u@db.internal/app")
    assert (guard.namespace, guard.timeout, guard.clock_skew) == ("requeststate", 1.0, rs.DEFAULT_CLOCK_SKEW)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "sslmode=require",
            "the guard URL may carry the options ?namespace=, ?timeout=, ?clock_skew=, each once; "
            "its query has another",
        ),
        (
            "namespace=a&namespace=b",
            "the guard URL may carry the options ?namespace=, ?timeout=, ?clock_skew=, each once; "
            "its query has another",
        ),
        ("timeout=soon", "the guard URL's timeout must be a number of seconds (?timeout=1)"),
        (
            "clock_skew=1.5",
            "the guard URL's clock_skew must be a whole number of seconds (?clock_skew=1)",
        ),
        ("timeout=0", "timeout must be a positive, finite number of seconds up to 60, got 0.0"),
    ],
)
def test_from_url_refuses_a_query_it_does_not_take(query: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        PostgresGuard.from_url(f"postgresql://u:{quote(PASSWORD, safe='')}@db/app?{query}")


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://u:{PASSWORD}@db.internal/app",  # the raw password breaks the URL
        f"redis://u:{quote(PASSWORD, safe='')}@db.internal/app",
        f"postgresql://u:{quote(PASSWORD, safe='')}@db.internal:port/app",
        f"postgresql://u:{quote(PASSWORD, safe='')}@db.internal/app/more",
    ],
)
def test_a_url_refused_never_shows_its_password(url: str) -> None:
    with pytest.raises(ValueError, match="URL") as refused:
        PostgresGuard.from_url(url)
    assert [secret for secret in ("p/", "s3cret", "u:") if secret in str(refused.value)] == []


def test_a_connection_string_libpq_cannot_read_is_refused_without_quoting_it() -> None:
    with pytest.raises(ValueError, match="conninfo_or_url must be a libpq connection string") as refused:
        PostgresGuard(f"host=db password='{PASSWORD}")
    assert "s3cret" not in str(refused.value)
    assert (refused.value.__cause__, refused.value.__suppress_context__) == (None, True)


def test_a_password_with_every_reserved_character_connects_percent_encoded_and_shows_nowhere(
    primary: Server, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    primary.execute(f"DROP ROLE IF EXISTS {PASSWORD_ROLE}")
    primary.execute(f"CREATE ROLE {PASSWORD_ROLE} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
    caplog.set_level(logging.DEBUG)
    good = PostgresGuard.from_url(
        f"{primary.url(user=PASSWORD_ROLE, password=PASSWORD)}?namespace={namespace}"
    )
    wrong = PostgresGuard.from_url(f"{primary.url(user=PASSWORD_ROLE, password=PASSWORD[::-1])}?timeout=0.5")
    try:
        assert good.begin(NOW - 60) == NOW - 60 + rs.DEFAULT_CLOCK_SKEW + 1
        assert good.claim(dated(), EXPIRES, NOW) is True
        with pytest.raises(rs.GuardUnavailable) as refused:
            wrong.claim(dated(), EXPIRES, NOW)
        shown = [repr(good), repr(wrong), str(refused.value), repr(refused.value.__cause__), caplog.text]
    finally:
        good.close()
        wrong.close()
    assert str(refused.value) == "PostgreSQL did not record the claim (PoolTimeout)"
    for text in shown:
        assert [
            secret for secret in ("s3cret", quote(PASSWORD, safe=""), PASSWORD[::-1]) if secret in text
        ] == []


def test_guard_from_url_builds_the_postgres_guards_for_both_schemes() -> None:
    sync = rs.guard_from_url("postgresql://u@db.internal/app?namespace=myapp&timeout=0.5")
    asyncio_guard = rs.guard_from_url("postgres://u@db.internal/app?clock_skew=3", asyncio=True)
    assert (type(sync), sync.namespace, sync.timeout) == (PostgresGuard, "myapp", 0.5)  # type: ignore[attr-defined]
    assert (type(asyncio_guard), asyncio_guard.clock_skew) == (AsyncPostgresGuard, 3)  # type: ignore[union-attr]
    with pytest.raises(
        ValueError, match=r"^REQUESTSTATE_GUARD: the guard URL may carry the options \?namespace="
    ):
        rs.guard_from_url("postgresql://u@db.internal/app?sslmode=require")
    with pytest.raises(ValueError, match=r"^REQUESTSTATE_GUARD: the guard URL's clock_skew must be a whole"):
        rs.guard_from_url("postgresql://u@db.internal/app?clock_skew=soon")


# --- losses ------------------------------------------------------------------------------------------------


def claimed_before(server: Server, namespace: str, count: int) -> list[rs.ClaimId]:
    """``count`` ids claimed on ``server``, in a memory begun before NOW - 60."""
    guard = PostgresGuard(server.url(), namespace=namespace)
    try:
        guard.begin(NOW - 120)
        ids = [dated(NOW - 60) for _ in range(count)]
        assert [guard.claim(token_id, EXPIRES, NOW - 60) for token_id in ids] == [True] * count
        return ids
    finally:
        guard.close()


def replays(url: str, namespace: str, ids: list[rs.ClaimId], now: int = NOW) -> list[bool | str]:
    guard = PostgresGuard(url, namespace=namespace)
    try:
        return [outcome(guard, token_id, now) for token_id in ids]
    finally:
        guard.close()


def test_a_promoted_standby_is_a_loss_refusing_tokens_minted_before_and_accepting_those_after(
    servers: Servers, namespace: str
) -> None:
    primary = servers.primary("fsync = on")  # else each start of a server is a loss by itself
    standby = servers.standby(primary)
    streamed = claimed_before(primary, namespace, 5)
    caught_up(primary)
    # A standby cannot write: a guard pointed at one fails closed, naming PostgreSQL's error.
    assert replays(standby.url(), namespace, [dated()]) == [
        "unavailable: PostgreSQL did not record the claim (SQLSTATE 55000)"
    ]
    standby.stop()  # the claims made from now on never reach it: an asynchronous standby's lag
    lost = claimed_before(primary, namespace, 5)
    primary.stop("immediate")
    standby.start()
    standby.promote()
    # The claims it holds are replays; those it never received were made in a memory it does
    # not have (a new timeline): refused as minted before it began, as any token minted then.
    assert replays(standby.url(), namespace, streamed) == [False] * 5
    assert all(re.search(LOST, str(result)) for result in replays(standby.url(), namespace, lost))
    after = dated(NOW + 10)
    assert replays(standby.url(), namespace, [after, after], now=NOW + 10) == [True, False]
    standby.stop()


@pytest.mark.parametrize("commit", ["on", "remote_apply"])
def test_a_promoted_synchronous_standby_refuses_the_replays_and_every_token_in_flight_as_outside_memory(
    servers: Servers, namespace: str, commit: str
) -> None:
    # Every claim the primary acknowledged was on the standby first: the promotion loses none, and
    # is a loss all the same (a new timeline): the tokens minted before it and not yet redeemed
    # (in flight) are refused as minted before the promoted standby's memory began.
    primary = servers.primary("fsync = on")
    standby = servers.standby(primary)
    primary.reconfigure(synchronous_standby_names="*", synchronous_commit=commit)
    synchronous = "SELECT sync_state FROM pg_stat_replication"
    deadline = time.monotonic() + 30
    while primary.execute(synchronous) != [("sync",)]:
        assert time.monotonic() < deadline, "the standby did not become synchronous"
        time.sleep(0.05)
    claimed = claimed_before(primary, namespace, 5)
    in_flight = [dated(NOW - 30) for _ in range(5)]
    primary.stop("immediate")  # at once after the claims' commits: no wait for the standby to catch up
    standby.promote()
    assert replays(standby.url(), namespace, claimed) == [False] * 5
    assert replays(standby.url(), namespace, in_flight) == ["refused: outside_memory"] * 5
    after = dated(NOW + 10)
    assert replays(standby.url(), namespace, [after, after], now=NOW + 10) == [True, False]
    standby.stop()


def caught_up(primary: Server) -> None:
    """Wait until every standby of ``primary`` replayed all it wrote so far."""
    ((written,),) = primary.execute("SELECT pg_current_wal_lsn()")
    deadline = time.monotonic() + 30
    query = "SELECT bool_and(replay_lsn >= %s::pg_lsn) FROM pg_stat_replication"
    while primary.execute(query, str(written)) != [(True,)]:
        assert time.monotonic() < deadline, "the standby did not catch up"
        time.sleep(0.05)


def test_a_database_recreated_from_an_earlier_copy_of_itself_is_a_loss(
    primary: Server, namespace: str
) -> None:
    # CREATE DATABASE ... TEMPLATE copies the files: the claims table keeps its file node, and
    # only the database's oid tells the copy from the database the later claims were made in.
    database, copy = f"recreated_{secrets.token_hex(4)}", f"copy_{secrets.token_hex(4)}"
    primary.execute(f"CREATE DATABASE {database}")
    url = primary.url(dbname=database)
    guard = PostgresGuard(url, namespace=namespace)
    try:
        guard.begin(NOW - 120)
        guard.close()  # a database is copied with no connection to it
        primary.execute(f"CREATE DATABASE {copy} TEMPLATE {database}")
        ids = [dated(NOW - 60) for _ in range(5)]
        assert [guard.claim(token_id, EXPIRES, NOW - 60) for token_id in ids] == [True] * 5
    finally:
        guard.close()
    primary.execute(f"DROP DATABASE {database}")
    primary.execute(f"CREATE DATABASE {database} TEMPLATE {copy}")
    assert all(re.search(LOST, str(result)) for result in replays(url, namespace, ids))


@pytest.mark.parametrize(
    "statement",
    ["DROP TABLE requeststate_claims", "TRUNCATE requeststate_claims", "DROP TABLE requeststate_markers"],
)
def test_a_dropped_or_truncated_table_is_a_loss_and_the_next_claim_makes_it_again(
    guards: Build, primary: Server, statement: str
) -> None:
    database = f"tables_{secrets.token_hex(4)}"
    primary.execute(f"CREATE DATABASE {database}")
    guard = began(guards(primary.url(dbname=database)))
    token_id = dated()
    assert guard.claim(token_id, EXPIRES, NOW) is True
    primary.execute(statement, dbname=database)
    # The replay is refused: as minted before the loss, or as a replay where the claims stayed.
    assert outcome(guard, token_id, NOW + 1) is not True
    assert re.search(LOST, str(outcome(guard, dated(NOW), NOW + 1)))
    later = dated(NOW + 10)
    assert [outcome(guard, later, NOW + 10), outcome(guard, later, NOW + 10)] == [True, False]


def test_a_dropped_answers_table_refuses_a_retry_as_a_replay_and_the_next_redemption_makes_it_again(
    guards: Build, primary: Server
) -> None:
    # The marker does not name the answers table: its loss leaves the claims, and a retry that finds
    # no record is refused as a replay, never run again.
    database = f"answers_{secrets.token_hex(4)}"
    primary.execute(f"CREATE DATABASE {database}")
    guard = began(guards(primary.url(dbname=database)))
    first = dated()
    assert guard.redeem(first, EXPIRES, NOW, "book", NOW + 60) is None
    guard.keep(first, "book", "sealed-answer")
    primary.execute("DROP TABLE requeststate_answers", dbname=database)
    with pytest.raises(rs.InvalidToken) as retried:
        guard.redeem(first, EXPIRES, NOW + 1, "book", NOW + 61)
    later = dated()
    assert guard.redeem(later, EXPIRES, NOW + 1, "book", NOW + 61) is None
    guard.keep(later, "book", "kept-again")
    assert (retried.value.reason, guard.redeem(later, EXPIRES, NOW + 2, "book", NOW + 62)) == (
        rs.Reason.REPLAYED,
        "kept-again",
    )


def test_a_database_from_before_exactly_once_gains_its_table_and_function_and_keeps_its_claims(
    guards: Build, primary: Server
) -> None:
    # Before exactly once: no answers table, and the claim function of six arguments (a stand-in).
    database = f"upgraded_{secrets.token_hex(4)}"
    primary.execute(f"CREATE DATABASE {database}")
    guard = began(guards(primary.url(dbname=database)))
    claimed = dated()
    assert guard.claim(claimed, EXPIRES, NOW) is True
    primary.execute(
        "DROP TABLE requeststate_answers;"
        "DROP FUNCTION requeststate_claim_v1(text, text, bigint, bigint, bigint, text, text, bigint);"
        "CREATE FUNCTION requeststate_claim_v1(text, text, bigint, bigint, bigint, text, "
        "OUT status text, OUT since bigint, OUT began boolean, OUT terms text) "
        "LANGUAGE sql AS $$ SELECT 'claimed', 0::bigint, false, '' $$",
        dbname=database,
    )
    upgraded = guards(primary.url(dbname=database))  # a worker of this version
    redeemed = dated()
    assert [
        upgraded.claim(claimed, EXPIRES, NOW),
        upgraded.redeem(redeemed, EXPIRES, NOW, "book", NOW + 60),
    ] == [
        False,
        None,
    ]
    upgraded.keep(redeemed, "book", "sealed-answer")
    assert upgraded.redeem(redeemed, EXPIRES, NOW, "book", NOW + 60) == "sealed-answer"


def test_the_claims_restored_into_a_new_cluster_are_a_loss(servers: Servers, namespace: str) -> None:
    # A new cluster (initdb) at the old one's address, given a copy of the tables (a dump restored):
    # another system identifier, so the marker names another memory.
    first = servers.primary("fsync = on")
    dumped = claimed_before(first, namespace, 5)
    rows = first.execute("SELECT namespace, memory, since, terms FROM requeststate_markers")
    claims = first.execute("SELECT namespace, member, expires FROM requeststate_claims")
    ids = claimed_before(first, namespace, 5)  # after the dump: the new cluster never holds them
    port = first.port
    first.stop()
    second = servers.primary("fsync = on", port=port, new_system=True)
    guard = PostgresGuard(second.url(), namespace="another")
    try:
        guard.begin(NOW - 500)  # makes the tables
    finally:
        guard.close()
    # The new cluster with fsync = on, so that its marker differs by the system identifier alone.
    with second.connect() as connection:
        connection.execute("DELETE FROM requeststate_markers")
        for row in rows:
            connection.execute("INSERT INTO requeststate_markers VALUES (%s, %s, %s, %s)", row)
        for claim in claims:
            connection.execute("INSERT INTO requeststate_claims VALUES (%s, %s, %s)", claim)
    assert replays(second.url(), namespace, dumped) == [False] * 5
    assert all(re.search(LOST, str(result)) for result in replays(second.url(), namespace, ids))
    second.stop()


def test_point_in_time_recovery_starts_a_new_timeline_and_is_a_loss(servers: Servers, namespace: str) -> None:
    primary = servers.primary("fsync = on")
    claimed_before(primary, namespace, 1)
    backup = servers.base_backup(primary)
    ids = claimed_before(primary, namespace, 10)  # after the backup: recovery to its end forgets them
    primary.execute("SELECT pg_switch_wal()")  # archives the WAL that holds them
    primary.stop()
    recovered = servers.recover(backup, recovery_target="immediate")
    wait_for_promotion(recovered)
    assert timeline(recovered) == 2
    assert all(re.search(LOST, str(result)) for result in replays(recovered.url(), namespace, ids))
    recovered.stop()


def test_a_base_backup_started_without_recovery_keeps_the_timeline_and_its_replays_are_accepted(
    servers: Servers, namespace: str
) -> None:
    # Not covered, shown: a copy of the cluster started as it is (crash recovery from the backup,
    # no archive recovery) keeps the system identifier, the timeline and the database: the same
    # memory, rolled back. The claims made after the copy are forgotten and accepted again.
    primary = servers.primary("fsync = on")
    claimed_before(primary, namespace, 1)
    backup = servers.base_backup(primary)
    ids = claimed_before(primary, namespace, 10)
    primary.stop()
    backup.start()
    servers.started.append(backup)
    assert timeline(backup) == 1
    assert replays(backup.url(), namespace, ids) == [True] * 10
    backup.stop()


def test_a_restart_with_fsync_on_keeps_every_claim_and_is_no_loss(servers: Servers, namespace: str) -> None:
    server = servers.primary("fsync = on")
    ids = claimed_before(server, namespace, 5)
    server.stop("immediate")  # a crash: recovery replays the WAL
    server.start()
    assert replays(server.url(), namespace, [*ids, dated(NOW - 30)]) == [False] * 5 + [True]
    server.stop()


def test_a_guard_claims_again_once_a_restarted_server_answers(servers: Servers, namespace: str) -> None:
    # The pool's connections broke with the restart: each fails one claim (closed), then the pool
    # opens new ones. No claim is accepted twice meanwhile.
    server = servers.primary("fsync = on")
    guard = PostgresGuard(server.url(), namespace=namespace, timeout=2)
    try:
        began(guard)
        token_id = dated()
        assert guard.claim(token_id, EXPIRES, NOW) is True
        server.stop()
        server.start()
        outcomes = [outcome(guard, dated()) for _ in range(MAX_CONNECTIONS + 2)]
        assert set(outcomes) <= {True, "unavailable: PostgreSQL did not record the claim (OperationalError)"}
        assert outcomes[-1] is True
        # The server kept the claim (a new guard asks it: this one remembers what it claimed).
        assert replays(server.url(), namespace, [token_id]) == [False]
    finally:
        guard.close()
        server.stop()


def test_a_restart_with_fsync_off_is_a_loss(servers: Servers, namespace: str) -> None:
    # A crash of the host could have undone the last commits, which nothing else shows.
    server = servers.primary()  # the test servers run with fsync = off
    ids = claimed_before(server, namespace, 5)
    server.stop("immediate")
    server.start()
    unclaimed = dated(NOW - 30)
    assert replays(server.url(), namespace, ids) == [False] * 5
    assert re.search(LOST, str(replays(server.url(), namespace, [unclaimed])[0]))
    server.stop()


def timeline(server: Server) -> int:
    ((walfile,),) = server.execute("SELECT pg_walfile_name(pg_current_wal_lsn())")
    return int(str(walfile)[:8], 16)


def wait_for_promotion(server: Server) -> None:
    deadline = time.monotonic() + 30
    while server.execute("SELECT pg_is_in_recovery()") != [(False,)]:
        assert time.monotonic() < deadline, "the recovered server was not promoted"
        time.sleep(0.1)
