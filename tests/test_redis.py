"""RedisGuard and AsyncRedisGuard against one real redis-server on a loopback port (support/redis_server.py).

The faults a claim can meet (no answer, each error reply, a late WAIT) and a Redis that forgets
(FLUSHALL, a restart with or without persistence, an eviction) are here too. Clusters, replicas,
failovers and load: test_redis_fleet.py. Random faults under load: scripts/nemesis.py.
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
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.exceptions
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

import requeststate as rs
from requeststate import GuardUnavailable
from requeststate.redis import DEFAULT_CLOCK_SKEW, AsyncRedisGuard, GuardOptions, RedisGuard, claim_location

from .support import redis_server
from .support.redis_faults import FAULTS, replying
from .support.redis_guards import FLAVOURS, AsyncOnALoop, Claimer, build, lost, minted, outcome
from .support.redis_server import Server
from .support.reference import b64

NOW = 2_000_000_000
# When the tests' guards begin Redis's memory: a minute before their tokens are minted.
BEGUN = NOW - 60
ID = minted(NOW)
OTHER_ID = minted(NOW)
# An id of another layout (requeststate 0.3's, another writer's): it does not tell when it was minted.
UNDATED_ID = "5f0c6a3e9d2b4c1a8e7f6d5c4b3a2918"
SECRET = hashlib.sha256(b"test_redis").digest()
RACE_SECONDS = 30.0
# For a claim that must be answered: a loaded 2-core machine can hold Redis back past the default 250 ms.
PATIENT_SECONDS = 5.0
# The token lifetime the undated-id tests declare: the codec's default ttl, no leeway.
LIFETIME = 300
SKEW = DEFAULT_CLOCK_SKEW
# A claim Redis did not answer, accepted: the warning names neither the token's id nor its key.
FAIL_OPEN_WARNING = (
    "requeststate.redis",
    logging.WARNING,
    "Redis replay guard unavailable (ConnectionError); fail_open=True: token accepted without a replay check",
)


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


AnyClaimer = TypeVar("AnyClaimer", bound=Claimer)


def begun(guard: AnyClaimer, now: int = BEGUN) -> AnyClaimer:
    """``guard``, once it began Redis's memory at ``now``: the tokens minted from then on are accepted."""
    guard.begin(now)
    return guard


@pytest.fixture
def guard(redis_url: str, namespace: str) -> Iterator[RedisGuard]:
    guard = RedisGuard.from_url(redis_url, namespace=namespace, timeout=PATIENT_SECONDS)
    guard.begin(BEGUN)
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


def held(client: redis.Redis, namespace: str, token_id: str) -> float | None:
    """The score (the token's expiry) under which Redis holds ``token_id``'s claim, or ``None``."""
    key, member = claim_location(namespace, token_id)
    score: float | None = client.zscore(key, member)
    return score


# --- RedisGuard -----------------------------------------------------------------------------------


def test_first_claim_wins(guard: RedisGuard) -> None:
    assert guard.claim(ID, NOW + 300, NOW) is True


def test_second_claim_is_a_replay(guard: RedisGuard) -> None:
    guard.claim(ID, NOW + 300, NOW)
    assert guard.claim(ID, NOW + 300, NOW + 1) is False


def test_ids_are_claimed_independently(guard: RedisGuard) -> None:
    guard.claim(ID, NOW + 300, NOW)
    assert guard.claim(OTHER_ID, NOW + 300, NOW) is True


def test_a_claim_is_held_by_its_expiry_and_carries_no_redis_expiry(
    guard: RedisGuard, client: redis.Redis, namespace: str
) -> None:
    # Redis's clock plays no part: a claim that Redis would expire on its own clock dies early
    # when that clock steps forward (before: every claim, after a 600 s step).
    guard.claim(ID, NOW + 300, NOW)
    assert (held(client, namespace, ID), client.ttl(f"{namespace}:claims")) == (NOW + 300, -1)


def test_a_verifier_clock_skew_ahead_removes_no_claim_a_slower_verifier_still_honours(
    redis_url: str, namespace: str
) -> None:
    # Before: each verifier set the key's lifetime from its own clock, and a key written by a host
    # 1 s ahead was gone while a host 1 s behind still accepted the token (3 of 3 replays).
    expires = NOW + 300
    fast, slow = (RedisGuard.from_url(redis_url, namespace=namespace, timeout=PATIENT_SECONDS) for _ in "ab")
    try:
        fast.begin(BEGUN)
        assert slow.claim(ID, expires, NOW) is True
        # The fast verifier's clock reads expires + SKEW when the slow one's reads expires: it
        # claims another token, which removes the claims that expired on its clock.
        assert fast.claim(OTHER_ID, expires + SKEW + 300, expires + SKEW) is True
        assert slow.claim(ID, expires, expires) is False
    finally:
        fast.close()
        slow.close()


