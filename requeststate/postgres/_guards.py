"""``PostgresGuard`` and ``AsyncPostgresGuard``: the replay guard in a PostgreSQL database a fleet shares."""

from __future__ import annotations

import asyncio
import math
import selectors
import threading
import time
from collections.abc import Callable
from typing import Any, Final, Generic, Self, TypeVar, final

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from requeststate import DEFAULT_CLOCK_SKEW, ClaimId, GuardUnavailable
from requeststate._seam import (
    ENCODE_HINT,
    Answer,
    Claim,
    Ledger,
    StoredGuard,
    check_guard_timeout,
    split_guard_url,
)

from ._claim import Refused, Steps, arguments, claim_steps, keep_steps

__all__ = [
    "DEFAULT_NAMESPACE",
    "DEFAULT_TIMEOUT",
    "MAX_CONNECTIONS",
    "SCHEMES",
    "AsyncPostgresGuard",
    "PostgresGuard",
]

DEFAULT_NAMESPACE: Final = "requeststate"
"""The namespace of a guard's claims in the tables, unless ``namespace=`` says otherwise."""
DEFAULT_TIMEOUT: Final = 1.0
"""Seconds a claim waits for a connection and for its answer before the guard gives up
(``GuardUnavailable``). Longer than Redis's 0.25 s: a claim may open a connection (TCP, TLS and
a SCRAM exchange), and its commit waits for the WAL to reach the disk (and a synchronous standby)."""
MAX_CONNECTIONS: Final = 8
"""The most connections a guard's pool opens at once (one is opened at the first claim)."""

SCHEMES: Final = ("postgresql", "postgres")
"""The schemes of its URL: ``postgresql://user@host:port/dbname`` (``postgres://`` too)."""


class _NoAnswer(Exception):
    """PostgreSQL did not answer within the guard's timeout."""


_ERRORS: Final = (psycopg.Error, Refused, _NoAnswer, OSError)
"""What a claim can meet on its way, each of which refuses it (psycopg_pool's errors are psycopg's)."""


Exchange = Callable[[pq.abc.PGconn, list[bytes | None]], Steps]
"""What a guard runs on a connection, with its arguments: ``claim_steps`` or ``keep_steps``."""

PoolT = TypeVar("PoolT", ConnectionPool, AsyncConnectionPool)
"""The pool a guard claims through: ``ConnectionPool`` (``PostgresGuard``) or ``AsyncConnectionPool``."""


