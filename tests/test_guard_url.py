"""``guard_from_url`` and ``REQUESTSTATE_GUARD``: every scheme, each bad value, and no password shown.

A Redis guard's client connects on its first command, so the URL's reading is checked on the
client it built, with no server; tests/test_fleet.py runs the guards on real servers.
"""

from __future__ import annotations

import re
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio
import redis.asyncio.cluster

import requeststate as rs
from requeststate import sqlite as sqlite_guards
from requeststate.redis import AsyncRedisGuard, RedisGuard
from requeststate.sqlite import AsyncSQLiteGuard, SQLiteGuard
from tests.support.reference import b64

from .conftest import SECRET

PASSWORD = "hunter2-s3cret"
ACCEPTED = (
    "memory, redis://host:port/db, rediss://host:port/db, redis+cluster://host:port, "
    "rediss+cluster://host:port, or sqlite:////absolute/path.db"
)
OPTIONS = (
    "REQUESTSTATE_GUARD: the guard URL may carry the options ?namespace=, ?timeout=, ?clock_skew=, each "
    "once; its query has another"
)
ENCODE = "(a password with '/', '?', '#' or '@' in it must be percent-encoded)"
KEYS = {"REQUESTSTATE_KEYS": b64(SECRET)}


@pytest.fixture
def built() -> Iterator[list[Any]]:
    """The Redis guards a test builds, their clients closed after it."""
    guards: list[Any] = []
    yield guards
    for guard in guards:
        if isinstance(guard, RedisGuard):
            guard.close()


def redis_guard(built: list[Any], url: str, *, asyncio: bool = False) -> Any:
    guard = rs.guard_from_url(url, asyncio=asyncio)
    built.append(guard)
    return guard


def connection(guard: RedisGuard | AsyncRedisGuard) -> dict[str, Any]:
    """What the guard's client connects with: host, port, db, password, timeouts."""
    kwargs: dict[str, Any] = guard.client.connection_pool.connection_kwargs  # type: ignore[union-attr]
    return kwargs


# --- every scheme ---------------------------------------------------------------------------------


@pytest.mark.parametrize("asyncio", [False, True])
@pytest.mark.parametrize("url", ["memory", " MEMORY "])
def test_memory_is_a_memory_guard_for_sync_and_asyncio_codecs(url: str, asyncio: bool) -> None:
    assert type(rs.guard_from_url(url, asyncio=asyncio)) is rs.MemoryGuard


def test_a_redis_url_is_a_redis_guard_on_its_host_port_db_and_password(built: list[Any]) -> None:
    guard = redis_guard(built, f"redis://:{PASSWORD}@127.0.0.1:6390/3")
    assert type(guard) is RedisGuard
    kwargs = connection(guard)
    assert (kwargs["host"], kwargs["port"], kwargs["db"], kwargs["password"]) == (
        "127.0.0.1",
        6390,
        3,
        PASSWORD,
    )


def test_a_percent_encoded_password_reaches_the_client_decoded(built: list[Any]) -> None:
    guard = redis_guard(built, "redis://user:p%2Fw%40rd@127.0.0.1:6390/0")
    assert (connection(guard)["username"], connection(guard)["password"]) == ("user", "p/w@rd")


def test_rediss_is_a_redis_guard_over_tls(built: list[Any]) -> None:
    guard = redis_guard(built, "rediss://127.0.0.1:6390/0")
    assert guard.client.connection_pool.connection_class is redis.SSLConnection


def test_asyncio_builds_the_asyncio_redis_guard(built: list[Any]) -> None:
    guard = redis_guard(built, "redis://127.0.0.1:6390/1", asyncio=True)
    assert (type(guard), type(guard.client), connection(guard)["db"]) == (
        AsyncRedisGuard,
        redis.asyncio.Redis,
        1,
    )


@pytest.mark.parametrize(
    ("scheme", "connection_class"),
    [("redis+cluster", redis.asyncio.Connection), ("rediss+cluster", redis.asyncio.SSLConnection)],
)
def test_a_cluster_scheme_is_a_guard_on_a_redis_cluster_client(scheme: str, connection_class: type) -> None:
    # The asyncio cluster client reads its slot map at its first command: nothing connects here.
    guard = rs.guard_from_url(f"{scheme}://127.0.0.1:6390", asyncio=True)
    assert isinstance(guard, AsyncRedisGuard)
    client = guard.client
    assert isinstance(client, redis.asyncio.cluster.RedisCluster)
    assert (list(client.nodes_manager.startup_nodes), client.connection_kwargs["connection_class"]) == (
        ["127.0.0.1:6390"],
        connection_class,
    )


