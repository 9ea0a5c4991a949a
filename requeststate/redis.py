"""Replay guards on Redis, for servers running as several processes or hosts.

Install with ``pip install 'requeststate[redis]'`` (redis-py 5 or later, 6 or
later for a Redis Cluster; the server must be Redis 6.2 or later)::

    from requeststate.redis import RedisGuard

    guard = RedisGuard.from_url("redis://127.0.0.1:6379/0")    # 250 ms timeouts, no retries
    state = rs.decode(token, keys, mode="encrypted", subject=user, guard=guard)

A guard works with one Redis (``redis.Redis``), a Redis Cluster
(``redis.cluster.RedisCluster``: ``from_url(url, cluster=True)``), and a master
with replicas; docs/replay-guards.md says how to build a guard for each.

Each claim is one ``SET key 1 NX EX seconds``: atomic on the server, so however
many processes redeem the same token at once, exactly one wins. The key is
``namespace + ":" + sha256(token_id)`` in hex: token ids never reach Redis,
and every key has the same length. Its lifetime is relative, computed from the
verifier's clock (``expires_at - now + 1`` seconds), never an absolute time
that Redis would judge by its own clock: a verifier whose clock is behind
Redis's would write an expiry Redis already sees as past, and the key would
vanish at once. The extra second keeps the id claimed through the whole of
second ``expires_at``, whatever fraction of second ``now`` had gone by.

Replication is asynchronous: a master that acknowledges the ``SET`` and dies
before a replica copies it leaves the promoted replica without the claim, and
the token can be redeemed again. ``replicas=N`` closes that window: the claim
counts only once ``N`` replicas acknowledged it (``WAIT N timeout`` on the
connection that wrote it); when fewer answer within ``replica_timeout`` the
claim fails closed with ``GuardUnavailable``, and the key stays where it was
written (see ``RedisGuard``).

A guard fails closed. If Redis cannot be reached, or does not answer within the
client's timeouts, ``claim`` raises ``GuardUnavailable`` and the token is
refused. Build the client with ``socket_timeout`` and
``socket_connect_timeout`` (``from_url`` does), and without retries, or a
request may wait for redis-py's defaults (seconds, with retries and backoff).
``fail_open=True`` accepts tokens unchecked during such an outage instead, and
logs a warning on the ``requeststate.redis`` logger for each one; every other
Redis error (an error reply: out of memory, read-only replica, no permission,
a cluster slot moving, replicas that did not acknowledge) still fails closed,
because it is a configuration to fix or a claim not made durable, not an
outage to ride out.
"""

from __future__ import annotations

import hashlib
import logging
import math
from typing import Any, Final, TypeAlias, final

try:
    import redis
    import redis.asyncio
    import redis.asyncio.cluster
    import redis.cluster
    from redis.asyncio.retry import Retry as AsyncRetry
except ImportError as missing:  # the extra is not installed, or an older redis-py
    raise ImportError(
        "requeststate.redis needs the redis extra: pip install 'requeststate[redis]'", name=missing.name
    ) from missing
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from ._guard import GuardUnavailable, check_claim_window

__all__ = [
    "DEFAULT_NAMESPACE",
    "DEFAULT_TIMEOUT",
    "AsyncClient",
    "AsyncRedisGuard",
    "Client",
    "RedisGuard",
    "redis_key",
]

DEFAULT_NAMESPACE: Final = "requeststate"
DEFAULT_TIMEOUT: Final = 0.25

Client: TypeAlias = "redis.Redis | redis.cluster.RedisCluster"
"""What ``RedisGuard`` claims through: one Redis (or a master), or a Redis Cluster."""
AsyncClient: TypeAlias = "redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster"
"""What ``AsyncRedisGuard`` claims through."""

# Redis refuses an expiry whose time in milliseconds, added to its clock, passes 2**63 - 1;
# this cap (146 million years) leaves room for any clock it will ever read.
_MAX_SECONDS: Final = 2**62 // 1000
# The errors that mean "Redis is down or slow": the only ones fail_open rides out.
# RedisClusterException is the cluster client finding no node to talk to.
_OUTAGE: Final = (RedisConnectionError, RedisTimeoutError, RedisClusterException)
_MISCONFIGURED: Final = tuple(
    getattr(redis.exceptions, name)
    for name in ("AuthenticationError", "AuthorizationError", "ExternalAuthProviderError")
    if hasattr(redis.exceptions, name)  # ExternalAuthProviderError is newer than redis-py 6.0
)
_ERRORS: Final = (RedisError, RedisClusterException)

