"""``AsyncRedisGuard``: ``RedisGuard`` on a ``redis.asyncio`` client, for asyncio servers."""

from __future__ import annotations

import time
from typing import Any, Final, TypeAlias, Unpack, final

import redis.asyncio
import redis.asyncio.cluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from ._base import GuardBase
from ._ledger import CLAIM_SCRIPT, ERRORS, Claim, log, not_begun
from ._settings import GuardOptions

__all__ = ["AsyncClient", "AsyncRedisGuard"]

AsyncClient: TypeAlias = "redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster"
"""What ``AsyncRedisGuard`` claims through."""

_ASYNC_CLIENTS: Final = (redis.asyncio.Redis, redis.asyncio.cluster.RedisCluster)


@final
class AsyncRedisGuard(GuardBase[AsyncClient]):
    """``RedisGuard`` for asyncio servers, on a ``redis.asyncio`` client; use with ``averify``.

    ``client`` is a ``redis.asyncio.Redis`` or a
    ``redis.asyncio.cluster.RedisCluster``; the options and the outcomes are
    ``RedisGuard``'s. Calling ``await aclose()`` closes the client.
    """

    __slots__ = ("_script",)

    def __init__(self, client: AsyncClient, **options: Unpack[GuardOptions]) -> None:
        """Guard with ``client``, a ``redis.asyncio.Redis`` or ``redis.asyncio.cluster.RedisCluster``.

        The options are ``GuardOptions``.

        Raises:
            TypeError, ValueError: a client of another kind, or a bad option (all are checked here).
        """
        super().__init__(client, **options)
        self._script: Final = client.register_script(CLAIM_SCRIPT)  # as RedisGuard's

    async def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        """Record ``token_id`` until ``expires_at``; see ``RedisGuard.claim``."""
        ledger = self._ledger
        claim = ledger.prepare(token_id, expires_at, now)
        try:
            reply, acknowledged = await self._send(claim)
        except ERRORS as error:
            return ledger.failed(claim, error)
        outcome = ledger.read(reply)
        if ledger.marks_every_bucket(outcome):
            try:
                await self._mark(now)
            except ERRORS as error:
                log.debug("Redis Cluster buckets not all marked (%s)", type(error).__name__)
        return ledger.settle(claim, outcome, acknowledged)

    async def begin(self, now: int | None = None) -> int:
        """Record in Redis that its memory of the claims begins now; see ``RedisGuard.begin``."""
        try:
            replies = await self._mark(int(time.time()) if now is None else now)
        except ERRORS as error:
            raise not_begun(error) from error
        return self._ledger.began(replies)

    async def aclose(self) -> None:
        """Close the client and its connections."""
        await self._client.aclose()

    @staticmethod
    def _check_client(client: object) -> bool:
        if not isinstance(client, _ASYNC_CLIENTS):
            raise TypeError(
                "client must be a redis.asyncio.Redis or redis.asyncio.cluster.RedisCluster, "
                f"not {type(client).__name__}"
            )
        return isinstance(client, redis.asyncio.cluster.RedisCluster)

    @classmethod
    def _connect(cls, url: str, *, cluster: bool, timeouts: dict[str, Any]) -> AsyncClient:
        kind = redis.asyncio.cluster.RedisCluster if cluster else redis.asyncio.Redis
        return kind.from_url(url, retry=Retry(NoBackoff(), 0), **timeouts)

    async def _send(self, claim: Claim) -> tuple[object, object]:
        """The script's reply, and ``WAIT``'s (or the error in its place) if the guard waits for replicas."""
        client, replicas = self._client, self._ledger.settings.replicas
        try:
            if isinstance(client, redis.asyncio.cluster.RedisCluster):
                # Reads the slot map once, under the client's lock: concurrent first commands
                # of a new client otherwise race to read it, and some fail.
                await client.initialize()
            if not replicas:
                return await self._script(keys=[claim.key], args=claim.args), None
            return await self._claim_and_wait(claim)
        except ERRORS:
            if replicas and isinstance(client, redis.asyncio.cluster.RedisCluster):
                await _refresh_slots(client)
            raise

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
        commands = self._ledger.commands_with_wait(claim)
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


async def _refresh_slots(client: redis.asyncio.cluster.RedisCluster) -> None:
    # RedisGuard's _refresh_slots, awaited.
    try:
        await client.nodes_manager.initialize()
    except ERRORS:
        log.debug("Redis Cluster slot map not refreshed: no node answered")
