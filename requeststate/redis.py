"""Replay guards on Redis, for servers running as several processes or hosts.

Install with ``pip install 'requeststate[redis]'`` (redis-py 5 or later; the
server must be Redis 6.2 or later, for ``SET ... EXAT``)::

    from requeststate.redis import RedisGuard

    guard = RedisGuard.from_url("redis://127.0.0.1:6379/0")    # 250 ms timeouts, no retries
    state = rs.decode(token, keys, mode="encrypted", subject=user, guard=guard)

Each claim is one ``SET key 1 NX EXAT t``: atomic on the server, so however
many processes redeem the same token at once, exactly one wins. The key is
``namespace + ":" + sha256(token_id)`` in hex: token ids never reach Redis,
and every key has the same length. It expires one second after the claim's
``expires_at``, so the id stays claimed through that whole second. Redis
judges that expiry by its own clock: keep the servers' clocks in step (NTP),
and cover the remaining skew with the verifier's ``leeway``.

A guard fails closed. If Redis cannot be reached, or does not answer within the
client's timeouts, ``claim`` raises ``GuardUnavailable`` and the token is
refused. Build the client with ``socket_timeout`` and
``socket_connect_timeout`` (``from_url`` does), and without retries, or a
request may wait for redis-py's defaults (seconds, with retries and backoff).
``fail_open=True`` accepts tokens unchecked during such an outage instead, and
logs a warning on the ``requeststate.redis`` logger for each one; every other
Redis error (an error reply: out of memory, read-only replica, no permission)
still fails closed, because it is a configuration to fix, not an outage to
ride out.
"""

from __future__ import annotations

import hashlib
import logging
import math
from typing import Final, final

try:
    import redis
    import redis.asyncio
    from redis.asyncio.retry import Retry as AsyncRetry
except ImportError as missing:  # the extra is not installed, or an older redis-py
    raise ImportError(
        "requeststate.redis needs the redis extra: pip install 'requeststate[redis]'", name=missing.name
    ) from missing
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from ._guard import GuardUnavailable, check_claim_window

__all__ = ["DEFAULT_NAMESPACE", "DEFAULT_TIMEOUT", "AsyncRedisGuard", "RedisGuard", "redis_key"]

DEFAULT_NAMESPACE: Final = "requeststate"
DEFAULT_TIMEOUT: Final = 0.25

# Redis keeps expiry times in milliseconds and refuses an EXAT above this.
_MAX_EXAT: Final = (2**63 - 1) // 1000
# The errors that mean "Redis is down or slow": the only ones fail_open rides out.
_OUTAGE: Final = (RedisConnectionError, RedisTimeoutError)

_log: Final = logging.getLogger(__name__)


def _check_options(namespace: str, fail_open: bool) -> None:
    if not isinstance(namespace, str):
        raise TypeError(f"namespace must be a str, not {type(namespace).__name__}")
    if not namespace:
        raise ValueError("namespace must not be empty")
    if not isinstance(fail_open, bool):
        raise TypeError(f"fail_open must be a bool, not {type(fail_open).__name__}")