def test_a_claim_is_removed_once_its_expiry_plus_clock_skew_has_passed(
    guard: RedisGuard, client: redis.Redis, namespace: str
) -> None:
    expires = NOW + 300
    guard.claim(ID, expires, NOW)
    guard.claim(minted(NOW), expires + 400, expires + SKEW)
    kept = held(client, namespace, ID)
    guard.claim(minted(NOW), expires + 400, expires + SKEW + 1)
    assert (kept, held(client, namespace, ID)) == (expires, None)


def test_clock_skew_sets_how_long_a_claim_outlives_its_token(
    redis_url: str, client: redis.Redis, namespace: str
) -> None:
    guard = begun(RedisGuard.from_url(redis_url, namespace=namespace, clock_skew=30, timeout=PATIENT_SECONDS))
    try:
        guard.claim(ID, NOW + 300, NOW)
        guard.claim(minted(NOW), NOW + 800, NOW + 330)
        kept = held(client, namespace, ID)
        guard.claim(minted(NOW), NOW + 800, NOW + 331)
    finally:
        guard.close()
    assert (kept, held(client, namespace, ID)) == (NOW + 300, None)


def test_replay_is_refused_when_the_verifier_clock_is_behind_redis(redis_url: str, namespace: str) -> None:
    # 5 s behind, 2 s before expiry: an absolute expiry (EXAT now + 3) is already past for Redis.
    now = int(time.time()) - 5
    guard = begun(RedisGuard.from_url(redis_url, namespace=namespace, timeout=PATIENT_SECONDS), now - 60)
    try:
        token_id = minted(now)
        assert [guard.claim(token_id, now + 2, now) for _ in range(3)] == [True, False, False]
    finally:
        guard.close()


def test_namespaces_do_not_share_ids(redis_url: str, guard: RedisGuard) -> None:
    other = RedisGuard.from_url(redis_url, namespace=f"other-{uuid.uuid4().hex}", timeout=PATIENT_SECONDS)
    try:
        other.begin(BEGUN)
        guard.claim(ID, NOW + 300, NOW)
        assert other.claim(ID, NOW + 300, NOW) is True
    finally:
        other.close()


def test_redis_holds_every_claim_and_the_marker_in_one_sorted_set(
    guard: RedisGuard, client: redis.Redis, namespace: str
) -> None:
    guard.claim(ID, NOW + 300, NOW)
    guard.claim(OTHER_ID, NOW + 300, NOW)
    run_id = client.info("server")["run_id"]
    members = client.zrange(f"{namespace}:claims", 0, -1)
    assert keys_under(client, namespace) == [f"{namespace}:claims".encode()]
    assert sorted(members[:2]) == sorted(
        hashlib.sha256(i.encode()).hexdigest().encode() for i in (ID, OTHER_ID)
    )
    assert members[2:] == [f"marker:{run_id}:{BEGUN}".encode()]


def test_redis_holds_the_id_nowhere(guard: RedisGuard, client: redis.Redis, namespace: str) -> None:
    guard.claim(ID, NOW + 300, NOW)
    assert ID.encode() not in b"".join(
        [*keys_under(client, namespace), *client.zrange(f"{namespace}:claims", 0, -1)]
    )


def test_the_latest_time_redis_scores_exactly_is_claimed_and_a_later_one_refused(
    guard: RedisGuard,
) -> None:
    latest = 2**53 - 1
    claims = [guard.claim(ID, latest, NOW), guard.claim(ID, latest, NOW)]
    with pytest.raises(GuardUnavailable, match=r"^a time past 2\*\*53 s, which Redis cannot score exactly$"):
        guard.claim(OTHER_ID, latest + 1, NOW)
    assert claims == [True, False]


@pytest.mark.parametrize(("protocol", "decode_responses"), [(2, True), (3, False), (3, True)])
def test_a_client_of_either_protocol_decoding_or_not_claims_alike(
    redis_url: str, namespace: str, protocol: int, decode_responses: bool
) -> None:
    # The script's reply is an array of a bulk string and two integers: bytes, or str once decoded.
    own = redis.Redis.from_url(redis_url, protocol=protocol, decode_responses=decode_responses)
    guard = begun(RedisGuard(own, namespace=namespace))
    try:
        assert [guard.claim(ID, NOW + 300, NOW), guard.claim(ID, NOW + 300, NOW)] == [True, False]
    finally:
        guard.close()


def test_claim_after_expires_at_is_refused_as_a_caller_mistake(guard: RedisGuard) -> None:
    with pytest.raises(
        ValueError, match=r"^expires_at is before now: an expired token has nothing to claim$"
    ):
        guard.claim(ID, NOW - 1, NOW)


AHEAD = (
    r"^the token was minted 6 s after this verifier's now, past clock_skew \(5 s\): "
    r"the hosts' clocks differ by more than the guard allows$"
)