_ASYNC_CLIENTS: Final = (redis.asyncio.Redis, redis.asyncio.cluster.RedisCluster)

_log: Final = logging.getLogger(__name__)


def _check_options(namespace: str, fail_open: bool, replicas: int, replica_timeout: float) -> int:
    if not isinstance(namespace, str):
        raise TypeError(f"namespace must be a str, not {type(namespace).__name__}")
    if not namespace:
        raise ValueError("namespace must not be empty")
    if not isinstance(fail_open, bool):
        raise TypeError(f"fail_open must be a bool, not {type(fail_open).__name__}")
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise TypeError(f"replicas must be an int, not {type(replicas).__name__}")
    if replicas < 0:
        raise ValueError(f"replicas must be at least 0, got {replicas}")
    # WAIT takes whole milliseconds, and WAIT n 0 would block forever: round up.
    return math.ceil(_check_seconds("replica_timeout", replica_timeout) * 1000)


def _check_seconds(name: str, seconds: float) -> float:
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        raise TypeError(f"{name} must be a number of seconds, not {type(seconds).__name__}")
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {seconds}")
    return float(seconds)


def _client_options(timeout: float, replica_timeout: float) -> dict[str, float]:
    seconds = _check_seconds("timeout", timeout)
    # A claim that waits for replicas reads WAIT's answer up to replica_timeout later.
    read = seconds + _check_seconds("replica_timeout", replica_timeout)
    return {"socket_timeout": read, "socket_connect_timeout": seconds}


def redis_key(namespace: str, token_id: str) -> str:
    """The Redis key that records ``token_id``: the namespace, ``:``, and SHA-256 of the id in hex."""
    return f"{namespace}:{hashlib.sha256(token_id.encode('utf-8', 'surrogatepass')).hexdigest()}"


def _lifetime(expires_at: int, now: int) -> int:
    check_claim_window(expires_at, now)
    # Relative to our own clock: the id must stay claimed through all of second
    # expires_at (the verifier accepts while now <= exp + leeway), and now is a
    # whole second that has partly gone by, hence the + 1.
    return min(expires_at - now + 1, _MAX_SECONDS)


def _settle(reply: object) -> bool:
    # SET ... NX answers OK (True in redis-py) when it set the key, nil when the key exists.
    if reply is None:
        return False
    if reply is True:
        return True
    raise GuardUnavailable(f"Redis answered SET NX with an unexpected {type(reply).__name__}")


def _settle_waited(replies: list[Any], replicas: int, wait_ms: int) -> bool:
    claimed = _settle(replies[0])
    acknowledged = replies[1]
    if claimed and acknowledged < replicas:
        # The key stays on the master: deleting it would be a second write that a failover can
        # reorder against another verifier's claim of the same id. The token is refused now,
        # and stays refused (as a replay) while the key lives: unavailability, never a replay.
        raise GuardUnavailable(
            f"{acknowledged} of {replicas} replicas acknowledged the claim within {wait_ms} ms"
        )
    return claimed


def _unavailable(error: Exception, fail_open: bool) -> bool:
    cause = type(error).__name__
    # redis-py raises a refused password or ACL as a ConnectionError: a configuration to fix,
    # which fails closed like every other error reply, never an outage to ride out.
    if fail_open and isinstance(error, _OUTAGE) and not isinstance(error, _MISCONFIGURED):
        # The log names the failure, never the token id or its key.
        _log.warning(
            "Redis replay guard unavailable (%s); fail_open=True: token accepted without a replay check",
            cause,
        )
        return True
    raise GuardUnavailable(f"Redis could not record the claim ({cause})") from error


def _refresh_slots(client: redis.cluster.RedisCluster) -> None:
    # A claim that went straight to a master failed: the master may be gone or the slot moved, and
    # only the cluster client's own commands would notice. Read the slot map again; if no node
    # answers, the claim fails closed all the same and the next one tries again.
    try:
        client.nodes_manager.initialize()
    except _ERRORS:
        _log.debug("Redis Cluster slot map not refreshed: no node answered")


def _repr(name: str, namespace: str, fail_open: bool, replicas: int) -> str:
    waits = f", replicas={replicas}" if replicas else ""
    return f"{name}(namespace={namespace!r}, fail_open={fail_open}{waits})"


