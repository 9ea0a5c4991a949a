"""The SQLite file a guard keeps its claims in: created, opened, checked, claimed in.

This module says how SQLite runs the shared rules (``requeststate``'s ``Ledger``)
atomically: one ``BEGIN IMMEDIATE`` transaction per claim (and per answer kept), which every
process on the host serialises on the file's lock. Three tables, shared by every namespace:

- ``requeststate_markers``: a namespace's marker (the memory it names, when that began, its
  terms);
- ``requeststate_claims``: each claim's digest and its score (the token's expiry plus
  the leeway), indexed by score for pruning;
- ``requeststate_answers``: an exactly-once claim's record (its request's digest, its lease,
  the answer kept for it), under the claim's digest and with its score, pruned with it. A table
  of its own, created next to the others where a file of requeststate 0.4.0 lacks it: the
  claims table keeps its 0.4.0 columns, and a file with claims in it upgrades in place.

Every claim and every lock is in the main file: the journal is a rollback journal
(``journal_mode=TRUNCATE``), not a write-ahead log, whose ``-wal`` and ``-shm`` files SQLite
names after the path: workers that opened one file under two names (a hard link, a file
bind-mounted into a container) each had a log and locks of their own and accepted every
token once each, as did workers after ``-shm`` was deleted under them. A file with a
second name is refused: one with more than one link, and one that is a mount point of its
own. Every commit is synced to disk (``synchronous=FULL``) before the claim counts, so a
crash of the host loses no claim: the file's memory ends only with the file.

A file that is new, deleted, replaced or truncated has no marker (a new file, a
recreated one) or is not the file this connection has open: before each claim, inside
the transaction, the path is checked to name the file the connection holds (device and
inode), and a connection on a file that is gone or replaced is closed and opened again
on the file the path now names, whose marker is missing: a loss, seen as any loss is.

Only this process's user may write the file: the guard creates it ``0600`` (never through
a symbolic link), and refuses one owned by another user or writable by group or others,
whose owner could delete claims.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Final, TypeVar

from requeststate import GuardUnavailable
from requeststate._seam import Answer, Claim, Status

__all__ = ["SCHEMA", "SQLiteFile"]

SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS requeststate_markers (namespace TEXT PRIMARY KEY, "
    "memory TEXT NOT NULL, since INTEGER NOT NULL, terms TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS requeststate_claims ("
    "namespace TEXT NOT NULL, member TEXT NOT NULL, expires INTEGER NOT NULL, "
    "PRIMARY KEY (namespace, member)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS requeststate_claims_by_expiry ON requeststate_claims (namespace, expires)",
    # A rowid table: a kept answer is up to the codec's max_token_bytes (128 KiB), which SQLite
    # advises against in a WITHOUT ROWID table's rows.
    "CREATE TABLE IF NOT EXISTS requeststate_answers ("
    "namespace TEXT NOT NULL, member TEXT NOT NULL, expires INTEGER NOT NULL, "
    "request TEXT NOT NULL, lease_until INTEGER NOT NULL, kept TEXT NOT NULL, "
    "PRIMARY KEY (namespace, member))",
    "CREATE INDEX IF NOT EXISTS requeststate_answers_by_expiry ON requeststate_answers (namespace, expires)",
)
"""The tables, created on a file that lacks them (a new file, or one truncated or recreated)."""

JOURNAL: Final = "truncate"
"""The file's journal: a rollback journal, which keeps every claim and lock in the main file."""

MEMORY: Final = "file"
"""What a marker's memory names: the file itself, which loses no synced commit.

A marker that names anything else was written by a version whose commits a crash of the
host could undo (requeststate 0.4.0 named the host's boot): it is a loss, once.
"""

_T = TypeVar("_T")

# Filesystems whose locks do not serialise the processes of one host with SQLite's.
_NETWORK_FILESYSTEMS: Final = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs"})
_MOUNTS: Final = "/proc/self/mountinfo"


class _Reopen(Exception):
    """The connection no longer holds the file as a claim needs it: the path names another
    file, or another program switched the file to a write-ahead log."""


