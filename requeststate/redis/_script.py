"""A Redis guard's claim, sync or async: the Lua script that runs the shared rules atomically, and its reply.

The rules are ``requeststate``'s (``Ledger``): this module only says how Redis runs
them. A claim is one script (``CLAIM_SCRIPT``), atomic on the server, on a sorted set
of claims (one on a single Redis, ``CLUSTER_BUCKETS`` in a cluster): each claimed id's
SHA-256, scored by its token's expiry plus the leeway, and one **marker**, scored
``+inf``. No claim carries a Redis expiry: a claim is removed by a later one once its
token expired ``clock_skew`` ago on the verifier's clock, and an eviction policy that
evicts only keys with an expiry (``volatile-*``) never touches a claim; one that evicts
any key (``allkeys-*``) evicts a set with its marker, which the next claim sees as a loss.

The marker names the memory that holds the set: the server process (``run_id``), its
replication history (``master_replid``, which a failover, a failback or a full resync
changes) and the database (which ``SWAPDB`` changes). Whatever forgets or replaces the
set (a restart, with or without a snapshot; ``FLUSHALL``; a failover or failback; an
eviction; a swap of databases) leaves a marker that is missing or names another memory:
the script writes a new one, dated the later of the verifier's ``now`` and Redis's
``TIME``, with this verifier's terms.

An exactly-once claim (``redeem``) runs the same script with a second key, the claim's
**record** (``record_key``: in its set's slot), which it writes on the first claim, in the same
script, and reads back on a retry: the request's digest, the lease and, once ``keep``
(``KEEP_SCRIPT``) wrote it, the answer. A claim of single use passes no second key, and runs
just what it ran in 0.4 (the same commands, the same ACL). The record is the one key that
carries a Redis expiry: Redis's clock deletes it the second a verifier on that clock would prune
its claim. A record gone sooner (a clock that steps forward, an eviction: ``volatile-*``
policies evict it first) leaves a retry with no record to read, which is refused as a replay:
the action never runs again, the retry just gets no answer; one that outlives its claim serves
no one, since its token no longer verifies anywhere.
"""

from __future__ import annotations

import logging
from typing import Final

import redis.exceptions
from redis.exceptions import RedisClusterException, RedisError

from requeststate import GuardUnavailable
from requeststate._seam import Answer, Claim, Ledger

__all__ = ["CLAIM_SCRIPT", "ERRORS", "KEEP_SCRIPT", "arguments", "log", "read", "unanswered"]

log: Final = logging.getLogger("requeststate.redis")

