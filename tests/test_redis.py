"""RedisGuard and AsyncRedisGuard against one real redis-server on a loopback port (support/redis_server.py).

The faults a claim can meet (no answer, each error reply, a late WAIT) and a Redis that forgets
(FLUSHALL, a restart without persistence) are here too. Clusters, replicas, failovers and load:
test_redis_fleet.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.exceptions
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

import requeststate as rs
from requeststate._guard import GuardUnavailable
from requeststate.redis import AsyncRedisGuard, RedisGuard, redis_key

from .support import redis_server
from .support.redis_faults import FAULTS, replying
from .support.redis_guards import FLAVOURS, AsyncOnALoop, build, lost_by, outcome
from .support.redis_server import Server
from .support.reference import b64

NOW = 2_000_000_000
ID = "5f0c6a3e9d2b4c1a8e7f6d5c4b3a2918"
OTHER_ID = "0123456789abcdef0123456789abcdef"
SECRET = hashlib.sha256(b"test_redis").digest()
RACE_SECONDS = 30.0
# For a claim that must be answered: a loaded 2-core machine can hold Redis back past the default 250 ms.
PATIENT_SECONDS = 5.0
# The token lifetime the loss tests declare: the codec's default ttl, no leeway.
LIFETIME = 300
LOST = "Redis lost the guard's claims"


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    with redis_server.or_skip(redis_server.running_server()) as running:
        yield running


@pytest.fixture(scope="session")
def redis_url(server: Server) -> str:
    return server.url


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


@pytest.fixture(scope="module")
def loading_url() -> Iterator[str]:
    with redis_server.or_skip(redis_server.loading_redis()) as loading:
        yield loading.url


def keys_under(client: redis.Redis, namespace: str) -> list[bytes]:
    return sorted(client.scan_iter(match=f"{namespace}:*"))


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "requeststate.redis"]


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


def test_redis_holds_the_claim_under_the_sha256_of_the_id_and_one_marker(
    guard: RedisGuard, client: redis.Redis, namespace: str
) -> None:
    guard.claim(ID, NOW + 300, NOW)
    digest = hashlib.sha256(ID.encode()).hexdigest()
    assert keys_under(client, namespace) == [f"{namespace}:{digest}".encode(), f"{namespace}:marker".encode()]


def test_redis_holds_the_id_neither_in_a_key_nor_in_a_value(
    guard: RedisGuard, client: redis.Redis, namespace: str
) -> None:
    guard.claim(ID, NOW + 300, NOW)
    key = redis_key(namespace, ID)
    assert ID.encode() not in b"".join(keys_under(client, namespace))
    assert client.get(key) == b"1"
    assert ID not in repr(client.hgetall(f"{namespace}:marker"))


def test_the_longest_max_token_lifetime_is_a_lifetime_redis_stores(redis_url: str, namespace: str) -> None:
    # Redis refuses an EX whose milliseconds, added to its clock, pass 2**63 - 1.
    longest = 2**62 // 1000
    guard = RedisGuard.from_url(
        redis_url, namespace=namespace, max_token_lifetime=longest, timeout=PATIENT_SECONDS
    )
    try:
        assert [guard.claim(ID, NOW + longest, NOW), guard.claim(ID, NOW + longest, NOW)] == [True, False]
    finally:
        guard.close()


@pytest.mark.parametrize(("protocol", "decode_responses"), [(2, True), (3, False), (3, True)])
def test_a_client_of_either_protocol_decoding_or_not_claims_alike(
    redis_url: str, namespace: str, protocol: int, decode_responses: bool
) -> None:
    # The script's reply is an array of an integer and two bulk strings: bytes, or str once decoded.
    own = redis.Redis.from_url(redis_url, protocol=protocol, decode_responses=decode_responses)
    guard = RedisGuard(own, namespace=namespace)
    try:
        assert [guard.claim(ID, NOW + 300, NOW), guard.claim(ID, NOW + 300, NOW)] == [True, False]
    finally:
        guard.close()


def test_claim_after_expires_at_is_refused_as_a_caller_mistake(guard: RedisGuard) -> None:
    with pytest.raises(ValueError, match="expires_at is before now"):
        guard.claim(ID, NOW - 1, NOW)


def test_a_token_living_past_max_token_lifetime_is_refused_unclaimed(
    redis_url: str, client: redis.Redis, namespace: str
) -> None:
    guard = RedisGuard.from_url(
        redis_url, namespace=namespace, max_token_lifetime=LIFETIME, timeout=PATIENT_SECONDS
    )
    try:
        with pytest.raises(GuardUnavailable, match=r"lives 301 s more, past max_token_lifetime \(300 s\)"):
            guard.claim(ID, NOW + LIFETIME + 1, NOW)
    finally:
        guard.close()
    assert keys_under(client, namespace) == []


def test_tokens_living_past_max_token_lifetime_log_one_warning(
    redis_url: str, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    guard = RedisGuard.from_url(
        redis_url, namespace=namespace, max_token_lifetime=LIFETIME, timeout=PATIENT_SECONDS
    )
    with caplog.at_level(logging.WARNING, logger="requeststate.redis"):
        for token_id in (ID, OTHER_ID, ID):
            with pytest.raises(GuardUnavailable):
                guard.claim(token_id, NOW + LIFETIME + 60, NOW)
    guard.close()
    assert [message.split(";")[0] for message in warnings_of(caplog)] == [
        "Redis replay guard: a token lives 360 s more, past max_token_lifetime (300 s)"
    ]


def test_processes_racing_on_the_same_ids_claim_each_exactly_once(redis_url: str, namespace: str) -> None:
    ids = [uuid.uuid4().hex for _ in range(200)]
    won = redis_server.race(redis_url, namespace, ids, processes=4, seconds=RACE_SECONDS)
    assert Counter(won) == Counter(ids)


# --- options --------------------------------------------------------------------------------------


def test_guard_refuses_an_asyncio_client() -> None:
    asyncio_client: Any = redis.asyncio.Redis()
    with pytest.raises(TypeError, match="AsyncRedisGuard"):
        RedisGuard(asyncio_client)


@pytest.mark.parametrize("namespace", ["", b"ns"])
def test_namespace_must_be_a_non_empty_str(namespace: object) -> None:
    with pytest.raises((TypeError, ValueError), match="namespace"):
        RedisGuard(redis.Redis(), namespace=namespace)  # type: ignore[arg-type]


def test_a_cluster_guard_refuses_a_namespace_with_a_brace() -> None:
    # A brace would be a hash tag deciding the marker's slot, apart from its claims'.
    cluster: Any = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=1)
    with pytest.raises(ValueError, match=r"must not contain '\{' with a Redis Cluster"):
        AsyncRedisGuard(cluster, namespace="{app}")


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


@pytest.mark.parametrize(
    ("replicas", "error", "message"),
    [
        (-1, ValueError, r"^replicas must be an int from 0 to 2\*\*63-1, got -1$"),
        (True, TypeError, r"^replicas must be an int, not bool$"),
        (1.0, TypeError, r"^replicas must be an int, not float$"),
    ],
)
def test_replicas_must_be_an_int_of_at_least_0(
    replicas: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        RedisGuard(redis.Redis(), replicas=replicas)  # type: ignore[arg-type]


@pytest.mark.parametrize("replica_timeout", [0, -0.5, float("nan")])
def test_replica_timeout_must_be_positive_and_finite(replica_timeout: float) -> None:
    with pytest.raises(ValueError, match="replica_timeout must be a positive"):
        RedisGuard(redis.Redis(), replicas=1, replica_timeout=replica_timeout)


@pytest.mark.parametrize(
    ("lifetime", "error", "message"),
    [
        (0, ValueError, "max_token_lifetime must be an int from 1 to 4611686018427387"),
        (2**62 // 1000 + 1, ValueError, "max_token_lifetime must be an int from 1"),
        (300.0, TypeError, "max_token_lifetime must be an int, not float"),
        (True, TypeError, "max_token_lifetime must be an int, not bool"),
    ],
)
def test_max_token_lifetime_must_be_whole_seconds_redis_can_store(
    lifetime: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        RedisGuard(redis.Redis(), max_token_lifetime=lifetime)  # type: ignore[arg-type]


def test_replica_timeout_rounds_up_to_whole_milliseconds(redis_url: str, namespace: str) -> None:
    # WAIT n 0 would wait forever, and the claim would end in a read timeout instead.
    guard = RedisGuard.from_url(
        redis_url, namespace=namespace, timeout=PATIENT_SECONDS, replicas=1, replica_timeout=0.0001
    )
    try:
        with pytest.raises(GuardUnavailable, match=r"^0 of 1 replicas acknowledged the claim within 1 ms$"):
            guard.claim(ID, NOW + 300, NOW)
    finally:
        guard.close()


def test_guard_refuses_an_object_that_is_not_a_redis_client() -> None:
    with pytest.raises(TypeError, match=r"redis\.Redis or redis\.cluster\.RedisCluster, not str"):
        RedisGuard("redis://127.0.0.1:6379/0")  # type: ignore[arg-type]


def test_repr_shows_the_replicas_it_waits_for() -> None:
    guard = RedisGuard(redis.Redis(), namespace="app", replicas=2)
    assert repr(guard) == "RedisGuard(namespace='app', fail_open=False, replicas=2)"


def test_repr_shows_a_max_token_lifetime_other_than_the_default() -> None:
    guard = RedisGuard(redis.Redis(), namespace="app", max_token_lifetime=330)
    assert repr(guard) == "RedisGuard(namespace='app', fail_open=False, max_token_lifetime=330)"


def test_the_default_max_token_lifetime_serves_the_default_ttl_with_a_minute_of_leeway() -> None:
    guard = RedisGuard(redis.Redis())
    ring = rs.KeyRing(SECRET)
    assert rs.Codec(ring, mode="encrypted", leeway=60, guard=guard).guard is guard
    with pytest.raises(
        ValueError, match=r"^the guard's max_token_lifetime \(360 s\) is shorter than .* \(361 s\)"
    ):
        rs.Codec(ring, mode="encrypted", leeway=61, guard=guard)


def test_a_deployment_whose_ttl_outlives_the_guards_max_token_lifetime_fails_at_start() -> None:
    # Before: REQUESTSTATE_TTL=3600 beside a guard of a shorter lifetime refused every token at run time.
    environ = {"REQUESTSTATE_KEYS": b64(SECRET), "REQUESTSTATE_TTL": "3600"}
    with pytest.raises(ValueError, match=r"max_token_lifetime \(360 s\) is shorter than .* \(3600 s\)"):
        rs.Codec.from_env(environ=environ, guard=RedisGuard(redis.Redis()))


def test_repr_shows_namespace_and_fail_open_only() -> None:
    guard = RedisGuard.from_url("redis://user:hunter2@127.0.0.1:6379/0", namespace="app")
    assert repr(guard) == "RedisGuard(namespace='app', fail_open=False)"
    guard.close()


def test_guard_claims_through_the_client_it_was_given() -> None:
    client = redis.Redis()
    assert RedisGuard(client).client is client


# --- the timeouts from_url sets -------------------------------------------------------------------


@pytest.mark.parametrize(("replicas", "read"), [(0, 0.25), (1, 0.75)])
def test_from_url_reads_for_the_timeout_and_for_replicas_the_replica_timeout(
    replicas: int, read: float
) -> None:
    # Before: the replica timeout lengthened every read, and a hung Redis stalled claims 0.5 s.
    guard = RedisGuard.from_url(
        "redis://127.0.0.1:6379/0", timeout=0.25, replicas=replicas, replica_timeout=0.5
    )
    client = guard.client
    assert isinstance(client, redis.Redis)
    options = client.get_connection_kwargs()
    assert (options["socket_connect_timeout"], options["socket_timeout"]) == (0.25, read)
    guard.close()


@pytest.mark.parametrize(("replicas", "read"), [(0, 0.25), (1, 0.75)])
def test_async_from_url_reads_for_the_timeout_and_for_replicas_the_replica_timeout(
    replicas: int, read: float
) -> None:
    guard = AsyncRedisGuard.from_url(
        "redis://127.0.0.1:6379/0", timeout=0.25, replicas=replicas, replica_timeout=0.5
    )
    client = guard.client
    assert isinstance(client, redis.asyncio.Redis)
    options = client.get_connection_kwargs()  # type: ignore[no-untyped-call]  # untyped in redis-py
    assert (options["socket_connect_timeout"], options["socket_timeout"]) == (0.25, read)
    asyncio.run(guard.aclose())


# --- faults: no answer, an error reply, a late WAIT -----------------------------------------------

# What each provoked error reply is raised as by redis-py: the class GuardUnavailable names.
RAISED_AS = {
    "LOADING": "BusyLoadingError",
    "OOM": "OutOfMemoryError",
    "READONLY": "ReadOnlyError",
    "MASTERDOWN": "MasterDownError",
    "NOPERM": "NoPermissionError",
    "WRONGPASS": "AuthenticationError",
}
# The errors fail_open rides out, as documented: no Redis answered. Every other class fails closed.
# RedisClusterException rides out only "cannot be connected" caused by no answer (below).
NO_ANSWER = {"ConnectionError", "TimeoutError", "SlotNotCoveredError"}
ERROR_CLASSES = sorted(
    (
        error
        for error in vars(redis.exceptions).values()
        # Every exception class redis-py defines, those that are no RedisError included.
        if isinstance(error, type) and issubclass(error, Exception)
    ),
    key=lambda error: error.__name__,
)


class FailingRedis(redis.Redis):
    """A client whose every command raises ``error``, as redis-py would."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def execute_command(self, *args: Any, **options: Any) -> Any:
        raise self.error


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("replicas", [0, 1])
@pytest.mark.parametrize("fail_open", [False, True])
@pytest.mark.parametrize("where", ["unreachable", "silent"])
def test_no_answer_is_ridden_out_only_with_fail_open(
    closed_port_url: str, silent_url: str, where: str, fail_open: bool, replicas: int, flavour: str
) -> None:
    url = closed_port_url if where == "unreachable" else silent_url
    guard = build(flavour, url, fail_open=fail_open, replicas=replicas, timeout=0.1, replica_timeout=0.01)
    try:
        claimed = outcome(guard, ID, NOW + 300, NOW)
    finally:
        guard.close()
    cause = "ConnectionError" if where == "unreachable" else "TimeoutError"
    assert claimed == (True if fail_open else f"Redis could not record the claim ({cause})")


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("replicas", [0, 1])
@pytest.mark.parametrize("fail_open", [False, True])
@pytest.mark.parametrize("fault", FAULTS)
def test_an_error_reply_fails_closed_whatever_the_options(
    server: Server, namespace: str, fault: str, fail_open: bool, replicas: int, flavour: str
) -> None:
    with replying(server, fault) as url:
        guard = build(
            flavour,
            url,
            namespace=namespace,
            fail_open=fail_open,
            replicas=replicas,
            timeout=PATIENT_SECONDS,
            replica_timeout=0.01,
        )
        try:
            claimed = outcome(guard, ID, NOW + 300, NOW)
        finally:
            guard.close()
    assert claimed == f"Redis could not record the claim ({RAISED_AS[fault]})"


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("replicas", [0, 1])
@pytest.mark.parametrize("fail_open", [False, True])
def test_a_loading_redis_fails_closed_whatever_the_options(
    loading_url: str, fail_open: bool, replicas: int, flavour: str
) -> None:
    # redis-py raises -LOADING as BusyLoadingError, a ConnectionError: still an answer, not an outage.
    guard = build(
        flavour,
        loading_url,
        fail_open=fail_open,
        replicas=replicas,
        timeout=PATIENT_SECONDS,
        replica_timeout=0.01,
    )
    try:
        assert outcome(guard, ID, NOW + 300, NOW) == "Redis could not record the claim (BusyLoadingError)"
    finally:
        guard.close()


