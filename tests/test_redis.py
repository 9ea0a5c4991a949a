"""RedisGuard and AsyncRedisGuard against one real redis-server on a loopback port (support/redis_server.py).

Clusters, replicas, outages and load: test_redis_fleet.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import socket
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import redis.asyncio
from redis.exceptions import AuthenticationError, AuthorizationError

from requeststate._guard import GuardUnavailable
from requeststate.redis import AsyncRedisGuard, RedisGuard, _unavailable, redis_key

from .support import redis_server

NOW = 2_000_000_000
ID = "5f0c6a3e9d2b4c1a8e7f6d5c4b3a2918"
OTHER_ID = "0123456789abcdef0123456789abcdef"
# Far more than a loopback claim takes, far less than redis-py's defaults (seconds, with retries).
FAST_SECONDS = 1.0
RACE_SECONDS = 30.0
# For a claim that must be answered: a loaded 2-core machine can hold Redis back past the default 250 ms.
PATIENT_SECONDS = 5.0


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with redis_server.or_skip(redis_server.running_redis()) as url:
        yield url


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_url)
    yield connection
    connection.close()


@pytest.fixture
def namespace() -> str:
    # Each test writes under its own namespace, so tests share one server without a flush.
    return f"test-{uuid.uuid4().hex}"


@pytest.fixture
def guard(redis_url: str, namespace: str) -> Iterator[RedisGuard]:
    guard = RedisGuard.from_url(redis_url, namespace=namespace, timeout=PATIENT_SECONDS)
    yield guard
    guard.close()


@pytest.fixture
def closed_port_url() -> str:
    # Nothing listens on a port just released: connecting is refused at once.
    port = redis_server.free_loopback_port()
    return f"redis://127.0.0.1:{port}/0"


@pytest.fixture
def silent_url() -> Iterator[str]:
    # The kernel completes the handshake for a listening socket nobody serves: Redis "slow" forever.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"


def keys_under(client: redis.Redis, namespace: str) -> list[bytes]:
    return sorted(client.scan_iter(match=f"{namespace}:*"))


# --- RedisGuard -----------------------------------------------------------------------------------


def test_first_claim_wins(guard: RedisGuard) -> None:
    assert guard.claim(ID, NOW + 300, NOW) is True


def test_second_claim_is_a_replay(guard: RedisGuard) -> None:
    guard.claim(ID, NOW + 300, NOW)
    assert guard.claim(ID, NOW + 300, NOW + 1) is False


def test_ids_are_claimed_independently(guard: RedisGuard) -> None:
    guard.claim(ID, NOW + 300, NOW)
    assert guard.claim(OTHER_ID, NOW + 300, NOW) is True


def test_key_lives_until_one_second_after_expires_at_by_the_verifier_clock(
    guard: RedisGuard, client: redis.Redis, namespace: str
) -> None:
    # NOW is years ahead of Redis's clock: the lifetime is counted from the verifier's now.
    guard.claim(ID, NOW + 300, NOW)
    assert client.ttl(redis_key(namespace, ID)) == 301


def test_replay_is_refused_when_the_verifier_clock_is_behind_redis(guard: RedisGuard) -> None:
    # 5 s behind, 2 s before expiry: an absolute expiry (EXAT now + 3) is already past for Redis.
    now = int(time.time()) - 5
    assert [guard.claim(ID, now + 2, now) for _ in range(3)] == [True, False, False]


def test_id_is_free_once_its_key_expires(guard: RedisGuard) -> None:
    now = int(time.time())
    guard.claim(ID, now, now)
    assert guard.claim(ID, now, now) is False
    time.sleep(1.05)
    assert guard.claim(ID, now + 301, now + 1) is True


def test_namespaces_do_not_share_ids(redis_url: str, guard: RedisGuard) -> None:
    other = RedisGuard.from_url(redis_url, namespace=f"other-{uuid.uuid4().hex}", timeout=PATIENT_SECONDS)
    try:
        guard.claim(ID, NOW + 300, NOW)
        assert other.claim(ID, NOW + 300, NOW) is True
    finally:
        other.close()


def test_key_is_the_namespace_and_the_sha256_of_the_id(
    guard: RedisGuard, client: redis.Redis, namespace: str
) -> None:
    guard.claim(ID, NOW + 300, NOW)
    digest = hashlib.sha256(ID.encode()).hexdigest()
    assert keys_under(client, namespace) == [f"{namespace}:{digest}".encode()]


def test_redis_holds_the_id_neither_in_a_key_nor_in_a_value(
    guard: RedisGuard, client: redis.Redis, namespace: str
) -> None:
    guard.claim(ID, NOW + 300, NOW)
    (key,) = keys_under(client, namespace)
    assert ID.encode() not in key
    assert client.get(key) == b"1"


def test_expires_at_beyond_what_redis_stores_still_claims(guard: RedisGuard) -> None:
    assert guard.claim(ID, 2**63 - 1, NOW) is True
    assert guard.claim(ID, 2**63 - 1, NOW) is False


def test_claim_after_expires_at_is_refused_as_a_caller_mistake(guard: RedisGuard) -> None:
    with pytest.raises(ValueError, match="expires_at is before now"):
        guard.claim(ID, NOW - 1, NOW)


def test_unreachable_redis_fails_closed_fast(closed_port_url: str) -> None:
    guard = RedisGuard.from_url(closed_port_url)
    started = time.monotonic()
    with pytest.raises(GuardUnavailable, match="ConnectionError"):
        guard.claim(ID, NOW + 300, NOW)
    assert time.monotonic() - started < FAST_SECONDS
    guard.close()


def test_silent_redis_fails_closed_after_the_timeout(silent_url: str) -> None:
    guard = RedisGuard.from_url(silent_url, timeout=0.2)
    started = time.monotonic()
    with pytest.raises(GuardUnavailable, match="TimeoutError"):
        guard.claim(ID, NOW + 300, NOW)
    assert 0.15 < time.monotonic() - started < FAST_SECONDS
    guard.close()


def test_unavailable_error_names_neither_the_id_nor_its_key(closed_port_url: str) -> None:
    guard = RedisGuard.from_url(closed_port_url)
    with pytest.raises(GuardUnavailable) as caught:
        guard.claim(ID, NOW + 300, NOW)
    assert ID not in str(caught.value)
    assert hashlib.sha256(ID.encode()).hexdigest() not in str(caught.value)
    guard.close()


def test_fail_open_accepts_when_redis_is_unreachable(closed_port_url: str) -> None:
    guard = RedisGuard.from_url(closed_port_url, fail_open=True)
    assert guard.claim(ID, NOW + 300, NOW) is True
    guard.close()


def test_fail_open_logs_a_warning_without_the_id_or_its_key(
    closed_port_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    guard = RedisGuard.from_url(closed_port_url, fail_open=True)
    with caplog.at_level(logging.WARNING, logger="requeststate.redis"):
        guard.claim(ID, NOW + 300, NOW)
    guard.close()
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "fail_open" in record.getMessage()
    assert ID not in caplog.text
    assert hashlib.sha256(ID.encode()).hexdigest() not in caplog.text


def test_fail_open_still_refuses_a_replay_while_redis_answers(redis_url: str, namespace: str) -> None:
    guard = RedisGuard.from_url(redis_url, namespace=namespace, fail_open=True, timeout=PATIENT_SECONDS)
    guard.claim(ID, NOW + 300, NOW)
    assert guard.claim(ID, NOW + 300, NOW) is False
    guard.close()


def test_error_reply_fails_closed_even_with_fail_open(
    redis_url: str, client: redis.Redis, namespace: str
) -> None:
    # A user who may read but not write: SET answers NOPERM, a configuration to fix, not an outage.
    user, password = f"reader-{uuid.uuid4().hex}", uuid.uuid4().hex
    client.acl_setuser(
        user, enabled=True, passwords=[f"+{password}"], keys=["*"], commands=["+@connection", "+get"]
    )
    url = redis_url.replace("redis://", f"redis://{user}:{password}@")
    guard = RedisGuard.from_url(url, namespace=namespace, fail_open=True)
    try:
        with pytest.raises(GuardUnavailable, match="NoPermissionError"):
            guard.claim(ID, NOW + 300, NOW)
    finally:
        guard.close()
        client.acl_deluser(user)


def test_guard_refuses_an_asyncio_client() -> None:
    asyncio_client: Any = redis.asyncio.Redis()
    with pytest.raises(TypeError, match="AsyncRedisGuard"):
        RedisGuard(asyncio_client)


@pytest.mark.parametrize("namespace", ["", b"ns"])
def test_namespace_must_be_a_non_empty_str(namespace: object) -> None:
    with pytest.raises((TypeError, ValueError), match="namespace"):
        RedisGuard(redis.Redis(), namespace=namespace)  # type: ignore[arg-type]


def test_fail_open_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="fail_open must be a bool"):
        RedisGuard(redis.Redis(), fail_open="no")  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), float("nan")])
def test_timeout_must_be_positive_and_finite(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        RedisGuard.from_url("redis://127.0.0.1:6379/0", timeout=timeout)


@pytest.mark.parametrize("timeout", ["1", None, True])
def test_timeout_must_be_a_number(timeout: object) -> None:
    with pytest.raises(TypeError, match="timeout"):
        RedisGuard.from_url("redis://127.0.0.1:6379/0", timeout=timeout)  # type: ignore[arg-type]


@pytest.mark.parametrize(("replicas", "error"), [(-1, ValueError), (True, TypeError), (1.0, TypeError)])
def test_replicas_must_be_an_int_of_at_least_0(replicas: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="replicas must be"):
        RedisGuard(redis.Redis(), replicas=replicas)  # type: ignore[arg-type]


@pytest.mark.parametrize("replica_timeout", [0, -0.5, float("nan")])
def test_replica_timeout_must_be_positive_and_finite(replica_timeout: float) -> None:
    with pytest.raises(ValueError, match="replica_timeout must be a positive"):
        RedisGuard(redis.Redis(), replicas=1, replica_timeout=replica_timeout)


def test_replica_timeout_rounds_up_to_whole_milliseconds(monkeypatch: pytest.MonkeyPatch) -> None:
    # WAIT n 0 would wait forever: a sub-millisecond timeout must not round down to 0.
    waits: list[tuple[int, int]] = []
    client = redis.Redis()
    pipe = client.pipeline(transaction=False)
    monkeypatch.setattr(pipe, "wait", lambda replicas, ms: waits.append((replicas, ms)))
    monkeypatch.setattr(pipe, "execute", lambda: [True, 1])
    monkeypatch.setattr(client, "pipeline", lambda transaction: pipe)
    RedisGuard(client, replicas=1, replica_timeout=0.0001).claim(ID, NOW + 300, NOW)
    assert waits == [(1, 1)]


def test_from_url_reads_for_the_timeout_plus_the_replica_timeout() -> None:
    guard = RedisGuard.from_url("redis://127.0.0.1:6379/0", timeout=0.25, replicas=1, replica_timeout=0.5)
    options = guard._client.connection_pool.connection_kwargs  # type: ignore[union-attr]
    assert (options["socket_connect_timeout"], options["socket_timeout"]) == (0.25, 0.75)
    guard.close()


def test_guard_refuses_an_object_that_is_not_a_redis_client() -> None:
    with pytest.raises(TypeError, match=r"redis\.Redis or redis\.cluster\.RedisCluster, not str"):
        RedisGuard("redis://127.0.0.1:6379/0")  # type: ignore[arg-type]


def test_repr_shows_the_replicas_it_waits_for() -> None:
    guard = RedisGuard(redis.Redis(), namespace="app", replicas=2)
    assert repr(guard) == "RedisGuard(namespace='app', fail_open=False, replicas=2)"


def test_repr_shows_namespace_and_fail_open_only() -> None:
    guard = RedisGuard.from_url("redis://user:hunter2@127.0.0.1:6379/0", namespace="app")
    assert repr(guard) == "RedisGuard(namespace='app', fail_open=False)"
    guard.close()


def test_processes_racing_on_the_same_ids_claim_each_exactly_once(redis_url: str, namespace: str) -> None:
    ids = [uuid.uuid4().hex for _ in range(200)]
    won = redis_server.race(redis_url, namespace, ids, processes=4, seconds=RACE_SECONDS)
    assert Counter(won) == Counter(ids)


# --- AsyncRedisGuard ------------------------------------------------------------------------------


def test_async_first_claim_wins_and_second_is_a_replay(redis_url: str, namespace: str) -> None:
    async def claims() -> list[bool]:
        guard = AsyncRedisGuard.from_url(redis_url, namespace=namespace, timeout=PATIENT_SECONDS)
        try:
            return [await guard.claim(ID, NOW + 300, NOW), await guard.claim(ID, NOW + 300, NOW)]
        finally:
            await guard.aclose()

    assert asyncio.run(claims()) == [True, False]


def test_async_replay_is_refused_when_the_verifier_clock_is_behind_redis(
    redis_url: str, namespace: str
) -> None:
    now = int(time.time()) - 5

    async def claims() -> list[bool]:
        guard = AsyncRedisGuard.from_url(redis_url, namespace=namespace, timeout=PATIENT_SECONDS)
        try:
            return [await guard.claim(ID, now + 2, now) for _ in range(3)]
        finally:
            await guard.aclose()

    assert asyncio.run(claims()) == [True, False, False]


def test_async_key_is_hashed_and_lives_until_one_second_after_expires_at(
    redis_url: str, client: redis.Redis, namespace: str
) -> None:
    async def claim() -> None:
        guard = AsyncRedisGuard.from_url(redis_url, namespace=namespace, timeout=PATIENT_SECONDS)
        try:
            await guard.claim(ID, NOW + 300, NOW)
        finally:
            await guard.aclose()

    asyncio.run(claim())
    key = redis_key(namespace, ID)
    assert keys_under(client, namespace) == [key.encode()]
    assert client.ttl(key) == 301


def test_async_concurrent_claims_of_one_id_win_once(redis_url: str, namespace: str) -> None:
    async def claims() -> list[bool]:
        guard = AsyncRedisGuard.from_url(redis_url, namespace=namespace, timeout=PATIENT_SECONDS)
        try:
            return await asyncio.gather(*(guard.claim(ID, NOW + 300, NOW) for _ in range(50)))
        finally:
            await guard.aclose()

    assert sorted(asyncio.run(claims())) == [False] * 49 + [True]


def test_async_unreachable_redis_fails_closed_fast(closed_port_url: str) -> None:
    async def claim() -> bool:
        guard = AsyncRedisGuard.from_url(closed_port_url)
        try:
            return await guard.claim(ID, NOW + 300, NOW)
        finally:
            await guard.aclose()

    started = time.monotonic()
    with pytest.raises(GuardUnavailable, match="ConnectionError"):
        asyncio.run(claim())
    assert time.monotonic() - started < FAST_SECONDS


def test_async_silent_redis_fails_closed_after_the_timeout(silent_url: str) -> None:
    async def claim() -> bool:
        guard = AsyncRedisGuard.from_url(silent_url, timeout=0.2)
        try:
            return await guard.claim(ID, NOW + 300, NOW)
        finally:
            await guard.aclose()

    started = time.monotonic()
    with pytest.raises(GuardUnavailable, match="TimeoutError"):
        asyncio.run(claim())
    assert 0.15 < time.monotonic() - started < FAST_SECONDS


def test_async_fail_open_accepts_and_logs_a_warning_without_the_id(
    closed_port_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def claim() -> bool:
        guard = AsyncRedisGuard.from_url(closed_port_url, fail_open=True)
        try:
            return await guard.claim(ID, NOW + 300, NOW)
        finally:
            await guard.aclose()

    with caplog.at_level(logging.WARNING, logger="requeststate.redis"):
        assert asyncio.run(claim()) is True
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert ID not in caplog.text


def test_async_guard_refuses_a_sync_client() -> None:
    sync_client: Any = redis.Redis()
    with pytest.raises(TypeError, match=r"redis\.asyncio\.Redis"):
        AsyncRedisGuard(sync_client)


def test_async_repr_shows_namespace_and_fail_open_only() -> None:
    guard = AsyncRedisGuard(redis.asyncio.Redis(), namespace="app", fail_open=True)
    assert repr(guard) == "AsyncRedisGuard(namespace='app', fail_open=True)"


def test_unexpected_reply_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    client = redis.Redis()
    monkeypatch.setattr(client, "set", lambda *args, **kwargs: "OK")
    with pytest.raises(GuardUnavailable, match="unexpected str"):
        RedisGuard(client).claim(ID, NOW + 300, NOW)


def test_key_of_an_id_with_a_lone_surrogate_is_still_a_hash() -> None:
    digest = hashlib.sha256(b"\xed\xa0\x80").hexdigest()
    assert redis_key("ns", "\ud800") == f"ns:{digest}"


@pytest.mark.parametrize("error", [AuthenticationError("WRONGPASS"), AuthorizationError("NOPERM")])
def test_a_refused_password_fails_closed_even_with_fail_open(error: Exception) -> None:
    # redis-py raises these as ConnectionError subclasses: a configuration to fix, not an outage.
    with pytest.raises(
        GuardUnavailable, match=f"^Redis could not record the claim \\({type(error).__name__}\\)$"
    ):
        _unavailable(error, fail_open=True)