CLAIM_SCRIPT: Final = """
local run_id = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
local replid = string.match(redis.call('INFO', 'replication'), 'master_replid:(%x+)') or ''
local memory = run_id .. ':' .. replid .. ':' .. ARGV[5]
local terms = ARGV[6]
local since, created = nil, 0
local marker = redis.call('ZRANGEBYSCORE', KEYS[1], '+inf', '+inf', 'LIMIT', 0, 1)[1]
if marker then
  local held_by, began, kept = string.match(marker, '^marker|([^|]*)|(%-?%d+)|(.*)$')
  if held_by == memory then
    if kept ~= terms then
      return {'terms', tonumber(began), 0, kept}
    end
    since = tonumber(began)
  else
    redis.call('ZREM', KEYS[1], marker)
  end
end
local now = tonumber(ARGV[3])
local time = tonumber(redis.call('TIME')[1])
if not since then
  since = math.max(now, time)
  created = 1
  local dated = string.format('%d', since)
  redis.call('ZADD', KEYS[1], '+inf', 'marker|' .. memory .. '|' .. dated .. '|' .. terms)
end
local prune_before = tonumber(ARGV[4]) - math.max(0, now - time)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%d', prune_before))
if ARGV[1] == '' then
  return {'marked', since, created, terms}
end
if redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1]) == 0 then
  if not KEYS[2] then
    return {'replayed', since, created, terms}
  end
  local record = redis.call('GET', KEYS[2])
  if not record then
    return {'replayed', since, created, terms, '', 0, ''}
  end
  local request, lease, kept = string.match(record, '^(%x*)|(%-?%d+)|(.*)$')
  return {'replayed', since, created, terms, request, tonumber(lease), kept}
end
if KEYS[2] then
  redis.call('SET', KEYS[2], ARGV[7] .. '|' .. ARGV[8] .. '|', 'PXAT', ARGV[9])
end
return {'claimed', since, created, terms}
"""
"""KEYS: the sorted set of claims; and, for an exactly-once claim, its record's key. ARGV: the
claim's member ('' to write only the marker), its score (the token's expiry plus the leeway), the
verifier's now, the score below which claims are pruned (by the earlier of the verifier's now and
Redis's TIME: one verifier whose clock runs far ahead cannot prune claims whose tokens still
verify elsewhere), the database the client selected, the verifier's terms; then the request's
digest, the lease, and when the record expires (unix ms: the second its claim is pruned). The
answer: the status, when the set's memory began, 1 if this call began it, and the namespace's
terms (the rules of each are ``Ledger``'s); an exactly-once replay adds what the first claim's
record holds (its request, its lease, the answer kept: '', 0, '' where there is none, as for a
claim of single use). A record is ``<request>|<lease_until>|<answer>``: the request's SHA-256 in
hex, the lease in unix seconds, and the answer (a sealed token, ASCII: the rest), '' until kept."""

KEEP_SCRIPT: Final = """
local record = redis.call('GET', KEYS[1])
if record then
  local request, lease, kept = string.match(record, '^(%x*)|(%-?%d+)|(.*)$')
  if request == ARGV[1] and kept == '' then
    redis.call('SET', KEYS[1], record .. ARGV[2], 'KEEPTTL')
  end
end
"""
"""KEYS: the claim's record. ARGV: the request's digest, the answer. Writes the answer into the
record iff it is there (its claim was not pruned, Redis did not lose it), holds that request, and
holds no answer yet: the first answer kept stays, and expires when the record would have."""

# Every error redis-py raises: its cluster client's own, and two more that are no RedisError
# (a pool after a fork deadlocked; a cluster policy misconfigured), which fail closed too.
ERRORS: Final = (
    RedisError,
    RedisClusterException,
    *(
        getattr(redis.exceptions, name)
        for name in ("ChildDeadlockedError", "IncorrectPolicyType")
        if hasattr(redis.exceptions, name)  # IncorrectPolicyType is newer than redis-py 6.0
    ),
)


def arguments(claim: Claim, db: int, clock_skew: int) -> tuple[int | str, ...]:
    """The script's ``ARGV`` for ``claim``, on database ``db``, in a namespace of ``clock_skew``."""
    # A claim scored s is pruned once a clock reads s + clock_skew + 1: its record expires then.
    record_expires_ms = (claim.expires_at + clock_skew + 1) * 1000
    return (
        claim.member,
        claim.expires_at,
        claim.now,
        claim.prune_before,
        db,
        claim.terms,
        claim.request,
        claim.lease_until,
        record_expires_ms,
    )


def read(ledger: Ledger, reply: object) -> Answer:
    """The script's reply as an ``Answer``; ``GuardUnavailable`` for one it never gives."""
    if isinstance(reply, list) and len(reply) in (4, 7):
        return ledger.read(*(_text(part) for part in reply))
    raise GuardUnavailable(f"Redis answered the claim with an unexpected {type(reply).__name__}")


def unanswered(error: Exception, what: str) -> GuardUnavailable:
    """What a claim or ``begin`` raises when Redis did not record ``what``: ``error``'s class, never an id."""
    return GuardUnavailable(f"Redis did not record {what} ({type(error).__name__})")


def _text(part: object) -> object:
    # A client built with decode_responses=True reads bulk strings as str, others as bytes.
    return part.decode("ascii", "replace") if isinstance(part, bytes) else part