@final
class RedisGuard:
    """A replay guard on a Redis client, shared by every process that uses that Redis.

    ``client`` is a ``redis.Redis`` (one Redis, or the master of a replicated
    one) or a ``redis.cluster.RedisCluster``. Thread-safe (redis-py's
    connection pools are). Give the client bounded timeouts and no retries, or
    use ``from_url``: a claim waits at most as long as the client does. Use one
    ``namespace`` per application sharing a Redis. Calling ``close()`` closes
    the client.

    With ``replicas=N`` a claim counts only once ``N`` replicas acknowledged
    it, so that it survives the failover of its master. The ``SET`` and its
    ``WAIT`` go on one connection (``WAIT`` counts the writes of its own
    connection), to the master that owns the key's slot in a cluster. When
    fewer than ``N`` acknowledge within ``replica_timeout``, or the slot moved
    meanwhile, ``claim`` raises ``GuardUnavailable`` (whatever ``fail_open``
    says) and the key stays written: that token stays refused until it
    expires, and no token is ever accepted on a claim a failover can lose.
    """

    __slots__ = ("_client", "_fail_open", "_namespace", "_replicas", "_wait_ms")

    def __init__(
        self,
        client: Client,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        fail_open: bool = False,
        replicas: int = 0,
        replica_timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        """Guard with ``client``.

        Args:
            client: a sync ``redis.Redis`` or ``redis.cluster.RedisCluster``
                (an asyncio client needs ``AsyncRedisGuard``).
            namespace: the prefix of every key this guard writes.
            fail_open: if Redis is unreachable or times out, accept the token
                unchecked and log a warning, instead of raising ``GuardUnavailable``.
            replicas: how many replicas must acknowledge a claim before it
                counts; 0 (the default) does not wait.
            replica_timeout: how long, in seconds, to wait for them; the
                client's ``socket_timeout`` must be longer.
        """
        if not isinstance(client, redis.Redis | redis.cluster.RedisCluster):
            hint = ": use AsyncRedisGuard" if isinstance(client, _ASYNC_CLIENTS) else ""
            raise TypeError(
                "client must be a redis.Redis or redis.cluster.RedisCluster, "
                f"not {type(client).__name__}{hint}"
            )
        self._wait_ms: Final = _check_options(namespace, fail_open, replicas, replica_timeout)
        self._client: Final = client
        self._namespace: Final = namespace
        self._fail_open: Final = fail_open
        self._replicas: Final = replicas

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        cluster: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
        namespace: str = DEFAULT_NAMESPACE,
        fail_open: bool = False,
        replicas: int = 0,
        replica_timeout: float = DEFAULT_TIMEOUT,
    ) -> RedisGuard:
        """A guard on a new client for ``url``, waiting at most ``timeout`` seconds to connect or answer.

        ``cluster=True`` builds a ``redis.cluster.RedisCluster`` from the URL of
        any node of the cluster (it connects at once, to read the slot map).
        Waiting for replicas lengthens the read timeout by ``replica_timeout``.
        The client does not retry: a retried ``SET NX`` whose first reply was
        lost would read the guard's own claim as a replay.
        """
        options: dict[str, Any] = _client_options(timeout, replica_timeout)
        client: Client
        if cluster:
            client = redis.cluster.RedisCluster.from_url(url, retry=Retry(NoBackoff(), 0), **options)
        else:
            client = redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **options)
        return cls(
            client,
            namespace=namespace,
            fail_open=fail_open,
            replicas=replicas,
            replica_timeout=replica_timeout,
        )

    def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        """Record ``token_id`` until ``expires_at``; ``True`` on its first claim, ``False`` on a replay.

        Raises:
            GuardUnavailable: Redis did not record the claim, or fewer than
                ``replicas`` replicas acknowledged it (unless ``fail_open`` and
                Redis is unreachable or slow: then ``True``).
            ValueError: ``expires_at`` is before ``now``.
        """
        key = redis_key(self._namespace, token_id)
        seconds = _lifetime(expires_at, now)
        try:
            if not self._replicas:
                return _settle(self._client.set(key, b"1", nx=True, ex=seconds))
            replies = self._set_and_wait(key, seconds)
        except _ERRORS as error:
            if self._replicas and isinstance(self._client, redis.cluster.RedisCluster):
                _refresh_slots(self._client)
            return _unavailable(error, self._fail_open)
        return _settle_waited(replies, self._replicas, self._wait_ms)

    def _set_and_wait(self, key: str, seconds: int) -> list[Any]:
        client = self._client
        if isinstance(client, redis.cluster.RedisCluster):
            # Both commands to the key's master on one connection; the cluster client would follow
            # a MOVED on its own, sending the SET to another master than the WAIT.
            node = client.get_node_from_key(key)  # type: ignore[no-untyped-call]  # untyped in redis-py
            client = client.get_redis_connection(node)
        pipe = client.pipeline(transaction=False)
        pipe.set(key, b"1", nx=True, ex=seconds)
        pipe.wait(self._replicas, self._wait_ms)
        return pipe.execute()

    def close(self) -> None:
        """Close the client and its connections."""
        self._client.close()

    def __repr__(self) -> str:
        return _repr("RedisGuard", self._namespace, self._fail_open, self._replicas)


