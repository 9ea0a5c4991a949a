"""How PostgreSQL runs the shared rules: one function call per claim, and the tables it writes.

The rules are ``requeststate``'s (``Ledger``): this module only says how PostgreSQL runs
them atomically. Three tables, shared by every namespace, in the first schema of the
connection's ``search_path``:

- ``requeststate_markers``: a namespace's marker (the memory it names, when that began,
  its terms);
- ``requeststate_claims``: each claim's digest and its score (the token's expiry plus the
  leeway), indexed by ``(namespace, expires)`` for pruning;
- ``requeststate_answers``: an exactly-once claim's record (its request's digest, its lease,
  the answer kept for it), under the claim's digest and with its score, pruned as the claims
  are. A table of its own, next to the claims table, which keeps its columns.

A claim is one call of ``requeststate_claim_v1``, a PL/pgSQL function (``SCHEMA`` creates
it and the tables, where the first claim finds one missing), in the call's own transaction, under
``READ COMMITTED``: the steps 1 to 4 of ``requeststate._ledger``, with row locks and
``INSERT ... ON CONFLICT`` where claims race:

- two first claims of one id: the primary key makes the second ``INSERT ... ON CONFLICT DO
  NOTHING`` wait for the first's commit, and then find the row (a replay); if the first rolled
  back, the second inserts. Exactly one is ``claimed``;
- two claims that find no marker (or another memory's): both ``INSERT ... ON CONFLICT DO
  UPDATE ... WHERE`` the marker names another memory; the second waits for the first's commit,
  finds the marker of this memory, changes nothing, and reads it (a statement of its own, so a
  new snapshot). One marker, dated once;
- pruning goes by the earlier of the verifier's clock and the server's (a verifier whose clock
  runs far ahead cannot prune claims whose tokens still verify elsewhere), and skips the rows
  another claim is pruning (``FOR UPDATE SKIP LOCKED``), at most
  100 of the oldest (each claim adds one), found by the expiry index and deleted by their
  row addresses (a ``(namespace, member) IN (...)`` was planned as a scan of the whole table):
  claims never wait on each other's pruning, and never scan the table. The answers table is
  pruned alike, by the same line;
- an exactly-once claim inserts its record with its claim, in the same transaction: a racing
  identical claim waits on the claim's primary key for that commit, then reads the record
  (a statement of its own, so a new snapshot). Keeping an answer is one ``UPDATE`` of the
  record that holds the request and no answer yet: of two racing keeps, the second waits for
  the first's row lock, finds the answer there, and changes nothing.

The marker names the memory by what PostgreSQL knows of its own history: the cluster's
``system_identifier`` (a new ``initdb``, or a restore into another cluster, has another), the
timeline of the WAL being written now (a promoted standby, and a point-in-time recovery,
start a new one at once; ``pg_control_checkpoint()``'s waits for the next checkpoint), and the
database's oid (a dropped and recreated database has another), and the file that holds the
claims table (``pg_relation_filenode``: a dropped and recreated table, or a ``TRUNCATE``, has
another; so has a ``VACUUM FULL``, which loses nothing: a loss that costs only availability).
A dropped markers table loses the marker itself. A server that runs with
``fsync = off`` can lose acknowledged commits to a crash of its host, which none of these
shows: there the marker also names when the server started, so that each start is a loss.
A claim is committed with at least ``synchronous_commit = local`` (a session's ``off`` would
acknowledge claims a crash of PostgreSQL loses on the same timeline).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Final

from psycopg import pq

from requeststate._seam import Claim

__all__ = ["CLAIM", "KEEP", "SCHEMA", "Refused", "Steps", "Wait", "arguments", "claim_steps", "keep_steps"]

SCHEMA: Final = b"""
SELECT pg_advisory_xact_lock(7286159351286405941);
CREATE TABLE IF NOT EXISTS requeststate_markers (
    namespace text PRIMARY KEY,
    memory text NOT NULL,
    since bigint NOT NULL,
    terms text NOT NULL
);
CREATE TABLE IF NOT EXISTS requeststate_claims (
    namespace text NOT NULL,
    member text NOT NULL,
    expires bigint NOT NULL,
    PRIMARY KEY (namespace, member)
);
CREATE INDEX IF NOT EXISTS requeststate_claims_by_expiry ON requeststate_claims (namespace, expires);
CREATE TABLE IF NOT EXISTS requeststate_answers (
    namespace text NOT NULL,
    member text NOT NULL,
    expires bigint NOT NULL,
    request text NOT NULL,
    lease_until bigint NOT NULL,
    kept text NOT NULL,
    PRIMARY KEY (namespace, member)
);
CREATE INDEX IF NOT EXISTS requeststate_answers_by_expiry ON requeststate_answers (namespace, expires);
CREATE OR REPLACE FUNCTION requeststate_claim_v1(
    claim_namespace text, claim_member text, claim_expires bigint, claim_now bigint,
    claim_prune_before bigint, claim_terms text, claim_request text, claim_lease_until bigint,
    OUT status text, OUT since bigint, OUT began boolean, OUT terms text,
    OUT request text, OUT lease_until bigint, OUT kept text
) LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    held_by text := (SELECT system_identifier::text FROM pg_control_system())
        || ':' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)
        || ':' || (SELECT oid::text FROM pg_database WHERE datname = current_database())
        || ':' || pg_relation_filenode('requeststate_claims')::text
        || CASE WHEN current_setting('fsync') = 'off'
            THEN ':' || pg_postmaster_start_time()::text ELSE '' END;
    server_now bigint := floor(extract(epoch FROM clock_timestamp()))::bigint;
    prune_line bigint := claim_prune_before - greatest(0, claim_now - server_now);
    marker record;
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'local', true);
    END IF;
    SELECT m.memory, m.since, m.terms INTO marker FROM requeststate_markers m
    WHERE m.namespace = claim_namespace;
    IF FOUND AND marker.memory = held_by THEN
        since := marker.since;
        terms := marker.terms;
        began := false;
    ELSE
        INSERT INTO requeststate_markers AS m (namespace, memory, since, terms)
        VALUES (claim_namespace, held_by,
                greatest(claim_now, server_now), claim_terms)
        ON CONFLICT (namespace) DO UPDATE
            SET memory = excluded.memory, since = excluded.since, terms = excluded.terms
            WHERE m.memory <> excluded.memory
        RETURNING m.since, m.terms INTO since, terms;
        began := FOUND;
        IF NOT began THEN
            SELECT m.since, m.terms INTO since, terms FROM requeststate_markers m
            WHERE m.namespace = claim_namespace;
        END IF;
    END IF;
    IF terms <> claim_terms THEN
        status := 'terms';
        RETURN;
    END IF;
    DELETE FROM requeststate_claims WHERE ctid = ANY(ARRAY(
        SELECT p.ctid FROM requeststate_claims p
        WHERE p.namespace = claim_namespace
            AND p.expires < prune_line
        ORDER BY p.expires LIMIT 100 FOR UPDATE SKIP LOCKED));
    DELETE FROM requeststate_answers WHERE ctid = ANY(ARRAY(
        SELECT p.ctid FROM requeststate_answers p
        WHERE p.namespace = claim_namespace AND p.expires < prune_line
        ORDER BY p.expires LIMIT 100 FOR UPDATE SKIP LOCKED));
    IF claim_member = '' THEN
        status := 'marked';
        RETURN;
    END IF;
    INSERT INTO requeststate_claims (namespace, member, expires)
    VALUES (claim_namespace, claim_member, claim_expires) ON CONFLICT DO NOTHING;
    status := CASE WHEN FOUND THEN 'claimed' ELSE 'replayed' END;
    IF claim_request = '' THEN
        RETURN;
    END IF;
    IF status = 'claimed' THEN
        -- The claim was just inserted: a record under its digest is not its own.
        INSERT INTO requeststate_answers AS a (namespace, member, expires, request, lease_until, kept)
        VALUES (claim_namespace, claim_member, claim_expires, claim_request, claim_lease_until, '')
        ON CONFLICT (namespace, member) DO UPDATE
            SET expires = excluded.expires, request = excluded.request,
                lease_until = excluded.lease_until, kept = '';
    ELSE
        -- No record (a claim of single use): request, lease_until and kept stay NULL.
        SELECT a.request, a.lease_until, a.kept INTO request, lease_until, kept
        FROM requeststate_answers a
        WHERE a.namespace = claim_namespace AND a.member = claim_member;
    END IF;