@pytest.mark.parametrize("fail_open", [False, True])
@pytest.mark.parametrize("error_class", ERROR_CLASSES, ids=lambda error: error.__name__)
def test_fail_open_rides_out_exactly_the_errors_no_redis_answered(
    error_class: type[Exception], fail_open: bool
) -> None:
    guard = RedisGuard(FailingRedis(error_class("3999 127.0.0.1:6381")), fail_open=fail_open)
    ridden_out = fail_open and error_class.__name__ in NO_ANSWER
    expected = True if ridden_out else f"Redis could not record the claim ({error_class.__name__})"
    assert outcome(guard, ID, NOW + 300, NOW) == expected


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("fail_open", [False, True])
def test_a_wait_answered_after_the_client_stopped_reading_never_accepts_a_replay(
    redis_url: str, namespace: str, fail_open: bool, flavour: str
) -> None:
    # No replica: WAIT answers after replica_timeout (2 s), the client stops reading after 0.25 s
    # (time enough for the claim's own answer on a loaded machine).
    # Before: SET and WAIT were read together, the timeout lost SET's "already claimed", and
    # fail_open accepted the replay.
    options: dict[str, Any] = {"namespace": namespace, "fail_open": fail_open, "replicas": 1}
    guard: Any
    if flavour == "sync":
        own = redis.Redis.from_url(redis_url, socket_timeout=0.25, retry=Retry(NoBackoff(), 0))
        guard = RedisGuard(own, replica_timeout=2.0, **options)
    else:
        aown = redis.asyncio.Redis.from_url(redis_url, socket_timeout=0.25, retry=AsyncRetry(NoBackoff(), 0))
        guard = AsyncOnALoop(AsyncRedisGuard(aown, replica_timeout=2.0, **options))
    try:
        claims = [outcome(guard, ID, NOW + 300, NOW) for _ in range(2)]
    finally:
        guard.close()
    assert claims == ["the replicas' acknowledgement of the claim was not read (TimeoutError)", False]


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("fail_open", [False, True])
def test_a_wait_no_replica_acknowledged_refuses_the_claim_and_then_its_replay(
    redis_url: str, namespace: str, fail_open: bool, flavour: str
) -> None:
    guard = build(
        flavour,
        redis_url,
        namespace=namespace,
        fail_open=fail_open,
        replicas=1,
        timeout=PATIENT_SECONDS,
        replica_timeout=0.01,
    )
    try:
        claims = [outcome(guard, ID, NOW + 300, NOW) for _ in range(2)]
    finally:
        guard.close()
    assert claims == ["0 of 1 replicas acknowledged the claim within 10 ms", False]


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


