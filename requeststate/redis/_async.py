"""``AsyncRedisGuard``: ``RedisGuard`` on a ``redis.asyncio`` client, for asyncio servers."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Final, TypeAlias, final

import redis.asyncio
import redis.asyncio.cluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from requeststate import ClaimId
from requeststate._seam import Answer, Ledger

from ._base import GuardBase
from ._script import CLAIM_SCRIPT, ERRORS, log, unanswered
from ._settings import MAX_CONNECTIONS

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

    __slots__ = ("_turns",)

    def _setup(self, client: AsyncClient, ledger: Ledger, *, timeout: float | None) -> None:
        super()._setup(client, ledger, timeout=timeout)
        # redis-py's asyncio cluster client refuses a connection past its max_connections, where
        # a pool waits for one: from_url's cluster guard makes its claims wait their turn instead,
        # at most MAX_CONNECTIONS at once (so at most that many connections to any node).
        cluster = isinstance(client, redis.asyncio.cluster.RedisCluster)
        self._turns = asyncio.Semaphore(MAX_CONNECTIONS) if cluster and timeout is not None else None

    async def claim(self, claimed: ClaimId, expires_at: int, now: int, /) -> bool:
        """Record ``claimed`` until ``expires_at``; see ``RedisGuard.claim``."""
        prepared = self._prepare(claimed, expires_at, now)
        if prepared is None:
            return False
        claim, keys, args = prepared
        return self._ledger.settle(claim, await self._run(keys, args, now))

    async def redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int, /
    ) -> str | None:
        """Claim ``claimed`` for ``request``, exactly once; see ``RedisGuard.redeem``."""
        claim, keys, args = self._prepare_redeem(claimed, expires_at, now, request, lease_until)
        return self._ledger.settle_redeem(claim, await self._run(keys, args, now))

    async def keep(self, claimed: ClaimId, request: str, answer: str, /) -> None:
        """Keep ``answer`` for the retries of ``claimed``'s first call; see ``RedisGuard.keep``."""
        keys, args = self._prepare_keep(claimed, request, answer)
        try:
            await self._in_turn(self._keep_script, keys, args)
        except ERRORS as error:
            raise unanswered(error, "the answer") from error
        except TimeoutError as error:  # no turn came within the timeout
            raise unanswered(error, "the answer") from None

    async def _run(self, keys: list[str], args: tuple[int | str, ...], now: int) -> Answer:
        """Run a claim's script; mark every bucket where its answer says their memory may be new."""
        try:
            answer = self._read(await self._in_turn(self._script, keys, args))
        except ERRORS as error:
            raise unanswered(error, "the claim") from error
        except TimeoutError as error:  # no turn came within the timeout
            raise unanswered(error, "the claim") from None
        if self._marks_every_bucket(answer):
            try:
                await self._mark(now)
            except ERRORS as error:
                log.debug("Redis Cluster buckets not all marked (%s)", type(error).__name__)
        return answer

    async def _in_turn(self, script: Any, keys: list[str], args: tuple[int | str, ...]) -> object:
        """``script``'s reply, run once this guard's turn comes (at most ``MAX_CONNECTIONS`` at once)."""
        turns, client = self._turns, self._client
        if turns is not None:
            async with asyncio.timeout(self._timeout):
                await turns.acquire()
        try:
            if isinstance(client, redis.asyncio.cluster.RedisCluster):
                # Reads the slot map once, under the client's lock: concurrent first commands
                # of a new client otherwise race to read it, and some fail.
                await client.initialize()
            reply: object = await script(keys=keys, args=args)
            return reply
        finally:
            if turns is not None:
                turns.release()

    async def begin(self, now: int | None = None) -> int:
        """Record in Redis that its memory of the claims begins now; see ``RedisGuard.begin``."""
        try:
            first = self._first_accepted(await self._mark(int(time.time()) if now is None else now))
        except ERRORS as error:
            raise unanswered(error, "when its memory began") from error
        await self._look_for_0_3()
        return first

    async def aclose(self) -> None:
        """Close the client and its connections."""
        await self._client.aclose()

    async def _look_for_0_3(self) -> None:
        """Look, once at start, for requeststate 0.3's claims in the namespace (a courtesy, not a check)."""
        command = self._scan_for_0_3()
        client = self._client
        try:
            if isinstance(client, redis.asyncio.cluster.RedisCluster):
                replies = [
                    await client.execute_command(*command, target_nodes=node)
                    for node in client.get_primaries()
                ]
            else:
                replies = [await client.execute_command(*command)]  # type: ignore[no-untyped-call]
        except ERRORS as error:  # an ACL without SCAN, say: the look is a courtesy, not a check
            log.debug("Redis not searched for requeststate 0.3's claims (%s)", type(error).__name__)
            return
        self._tell_if_0_3(replies)

    @staticmethod
    def _check_client(client: object) -> bool:
        if not isinstance(client, _ASYNC_CLIENTS):
            raise TypeError(
                "client must be a redis.asyncio.Redis or redis.asyncio.cluster.RedisCluster, "
                f"not {type(client).__name__}"
            )
        return isinstance(client, redis.asyncio.cluster.RedisCluster)

    @classmethod
    def _connect(cls, address: str, *, cluster: bool, timeout: float, options: dict[str, Any]) -> AsyncClient:
        if cluster:  # bounded by the guard's turns (_setup): this client refuses rather than wait
            return redis.asyncio.cluster.RedisCluster.from_url(
                address, retry=Retry(NoBackoff(), 0), **options
            )
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            address, max_connections=MAX_CONNECTIONS, timeout=timeout, retry=Retry(NoBackoff(), 0), **options
        )
        return redis.asyncio.Redis.from_pool(pool)

    async def _mark(self, now: int) -> list[object]:
        """Write each bucket's marker that is missing or names another memory; the script's replies."""
        client, args = self._client, self._marker_args(now)
        if not isinstance(client, redis.asyncio.cluster.RedisCluster):
            return [await self._script(keys=[self.bucket_keys[0]], args=args)]
        await client.initialize()
        sha = await client.script_load(CLAIM_SCRIPT)  # to every master
        batch = client.pipeline()
        for key in self.bucket_keys:
            batch.execute_command("EVALSHA", sha, 1, key, *args)
        return await batch.execute(raise_on_error=False)