END
$$;
"""
"""The tables, their index and the claim function: one simple query, so one transaction, run
under an advisory lock (concurrent ``CREATE ... IF NOT EXISTS`` would otherwise collide)."""

CLAIM: Final = (
    b"SELECT status, since, began, terms, request, lease_until, kept "
    b"FROM requeststate_claim_v1($1, $2, $3, $4, $5, $6, $7, $8)"
)
"""The claim: one round trip. The function's result is the ``Answer``'s fields."""

KEEP: Final = (
    b"UPDATE requeststate_answers SET kept = $4 "
    b"WHERE namespace = $1 AND member = $2 AND request = $3 AND kept = ''"
)
"""Keeping an answer: one statement, in its own transaction."""

_MISSING: Final = frozenset({b"42P01", b"42883"})
"""SQLSTATEs of a missing table (undefined_table) or function (undefined_function): no schema yet."""

Wait = bool
"""What a claim's steps wait on the socket for, between two of them: ``True`` to write, ``False`` to read."""
Steps = Generator[Wait, None, tuple[object, ...]]
"""A claim's (or a keep's) steps: each wait on the socket, then the reply's fields."""
_UNREAD: Final = (None,) * 7
"""A reply no claim gives, as the ``Ledger`` reads it: it refuses it, naming no value."""