def test_the_namespace_and_timeout_options_reach_the_guard_and_its_client(built: list[Any]) -> None:
    guard = redis_guard(built, "redis://127.0.0.1:6390/0?namespace=my%20app&timeout=1.5")
    kwargs = connection(guard)
    assert (repr(guard), kwargs["socket_timeout"], kwargs["socket_connect_timeout"]) == (
        "RedisGuard(namespace='my app')",
        1.5,
        1.5,
    )


def test_without_options_the_guard_has_its_defaults(built: list[Any]) -> None:
    guard = redis_guard(built, "redis://127.0.0.1:6390")
    assert (repr(guard), connection(guard)["socket_timeout"], connection(guard).get("db", 0)) == (
        "RedisGuard(namespace='requeststate')",
        0.25,
        0,
    )


@pytest.mark.parametrize(("asyncio", "kind"), [(False, SQLiteGuard), (True, AsyncSQLiteGuard)])
def test_a_sqlite_url_is_the_guard_of_its_absolute_path(asyncio: bool, kind: type) -> None:
    # The file is opened at the first claim: nothing is created here.
    url = "sqlite:////var/lib/my%20app/claims.db?namespace=app&timeout=2&clock_skew=3"
    guard = rs.guard_from_url(url, asyncio=asyncio)
    assert (type(guard), guard.path, guard.namespace, guard.timeout, guard.clock_skew) == (  # type: ignore[union-attr]
        kind,
        "/var/lib/my app/claims.db",
        "app",
        2.0,
        3,
    )


def test_a_sqlite_url_without_options_has_the_stores_defaults() -> None:
    guard = rs.guard_from_url("sqlite:////srv/claims.db")
    assert isinstance(guard, SQLiteGuard)
    assert (guard.namespace, guard.timeout, guard.clock_skew) == (
        sqlite_guards.DEFAULT_NAMESPACE,
        sqlite_guards.DEFAULT_TIMEOUT,
        sqlite_guards.DEFAULT_CLOCK_SKEW,
    )


def test_every_store_takes_the_same_options_from_its_url(built: list[Any]) -> None:
    query = "?namespace=app&timeout=0.5&clock_skew=2"
    guards: list[Any] = [
        rs.guard_from_url("sqlite:////srv/claims.db" + query),
        redis_guard(built, "redis://127.0.0.1:6390/0" + query),
    ]
    assert [(guard.namespace, guard.timeout, guard.clock_skew) for guard in guards] == [("app", 0.5, 2)] * 2


def test_an_option_given_by_keyword_is_checked_as_the_constructor_checks_it() -> None:
    # A query's text is read as a number; a keyword is the caller's value, as the constructor takes it.
    with pytest.raises(TypeError, match=r"^timeout must be a number of seconds, not str$"):
        SQLiteGuard.from_url("sqlite:////srv/claims.db", timeout="1")  # type: ignore[arg-type]


def test_an_option_given_both_in_the_url_and_by_keyword_is_refused() -> None:
    with pytest.raises(
        ValueError,
        match=r"^the guard URL may carry the options \?namespace=, \?timeout=, \?clock_skew=, each once",
    ):
        SQLiteGuard.from_url("sqlite:////srv/claims.db?timeout=1", timeout=2)


@pytest.mark.parametrize(("asyncio", "name"), [(False, "SQLiteGuard"), (True, "AsyncSQLiteGuard")])
def test_the_sqlite_guard_itself_serves_a_sqlite_url(tmp_path: Path, asyncio: bool, name: str) -> None:
    guard = rs.guard_from_url(f"sqlite:///{tmp_path}/claims.db?namespace=app&timeout=2", asyncio=asyncio)
    assert repr(guard) == f"{name}({str(tmp_path / 'claims.db')!r}, namespace='app')"