class _PostgresGuardBase(StoredGuard, Generic[PoolT]):
    """What both guards share: the connection string, the namespace, the rules, the timeout, the pool."""

    __slots__ = ("_connect_timeout", "_conninfo", "_ledger", "_lock", "_open", "_timeout")

    _timeout: float

    def __init__(
        self,
        conninfo_or_url: str,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        clock_skew: int = DEFAULT_CLOCK_SKEW,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if not isinstance(conninfo_or_url, str):
            raise TypeError(f"conninfo_or_url must be a str, not {type(conninfo_or_url).__name__}")
        try:
            given = conninfo_to_dict(conninfo_or_url)
        except psycopg.Error:  # its message may quote the string, password and all
            raise ValueError(
                "conninfo_or_url must be a libpq connection string (host=... dbname=...) or a "
                f"postgresql:// URL {ENCODE_HINT}"
            ) from None
        self._ledger = Ledger(namespace, clock_skew, log="requeststate.postgres", describe="PostgreSQL")
        self._timeout = check_guard_timeout(timeout)
        self._conninfo: Final = conninfo_or_url
        # libpq's connect_timeout counts whole seconds, 2 at least; the pool's wait bounds a claim's.
        self._connect_timeout: Final = given.get("connect_timeout", max(2, math.ceil(self._timeout)))
        self._lock: Final = threading.Lock()  # the sync guard's, around its pool
        self._open: PoolT | None = None  # opened at the first claim

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        namespace: str | None = None,
        timeout: float | None = None,
        clock_skew: int | None = None,
    ) -> Self:
        """A guard from ``postgresql://user:password@host:port/dbname`` (or ``postgres://``).

        The options (``namespace``, ``timeout``, ``clock_skew``) are the constructor's, in the
        URL's query (``?timeout=2``) or by keyword, each once; the query carries nothing else
        (libpq's own options go in a connection string, to the constructor). A password with
        ``/``, ``?``, ``#``, ``@`` or ``:`` in it must be percent-encoded.

        Raises:
            TypeError, ValueError: a URL of another form, or a bad option; never naming a part of it.
        """
        given = {"namespace": namespace, "timeout": timeout, "clock_skew": clock_skew}
        parts, settings = split_guard_url(url, SCHEMES, given)
        try:
            parts.port  # noqa: B018 (read to check it)
        except ValueError:
            raise ValueError(f"the guard URL's address is not host:port {ENCODE_HINT}") from None
        if "/" in parts.path[1:]:
            raise ValueError(f"the guard URL must end in the database's name, /dbname {ENCODE_HINT}")
        return cls(parts.geturl(), **settings)  # type: ignore[arg-type]  # each option checked by the constructor

    def __repr__(self) -> str:
        """The guard's class and the options that differ from a plain guard's, never the connection string."""
        shown = [f"namespace={self.namespace!r}"]
        if self.clock_skew != DEFAULT_CLOCK_SKEW:
            shown.append(f"clock_skew={self.clock_skew}")
        if self.timeout != DEFAULT_TIMEOUT:
            shown.append(f"timeout={self.timeout}")
        return f"{type(self).__name__}({', '.join(shown)})"

    def _pool_options(self) -> dict[str, Any]:
        """What both pools are built with: at most ``MAX_CONNECTIONS``, each autocommit, none at once."""
        return {
            "kwargs": {"autocommit": True, "connect_timeout": self._connect_timeout},
            "min_size": 1,
            "max_size": MAX_CONNECTIONS,
            "timeout": self._timeout,
            "open": False,
            "name": "requeststate",
        }

    def _statement_timeout(self) -> str:
        """The server's own bound on a claim (a lock it waits on, say), as ``statement_timeout``."""
        return f"{math.ceil(self._timeout * 1000)}ms"

    def _prepare(
        self, claimed: ClaimId, expires_at: int, now: int
    ) -> tuple[Claim, list[bytes | None]] | None:
        """The claim of ``claimed`` and the function's arguments; ``None`` for a replay the ledger
        remembers (refused without a round trip)."""
        claim = self._ledger.prepare(claimed, expires_at, now)
        if self._ledger.answered_before(claim):
            return None
        return claim, arguments(self.namespace, claim, claim.terms)

    def _prepare_redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int
    ) -> tuple[Claim, list[bytes | None]]:
        """The exactly-once claim of ``claimed`` for ``request`` and the function's arguments."""
        claim = self._ledger.prepare_redeem(claimed, expires_at, now, request, lease_until)
        return claim, arguments(self.namespace, claim, claim.terms)

    def _prepare_keep(self, claimed: ClaimId, request: str, answer: str) -> list[bytes | None]:
        """The arguments of the statement that keeps ``answer`` for ``claimed``'s first call."""
        keep = self._ledger.prepare_keep(claimed, request, answer)
        return [value.encode() for value in (self.namespace, keep.member, keep.request, keep.answer)]

    def _mark(self, now: int | None) -> list[bytes | None]:
        claim = self._ledger.mark(int(time.time()) if now is None else now)
        return arguments(self.namespace, claim, claim.terms)

    def _read(self, reply: tuple[object, ...]) -> Answer:
        return self._ledger.read(*reply)

    def _unanswered(self, error: Exception, what: str) -> GuardUnavailable:
        """What a claim or ``begin`` raises when PostgreSQL did not record ``what``: a cause, no value."""
        if isinstance(error, _NoAnswer):
            cause = f"no answer within {self._timeout} s"
        elif isinstance(error, Refused):
            cause = f"SQLSTATE {error.sqlstate}"
        else:
            cause = type(error).__name__
        return GuardUnavailable(f"PostgreSQL did not record {what} ({cause})")