def test_unavailable_error_names_neither_the_id_nor_its_key(closed_port_url: str) -> None:
    guard = RedisGuard.from_url(closed_port_url)
    with pytest.raises(GuardUnavailable) as caught:
        guard.claim(ID, NOW + 300, NOW)
    assert ID not in str(caught.value)
    assert hashlib.sha256(ID.encode()).hexdigest() not in str(caught.value)
    guard.close()


def test_unreachable_redis_fails_closed(closed_port_url: str) -> None:
    guard = RedisGuard.from_url(closed_port_url)
    with pytest.raises(GuardUnavailable, match=r"^Redis could not record the claim \(ConnectionError\)$"):
        guard.claim(ID, NOW + 300, NOW)
    guard.close()


@pytest.mark.parametrize("guard_class", [RedisGuard, AsyncRedisGuard])
def test_from_url_builds_a_client_that_never_retries(guard_class: type[RedisGuard | AsyncRedisGuard]) -> None:
    # A retried claim whose first answer was lost would read its own claim as a replay; and
    # redis-py's default retries stretch an outage's refusals over seconds.
    guard = guard_class.from_url("redis://127.0.0.1:6379/0")
    retry = guard.client.get_connection_kwargs()["retry"]
    assert isinstance(retry, Retry | AsyncRetry)
    assert retry.get_retries() == 0