def test_a_redis_url_imports_requeststate_redis_only_then() -> None:
    # The core reaches an integration only when a URL names its store.
    code = (
        "import sys, requeststate as rs; before = 'requeststate.redis' in sys.modules; "
        "rs.guard_from_url('memory'); memory = 'requeststate.redis' in sys.modules; "
        "rs.guard_from_url('redis://127.0.0.1:6390').close(); "
        "print(before, memory, 'requeststate.redis' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["False", "False", "True"]


# --- refusals -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", f"REQUESTSTATE_GUARD must be {ACCEPTED}: its scheme is none of these"),
        (
            "memcached://127.0.0.1:11211",
            f"REQUESTSTATE_GUARD must be {ACCEPTED}: its scheme is none of these",
        ),
        ("memory://", f"REQUESTSTATE_GUARD must be {ACCEPTED}: its scheme is none of these"),
        ("127.0.0.1:6379", f"REQUESTSTATE_GUARD must be {ACCEPTED}: its scheme is none of these"),
        ("redis://[::1/0", f"REQUESTSTATE_GUARD is not a URL {ENCODE}; it must be {ACCEPTED}"),
        ("redis:///0", "REQUESTSTATE_GUARD: the guard URL must name the Redis host: redis://host:port/db"),
        (
            "redis://127.0.0.1:63x9/0",
            f"REQUESTSTATE_GUARD: the guard URL has a port that is not a number {ENCODE}",
        ),
        (
            "redis://127.0.0.1/zero",
            f"REQUESTSTATE_GUARD: the guard URL must end in the database's number (/0), or nothing {ENCODE}",
        ),
        ("redis://127.0.0.1/0#x", f"REQUESTSTATE_GUARD: the guard URL has a '#' {ENCODE}"),
        *[
            (f"redis://127.0.0.1/0?{query}", OPTIONS)
            for query in ("fail_open=1", "replicas=1", "namespace=a&namespace=b", "ssl_cert_reqs=none", "x")
        ],
        *[
            (
                f"{store}?{name}={given}",
                f"REQUESTSTATE_GUARD: the guard URL's {name} must be {what} of seconds (?{name}=1)",
            )
            for store in ("redis://127.0.0.1/0", "sqlite:////srv/claims.db")
            for name, what, given in (
                ("timeout", "a number", "soon"),
                ("clock_skew", "a whole number", "soon"),
                ("clock_skew", "a whole number", "1.5"),
            )
        ],
        *[
            (
                f"{store}?timeout={given}",
                f"REQUESTSTATE_GUARD: timeout must be a positive, finite number of seconds up to 60, "
                f"got {shown}",
            )
            for store in ("redis://127.0.0.1/0", "sqlite:////srv/claims.db")
            for given, shown in (
                ("0", "0.0"),
                ("1e300", "1e+300"),
                ("inf", "inf"),
                ("nan", "nan"),
                ("61", "61.0"),
            )
        ],
        (
            "redis://127.0.0.1/0?clock_skew=-1",
            "REQUESTSTATE_GUARD: clock_skew must be an int from 0 to 86400, got -1",
        ),
        ("redis://127.0.0.1/0?namespace=", "REQUESTSTATE_GUARD: namespace must not be empty"),
        ("sqlite:////srv/claims%00.db", "REQUESTSTATE_GUARD: path must not contain a NUL byte"),
        (
            "sqlite:///claims.db",
            "REQUESTSTATE_GUARD: the guard URL must name the SQLite file by its absolute path, after four "
            "slashes: sqlite:////var/lib/app/claims.db (workers may not share a working directory)",
        ),
        (
            "sqlite://host/claims.db",
            "REQUESTSTATE_GUARD: the guard URL must name the SQLite file by its absolute path, after four "
            "slashes: sqlite:////var/lib/app/claims.db (workers may not share a working directory)",
        ),
        ("sqlite:////srv/claims.db?journal_mode=delete", OPTIONS),
    ],
)
def test_a_url_that_names_no_guard_is_refused_naming_the_variable_and_what_it_accepts(
    url: str, message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        rs.guard_from_url(url)


@pytest.mark.parametrize(
    "url",
    [
        f"redis://user:{PASSWORD}@127.0.0.1:6390/x",
        f"redis://user:{PASSWORD}@127.0.0.1:6390/0?fail_open=1",
        f"redis://user:{PASSWORD}@127.0.0.1:6390/0?namespace=",
        f"redis://user:pass/{PASSWORD}@127.0.0.1:6390/0",  # '/' not encoded: the rest reads as a path
        f"redis://user:pass#{PASSWORD}@127.0.0.1:6390/0",  # '#': the rest reads as a fragment
        f"redis://user:pass?{PASSWORD}@127.0.0.1:6390/0",  # '?': the rest reads as a query
        f"redis://127.0.0.1:{PASSWORD}/0",  # a password where the port goes
        f"rediss+cluster://:{PASSWORD}@[::1/0",
        f"sqlite://:{PASSWORD}@/tmp/claims.db",
        f"memcached://:{PASSWORD}@127.0.0.1",
    ],
)
def test_no_refusal_shows_any_part_of_the_password(url: str) -> None:
    with pytest.raises(ValueError, match=r"^REQUESTSTATE_GUARD[ :]") as refused:
        rs.guard_from_url(url)
    # What a log line or a crash prints: the message and its traceback, causes included.
    assert "hunter2" not in "".join(traceback.format_exception(refused.value))


@pytest.mark.parametrize("asyncio", [False, True])
def test_the_guard_and_the_codec_show_no_password(built: list[Any], asyncio: bool) -> None:
    guard = redis_guard(built, f"redis://user:{PASSWORD}@127.0.0.1:6390/0", asyncio=asyncio)
    codec = rs.Codec(SECRET, guard=guard)
    shown = " ".join([repr(guard), repr(guard.client), repr(codec), str(codec.options)])
    assert "hunter2" not in shown


def test_a_url_that_is_not_a_str_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"^url must be a str, not bytes$"):
        rs.guard_from_url(b"memory")  # type: ignore[call-overload]


