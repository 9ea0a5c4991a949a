"""``SQLiteGuard`` and ``AsyncSQLiteGuard``: the replay guard in an SQLite file a host's processes share."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Final, Self, final
from urllib.parse import unquote

from requeststate import ClaimId
from requeststate._seam import Ledger, StoredGuard, check_guard_timeout, split_guard_url

from ._file import SQLiteFile

__all__ = [
    "DEFAULT_CLOCK_SKEW",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TIMEOUT",
    "SCHEMES",
    "AsyncSQLiteGuard",
    "SQLiteGuard",
]

DEFAULT_NAMESPACE: Final = "requeststate"
"""The namespace of a guard's claims in the file, unless ``namespace=`` says otherwise."""
DEFAULT_TIMEOUT: Final = 5.0
"""Seconds a claim waits for the file's lock before the guard gives up (``GuardUnavailable``).

Longer than Redis's 0.25 s: a claim waits its turn behind every other worker's claim on
the host, each a transaction synced to disk (tens of milliseconds on a slow disk), where a
Redis claim waits for one answer."""
DEFAULT_CLOCK_SKEW: Final = 0
"""Seconds the clocks of the processes that mint and verify may differ by: none, as they
read one host's clock. A fleet whose workers begin on a new file then serves within a
second, not ``requeststate.DEFAULT_CLOCK_SKEW`` seconds later. Raise it only if tokens
verified here are minted on another host."""
SCHEMES: Final = ("sqlite",)
"""The schemes of its URL: ``sqlite:////absolute/path.db``."""


class _SQLiteGuardBase(StoredGuard):
    """What both guards share: the file, the namespace, the rules."""

    __slots__ = ("_file", "_ledger", "_timeout")

    _timeout: float

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        namespace: str = DEFAULT_NAMESPACE,
        clock_skew: int = DEFAULT_CLOCK_SKEW,
        timeout: float = DEFAULT_TIMEOUT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        text = os.fspath(path)
        if not isinstance(text, str):
            raise TypeError(f"path must be a str or os.PathLike[str], not {type(text).__name__}")
        if "\0" in text:
            raise ValueError("path must not contain a NUL byte")
        if not os.path.isabs(text):
            raise ValueError(
                f"path must be absolute, not {text!r}: the workers that share the file may not share a "
                "working directory"
            )
        if not callable(clock):
            raise TypeError("clock must be a callable returning unix seconds")
        self._ledger = Ledger(namespace, clock_skew, log="requeststate.sqlite", describe="the SQLite file")
        self._timeout = check_guard_timeout(timeout)
        self._file: Final = SQLiteFile(text, timeout=self._timeout, clock=clock)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        namespace: str | None = None,
        timeout: float | None = None,
        clock_skew: int | None = None,
    ) -> Self:
        """A guard on the file ``sqlite:////absolute/path.db`` names (four slashes: the path is absolute).

        The options (``namespace``, ``timeout``, ``clock_skew``) are the constructor's, in the
        URL's query (``?timeout=2``) or by keyword, each once.

        Raises:
            TypeError, ValueError: a URL of another form, or a bad option; never naming a part of it.
        """
        given = {"namespace": namespace, "timeout": timeout, "clock_skew": clock_skew}
        parts, settings = split_guard_url(url, SCHEMES, given)
        file = unquote(parts.path[1:])
        if parts.netloc or not os.path.isabs(file):
            raise ValueError(
                "the guard URL must name the SQLite file by its absolute path, after four slashes: "
                "sqlite:////var/lib/app/claims.db (workers may not share a working directory)"
            )
        return cls(file, **settings)  # type: ignore[arg-type]  # each option checked by the constructor

    @property
    def path(self) -> str:
        """The file the claims are kept in."""
        return self._file.path

    def _claim(self, claimed: ClaimId, expires_at: int, now: int) -> bool:
        claim = self._ledger.prepare(claimed, expires_at, now)
        if self._ledger.answered_before(claim):
            return False
        return self._ledger.settle(claim, self._file.claim(self.namespace, claim, claim.terms))

    def _redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int
    ) -> str | None:
        claim = self._ledger.prepare_redeem(claimed, expires_at, now, request, lease_until)
        return self._ledger.settle_redeem(claim, self._file.claim(self.namespace, claim, claim.terms))

    def _keep(self, claimed: ClaimId, request: str, answer: str) -> None:
        keep = self._ledger.prepare_keep(claimed, request, answer)
        self._file.keep(self.namespace, keep.member, keep.request, keep.answer)

    def _begin(self, now: int | None) -> int:
        claim = self._ledger.mark(int(time.time()) if now is None else now)
        return self._ledger.first_accepted([self._file.claim(self.namespace, claim, claim.terms)])

    def __repr__(self) -> str:
        """The guard's class, file and namespace."""
        return f"{type(self).__name__}({self.path!r}, namespace={self.namespace!r})"