def test_fail_open_rides_out_a_cluster_no_node_of_which_answers(closed_port_url: str) -> None:
    guard = AsyncOnALoop(AsyncRedisGuard.from_url(closed_port_url, cluster=True, fail_open=True))
    try:
        assert outcome(guard, ID, NOW + 300, NOW) is True
    finally:
        guard.close()


def test_fail_open_refuses_a_cluster_guard_on_a_redis_that_is_no_cluster(redis_url: str) -> None:
    # Before: "Cluster mode is not enabled on this node" was ridden out, and every replay accepted.
    guard = AsyncOnALoop(
        AsyncRedisGuard.from_url(redis_url, cluster=True, fail_open=True, timeout=PATIENT_SECONDS)
    )
    try:
        refused = [outcome(guard, ID, NOW + 300, NOW) for _ in range(2)]
    finally:
        guard.close()
    assert refused == ["Redis could not record the claim (RedisClusterException)"] * 2


def test_fail_open_refuses_when_its_own_blocking_pool_has_no_connection_free(redis_url: str) -> None:
    # Before: the pool's "No connection available." is a ConnectionError, and a replay was accepted.
    pool = redis.BlockingConnectionPool.from_url(redis_url, max_connections=1, timeout=0.01)
    guard = RedisGuard(redis.Redis(connection_pool=pool), fail_open=True)
    held = pool.get_connection()  # type: ignore[no-untyped-call]  # untyped in redis-py
    try:
        refused = outcome(guard, ID, NOW + 300, NOW)
    finally:
        pool.release(held)  # type: ignore[no-untyped-call]  # untyped in redis-py
        guard.close()
        pool.disconnect()  # a pool given to a client is the caller's to close
    assert refused == "Redis could not record the claim (ConnectionError)"