class SQLiteFile:
    """One connection to the file at ``path``, reopened when the path names another file; thread-safe."""

    __slots__ = ("_clock", "_connection", "_held", "_lock", "path", "timeout")

    def __init__(self, path: str, *, timeout: float, clock: Callable[[], float] = time.time) -> None:
        self.path: Final = path
        self.timeout: Final = timeout
        self._clock: Final = clock
        self._lock: Final = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._held: tuple[int, int] | None = None  # (device, inode) of the file the connection holds

    def claim(self, namespace: str, claim: Claim, terms: str) -> Answer:
        """Run ``claim`` atomically in the file: the marker, pruning, and the claim itself.

        Raises:
            GuardUnavailable: the file could not be opened, locked in time, or written, or it
                is refused (a second name, another owner, writable by others).
        """
        return self._transact(lambda connection: _run(connection, namespace, claim, terms, self._clock))

    def keep(self, namespace: str, member: str, request: str, answer: str) -> None:
        """Write ``answer`` into the record of ``member``'s claim, if it holds ``request`` and no answer yet.

        Raises:
            GuardUnavailable: as ``claim``: the answer may not be kept.
        """
        self._transact(
            lambda connection: connection.execute(
                "UPDATE requeststate_answers SET kept = ? "
                "WHERE namespace = ? AND member = ? AND request = ? AND kept = ''",
                (answer, namespace, member, request),
            )
        )

    def _transact(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``work`` in one transaction on the file the path names, and commit it."""
        with self._lock:
            try:
                try:
                    return self._once(work)
                except _Reopen:
                    self._close()
                    return self._once(work)
            except GuardUnavailable:
                self._close()
                raise
            except (sqlite3.Error, OSError, _Reopen) as error:
                self._close()  # whatever broke, the next claim starts on a fresh connection
                raise GuardUnavailable(self._failure(error)) from error

    def close(self) -> None:
        """Close the connection; the next claim opens it again."""
        with self._lock:
            self._close()

    def __del__(self) -> None:
        # A guard dropped unclosed closes its connection (Python 3.13 warns of one left open).
        self._close()

    def _once(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        connection = self._open()
        connection.execute("BEGIN IMMEDIATE")
        try:
            # Under the file's lock: no other process can replace what the path names and
            # claim in the new file between this check and the commit.
            found = _stat(self.path)
            if found is None or (found.st_dev, found.st_ino) != self._held:
                raise _Reopen
            _check_unshared(found)  # a link, an owner or a mode may have changed since the open
            if connection.execute("PRAGMA journal_mode").fetchone()[0] != JOURNAL:
                raise _Reopen  # reopened, the file gets its journal back, or is refused
            done = work(connection)
        except BaseException:
            connection.rollback()
            raise
        connection.commit()  # a claim refused for its terms wrote nothing: its commit syncs nothing
        # The next claim reads the file, not pages kept from this one: SQLite trusts its cache
        # while the file's header counts as many commits and pages as it remembers, and a file
        # truncated and written again (by another worker) can count as many.
        connection.execute("PRAGMA shrink_memory")
        return done

    def _open(self) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        _create(self.path)
        before = _stat(self.path)
        if before is None:
            raise _Reopen  # deleted since it was created: the next attempt creates it again
        _check_unshared(before)
        _check_mount(self.path)
        connection = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        try:
            # The path named one file before and after the connection opened it: that file
            # (SQLite never created another, with its own mode, in between).
            held = _stat(self.path)
            if held is None or (held.st_dev, held.st_ino) != (before.st_dev, before.st_ino):
                raise _Reopen
            try:
                mode = connection.execute(f"PRAGMA journal_mode={JOURNAL}").fetchone()[0]
            except sqlite3.OperationalError:
                # Leaving a write-ahead log needs the file to itself: another process keeps it open.
                mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
                if mode != "wal":
                    raise
            if mode == "wal":
                raise GuardUnavailable(
                    "the SQLite file is in write-ahead-log mode and another process keeps it open, as a "
                    "worker of requeststate 0.4.0 does: stop it; a write-ahead log's side files can split "
                    "the workers"
                )
            if mode != JOURNAL:
                raise GuardUnavailable(
                    f"the SQLite file's journal cannot be a rollback journal (it is {mode})"
                )
            connection.execute("PRAGMA synchronous=FULL")  # a claim counts once it is on the disk
            for statement in SCHEMA:
                connection.execute(statement)
        except BaseException:
            connection.close()
            raise
        self._connection, self._held = connection, (held.st_dev, held.st_ino)
        return connection

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._connection = self._held = None

    def _failure(self, error: BaseException) -> str:
        """What ``GuardUnavailable`` says of an error of SQLite or of the filesystem."""
        if getattr(error, "sqlite_errorname", None) == "SQLITE_BUSY":
            return (
                f"the SQLite file stayed locked by another connection past the timeout ({self.timeout} s): "
                "a claim waits no longer"
            )
        return f"the SQLite file did not record the claim ({type(error).__name__})"


def _create(path: str) -> None:
    """Create the file at ``path``, ``0600``, unless something is there; never through a link.

    SQLite would create a missing file with its own mode (``0644``), and follow a link to do it.
    """
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
    except FileExistsError:
        if os.path.islink(path) and not os.path.exists(path):
            raise GuardUnavailable(
                "the SQLite file's path is a symbolic link to no file: the guard creates the file only "
                "where it can create it 0600 itself; remove the link, or create the file it names"
            ) from None


def _stat(path: str) -> os.stat_result | None:
    """The file the path names now; ``None`` if nothing is there."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _check_unshared(found: os.stat_result) -> None:
    """``GuardUnavailable`` unless the file has one name, is this user's, and only this user may write it."""
    if found.st_nlink > 1:
        raise GuardUnavailable(
            f"the SQLite file has {found.st_nlink} links (hard links): SQLite names its journal after "
            "the path, so workers opening it under two names could split; remove the other links"
        )
    user = os.geteuid()
    if found.st_uid != user:
        raise GuardUnavailable(
            f"the SQLite file is owned by uid {found.st_uid}, not by this process's user (uid {user}), and "
            "its owner could delete claims: chown it to this user, or delete it and let the guard create it"
        )
    if found.st_mode & 0o022:
        raise GuardUnavailable(
            f"the SQLite file is writable by group or others (mode {found.st_mode & 0o777:o}), who could "
            "delete claims: chmod 600 it"
        )


def _check_mount(path: str) -> None:
    """``GuardUnavailable`` for a file mounted alone (a second name) or on a network filesystem."""
    real = os.path.realpath(path)
    try:
        with open(_MOUNTS, encoding="utf-8", errors="surrogateescape") as mounts:
            lines = mounts.read().splitlines()
    except OSError:
        return  # not Linux: nothing to read
    best, filesystem = "", ""
    for line in lines:
        fields, _, after = line.partition(" - ")
        point = _unescape(fields.split(" ")[4])
        if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, filesystem = point, after.split(" ")[0]
    if best == real:
        raise GuardUnavailable(
            "the SQLite file is a mount point of its own (a file bind-mounted, as `-v host/claims.db:"
            "/data/claims.db` does): a worker that opens it under another name would miss the journal "
            "a crash left; mount the directory that holds it instead"
        )
    if filesystem in _NETWORK_FILESYSTEMS:
        raise GuardUnavailable(
            f"the SQLite file is on a network filesystem ({filesystem}), whose locks do not serialise "
            "claims: put it on a local filesystem"
        )


def _unescape(field: str) -> str:
    """A path of /proc/self/mountinfo, whose spaces, tabs, newlines and backslashes are octal."""
    return re.sub(r"\\([0-7]{3})", lambda code: chr(int(code.group(1), 8)), field)


def _run(
    connection: sqlite3.Connection, namespace: str, claim: Claim, terms: str, clock: Callable[[], float]
) -> Answer:
    """The shared rules' atomic part, inside the transaction (``requeststate._ledger``'s steps 1 to 4).

    One way out of step 2: the terms of a namespace none of whose claims is live (none
    expires at or after the prune line) are replaced by this verifier's, as a loss
    (``since`` is now: every older token is refused). A verifier that began with the wrong
    terms then no longer locks the right ones out for good, and a live claim made under
    other terms keeps them.
    """
    marker = connection.execute(
        "SELECT memory, since, terms FROM requeststate_markers WHERE namespace = ?", (namespace,)
    ).fetchone()
    # Pruned by the earlier of the verifier's clock and the host's: a verifier whose clock runs far
    # ahead (or was handed a wrong now) prunes no claim whose token still verifies.
    host_now = int(clock())
    prune_before = claim.prune_before - max(0, claim.now - host_now)
    began_here = marker is None or marker[0] != MEMORY or marker[2] != terms
    if began_here:
        other_terms = marker is not None and marker[0] == MEMORY
        if other_terms and _holds_live_claim(connection, namespace, prune_before):
            return Answer(Status.TERMS, marker[1], False, marker[2])
        since = max(claim.now, host_now)
        connection.execute(
            "INSERT OR REPLACE INTO requeststate_markers (namespace, memory, since, terms) "
            "VALUES (?, ?, ?, ?)",
            (namespace, MEMORY, since, terms),
        )
    else:
        since = marker[1]
    connection.execute(
        "DELETE FROM requeststate_claims WHERE namespace = ? AND expires < ?", (namespace, prune_before)
    )
    connection.execute(  # an exactly-once claim's record goes with it: the same score, the same line
        "DELETE FROM requeststate_answers WHERE namespace = ? AND expires < ?", (namespace, prune_before)
    )
    if not claim.member:
        return Answer(Status.MARKED, since, began_here, terms)
    added = connection.execute(
        "INSERT OR IGNORE INTO requeststate_claims (namespace, member, expires) VALUES (?, ?, ?)",
        (namespace, claim.member, claim.expires_at),
    ).rowcount
    if not claim.request:
        return Answer(Status.CLAIMED if added == 1 else Status.REPLAYED, since, began_here, terms)
    if added == 1:
        # OR REPLACE: the claim was just added, so a record under its digest is not its own.
        connection.execute(
            "INSERT OR REPLACE INTO requeststate_answers "
            "(namespace, member, expires, request, lease_until, kept) VALUES (?, ?, ?, ?, ?, '')",
            (namespace, claim.member, claim.expires_at, claim.request, claim.lease_until),
        )
        return Answer(Status.CLAIMED, since, began_here, terms)
    record = connection.execute(
        "SELECT request, lease_until, kept FROM requeststate_answers WHERE namespace = ? AND member = ?",
        (namespace, claim.member),
    ).fetchone()
    first, lease_until, kept = ("", 0, "") if record is None else record  # a claim of single use: none
    return Answer(Status.REPLAYED, since, began_here, terms, first, lease_until, kept)


def _holds_live_claim(connection: sqlite3.Connection, namespace: str, prune_before: int) -> bool:
    """Whether ``namespace`` holds a claim that a claim would not prune (one that expires at or
    after ``prune_before``): a live one."""
    return (
        connection.execute(
            "SELECT 1 FROM requeststate_claims WHERE namespace = ? AND expires >= ? LIMIT 1",
            (namespace, prune_before),
        ).fetchone()
        is not None
    )