@final
class SQLiteGuard(_SQLiteGuardBase):
    """A replay guard in an SQLite file, shared by every process of one host that opens it.

    For several workers on one host (uvicorn or gunicorn workers), with no server to
    run: Python's own ``sqlite3``. Each claim is one ``BEGIN IMMEDIATE`` transaction,
    serialised by the file's lock across every process, with a rollback journal (every
    claim and every lock in the main file) and every commit synced to disk before the
    claim counts (``synchronous=FULL``). Claims survive a restart of any or all
    workers, and a crash of the host. The rules are the Redis guard's: a file that is
    new, deleted, replaced or truncated has lost its memory, and every token minted
    before the loss (plus ``clock_skew``) is refused; the namespace's verifiers share
    one ``clock_skew`` and leeway, and a namespace with no live claim takes the terms
    of the verifier that claims next (as a loss). An exactly-once call's record (its
    request's digest, its lease, the answer kept) is written with its claim, in the
    same transaction, and deleted with it (``redeem``, ``keep``). Thread-safe. Call
    ``begin()`` when the process starts (``requeststate.mcp.protect`` does).

    Args:
        path: the file, absolute, created ``0600`` if missing. This process's user
            must own it, and no one else may write it (or its directory); it must
            have one name (no hard link; mount its directory into a container, not
            the file) and be on a local filesystem (NFS and SMB are refused). Each is
            checked at the first claim, which raises ``GuardUnavailable`` naming the fix.
        namespace: one per application sharing the file.
        clock_skew: seconds that the clocks of the hosts that mint may differ by
            (default ``DEFAULT_CLOCK_SKEW``, 0: one host, one clock).
        timeout: seconds a claim waits for the file's lock (default ``DEFAULT_TIMEOUT``,
            at most 60).
        clock: the clock that dates a new memory, read inside the claim (tests inject one).

    Raises:
        TypeError, ValueError: a relative path, or a bad option.
    """

    __slots__ = ()

    def claim(self, claimed: ClaimId, expires_at: int, now: int, /) -> bool:
        """Record ``claimed`` until ``expires_at``; ``True`` on its first claim, ``False`` on a replay.

        Raises:
            GuardUnavailable: the file could not record the claim (refused, or locked
                past ``timeout``), or the namespace's verifiers use other terms and hold a
                live claim.
            InvalidToken: ``outside_memory``: the token was minted before the file's memory
                began (plus ``clock_skew``) or after ``now`` plus ``clock_skew``.
            ValueError: ``expires_at`` is before ``now``.
        """
        return self._claim(claimed, expires_at, now)

    def redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int, /
    ) -> str | None:
        """Claim ``claimed`` for ``request``, exactly once, recording with the claim the request's digest
        and ``lease_until``: ``None`` on its first claim, else the answer kept for an identical retry
        (``requeststate.KeepingGuard.redeem``).

        Raises:
            InvalidToken: ``replayed``, ``in_progress``, ``outcome_unknown``, or as ``claim``.
            GuardUnavailable: as ``claim``.
        """
        return self._redeem(claimed, expires_at, now, request, lease_until)

    def keep(self, claimed: ClaimId, request: str, answer: str, /) -> None:
        """Keep ``answer`` in the record of ``claimed``'s first call for ``request``, if that record is in
        the file and has no answer yet (``requeststate.KeepingGuard.keep``): one transaction.

        Raises:
            GuardUnavailable: as ``claim``: the answer may not be kept.
        """
        self._keep(claimed, request, answer)

    def begin(self, now: int | None = None) -> int:
        """Record in the file that its memory begins now, where it has no record: call at start.

        Returns:
            The first unix second whose tokens are accepted: ``now + clock_skew + 1``
            on a new file, earlier on a file in use.

        Raises:
            GuardUnavailable: the file could not be written (or is refused), or the
                namespace's verifiers use another ``clock_skew`` or leeway and hold a
                live claim (the message names both).
        """
        return self._begin(now)

    def close(self) -> None:
        """Close the connection (the next claim opens it again)."""
        self._file.close()


@final
class AsyncSQLiteGuard(_SQLiteGuardBase):
    """``SQLiteGuard`` for asyncio servers: each claim runs in a worker thread, off the event loop.

    The arguments and the outcomes are ``SQLiteGuard``'s.
    """

    __slots__ = ()

    async def claim(self, claimed: ClaimId, expires_at: int, now: int, /) -> bool:
        """Record ``claimed`` until ``expires_at``; see ``SQLiteGuard.claim``."""
        return await asyncio.to_thread(self._claim, claimed, expires_at, now)

    async def redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int, /
    ) -> str | None:
        """Claim ``claimed`` for ``request``, exactly once; see ``SQLiteGuard.redeem``."""
        return await asyncio.to_thread(self._redeem, claimed, expires_at, now, request, lease_until)

    async def keep(self, claimed: ClaimId, request: str, answer: str, /) -> None:
        """Keep ``answer`` for the retries of ``claimed``'s first call; see ``SQLiteGuard.keep``."""
        await asyncio.to_thread(self._keep, claimed, request, answer)

    async def begin(self, now: int | None = None) -> int:
        """Record in the file that its memory begins now; see ``SQLiteGuard.begin``."""
        return await asyncio.to_thread(self._begin, now)

    async def aclose(self) -> None:
        """Close the connection (the next claim opens it again)."""
        self._file.close()