def test_a_token_minted_past_clock_skew_in_the_future_is_refused_unclaimed(
    guard: RedisGuard, client: redis.Redis, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Its minter's clock runs ahead of this verifier's by more than the guard allows: the margin
    # that keeps two verifiers from both accepting a token no longer holds.
    ahead = minted(NOW + SKEW + 1)
    with caplog.at_level(logging.WARNING, logger="requeststate.redis"):
        with pytest.raises(GuardUnavailable, match=AHEAD):
            guard.claim(ahead, NOW + 306, NOW)
        with pytest.raises(GuardUnavailable, match=AHEAD):
            guard.claim(minted(NOW + SKEW + 1), NOW + 306, NOW)
    assert (held(client, namespace, ahead), guard.claim(minted(NOW + SKEW), NOW + 305, NOW)) == (None, True)
    # One warning for the two tokens.
    assert caplog.record_tuples == [
        (
            "requeststate.redis",
            logging.WARNING,
            "Redis replay guard: a token was minted 6 s in this verifier's future, past clock_skew (5 s): "
            "such tokens are refused; synchronise the hosts' clocks",
        )
    ]


def test_an_undated_token_living_past_max_token_lifetime_is_refused_unclaimed(
    redis_url: str, client: redis.Redis, namespace: str
) -> None:
    guard = RedisGuard.from_url(
        redis_url, namespace=namespace, max_token_lifetime=LIFETIME, timeout=PATIENT_SECONDS
    )
    try:
        with pytest.raises(GuardUnavailable, match=r"lives 301 s more, past max_token_lifetime \(300 s\)"):
            guard.claim(UNDATED_ID, NOW + LIFETIME + 1, NOW)
    finally:
        guard.close()
    assert keys_under(client, namespace) == []


LONG_LIVED = (
    r"^the token lives 360 s more, past max_token_lifetime \(300 s\): set it to the codec's ttl \+ leeway$"
)


def test_undated_tokens_living_past_max_token_lifetime_log_one_warning(
    redis_url: str, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    guard = RedisGuard.from_url(
        redis_url, namespace=namespace, max_token_lifetime=LIFETIME, timeout=PATIENT_SECONDS
    )
    with caplog.at_level(logging.WARNING, logger="requeststate.redis"):
        for token_id in (UNDATED_ID, uuid.uuid4().hex, UNDATED_ID):
            with pytest.raises(GuardUnavailable, match=LONG_LIVED):
                guard.claim(token_id, NOW + LIFETIME + 60, NOW)
    guard.close()
    assert caplog.record_tuples == [
        (
            "requeststate.redis",
            logging.WARNING,
            "Redis replay guard: a token lives 360 s more, past max_token_lifetime (300 s); such tokens are "
            "refused: set max_token_lifetime to the codec's ttl + leeway",
        )
    ]


def test_an_undated_token_is_taken_as_minted_one_max_token_lifetime_before_its_expiry(
    redis_url: str, namespace: str
) -> None:
    # Its earliest possible mint time: it counts as minted before Redis's memory began unless
    # it expires more than max_token_lifetime + clock_skew after that.
    guard = begun(
        RedisGuard.from_url(
            redis_url, namespace=namespace, max_token_lifetime=LIFETIME, timeout=PATIENT_SECONDS
        ),
        NOW,
    )
    try:
        refused = outcome(guard, UNDATED_ID, NOW + LIFETIME + SKEW, NOW + 10)
        accepted = outcome(guard, uuid.uuid4().hex, NOW + LIFETIME + SKEW + 1, NOW + 10)
    finally:
        guard.close()
    assert (refused, accepted) == (lost(NOW + SKEW, NOW), True)


def test_processes_racing_on_the_same_ids_claim_each_exactly_once(redis_url: str, namespace: str) -> None:
    ids = [minted(NOW) for _ in range(200)]
    won = redis_server.race(redis_url, namespace, ids, processes=4, seconds=RACE_SECONDS)
    assert Counter(won) == Counter(ids)


# --- options --------------------------------------------------------------------------------------


def test_guard_refuses_an_asyncio_client() -> None:
    asyncio_client: Any = redis.asyncio.Redis()
    with pytest.raises(
        TypeError,
        match=r"^client must be a redis\.Redis or redis\.cluster\.RedisCluster, not Redis: "
        r"use AsyncRedisGuard$",
    ):
        RedisGuard(asyncio_client)


@pytest.mark.parametrize(
    ("namespace", "error", "message"),
    [
        ("", ValueError, r"^namespace must not be empty$"),
        (b"ns", TypeError, r"^namespace must be a str, not bytes$"),
    ],
    ids=["empty", "bytes"],
)
def test_namespace_must_be_a_non_empty_str(namespace: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        RedisGuard(redis.Redis(), namespace=namespace)  # type: ignore[arg-type]


def test_a_cluster_guard_refuses_a_namespace_with_a_brace() -> None:
    # A brace would be a hash tag deciding the marker's slot, apart from its claims'.
    cluster: Any = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=1)
    with pytest.raises(ValueError, match=r"must not contain '\{' with a Redis Cluster"):
        AsyncRedisGuard(cluster, namespace="{app}")


def test_fail_open_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match=r"^fail_open must be a bool, not str$"):
        RedisGuard(redis.Redis(), fail_open="no")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("timeout", "shown"), [(0, "0"), (-1, "-1"), (float("inf"), "inf"), (float("nan"), "nan")]
)
def test_timeout_must_be_positive_and_finite(timeout: float, shown: str) -> None:
    with pytest.raises(
        ValueError, match=rf"^timeout must be a positive, finite number of seconds, got {shown}$"
    ):
        RedisGuard.from_url("redis://127.0.0.1:6379/0", timeout=timeout)