def _check_timeout(timeout: float) -> float:
    if not isinstance(timeout, int | float) or isinstance(timeout, bool):
        raise TypeError(f"timeout must be a number of seconds, not {type(timeout).__name__}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"timeout must be a positive, finite number of seconds, got {timeout}")
    return float(timeout)


def redis_key(namespace: str, token_id: str) -> str:
    """The Redis key that records ``token_id``: the namespace, ``:``, and SHA-256 of the id in hex."""
    return f"{namespace}:{hashlib.sha256(token_id.encode('utf-8', 'surrogatepass')).hexdigest()}"


def _exat(expires_at: int, now: int) -> int:
    check_claim_window(expires_at, now)
    if expires_at < 0:
        raise ValueError("expires_at must be a unix time of at least 0")
    # EXAT t expires the key as Redis's clock reaches t; the id must stay claimed
    # through all of second expires_at (the verifier accepts while now <= exp + leeway).
    return min(expires_at + 1, _MAX_EXAT)


def _settle(reply: object) -> bool:
    # SET ... NX answers OK (True in redis-py) when it set the key, nil when the key exists.
    if reply is None:
        return False
    if reply is True:
        return True
    raise GuardUnavailable(f"Redis answered SET NX with an unexpected {type(reply).__name__}")


def _unavailable(error: RedisError, fail_open: bool) -> bool:
    cause = type(error).__name__
    if fail_open and isinstance(error, _OUTAGE):
        # The log names the failure, never the token id or its key.
        _log.warning(
            "Redis replay guard unavailable (%s); fail_open=True: token accepted without a replay check",
            cause,
        )
        return True
    raise GuardUnavailable(f"Redis could not record the claim ({cause})") from error


@final
class RedisGuard:
    """A replay guard on a ``redis.Redis`` client, shared by every process that uses that Redis.

    Thread-safe (redis-py's connection pool is). Give the client bounded
    timeouts and no retries, or use ``from_url``: a claim waits at most as long
    as the client does. Use one ``namespace`` per application sharing a Redis.
    Calling ``close()`` closes the client.
    """

    __slots__ = ("_client", "_fail_open", "_namespace")

    def __init__(
        self, client: redis.Redis, *, namespace: str = DEFAULT_NAMESPACE, fail_open: bool = False
    ) -> None:
        """Guard with ``client``.

        Args:
            client: a sync ``redis.Redis`` (an asyncio client needs ``AsyncRedisGuard``).
            namespace: the prefix of every key this guard writes.
            fail_open: if Redis is unreachable or times out, accept the token
                unchecked and log a warning, instead of raising ``GuardUnavailable``.
        """
        if isinstance(client, redis.asyncio.Redis):
            raise TypeError("client is a redis.asyncio.Redis: use AsyncRedisGuard")
        _check_options(namespace, fail_open)
        self._client: Final = client
        self._namespace: Final = namespace
        self._fail_open: Final = fail_open

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        namespace: str = DEFAULT_NAMESPACE,
        fail_open: bool = False,
    ) -> RedisGuard:
        """A guard on a new client for ``url``, waiting at most ``timeout`` seconds to connect or answer.

        The client does not retry: a retried ``SET NX`` whose first reply was
        lost would read the guard's own claim as a replay.
        """
        seconds = _check_timeout(timeout)
        client = redis.Redis.from_url(
            url, socket_timeout=seconds, socket_connect_timeout=seconds, retry=Retry(NoBackoff(), 0)
        )
        return cls(client, namespace=namespace, fail_open=fail_open)

    def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        """Record ``token_id`` until ``expires_at``; ``True`` on its first claim, ``False`` on a replay.

        Raises:
            GuardUnavailable: Redis did not record the claim (unless ``fail_open``
                and Redis is unreachable or slow: then ``True``).
            ValueError: ``expires_at`` is before ``now``.
        """
        key = redis_key(self._namespace, token_id)
        exat = _exat(expires_at, now)
        try:
            reply = self._client.set(key, b"1", nx=True, exat=exat)
        except RedisError as error:
            return _unavailable(error, self._fail_open)
        return _settle(reply)

    def close(self) -> None:
        """Close the client and its connections."""
        self._client.close()

    def __repr__(self) -> str:
        return f"RedisGuard(namespace={self._namespace!r}, fail_open={self._fail_open})"


@final
class AsyncRedisGuard:
    """``RedisGuard`` for asyncio servers, on a ``redis.asyncio.Redis`` client; use with ``averify``.

    Calling ``await aclose()`` closes the client.
    """

    __slots__ = ("_client", "_fail_open", "_namespace")

    def __init__(
        self, client: redis.asyncio.Redis, *, namespace: str = DEFAULT_NAMESPACE, fail_open: bool = False
    ) -> None:
        """Guard with ``client``, a ``redis.asyncio.Redis``; the options are ``RedisGuard``'s."""
        if not isinstance(client, redis.asyncio.Redis):
            raise TypeError(f"client must be a redis.asyncio.Redis, not {type(client).__name__}")
        _check_options(namespace, fail_open)
        self._client: Final = client
        self._namespace: Final = namespace
        self._fail_open: Final = fail_open

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        namespace: str = DEFAULT_NAMESPACE,
        fail_open: bool = False,
    ) -> AsyncRedisGuard:
        """A guard on a new asyncio client for ``url``; see ``RedisGuard.from_url``."""
        seconds = _check_timeout(timeout)
        client = redis.asyncio.Redis.from_url(
            url, socket_timeout=seconds, socket_connect_timeout=seconds, retry=AsyncRetry(NoBackoff(), 0)
        )
        return cls(client, namespace=namespace, fail_open=fail_open)

    async def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        """Record ``token_id`` until ``expires_at``; see ``RedisGuard.claim``."""
        key = redis_key(self._namespace, token_id)
        exat = _exat(expires_at, now)
        try:
            reply = await self._client.set(key, b"1", nx=True, exat=exat)
        except RedisError as error:
            return _unavailable(error, self._fail_open)
        return _settle(reply)

    async def aclose(self) -> None:
        """Close the client and its connections."""
        await self._client.aclose()

    def __repr__(self) -> str:
        return f"AsyncRedisGuard(namespace={self._namespace!r}, fail_open={self._fail_open})"