def test_async_fail_open_refuses_when_its_own_blocking_pool_has_no_connection_free(redis_url: str) -> None:
    async def run() -> None:
        pool = redis.asyncio.BlockingConnectionPool.from_url(redis_url, max_connections=1, timeout=0.01)
        guard = AsyncRedisGuard(redis.asyncio.Redis(connection_pool=pool), fail_open=True)
        held = await pool.get_connection()  # type: ignore[no-untyped-call]  # untyped in redis-py
        try:
            with pytest.raises(
                GuardUnavailable, match=r"^Redis could not record the claim \(ConnectionError\)$"
            ):
                await guard.claim(ID, NOW + 300, NOW)
        finally:
            await pool.release(held)
            await guard.aclose()
            await pool.disconnect()

    asyncio.run(run())


def test_fail_open_still_refuses_a_replay_while_redis_answers(redis_url: str, namespace: str) -> None:
    guard = RedisGuard.from_url(redis_url, namespace=namespace, fail_open=True, timeout=PATIENT_SECONDS)
    guard.claim(ID, NOW + 300, NOW)
    assert guard.claim(ID, NOW + 300, NOW) is False
    guard.close()


def test_a_reply_that_is_not_the_claims_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    client = redis.Redis()
    monkeypatch.setattr(client, "evalsha", lambda *args, **kwargs: b"OK")
    with pytest.raises(GuardUnavailable, match=r"^Redis answered the claim with an unexpected bytes$"):
        RedisGuard(client).claim(ID, NOW + 300, NOW)