@pytest.mark.parametrize(("timeout", "kind"), [("1", "str"), (None, "NoneType"), (True, "bool")])
def test_timeout_must_be_a_number(timeout: object, kind: str) -> None:
    with pytest.raises(TypeError, match=rf"^timeout must be a number of seconds, not {kind}$"):
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


@pytest.mark.parametrize(("replica_timeout", "shown"), [(0, "0"), (-0.5, "-0.5"), (float("nan"), "nan")])
def test_replica_timeout_must_be_positive_and_finite(replica_timeout: float, shown: str) -> None:
    with pytest.raises(
        ValueError, match=rf"^replica_timeout must be a positive, finite number of seconds, got {shown}$"
    ):
        RedisGuard(redis.Redis(), replicas=1, replica_timeout=replica_timeout)


@pytest.mark.parametrize(
    ("lifetime", "error", "message"),
    [
        (0, ValueError, "max_token_lifetime must be an int from 1 to 172800"),
        (172_801, ValueError, "max_token_lifetime must be an int from 1 to 172800, got 172801"),
        (300.0, TypeError, "max_token_lifetime must be an int, not float"),
        (True, TypeError, "max_token_lifetime must be an int, not bool"),
    ],
)
def test_max_token_lifetime_must_be_whole_seconds_up_to_two_days(
    lifetime: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        RedisGuard(redis.Redis(), max_token_lifetime=lifetime)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("skew", "error", "message"),
    [
        (-1, ValueError, r"^clock_skew must be an int from 0 to 86400, got -1$"),
        (1.5, TypeError, r"^clock_skew must be an int, not float$"),
    ],
)
def test_clock_skew_must_be_whole_seconds_up_to_a_day(
    skew: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        RedisGuard(redis.Redis(), clock_skew=skew)  # type: ignore[arg-type]


def test_allow_eviction_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match=r"^allow_eviction must be a bool, not int$"):
        AsyncRedisGuard(redis.asyncio.Redis(), allow_eviction=1)  # type: ignore[arg-type]


def test_guard_options_declares_the_options_of_both_guards() -> None:
    # One declaration for RedisGuard, AsyncRedisGuard and their from_url.
    assert set(GuardOptions.__optional_keys__) == {
        "namespace",
        "fail_open",
        "replicas",
        "replica_timeout",
        "max_token_lifetime",
        "clock_skew",
        "allow_eviction",
    }


@pytest.mark.parametrize("guard_class", [RedisGuard, AsyncRedisGuard])
def test_an_unknown_option_is_refused_by_name(guard_class: type[RedisGuard | AsyncRedisGuard]) -> None:
    # **options would otherwise swallow a typo, and the guard would run without the option meant.
    client: Any = redis.Redis() if guard_class is RedisGuard else redis.asyncio.Redis()
    refused = (
        r"^unexpected option\(s\) namspace; the options are allow_eviction, clock_skew, fail_open, "
        r"max_token_lifetime, namespace, replica_timeout, replicas$"
    )
    with pytest.raises(TypeError, match=refused):
        guard_class(client, namspace="app")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=refused):
        guard_class.from_url("redis://127.0.0.1:6379/0", namspace="app")  # type: ignore[call-arg]


def test_from_url_checks_the_options_before_a_cluster_client_connects(closed_port_url: str) -> None:
    # Before: the sync cluster client connected first (it reads the slot map when built), and a
    # refused option left it open, or an unreachable cluster hid the option at fault.
    with pytest.raises(ValueError, match=r"must not contain '\{' with a Redis Cluster"):
        RedisGuard.from_url(closed_port_url, cluster=True, namespace="{app}")


def test_replica_timeout_rounds_up_to_whole_milliseconds(redis_url: str, namespace: str) -> None:
    # WAIT n 0 would wait forever, and the claim would end in a read timeout instead.
    guard = RedisGuard.from_url(
        redis_url, namespace=namespace, timeout=PATIENT_SECONDS, replicas=1, replica_timeout=0.0001
    )
    guard.begin(BEGUN)
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


def test_repr_shows_the_options_given_that_differ_from_a_plain_guards() -> None:
    guard = RedisGuard(
        redis.Redis(), namespace="app", max_token_lifetime=330, clock_skew=2, allow_eviction=True
    )
    assert repr(guard) == (
        "RedisGuard(namespace='app', fail_open=False, max_token_lifetime=330, clock_skew=2, "
        "allow_eviction=True)"
    )