class Refused(Exception):
    """PostgreSQL answered the claim with an error: its SQLSTATE (a code, never a value)."""

    def __init__(self, sqlstate: str) -> None:
        super().__init__(sqlstate)
        self.sqlstate: Final = sqlstate


def arguments(namespace: str, claim: Claim, terms: str) -> list[bytes | None]:
    """The function's arguments for ``claim``, as text."""
    values = (
        namespace,
        claim.member,
        claim.expires_at,
        claim.now,
        claim.prune_before,
        terms,
        claim.request,
        claim.lease_until,
    )
    return [str(value).encode() for value in values]


def claim_steps(pgconn: pq.abc.PGconn, args: list[bytes | None]) -> Steps:
    """Run the claim on ``pgconn``; yield each time it waits on the socket; return the reply's seven fields.

    A database with no schema yet (or whose tables were dropped) gets it, and the claim is run
    again: the first call wrote nothing, as it failed.

    Raises:
        Refused: PostgreSQL answered an error.
        psycopg.OperationalError: the connection broke.
    """
    results = yield from _exchange(pgconn, CLAIM, args)
    if _sqlstate(results) in _MISSING:
        _check((yield from _exchange(pgconn, SCHEMA, None)))
        results = yield from _exchange(pgconn, CLAIM, args)
    _check(results)
    reply = results[-1] if results else None
    if reply is None or reply.status != pq.ExecStatus.TUPLES_OK or reply.ntuples != 1 or reply.nfields != 7:
        return _UNREAD
    status, since, began, terms, request, lease_until, kept = (
        reply.get_value(0, column) for column in range(7)
    )
    return (
        _text(status),
        _integer(since),
        began == b"t",
        _text(terms),
        _text(request),
        _integer(lease_until),
        _text(kept),
    )


def keep_steps(pgconn: pq.abc.PGconn, args: list[bytes | None]) -> Steps:
    """Keep an answer on ``pgconn`` (``args``: the namespace, the member, the request, the answer); yield
    each time it waits on the socket; return nothing to read.

    Raises:
        Refused: PostgreSQL answered an error (a missing table among them: the record is gone, and
            the answer may not be kept).
        psycopg.OperationalError: the connection broke.
    """
    _check((yield from _exchange(pgconn, KEEP, args)))
    return ()


def _exchange(
    pgconn: pq.abc.PGconn, query: bytes, args: list[bytes | None] | None
) -> Generator[Wait, None, list[pq.abc.PGresult]]:
    """Send ``query`` (with ``args``, or as a simple query), and read every result, waiting as it must."""
    if args is None:
        pgconn.send_query(query)
    else:
        pgconn.send_query_params(query, args)
    while pgconn.flush():
        yield True
    results: list[pq.abc.PGresult] = []
    while True:
        while pgconn.is_busy():
            yield False
            pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:
            return results
        results.append(result)


def _sqlstate(results: list[pq.abc.PGresult]) -> bytes | None:
    for result in results:
        if result.status == pq.ExecStatus.FATAL_ERROR:
            return result.error_field(pq.DiagnosticField.SQLSTATE) or b"?"
    return None


def _check(results: list[pq.abc.PGresult]) -> None:
    sqlstate = _sqlstate(results)
    if sqlstate is not None:
        raise Refused(sqlstate.decode("ascii", "replace"))


def _text(value: bytes | None) -> object:
    return None if value is None else value.decode("utf-8", "replace")


def _integer(value: bytes | None) -> object:
    try:
        return None if value is None else int(value)
    except ValueError:
        return None
