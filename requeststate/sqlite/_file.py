"""The SQLite file a guard keeps its claims in: opened, checked to be the file at its path, claimed in.

This module says how SQLite runs the shared rules (``requeststate``'s ``Ledger``)
atomically: one ``BEGIN IMMEDIATE`` transaction per claim, which every process on the
host serialises on the file's lock. Two tables, shared by every namespace:

- ``requeststate_markers``: a namespace's marker (the memory it names, when that began, its
  terms);
- ``requeststate_claims``: each claim's digest and its score (the token's expiry plus
  the leeway), indexed by score for pruning.

A file that is new, deleted, replaced or truncated has no marker (a new file, a
recreated one) or is not the file this connection has open: before each claim, inside
the transaction, the path is checked to name the file the connection holds (device and
inode), and a connection on a file that is gone or replaced is closed and opened again
on the file the path now names, whose marker is missing: a loss, seen as any loss is.

The memory a marker names is the host's boot (Linux's ``boot_id``): the file is in
write-ahead-log mode with ``synchronous=NORMAL``, where a commit survives the crash of any
process (the kernel holds it) but not a crash of the host, which may undo the last
claims. A host that booted again has another boot id, so its first claim sees a loss, as
a Redis restart is seen. Where no boot id can be read, every commit is synced to disk
(``synchronous=FULL``) and the marker names no boot.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Final

from requeststate import GuardUnavailable
from requeststate._seam import Answer, Claim, Status

__all__ = ["SCHEMA", "SQLiteFile", "host_boot"]

SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS requeststate_markers (namespace TEXT PRIMARY KEY, "
    "memory TEXT NOT NULL, since INTEGER NOT NULL, terms TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS requeststate_claims ("
    "namespace TEXT NOT NULL, member TEXT NOT NULL, expires INTEGER NOT NULL, "
    "PRIMARY KEY (namespace, member)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS requeststate_claims_by_expiry ON requeststate_claims (namespace, expires)",
)
"""The tables, created on a file that lacks them (a new file, or one truncated or recreated)."""


_BOOT_ID: Final = "/proc/sys/kernel/random/boot_id"


def host_boot() -> str | None:
    """This host's boot id (Linux), which changes with every boot; ``None`` where there is none."""
    try:
        with open(_BOOT_ID, encoding="ascii") as boot:
            return boot.read().strip() or None
    except OSError:
        return None


class _Replaced(Exception):
    """The path no longer names the file this connection holds."""


class SQLiteFile:
    """One connection to the file at ``path``, reopened when the path names another file; thread-safe."""

    __slots__ = ("_boot", "_clock", "_connection", "_held", "_lock", "path", "timeout")

    def __init__(self, path: str, *, timeout: float, clock: Callable[[], float] = time.time) -> None:
        self.path: Final = path
        self.timeout: Final = timeout
        self._clock: Final = clock
        self._lock: Final = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._held: tuple[int, int] | None = None  # (device, inode) of the file the connection holds
        self._boot: Final = host_boot()

    def claim(self, namespace: str, claim: Claim, terms: str) -> Answer:
        """Run ``claim`` atomically in the file: the marker, pruning, and the claim itself.

        Raises:
            GuardUnavailable: the file could not be opened, locked in time, or written.
        """
        with self._lock:
            try:
                try:
                    return self._claim_once(namespace, claim, terms)
                except _Replaced:
                    self._close()
                    return self._claim_once(namespace, claim, terms)
            except (sqlite3.Error, OSError, _Replaced) as error:
                self._close()  # whatever broke, the next claim starts on a fresh connection
                raise GuardUnavailable(
                    f"the SQLite file did not record the claim ({type(error).__name__})"
                ) from error

    def close(self) -> None:
        """Close the connection; the next claim opens it again."""
        with self._lock:
            self._close()

    def __del__(self) -> None:
        # A guard dropped unclosed closes its connection (Python 3.13 warns of one left open).
        self._close()

    def _claim_once(self, namespace: str, claim: Claim, terms: str) -> Answer:
        connection = self._open()
        connection.execute("BEGIN IMMEDIATE")
        try:
            # Under the file's lock: no other process can replace what the path names and
            # claim in the new file between this check and the commit.
            if _identity(self.path) != self._held:
                raise _Replaced
            answer = _run(connection, namespace, claim, terms, self._boot or "", self._clock)
        except BaseException:
            connection.rollback()
            raise
        if answer.status == Status.TERMS:
            connection.rollback()
        else:
            connection.commit()
        return answer

    def _open(self) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        before = _identity(self.path)
        connection = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        try:
            # The path named one file before and after the connection opened it: that file.
            held = _identity(self.path)
            if held is None or before not in (None, held):
                raise _Replaced
            mode = connection.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode != "wal":
                raise GuardUnavailable(
                    f"the SQLite file's journal cannot be a write-ahead log (it is {mode}): the file must be "
                    "on a local filesystem that supports shared memory, not a network one"
                )
            # A commit a crash of the host could undo is safe only where the marker names the
            # boot (a new boot is a loss); elsewhere each commit reaches the disk first.
            connection.execute(f"PRAGMA synchronous={'FULL' if self._boot is None else 'NORMAL'}")
            for statement in SCHEMA:
                connection.execute(statement)
        except BaseException:
            connection.close()
            raise
        self._connection, self._held = connection, held
        return connection

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._connection = self._held = None


def _identity(path: str) -> tuple[int, int] | None:
    """The device and inode the path names now; ``None`` if nothing is there."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


def _run(
    connection: sqlite3.Connection,
    namespace: str,
    claim: Claim,
    terms: str,
    memory: str,
    clock: Callable[[], float],
) -> Answer:
    """The shared rules' atomic part, inside the transaction (``requeststate._ledger``'s steps 1 to 4)."""
    marker = connection.execute(
        "SELECT memory, since, terms FROM requeststate_markers WHERE namespace = ?", (namespace,)
    ).fetchone()
    began_here = marker is None or marker[0] != memory
    host_now = int(clock())
    if began_here:
        since = max(claim.now, host_now)
        connection.execute(
            "INSERT OR REPLACE INTO requeststate_markers (namespace, memory, since, terms) "
            "VALUES (?, ?, ?, ?)",
            (namespace, memory, since, terms),
        )
    elif marker[2] != terms:
        return Answer(Status.TERMS, marker[1], False, marker[2])
    else:
        since = marker[1]
    # Pruned by the earlier of the verifier's clock and the host's: a verifier whose clock runs far
    # ahead (or was handed a wrong now) prunes no claim whose token still verifies.
    prune_before = claim.prune_before - max(0, claim.now - host_now)
    connection.execute(
        "DELETE FROM requeststate_claims WHERE namespace = ? AND expires < ?", (namespace, prune_before)
    )
    if not claim.member:
        return Answer(Status.MARKED, since, began_here, terms)
    added = connection.execute(
        "INSERT OR IGNORE INTO requeststate_claims (namespace, member, expires) VALUES (?, ?, ?)",
        (namespace, claim.member, claim.expires_at),
    ).rowcount
    return Answer(Status.CLAIMED if added == 1 else Status.REPLAYED, since, began_here, terms)