def test_a_guard_learns_the_longest_ttl_plus_leeway_of_the_codecs_built_with_it() -> None:
    guard = RedisGuard(redis.Redis())
    ring = rs.KeyRing(SECRET)
    lifetimes = [guard.max_token_lifetime]
    rs.Codec(ring, mode="encrypted", ttl=600, leeway=30, guard=guard)
    lifetimes.append(guard.max_token_lifetime)
    rs.Codec(ring, mode="signed", ttl=60, guard=guard)
    assert [*lifetimes, guard.max_token_lifetime] == [360, 630, 630]


def test_a_given_max_token_lifetime_shorter_than_a_codecs_ttl_plus_leeway_refuses_the_codec() -> None:
    guard = RedisGuard(redis.Redis(), max_token_lifetime=360)
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
        rs.Codec.from_env(environ=environ, guard=RedisGuard(redis.Redis(), max_token_lifetime=360))


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
        guard.begin(BEGUN)
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
        guard.begin(BEGUN)
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
    assert caplog.record_tuples == [FAIL_OPEN_WARNING]


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
    guard.begin(BEGUN)
    guard.claim(ID, NOW + 300, NOW)
    assert guard.claim(ID, NOW + 300, NOW) is False
    guard.close()


def test_a_reply_that_is_not_the_claims_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    client = redis.Redis()
    monkeypatch.setattr(client, "evalsha", lambda *args, **kwargs: b"OK")
    with pytest.raises(GuardUnavailable, match=r"^Redis answered the claim with an unexpected bytes$"):
        RedisGuard(client).claim(ID, NOW + 300, NOW)


# --- a Redis that forgot --------------------------------------------------------------------------

# Each empties database 0; SWAPDB swaps it for database 1, which holds no claim of this test's.
LOSSES: dict[str, tuple[str | int, ...]] = {
    "FLUSHALL": ("FLUSHALL",),
    "FLUSHDB": ("FLUSHDB",),
    "SWAPDB": ("SWAPDB", 0, 1),
}


def forget(server: Server, loss: str) -> None:
    server.execute(*LOSSES[loss])


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("fail_open", [False, True])
@pytest.mark.parametrize("replayed_by", ["the same process", "a process that never claimed"])
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_after_redis_forgot_no_token_redeemed_before_is_accepted(
    server: Server, namespace: str, loss: str, replayed_by: str, fail_open: bool, flavour: str
) -> None:
    # Before: a process that never saw the store (and a fleet restarted with its Redis) could not
    # tell a new Redis from one that forgot, and accepted every replay (50 of 50 for each loss).
    options: dict[str, Any] = {"namespace": namespace, "fail_open": fail_open, "timeout": PATIENT_SECONDS}
    first = begun(build(flavour, server.url, **options))
    ids = [minted(NOW) for _ in range(20)]
    try:
        assert [first.claim(token_id, NOW + 300, NOW) for token_id in ids] == [True] * 20
        forget(server, loss)
        second = first if replayed_by == "the same process" else build(flavour, server.url, **options)
        try:
            replays = [outcome(second, token_id, NOW + 300, NOW + 10) for token_id in ids]
        finally:
            if second is not first:
                second.close()
    finally:
        first.close()
    assert replays == [lost(NOW, NOW + 10)] * 20