@final
class AsyncRedisGuard:
    """``RedisGuard`` for asyncio servers, on a ``redis.asyncio`` client; use with ``averify``.

    ``client`` is a ``redis.asyncio.Redis`` or a
    ``redis.asyncio.cluster.RedisCluster``; the options are ``RedisGuard``'s.
    Calling ``await aclose()`` closes the client.
    """

    __slots__ = ("_client", "_fail_open", "_namespace", "_replicas", "_wait_ms")

    def __init__(
        self,
        client: AsyncClient,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        fail_open: bool = False,
        replicas: int = 0,
        replica_timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        """Guard with ``client``, a ``redis.asyncio.Redis`` or ``redis.asyncio.cluster.RedisCluster``."""
        if not isinstance(client, _ASYNC_CLIENTS):
            raise TypeError(
                "client must be a redis.asyncio.Redis or redis.asyncio.cluster.RedisCluster, "
                f"not {type(client).__name__}"
            )
        self._wait_ms: Final = _check_options(namespace, fail_open, replicas, replica_timeout)
        self._client: Final = client
        self._namespace: Final = namespace
        self._fail_open: Final = fail_open
        self._replicas: Final = replicas

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        cluster: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
        namespace: str = DEFAULT_NAMESPACE,
        fail_open: bool = False,
        replicas: int = 0,
        replica_timeout: float = DEFAULT_TIMEOUT,
    ) -> AsyncRedisGuard:
        """A guard on a new asyncio client for ``url``; see ``RedisGuard.from_url``.

        A cluster client reads the slot map at its first claim, not here.
        """
        options: dict[str, Any] = _client_options(timeout, replica_timeout)
        client: AsyncClient
        if cluster:
            client = redis.asyncio.cluster.RedisCluster.from_url(
                url, retry=AsyncRetry(NoBackoff(), 0), **options
            )
        else:
            client = redis.asyncio.Redis.from_url(url, retry=AsyncRetry(NoBackoff(), 0), **options)
        return cls(
            client,
            namespace=namespace,
            fail_open=fail_open,
            replicas=replicas,
            replica_timeout=replica_timeout,
        )

    async def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        """Record ``token_id`` until ``expires_at``; see ``RedisGuard.claim``."""
        key = redis_key(self._namespace, token_id)
        seconds = _lifetime(expires_at, now)
        client = self._client
        try:
            if isinstance(client, redis.asyncio.cluster.RedisCluster):
                # Reads the slot map once, under the client's lock: concurrent first commands
                # of a new client otherwise race to read it, and some fail.
                await client.initialize()
            if not self._replicas:
                return _settle(await client.set(key, b"1", nx=True, ex=seconds))
            replies = await self._set_and_wait(key, seconds)
        except _ERRORS as error:
            if self._replicas and isinstance(client, redis.asyncio.cluster.RedisCluster):
                await _arefresh_slots(client)
            return _unavailable(error, self._fail_open)
        return _settle_waited(replies, self._replicas, self._wait_ms)

    async def _set_and_wait(self, key: str, seconds: int) -> list[Any]:
        client = self._client
        if isinstance(client, redis.asyncio.Redis):
            pipe = client.pipeline(transaction=False)
            pipe.set(key, b"1", nx=True, ex=seconds)
            pipe.wait(self._replicas, self._wait_ms)
            return await pipe.execute()
        # Both commands to the key's master, in one batch on one of its connections; a MOVED
        # is raised, not followed, or the SET would land on another master than the WAIT.
        node = client.get_node_from_key(key)
        cluster_pipe = client.pipeline()
        cluster_pipe.execute_command("SET", key, b"1", "NX", "EX", seconds, target_nodes=node)
        cluster_pipe.execute_command("WAIT", self._replicas, self._wait_ms, target_nodes=node)
        return await cluster_pipe.execute(allow_redirections=False)

    async def aclose(self) -> None:
        """Close the client and its connections."""
        await self._client.aclose()

    def __repr__(self) -> str:
        return _repr("AsyncRedisGuard", self._namespace, self._fail_open, self._replicas)


async def _arefresh_slots(client: redis.asyncio.cluster.RedisCluster) -> None:
    # _refresh_slots, awaited.
    try:
        await client.nodes_manager.initialize()
    except _ERRORS:
        _log.debug("Redis Cluster slot map not refreshed: no node answered")