@final
class PostgresGuard(_PostgresGuardBase[ConnectionPool]):
    """A replay guard in a PostgreSQL database, shared by every process and host that uses it.

    For a fleet of servers on several hosts that already runs PostgreSQL. Each claim is one
    call of a PL/pgSQL function, in its own transaction: the marker, pruning and the claim,
    atomic (docs/postgres-guard.md says how). The guard creates its tables and the
    function where its first claim finds them missing. The rules are the Redis guard's: a
    database whose memory is new or was lost (a new cluster, a promoted standby, a
    point-in-time recovery, a dropped and recreated database or table) refuses every token
    minted before the loss (plus ``clock_skew``); the namespace's verifiers share one
    ``clock_skew`` and leeway. An exactly-once call's record (its request's digest, its
    lease, the answer kept) is written with its claim, in the same call, in a third table, and
    pruned with it (``redeem``, ``keep``). Thread-safe, on a pool of at most ``MAX_CONNECTIONS``
    connections. Call ``begin()`` when the process starts (``requeststate.mcp.protect`` does).

    Args:
        conninfo_or_url: a libpq connection string or a ``postgresql://`` URL (libpq's
            options and environment variables apply, ``PGPASSWORD`` and ``sslmode`` among them).
        namespace: one per application sharing the database.
        clock_skew: seconds that the clocks of the hosts that mint and verify (and
            PostgreSQL's) may differ by (default ``requeststate.DEFAULT_CLOCK_SKEW``).
        timeout: seconds a claim waits for a connection, and then for its answer.

    Raises:
        TypeError, ValueError: a connection string libpq does not read, or a bad option;
            no message quotes the string.
    """

    __slots__ = ()

    def claim(self, claimed: ClaimId, expires_at: int, now: int, /) -> bool:
        """Record ``claimed`` until ``expires_at``; ``True`` on its first claim, ``False`` on a replay.

        Raises:
            GuardUnavailable: PostgreSQL did not record the claim within ``timeout`` or
                answered an error, or the namespace's verifiers use other terms.
            InvalidToken: ``outside_memory``: the token was minted before the database's memory
                of the claims began (plus ``clock_skew``), or after ``now`` plus ``clock_skew``.
            ValueError: ``expires_at`` is before ``now``.
        """
        prepared = self._prepare(claimed, expires_at, now)
        if prepared is None:
            return False
        claim, args = prepared
        return self._ledger.settle(claim, self._read(self._run(claim_steps, args, "the claim")))

    def redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int, /
    ) -> str | None:
        """Claim ``claimed`` for ``request``, exactly once, recording with the claim the request's digest
        and ``lease_until``: ``None`` on its first claim, else the answer kept for an identical retry
        (``requeststate.KeepingGuard.redeem``). One call of the claim function, as ``claim``.

        Raises:
            InvalidToken: ``replayed``, ``in_progress``, ``outcome_unknown``, or as ``claim``.
            GuardUnavailable: as ``claim``.
        """
        claim, args = self._prepare_redeem(claimed, expires_at, now, request, lease_until)
        return self._ledger.settle_redeem(claim, self._read(self._run(claim_steps, args, "the claim")))

    def keep(self, claimed: ClaimId, request: str, answer: str, /) -> None:
        """Keep ``answer`` in the record of ``claimed``'s first call for ``request``, if that record is
        there and has no answer yet (``requeststate.KeepingGuard.keep``): one statement.

        Raises:
            GuardUnavailable: PostgreSQL did not answer within ``timeout``, or answered an error:
                the answer may not be kept.
        """
        self._run(keep_steps, self._prepare_keep(claimed, request, answer), "the answer")

    def begin(self, now: int | None = None) -> int:
        """Record in the database that its memory begins now, where it has no record: call at start.

        Returns:
            The first unix second whose tokens are accepted: ``now + clock_skew + 1``
            on a new database, earlier on one in use.

        Raises:
            GuardUnavailable: PostgreSQL did not answer, or the namespace's verifiers use
                another ``clock_skew`` or leeway (the message names both).
        """
        return self._ledger.first_accepted(
            [self._read(self._run(claim_steps, self._mark(now), "when its memory began"))]
        )

    def close(self) -> None:
        """Close the pool and its connections (the next claim opens a new one)."""
        with self._lock:
            pool, self._open = self._open, None
        if pool is not None:
            pool.close()

    def _run(self, exchange: Exchange, args: list[bytes | None], what: str) -> tuple[object, ...]:
        try:
            with self._pool().connection(timeout=self._timeout) as connection:
                deadline = time.monotonic() + self._timeout
                try:
                    reply = _drive(exchange(connection.pgconn, args), connection.pgconn.socket, deadline)
                except Refused:
                    raise  # an error PostgreSQL answered: the connection is as good as before
                except BaseException:
                    connection.close()  # mid-claim, its state is unknown: the pool discards it
                    raise
        except _ERRORS as error:
            raise self._unanswered(error, what) from error
        return reply

    def _pool(self) -> ConnectionPool:
        with self._lock:
            if self._open is None:
                pool: ConnectionPool = ConnectionPool(
                    self._conninfo, configure=self._configure, **self._pool_options()
                )
                pool.open(wait=False)
                self._open = pool
            return self._open

    def _configure(self, connection: psycopg.Connection[Any]) -> None:
        connection.execute("SELECT set_config('statement_timeout', %s, false)", (self._statement_timeout(),))