def test_a_loss_is_logged_once_not_per_claim(
    server: Server, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    guard = begun(RedisGuard.from_url(server.url, namespace=namespace, timeout=PATIENT_SECONDS))
    guard.claim(ID, NOW + 300, NOW)
    server.execute("FLUSHALL")
    with caplog.at_level(logging.WARNING, logger="requeststate.redis"):
        for now in range(NOW, NOW + 5):
            with pytest.raises(GuardUnavailable, match="before Redis's memory of the claims began"):
                guard.claim(minted(NOW), NOW + 300, now)
    guard.close()
    assert warnings_of(caplog) == [
        f"Redis replay guard: Redis's memory of the claims (namespace {namespace!r}) began at {NOW} (unix "
        f"time): it is new, or it forgot them (a restart, a flush, a failover, an eviction); every token "
        f"minted by {NOW + SKEW} is refused, as it may have been redeemed before"
    ]


def test_tokens_minted_more_than_clock_skew_after_the_loss_is_noticed_are_accepted(
    server: Server, namespace: str
) -> None:
    # Before: every token that expired within max_token_lifetime (360 s) of the loss was refused,
    # so every flow started in the first minute after a loss failed.
    guard = begun(RedisGuard.from_url(server.url, namespace=namespace, timeout=PATIENT_SECONDS))
    try:
        guard.claim(ID, NOW + 300, NOW)
        server.execute("FLUSHALL")
        noticed = outcome(guard, OTHER_ID, NOW + 300, NOW + 10)  # the memory begins again at NOW + 10
        outcomes = [outcome(guard, minted(at), at + 300, at) for at in (NOW + 10 + SKEW, NOW + 11 + SKEW)]
    finally:
        guard.close()
    assert (noticed, outcomes) == (lost(NOW, NOW + 10), [lost(NOW + 10 + SKEW, NOW + 10), True])


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_redis_begun_at_start_accepts_every_token_minted_from_the_second_begin_returns(
    redis_url: str, namespace: str, flavour: str, caplog: pytest.LogCaptureFixture
) -> None:
    guard = build(flavour, redis_url, namespace=namespace, timeout=PATIENT_SECONDS)
    with caplog.at_level(logging.WARNING, logger="requeststate.redis"):
        ready = guard.begin(NOW)
        claims = [guard.claim(minted(ready), ready + 300, ready + 1) for _ in range(3)]
        too_soon = outcome(guard, minted(ready - 1), ready + 299, ready + 1)
    guard.close()
    assert (ready, claims, too_soon) == (NOW + SKEW + 1, [True] * 3, lost(ready - 1, NOW))
    assert caplog.record_tuples == [
        (
            "requeststate.redis",
            logging.WARNING,
            f"Redis replay guard: Redis's memory of the claims (namespace {namespace!r}) began at 2000000000 "
            "(unix time): it is new, or it forgot them (a restart, a flush, a failover, an eviction); every "
            "token minted by 2000000005 is refused, as it may have been redeemed before",
        )
    ]


def test_begin_leaves_a_memory_that_began_before_as_it_is(server: Server, namespace: str) -> None:
    guard = RedisGuard.from_url(server.url, namespace=namespace, timeout=PATIENT_SECONDS)
    try:
        ready = [guard.begin(BEGUN), guard.begin(NOW)]  # the second: a process started later
        claimed = guard.claim(ID, NOW + 300, NOW)
    finally:
        guard.close()
    assert (ready, claimed) == ([BEGUN + SKEW + 1] * 2, True)


def test_a_first_claim_with_no_record_of_redis_memory_refuses_its_own_token_and_begins_it(
    redis_url: str, namespace: str
) -> None:
    # A new Redis and one that forgot look alike: the token was minted before anything was recorded.
    guard = RedisGuard.from_url(redis_url, namespace=namespace, timeout=PATIENT_SECONDS)
    try:
        first = outcome(guard, ID, NOW + 300, NOW + 10)
        then = outcome(guard, minted(NOW + 11 + SKEW), NOW + 311 + SKEW, NOW + 11 + SKEW)
    finally:
        guard.close()
    assert (first, then) == (lost(NOW, NOW + 10), True)


@pytest.fixture
def own_server() -> Iterator[Server]:
    with redis_server.or_skip(redis_server.running_server()) as running:
        yield running


@pytest.mark.parametrize(
    "persistence",
    [
        pytest.param(("--dbfilename", "guard.rdb"), id="RDB snapshot"),
        pytest.param(("--appendonly", "yes", "--appendfsync", "everysec"), id="AOF everysec"),
        pytest.param(("--appendonly", "yes", "--appendfsync", "always"), id="AOF always"),
    ],
)
def test_a_restart_from_disk_refuses_every_token_redeemed_before(
    namespace: str, persistence: tuple[str, ...]
) -> None:
    # Before: the marker came back from the snapshot, the claims made after it did not, and every
    # token redeemed after the snapshot was accepted again (200 of 200). A restarted server has a
    # new run_id, so its memory begins again, however much of it came back from disk.
    with redis_server.or_skip(redis_server.running_server(*persistence)) as persisted:
        guard = begun(RedisGuard.from_url(persisted.url, namespace=namespace, timeout=PATIENT_SECONDS))
        try:
            saved, unsaved = minted(NOW), minted(NOW)
            guard.claim(saved, NOW + 300, NOW)
            persisted.execute("SAVE")
            guard.claim(unsaved, NOW + 300, NOW)
            persisted.kill()
            persisted.restart()
            redis_server.wait_until(
                lambda: persisted.execute("EXISTS", f"{namespace}:claims") == 1, "no reload"
            )
        finally:
            guard.close()
        later = RedisGuard.from_url(persisted.url, namespace=namespace, timeout=PATIENT_SECONDS)
        try:
            replays = [outcome(later, token_id, NOW + 300, NOW + 10) for token_id in (saved, unsaved)]
            # Minted before the restart and never redeemed: what came back from disk cannot tell.
            unredeemed = outcome(later, minted(NOW), NOW + 300, NOW + 10)
            fresh = outcome(later, minted(NOW + 16), NOW + 316, NOW + 16)
        finally:
            later.close()
    # A claim that came back from disk is a replay; one that did not (RDB: every claim after the
    # SAVE) is refused as minted before the restart, as is every token minted before it.
    assert set(replays) <= {False, lost(NOW, NOW + 10)}
    assert (unredeemed, fresh) == (lost(NOW, NOW + 10), True)
    if "guard.rdb" in persistence:
        assert replays == [False, lost(NOW, NOW + 10)]


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu", "allkeys-random"])
def test_a_redis_whose_policy_may_evict_claims_is_refused_naming_the_policy_and_the_fix(
    own_server: Server, namespace: str, policy: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: claim keys carried a TTL, so every volatile policy evicted them first (299 of 300).
    own_server.execute("CONFIG", "SET", "maxmemory-policy", policy)
    guard = RedisGuard.from_url(own_server.url, namespace=namespace, timeout=PATIENT_SECONDS)
    expected = (
        f"Redis's maxmemory-policy is {policy}, which can evict the guard's claims: set maxmemory-policy "
        "to noeviction (or a volatile-* policy, which never evicts them), or build the guard with "
        "allow_eviction=True to claim anyway"
    )
    with caplog.at_level(logging.WARNING, logger="requeststate.redis"):
        refused = [outcome(guard, minted(NOW), NOW + 300, NOW) for _ in range(2)]
        with pytest.raises(GuardUnavailable) as at_start:
            guard.begin(BEGUN)
    guard.close()
    assert (refused, str(at_start.value)) == ([expected] * 2, expected)
    assert warnings_of(caplog) == [f"Redis replay guard: {expected}"]


def fill(server: Server, *, volatile: bool, until: Any = lambda: False, keys: int = 20_000) -> None:
    """Write ``keys`` values of 1 KiB (with a TTL if ``volatile``), or fewer if ``until()`` comes true."""
    client = server.client()
    try:
        for start in range(0, keys, 500):
            with client.pipeline(transaction=False) as batch:
                for index in range(start, start + 500):
                    batch.set(f"junk:{index}", "x" * 1024, ex=3600 if volatile else None)
                batch.execute()
            if until():
                return
    finally:
        client.close()


@pytest.mark.parametrize("policy", ["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"])
def test_a_volatile_policy_evicting_under_pressure_never_evicts_a_claim(
    own_server: Server, namespace: str, policy: str
) -> None:
    guard = begun(RedisGuard.from_url(own_server.url, namespace=namespace, timeout=PATIENT_SECONDS))
    ids = [minted(NOW) for _ in range(300)]
    try:
        assert [guard.claim(token_id, NOW + 300, NOW) for token_id in ids] == [True] * 300
        used = int(own_server.execute("INFO", "memory")["used_memory"])
        own_server.execute("CONFIG", "SET", "maxmemory", used + 2 * 1024 * 1024)
        own_server.execute("CONFIG", "SET", "maxmemory-policy", policy)
        fill(own_server, volatile=True)
        evicted = int(own_server.execute("INFO", "stats")["evicted_keys"])
        replays = Counter(str(guard.claim(token_id, NOW + 300, NOW + 1)) for token_id in ids)
    finally:
        guard.close()
    assert evicted > 1000
    assert replays == {"False": 300}


def test_with_allow_eviction_an_evicted_set_of_claims_is_a_loss_and_no_replay_is_accepted(
    own_server: Server, namespace: str
) -> None:
    options: dict[str, Any] = {"namespace": namespace, "allow_eviction": True, "timeout": PATIENT_SECONDS}
    guard = begun(RedisGuard.from_url(own_server.url, **options))
    ids = [minted(NOW) for _ in range(300)]
    try:
        assert [guard.claim(token_id, NOW + 300, NOW) for token_id in ids] == [True] * 300
        used = int(own_server.execute("INFO", "memory")["used_memory"])
        own_server.execute("CONFIG", "SET", "maxmemory", used + 2 * 1024 * 1024)
        own_server.execute("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
        fill(
            own_server, volatile=False, until=lambda: own_server.execute("EXISTS", f"{namespace}:claims") == 0
        )
        gone = own_server.execute("EXISTS", f"{namespace}:claims") == 0
        own_server.execute("CONFIG", "SET", "maxmemory", 0)
        replays = Counter(outcome(guard, token_id, NOW + 300, NOW + 10) for token_id in ids)
    finally:
        guard.close()
    assert gone is True
    assert replays == {lost(NOW, NOW + 10): 300}


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
            token_id = minted(NOW)
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


def test_fail_open_rides_out_no_outage_for_a_token_minted_before_the_loss(
    own_server: Server, namespace: str
) -> None:
    guard = begun(
        RedisGuard.from_url(own_server.url, namespace=namespace, fail_open=True, timeout=PATIENT_SECONDS)
    )
    try:
        guard.claim(ID, NOW + 300, NOW)
        own_server.execute("FLUSHALL")
        assert outcome(guard, OTHER_ID, NOW + 300, NOW) == lost(NOW, NOW)
        own_server.kill()
        # Unreachable now: the replay of a token redeemed before the loss is still refused, while
        # a token minted after it is ridden out, as fail_open promises.
        during = [
            outcome(guard, ID, NOW + 300, NOW + 1),
            outcome(guard, minted(NOW + SKEW + 1), NOW + 306, NOW + 6),
        ]
    finally:
        guard.close()
    assert during == ["Redis could not record the claim (ConnectionError)", True]


@pytest.mark.parametrize("fail_open", [False, True])
def test_redis_killed_and_restarted_mid_load_accepts_no_token_twice(
    own_server: Server, namespace: str, fail_open: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: every token redeemed before a restart without persistence was accepted again.
    guard = begun(
        RedisGuard.from_url(own_server.url, namespace=namespace, fail_open=fail_open, timeout=PATIENT_SECONDS)
    )
    with caplog.at_level(logging.WARNING, logger="requeststate.redis"):
        accepted, after = flood(guard, own_server)
        replays = Counter(str(outcome(guard, token_id, NOW + 300, NOW)) for token_id in accepted)
    guard.close()
    assert len(accepted) == len(set(accepted)) >= 200
    assert replays == {lost(NOW, NOW): len(accepted)}
    assert lost(NOW, NOW) in after, after
    assert sum("Redis's memory of the claims" in message for message in warnings_of(caplog)) == 1


# --- AsyncRedisGuard ------------------------------------------------------------------------------


def test_async_first_claim_wins_and_second_is_a_replay(redis_url: str, namespace: str) -> None:
    async def claims() -> list[bool]:
        guard = AsyncRedisGuard.from_url(redis_url, namespace=namespace, timeout=PATIENT_SECONDS)
        try:
            await guard.begin(BEGUN)
            return [await guard.claim(ID, NOW + 300, NOW), await guard.claim(ID, NOW + 300, NOW)]
        finally:
            await guard.aclose()

    assert asyncio.run(claims()) == [True, False]


def test_async_claim_is_held_by_its_expiry_in_the_namespaces_sorted_set(
    redis_url: str, client: redis.Redis, namespace: str
) -> None:
    async def claim() -> None:
        guard = AsyncRedisGuard.from_url(redis_url, namespace=namespace, timeout=PATIENT_SECONDS)
        try:
            await guard.begin(BEGUN)
            await guard.claim(ID, NOW + 300, NOW)
        finally:
            await guard.aclose()

    asyncio.run(claim())
    assert keys_under(client, namespace) == [f"{namespace}:claims".encode()]
    assert (held(client, namespace, ID), client.ttl(f"{namespace}:claims")) == (NOW + 300, -1)


def test_async_concurrent_claims_of_one_id_win_once(redis_url: str, namespace: str) -> None:
    async def claims() -> list[bool]:
        guard = AsyncRedisGuard.from_url(redis_url, namespace=namespace, timeout=PATIENT_SECONDS)
        try:
            await guard.begin(BEGUN)
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
    assert caplog.record_tuples == [FAIL_OPEN_WARNING]


def test_async_begin_on_an_unreachable_redis_raises_guard_unavailable(closed_port_url: str) -> None:
    async def begin() -> None:
        guard = AsyncRedisGuard.from_url(closed_port_url)
        try:
            await guard.begin()
        finally:
            await guard.aclose()

    with pytest.raises(
        GuardUnavailable, match=r"^Redis did not record when its memory began \(ConnectionError\)$"
    ):
        asyncio.run(begin())


def test_async_guard_refuses_a_sync_client() -> None:
    sync_client: Any = redis.Redis()
    with pytest.raises(TypeError, match=r"redis\.asyncio\.Redis"):
        AsyncRedisGuard(sync_client)


def test_async_repr_shows_namespace_and_fail_open_only() -> None:
    guard = AsyncRedisGuard(redis.asyncio.Redis(), namespace="app", fail_open=True)
    assert repr(guard) == "AsyncRedisGuard(namespace='app', fail_open=True)"


def test_the_claim_of_an_id_with_a_lone_surrogate_is_still_a_hash() -> None:
    digest = hashlib.sha256(b"\xed\xa0\x80").hexdigest()
    assert claim_location("ns", "\ud800") == ("ns:claims", digest)


def test_a_cluster_guard_spreads_ids_over_1024_buckets_by_their_digest() -> None:
    digest = hashlib.sha256(ID.encode()).hexdigest()
    assert claim_location("ns", ID, 1024) == (f"ns:claims:{int(digest[:8], 16) % 1024}", digest)


def test_the_acl_the_docs_give_is_enough_to_begin_claim_and_refuse_a_replay(server: Server) -> None:
    # The ACL line of docs/replay-guards.md, for a user of its own and the namespace "myapp".
    docs = (Path(__file__).parent.parent / "docs" / "replay-guards.md").read_text()
    (line,) = [line for line in docs.splitlines() if line.startswith("ACL SETUSER guard ")]
    user, password = f"guard-{uuid.uuid4().hex}", uuid.uuid4().hex
    rules = line.split()[3:]
    assert rules[:2] == ["on", ">secret"]
    server.execute("ACL", "SETUSER", user, "on", f">{password}", *rules[2:])
    url = server.url.replace("redis://", f"redis://{user}:{password}@")
    guard = RedisGuard.from_url(url, namespace="myapp", timeout=PATIENT_SECONDS)
    try:
        guard.begin(BEGUN)
        token_id = minted(NOW)
        claims = [guard.claim(token_id, NOW + 300, NOW), guard.claim(token_id, NOW + 300, NOW)]
    finally:
        guard.close()
        server.execute("ACL", "DELUSER", user)
    assert claims == [True, False]
