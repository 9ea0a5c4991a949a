"""``AsyncRedisGuard``: ``RedisGuard`` on a ``redis.asyncio`` client, for asyncio servers."""

from __future__ import annotations

import time
from typing import Any, Final, TypeAlias, final

import redis.asyncio
import redis.asyncio.cluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from requeststate import GuardUnavailable

from ._ledger import CLAIM_SCRIPT, ERRORS, Claim, Ledger, log
from ._settings import (
    DEFAULT_CLOCK_SKEW,
    DEFAULT_NAMESPACE,
    DEFAULT_TIMEOUT,
    check_settings,
    client_options,
    describe,
)

__all__ = ["AsyncClient", "AsyncRedisGuard"]

AsyncClient: TypeAlias = "redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster"
"""What ``AsyncRedisGuard`` claims through."""

_ASYNC_CLIENTS: Final = (redis.asyncio.Redis, redis.asyncio.cluster.RedisCluster)


@final
class AsyncRedisGuard:
    """``RedisGuard`` for asyncio servers, on a ``redis.asyncio`` client; use with ``averify``.

    ``client`` is a ``redis.asyncio.Redis`` or a
    ``redis.asyncio.cluster.RedisCluster``; the options and the outcomes are
    ``RedisGuard``'s. Calling ``await aclose()`` closes the client.
    """

    __slots__ = ("_client", "_ledger", "_script")

    def __init__(
        self,
        client: AsyncClient,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        fail_open: bool = False,
        replicas: int = 0,
        replica_timeout: float = DEFAULT_TIMEOUT,
        max_token_lifetime: int | None = None,
        clock_skew: int = DEFAULT_CLOCK_SKEW,
        allow_eviction: bool = False,
    ) -> None:
        """Guard with ``client``, a ``redis.asyncio.Redis`` or ``redis.asyncio.cluster.RedisCluster``."""
        if not isinstance(client, _ASYNC_CLIENTS):
            raise TypeError(
                "client must be a redis.asyncio.Redis or redis.asyncio.cluster.RedisCluster, "
                f"not {type(client).__name__}"
            )
        cluster = isinstance(client, redis.asyncio.cluster.RedisCluster)
        settings = check_settings(
            namespace,
            fail_open,
            replicas,
            replica_timeout,
            max_token_lifetime,
            clock_skew,
            allow_eviction,
            cluster=cluster,
        )
        self._ledger: Final = Ledger(settings)
        self._client: Final = client
        self._script: Final = client.register_script(CLAIM_SCRIPT)  # as RedisGuard's

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
        max_token_lifetime: int | None = None,
        clock_skew: int = DEFAULT_CLOCK_SKEW,
        allow_eviction: bool = False,
    ) -> AsyncRedisGuard:
        """A guard on a new asyncio client for ``url``; see ``RedisGuard.from_url``.

        A cluster client reads the slot map at its first claim, not here.
        """
        options: dict[str, Any] = client_options(timeout, replicas, replica_timeout)
        client: AsyncClient
        if cluster:
            client = redis.asyncio.cluster.RedisCluster.from_url(url, retry=Retry(NoBackoff(), 0), **options)
        else:
            client = redis.asyncio.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **options)
        return cls(
            client,
            namespace=namespace,
            fail_open=fail_open,
            replicas=replicas,
            replica_timeout=replica_timeout,
            max_token_lifetime=max_token_lifetime,
            clock_skew=clock_skew,
            allow_eviction=allow_eviction,
        )

    @property
    def client(self) -> AsyncClient:
        """The client this guard claims through."""
        return self._client

    @property
    def max_token_lifetime(self) -> int:
        """The longest a token lives: as given, else the longest ``ttl + leeway`` a ``Codec`` told."""
        return self._ledger.max_token_lifetime

    def learn_lifetime(self, lifetime: int) -> None:
        """Called by each ``Codec`` built with this guard, with its ``ttl + leeway``.

        Raises:
            ValueError: ``lifetime`` is longer than the ``max_token_lifetime`` given.
        """
        self._ledger.learn_lifetime(lifetime)

    async def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        """Record ``token_id`` until ``expires_at``; see ``RedisGuard.claim``."""
        ledger = self._ledger
        claim = ledger.prepare(token_id, expires_at, now)
        client = self._client
        acknowledged: object = None
        try:
            if isinstance(client, redis.asyncio.cluster.RedisCluster):
                # Reads the slot map once, under the client's lock: concurrent first commands
                # of a new client otherwise race to read it, and some fail.
                await client.initialize()
            if ledger.settings.replicas:
                reply, acknowledged = await self._claim_and_wait(claim)
            else:
                reply = await self._script(keys=[claim.key], args=claim.args)
        except ERRORS as error:
            if ledger.settings.replicas and isinstance(client, redis.asyncio.cluster.RedisCluster):
                await _refresh_slots(client)
            return ledger.failed(claim, error)
        outcome = ledger.read(reply)
        if outcome.began_here and ledger.settings.buckets > 1:
            try:  # as RedisGuard's claim
                await self._mark(now)
            except ERRORS as error:
                log.debug("Redis Cluster buckets not all marked (%s)", type(error).__name__)
        return ledger.settle(claim, outcome, acknowledged)

    async def begin(self, now: int | None = None) -> int:
        """Record in Redis that its memory of the claims begins now; see ``RedisGuard.begin``."""
        try:
            replies = await self._mark(int(time.time()) if now is None else now)
        except ERRORS as error:
            raise GuardUnavailable(
                f"Redis did not record when its memory began ({type(error).__name__})"
            ) from error
        return self._ledger.began(replies)

    async def _mark(self, now: int) -> list[object]:
        """Write each bucket's marker that is missing or not its server's; the script's replies."""
        ledger, client = self._ledger, self._client
        if not isinstance(client, redis.asyncio.cluster.RedisCluster):
            key = ledger.bucket_keys[0]
            return [await self._script(keys=[key], args=ledger.marker(key, now).args)]
        await client.initialize()
        sha = await client.script_load(CLAIM_SCRIPT)  # to every master
        batch = client.pipeline()
        for key in ledger.bucket_keys:
            batch.execute_command("EVALSHA", sha, 1, key, *ledger.marker(key, now).args)
        return await batch.execute(raise_on_error=False)

    async def _claim_and_wait(self, claim: Claim) -> tuple[object, object]:
        """The script's reply and ``WAIT``'s (or the error in its place), sent together on one connection."""
        settings = self._ledger.settings
        commands = [
            # EVAL, not EVALSHA: a batch sent at once has no turn to load a script Redis lacks.
            ("EVAL", CLAIM_SCRIPT, 1, claim.key, *claim.args),
            ("WAIT", settings.replicas, settings.wait_ms),
        ]
        client = self._client
        if isinstance(client, redis.asyncio.cluster.RedisCluster):
            # Both to the key's master, in one batch on one of its connections, each reply kept on
            # its own (raise_on_error=False); a MOVED is returned, not followed, or the claim would
            # land on another master than the WAIT.
            node = client.get_node_from_key(claim.key)
            batch = client.pipeline()
            for command in commands:
                batch.execute_command(*command, target_nodes=node)
            reply, acknowledged = await batch.execute(raise_on_error=False, allow_redirections=False)
            if isinstance(reply, Exception):
                raise reply
            return reply, acknowledged
        pool = client.connection_pool
        connection = await pool.get_connection()  # type: ignore[no-untyped-call]  # untyped in redis-py
        both_read = False
        try:
            await connection.send_packed_command(connection.pack_commands(commands))
            # The claim's own answer first (an error reply raises here): once read, nothing that
            # happens to WAIT can turn a replay into a first claim.
            reply = await connection.read_response()
            try:
                acknowledged = await connection.read_response()
            except ERRORS as error:
                return reply, error
            both_read = True
            return reply, acknowledged
        finally:
            if not both_read:  # a reply may still be on its way: never reuse the socket
                await connection.disconnect()
            await pool.release(connection)

    async def aclose(self) -> None:
        """Close the client and its connections."""
        await self._client.aclose()

    def __repr__(self) -> str:
        return describe("AsyncRedisGuard", self._ledger.settings)


async def _refresh_slots(client: redis.asyncio.cluster.RedisCluster) -> None:
    # RedisGuard's _refresh_slots, awaited.
    try:
        await client.nodes_manager.initialize()
    except ERRORS:
        log.debug("Redis Cluster slot map not refreshed: no node answered")
