"""How PostgreSQL runs the shared rules: one function call per claim, and the tables it writes.

The rules are ``requeststate``'s (``Ledger``): this module only says how PostgreSQL runs
them atomically. Two tables, shared by every namespace, in the first schema of the
connection's ``search_path``:

- ``requeststate_markers``: a namespace's marker (the memory it names, when that began,
  its terms);
- ``requeststate_claims``: each claim's digest and its score (the token's expiry plus the
  leeway), indexed by ``(namespace, expires)`` for pruning.

A claim is one call of ``requeststate_claim_v1``, a PL/pgSQL function (``SCHEMA`` creates
the three, where the first claim finds them missing), in the call's own transaction, under
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
  claims never wait on each other's pruning, and never scan the table.

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

__all__ = ["CLAIM", "SCHEMA", "Refused", "Wait", "arguments", "claim_steps"]

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
CREATE OR REPLACE FUNCTION requeststate_claim_v1(
    claim_namespace text, claim_member text, claim_expires bigint, claim_now bigint,
    claim_prune_before bigint, claim_terms text,
    OUT status text, OUT since bigint, OUT began boolean, OUT terms text
) LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    held_by text := (SELECT system_identifier::text FROM pg_control_system())
        || ':' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)
        || ':' || (SELECT oid::text FROM pg_database WHERE datname = current_database())
        || ':' || pg_relation_filenode('requeststate_claims')::text
        || CASE WHEN current_setting('fsync') = 'off'
            THEN ':' || pg_postmaster_start_time()::text ELSE '' END;
    server_now bigint := floor(extract(epoch FROM clock_timestamp()))::bigint;
    kept record;
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'local', true);
    END IF;
    SELECT m.memory, m.since, m.terms INTO kept FROM requeststate_markers m
    WHERE m.namespace = claim_namespace;
    IF FOUND AND kept.memory = held_by THEN
        since := kept.since;
        terms := kept.terms;
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
            AND p.expires < claim_prune_before - greatest(0, claim_now - server_now)
        ORDER BY p.expires LIMIT 100 FOR UPDATE SKIP LOCKED));
    IF claim_member = '' THEN
        status := 'marked';
        RETURN;
    END IF;
    INSERT INTO requeststate_claims (namespace, member, expires)
    VALUES (claim_namespace, claim_member, claim_expires) ON CONFLICT DO NOTHING;
    status := CASE WHEN FOUND THEN 'claimed' ELSE 'replayed' END;
END
$$;
"""
"""The tables, their index and the claim function: one simple query, so one transaction, run
under an advisory lock (concurrent ``CREATE ... IF NOT EXISTS`` would otherwise collide)."""

CLAIM: Final = b"SELECT status, since, began, terms FROM requeststate_claim_v1($1, $2, $3, $4, $5, $6)"
"""The claim: one round trip. The function's result is the ``Answer``'s fields."""

_MISSING: Final = frozenset({b"42P01", b"42883"})
"""SQLSTATEs of a missing table (undefined_table) or function (undefined_function): no schema yet."""

Wait = bool
"""What a claim's steps wait on the socket for, between two of them: ``True`` to write, ``False`` to read."""
_UNREAD: Final = (None, None, None, None)
"""A reply no claim gives, as the ``Ledger`` reads it: it refuses it, naming no value."""


class Refused(Exception):
    """PostgreSQL answered the claim with an error: its SQLSTATE (a code, never a value)."""

    def __init__(self, sqlstate: str) -> None:
        super().__init__(sqlstate)
        self.sqlstate: Final = sqlstate


def arguments(namespace: str, claim: Claim, terms: str) -> list[bytes | None]:
    """The function's arguments for ``claim``, as text."""
    values = (namespace, claim.member, claim.expires_at, claim.now, claim.prune_before, terms)
    return [str(value).encode() for value in values]


def claim_steps(pgconn: pq.abc.PGconn, args: list[bytes | None]) -> Generator[Wait, None, tuple[object, ...]]:
    """Run the claim on ``pgconn``; yield each time it waits on the socket; return the reply's four fields.

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
    if reply is None or reply.status != pq.ExecStatus.TUPLES_OK or reply.ntuples != 1 or reply.nfields != 4:
        return _UNREAD
    status, since, began, terms = (reply.get_value(0, column) for column in range(4))
    return (_text(status), _integer(since), began == b"t", _text(terms))


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