# --- Codec.from_env -------------------------------------------------------------------------------


def test_without_the_variable_the_codec_has_the_guard_the_code_gives() -> None:
    guard = rs.MemoryGuard()
    assert rs.Codec.from_env(environ=KEYS).guard is None
    assert rs.Codec.from_env(environ=KEYS, guard=guard).guard is guard


@pytest.mark.parametrize("value", ["", "  "], ids=["empty", "blank"])
def test_a_variable_set_but_empty_is_refused_rather_than_read_as_no_guard(value: str) -> None:
    # A deployment that meant a guard and lost its value must not run without single use.
    with pytest.raises(ValueError, match=r"^REQUESTSTATE_GUARD is set but empty: name a guard \(memory, "):
        rs.Codec.from_env(environ={**KEYS, "REQUESTSTATE_GUARD": value})


def test_the_variable_gives_the_codec_its_guard() -> None:
    codec = rs.Codec.from_env(environ={**KEYS, "REQUESTSTATE_GUARD": "memory"})
    assert type(codec.guard) is rs.MemoryGuard


def test_the_variable_wins_over_the_guard_the_code_gives(built: list[Any]) -> None:
    # As REQUESTSTATE_MODE and _TTL do: code written for one process runs in a fleet unchanged.
    codec = rs.Codec.from_env(
        environ={**KEYS, "REQUESTSTATE_GUARD": "redis://127.0.0.1:6390"}, guard=rs.MemoryGuard()
    )
    built.append(codec.guard)
    assert type(codec.guard) is RedisGuard


@pytest.mark.parametrize(("asyncio", "kind"), [(False, RedisGuard), (True, AsyncRedisGuard)])
def test_asyncio_picks_the_guard_of_its_kind(built: list[Any], asyncio: bool, kind: type) -> None:
    codec = rs.Codec.from_env(
        environ={**KEYS, "REQUESTSTATE_GUARD": "redis://127.0.0.1:6390"}, asyncio=asyncio
    )
    built.append(codec.guard)
    assert type(codec.guard) is kind


def test_a_bad_variable_is_refused_by_from_env_naming_it() -> None:
    with pytest.raises(ValueError, match=r"^REQUESTSTATE_GUARD must be memory, redis://"):
        rs.Codec.from_env(environ={**KEYS, "REQUESTSTATE_GUARD": "localhost:6379"})


def test_the_keys_are_read_before_the_guard_is_built() -> None:
    # A deployment missing its keys gets that error, with no Redis client built for nothing.
    with pytest.raises(ValueError, match=r"^REQUESTSTATE_KEYS is not set, or empty: "):
        rs.Codec.from_env(environ={"REQUESTSTATE_GUARD": "nonsense"})