# --- a Redis that forgot --------------------------------------------------------------------------


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("fail_open", [False, True])
def test_after_flushall_no_token_redeemed_before_is_accepted(
    server: Server, namespace: str, fail_open: bool, flavour: str
) -> None:
    guard = build(
        flavour,
        server.url,
        namespace=namespace,
        fail_open=fail_open,
        max_token_lifetime=LIFETIME,
        timeout=PATIENT_SECONDS,
    )
    ids = [uuid.uuid4().hex for _ in range(20)]
    try:
        assert [guard.claim(token_id, NOW + 300, NOW) for token_id in ids] == [True] * 20
        server.execute("FLUSHALL")
        replays = [outcome(guard, token_id, NOW + 300, NOW + 10) for token_id in ids]
    finally:
        guard.close()
    assert replays == [lost_by(NOW + 10 + LIFETIME)] * 20


def test_a_loss_is_logged_once_not_per_claim(
    server: Server, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    guard = RedisGuard.from_url(
        server.url, namespace=namespace, max_token_lifetime=LIFETIME, timeout=PATIENT_SECONDS
    )
    guard.claim(ID, NOW + 300, NOW)
    server.execute("FLUSHALL")
    with caplog.at_level(logging.WARNING, logger="requeststate.redis"):
        for now in range(NOW, NOW + 5):
            with pytest.raises(GuardUnavailable, match=LOST):
                guard.claim(uuid.uuid4().hex, NOW + 300, now)
    guard.close()
    assert warnings_of(caplog) == [
        f"Redis lost the replay guard's claims (namespace {namespace!r}; its marker changed): every "
        f"token that expires by {NOW + LIFETIME} (unix time) is refused, as it may have been redeemed "
        "before the loss"
    ]


def test_the_loss_window_ends_one_max_token_lifetime_after_the_loss(server: Server, namespace: str) -> None:
    guard = RedisGuard.from_url(
        server.url, namespace=namespace, max_token_lifetime=LIFETIME, timeout=PATIENT_SECONDS
    )
    try:
        guard.claim(ID, NOW + 300, NOW)
        server.execute("FLUSHALL")
        # Detected at NOW: a token that expires by NOW + LIFETIME may have been redeemed before;
        # one that expires later was minted after the loss.
        last_refused = outcome(guard, OTHER_ID, NOW + LIFETIME, NOW)
        first_accepted = outcome(guard, uuid.uuid4().hex, NOW + LIFETIME + 1, NOW + 1)
    finally:
        guard.close()
    assert (last_refused, first_accepted) == (lost_by(NOW + LIFETIME), True)


def test_a_guard_that_never_saw_the_store_learns_the_loss_from_its_marker(
    server: Server, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    first = RedisGuard.from_url(
        server.url, namespace=namespace, max_token_lifetime=LIFETIME, timeout=PATIENT_SECONDS
    )
    first.claim(ID, NOW + 300, NOW)
    server.execute("FLUSHALL")
    with pytest.raises(GuardUnavailable, match=LOST):
        first.claim(OTHER_ID, NOW + 300, NOW)  # notices the loss, and records it in the new marker
    first.close()
    # Another process, started after the loss: it never saw the store before.
    caplog.clear()
    second = RedisGuard.from_url(
        server.url, namespace=namespace, max_token_lifetime=LIFETIME, timeout=PATIENT_SECONDS
    )
    with caplog.at_level(logging.WARNING, logger="requeststate.redis"):
        replay = outcome(second, ID, NOW + 300, NOW + 5)
    second.close()
    assert replay == lost_by(NOW + LIFETIME)
    assert ["another guard saw its marker change" in message for message in warnings_of(caplog)] == [True]


def test_a_guard_idle_through_a_loss_counts_its_window_from_the_loss_not_from_its_own_claim(
    server: Server, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: a guard that saw the old marker opened a new window (its now + lifetime) whenever it
    # next claimed, refusing fresh tokens across the fleet long after the loss.
    idle, busy = (
        RedisGuard.from_url(
            server.url, namespace=namespace, max_token_lifetime=LIFETIME, timeout=PATIENT_SECONDS
        )
        for _ in range(2)
    )
    try:
        idle.claim(ID, NOW + 300, NOW)
        busy.claim(OTHER_ID, NOW + 300, NOW)
        server.execute("FLUSHALL")
        noticed = outcome(busy, uuid.uuid4().hex, NOW + 300, NOW + 10)  # the marker is written at NOW + 10
        later = NOW + 10 + LIFETIME + 100
        caplog.clear()  # busy's warning, when it noticed
        with caplog.at_level(logging.WARNING, logger="requeststate.redis"):
            outcomes = [
                outcome(idle, uuid.uuid4().hex, later + 300, later),
                outcome(idle, ID, later + 300, later),
            ]
    finally:
        idle.close()
        busy.close()
    assert noticed == lost_by(NOW + 10 + LIFETIME)
    assert (outcomes, warnings_of(caplog)) == ([True, True], [])


def test_a_fresh_redis_at_first_deploy_refuses_nothing_and_logs_nothing(
    redis_url: str, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    guard = RedisGuard.from_url(
        redis_url, namespace=namespace, max_token_lifetime=LIFETIME, timeout=PATIENT_SECONDS
    )
    with caplog.at_level(logging.WARNING, logger="requeststate.redis"):
        claims = [guard.claim(uuid.uuid4().hex, NOW + 300, NOW) for _ in range(3)]
    guard.close()
    assert (claims, warnings_of(caplog)) == ([True] * 3, [])


def flood(guard: RedisGuard, server: Server) -> tuple[list[str], Counter[str]]:
    """Claim fresh ids from 4 threads; SIGKILL ``server`` once 200 are accepted, restart it 20 claims later.

    The threads wait while the server restarts, and stop after 50 claims made once it is back
    (or 2,000 claims in all).

    Returns the accepted ids, and a count of the outcomes of the claims made after the restart.
    """
    accepted: list[str] = []
    after: Counter[str] = Counter()
    while_dead = 0
    dead, back = threading.Event(), threading.Event()
    lock = threading.Lock()
    claims = iter(range(2_000))

    def claimer() -> None:
        nonlocal while_dead
        while sum(after.values()) < 50 and next(claims, None) is not None:
            if while_dead >= 20:
                back.wait(timeout=30)
            token_id = uuid.uuid4().hex
            phase = "back" if back.is_set() else "dead" if dead.is_set() else "up"
            claimed = outcome(guard, token_id, NOW + 300, NOW)
            with lock:
                if claimed is True:
                    accepted.append(token_id)
                if phase == "dead":
                    while_dead += 1
                if phase == "back":
                    after[str(claimed)] += 1

    workers = [threading.Thread(target=claimer) for _ in range(4)]
    for worker in workers:
        worker.start()
    redis_server.wait_until(lambda: len(accepted) >= 200, "the flood did not start", seconds=30)
    server.kill()
    dead.set()
    redis_server.wait_until(lambda: while_dead >= 20, "no claim was made while Redis was down")
    server.restart()
    back.set()
    for worker in workers:
        worker.join(timeout=30)
    return accepted, after


@pytest.fixture
def own_server() -> Iterator[Server]:
    with redis_server.or_skip(redis_server.running_server()) as running:
        yield running


def test_fail_open_rides_out_no_outage_for_a_token_the_loss_window_covers(
    own_server: Server, namespace: str
) -> None:
    guard = RedisGuard.from_url(
        own_server.url,
        namespace=namespace,
        fail_open=True,
        max_token_lifetime=LIFETIME,
        timeout=PATIENT_SECONDS,
    )
    try:
        guard.claim(ID, NOW + 300, NOW)
        own_server.execute("FLUSHALL")
        assert outcome(guard, OTHER_ID, NOW + 300, NOW) == lost_by(NOW + LIFETIME)
        own_server.kill()
        # Unreachable now: the replay of a token redeemed before the loss is still refused, while
        # a token minted after it is ridden out, as fail_open promises.
        during = [
            outcome(guard, ID, NOW + 300, NOW + 1),
            outcome(guard, OTHER_ID, NOW + LIFETIME + 2, NOW + 2),
        ]
    finally:
        guard.close()
    assert during == ["Redis could not record the claim (ConnectionError)", True]


@pytest.mark.parametrize("fail_open", [False, True])
def test_redis_killed_and_restarted_mid_load_accepts_no_token_twice(
    own_server: Server, namespace: str, fail_open: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: every token redeemed before a restart without persistence was accepted again.
    guard = RedisGuard.from_url(
        own_server.url,
        namespace=namespace,
        fail_open=fail_open,
        max_token_lifetime=LIFETIME,
        timeout=PATIENT_SECONDS,
    )
    with caplog.at_level(logging.WARNING, logger="requeststate.redis"):
        accepted, after = flood(guard, own_server)
        replays = Counter(str(outcome(guard, token_id, NOW + 300, NOW)) for token_id in accepted)
    guard.close()
    assert len(accepted) == len(set(accepted)) >= 200
    assert replays == {lost_by(NOW + LIFETIME): len(accepted)}
    assert lost_by(NOW + LIFETIME) in after, after
    assert sum("lost the replay guard's claims" in message for message in warnings_of(caplog)) == 1


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
    assert keys_under(client, namespace) == [key.encode(), f"{namespace}:marker".encode()]
    assert client.ttl(key) == 301


def test_async_concurrent_claims_of_one_id_win_once(redis_url: str, namespace: str) -> None:
    async def claims() -> list[bool]:
        guard = AsyncRedisGuard.from_url(redis_url, namespace=namespace, timeout=PATIENT_SECONDS)
        try:
            return await asyncio.gather(*(guard.claim(ID, NOW + 300, NOW) for _ in range(50)))
        finally:
            await guard.aclose()

    assert sorted(asyncio.run(claims())) == [False] * 49 + [True]


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


def test_key_of_an_id_with_a_lone_surrogate_is_still_a_hash() -> None:
    digest = hashlib.sha256(b"\xed\xa0\x80").hexdigest()
    assert redis_key("ns", "\ud800") == f"ns:{digest}"