@final
class AsyncPostgresGuard(_PostgresGuardBase[AsyncConnectionPool]):
    """``PostgresGuard`` for asyncio servers, on an asyncio pool; use with ``averify``.

    The arguments and the outcomes are ``PostgresGuard``'s. Its pool belongs to the event
    loop of its first claim.
    """

    __slots__ = ()

    async def claim(self, claimed: ClaimId, expires_at: int, now: int, /) -> bool:
        """Record ``claimed`` until ``expires_at``; see ``PostgresGuard.claim``."""
        prepared = self._prepare(claimed, expires_at, now)
        if prepared is None:
            return False
        claim, args = prepared
        return self._ledger.settle(claim, self._read(await self._run(claim_steps, args, "the claim")))

    async def redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int, /
    ) -> str | None:
        """Claim ``claimed`` for ``request``, exactly once; see ``PostgresGuard.redeem``."""
        claim, args = self._prepare_redeem(claimed, expires_at, now, request, lease_until)
        return self._ledger.settle_redeem(claim, self._read(await self._run(claim_steps, args, "the claim")))

    async def keep(self, claimed: ClaimId, request: str, answer: str, /) -> None:
        """Keep ``answer`` for the retries of ``claimed``'s first call; see ``PostgresGuard.keep``."""
        await self._run(keep_steps, self._prepare_keep(claimed, request, answer), "the answer")

    async def begin(self, now: int | None = None) -> int:
        """Record in the database that its memory begins now; see ``PostgresGuard.begin``."""
        return self._ledger.first_accepted(
            [self._read(await self._run(claim_steps, self._mark(now), "when its memory began"))]
        )

    async def aclose(self) -> None:
        """Close the pool and its connections (the next claim opens a new one)."""
        pool, self._open = self._open, None
        if pool is not None:
            await pool.close()

    async def _run(self, exchange: Exchange, args: list[bytes | None], what: str) -> tuple[object, ...]:
        try:
            pool = await self._pool()
            async with pool.connection(timeout=self._timeout) as connection:
                deadline = time.monotonic() + self._timeout
                try:
                    steps = exchange(connection.pgconn, args)
                    reply = await _adrive(steps, connection.pgconn.socket, deadline)
                except Refused:
                    raise
                except BaseException:
                    await connection.close()
                    raise
        except _ERRORS as error:
            raise self._unanswered(error, what) from error
        return reply

    async def _pool(self) -> AsyncConnectionPool:
        if self._open is None:
            pool: AsyncConnectionPool = AsyncConnectionPool(
                self._conninfo, configure=self._configure, **self._pool_options()
            )
            await pool.open(wait=False)
            if self._open is None:
                self._open = pool
            else:  # another claim opened one meanwhile
                await pool.close()
        return self._open

    async def _configure(self, connection: psycopg.AsyncConnection[Any]) -> None:
        await connection.execute(
            "SELECT set_config('statement_timeout', %s, false)", (self._statement_timeout(),)
        )


def _drive(steps: Steps, fd: int, deadline: float) -> tuple[object, ...]:
    """Run ``steps`` to their end, waiting on the socket ``fd`` as they ask, until ``deadline`` at most."""
    try:
        write = next(steps)
        while True:
            with selectors.DefaultSelector() as selector:
                selector.register(fd, selectors.EVENT_WRITE if write else selectors.EVENT_READ)
                if not selector.select(max(0.0, deadline - time.monotonic())):
                    raise _NoAnswer
            write = steps.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def _adrive(steps: Steps, fd: int, deadline: float) -> tuple[object, ...]:
    """``_drive`` on the event loop: each wait is the loop's reader or writer on ``fd``."""
    loop = asyncio.get_running_loop()
    try:
        write = next(steps)
        while True:
            ready: asyncio.Future[None] = loop.create_future()
            if write:
                loop.add_writer(fd, _wake, ready)
            else:
                loop.add_reader(fd, _wake, ready)
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    await ready
            except TimeoutError:
                raise _NoAnswer from None
            finally:
                if write:
                    loop.remove_writer(fd)
                else:
                    loop.remove_reader(fd)
            write = steps.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)
