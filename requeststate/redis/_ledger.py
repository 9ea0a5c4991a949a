"""What a Redis guard does around each claim, sync or async: the command, its verdict, and Redis's memory.

A claim is one Lua script (``CLAIM_SCRIPT``), atomic on the server. The claims live
in a sorted set (one on a single Redis, ``CLUSTER_BUCKETS`` in a cluster): each
claimed id's SHA-256, scored by the token's expiry, and one **marker**, scored
``+inf``, that records when the set's memory began and which server holds it.
Nothing carries a Redis expiry: a claim is removed by a later claim once its
token expired, plus ``clock_skew``, on the verifier's clock, so Redis's own
clock plays no part, and an eviction policy that evicts only keys with an
expiry (``volatile-*``) never touches a claim.

Redis forgets in three ways, and each leaves a marker that is missing or not
this server's: the set is gone (a restart without persistence, ``FLUSHALL``,
an eviction, a failover to an empty replica), or it was read back by another
server process (a restart from a snapshot, a failover, a restore), whose
``run_id`` differs from the one the marker names. The script then writes a new
marker, whose time (the verifier's ``now``) is when the memory began, and
refuses every token minted before that time plus ``clock_skew``: such a token
may have been redeemed into the memory that was lost. No process has to
remember anything: a process started after the loss, or a fleet restarted
with its Redis, reads the same marker.
"""

from __future__ import annotations

import logging
import threading
from typing import Final, NamedTuple

import redis.exceptions
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException, RedisError, SlotNotCoveredError
from redis.exceptions import TimeoutError as RedisTimeoutError

from requeststate import GuardUnavailable, minted_at
from requeststate._seam import check_claim_window

from ._buckets import bucket_key, claim_location
from ._settings import DEFAULT_MAX_TOKEN_LIFETIME, GuardSettings

__all__ = ["CLAIM_SCRIPT", "ERRORS", "Claim", "Ledger", "Outcome", "log", "not_begun"]

log: Final = logging.getLogger("requeststate.redis")

# Scores are doubles in Redis: the times a guard writes stay below 2**53, where every second
# is exact (285 million years).
_MAX_SECONDS: Final = 2**53 - 1

CLAIM_SCRIPT: Final = """
local run_id = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
local now, skew = tonumber(ARGV[3]), tonumber(ARGV[4])
local since, created = nil, 0
local marker = redis.call('ZRANGEBYSCORE', KEYS[1], '+inf', '+inf', 'LIMIT', 0, 1)[1]
if marker then
  local held_by, began = string.match(marker, '^marker:(%x+):(%-?%d+)$')
  if held_by == run_id then
    since = tonumber(began)
  else
    redis.call('ZREM', KEYS[1], marker)
  end
end
if not since then
  if ARGV[6] ~= '1' then
    local policy = string.match(redis.call('INFO', 'memory'), 'maxmemory_policy:([%w-]+)') or ''
    if string.sub(policy, 1, 8) == 'allkeys-' then
      return {'evicts', policy, 0}
    end
  end
  since, created = now, 1
  redis.call('ZADD', KEYS[1], '+inf', 'marker:' .. run_id .. ':' .. string.format('%d', now))
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%d', now - skew))
if ARGV[1] == '' then
  return {'marked', since, created}
end
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return {'replayed', since, created}
end
if tonumber(ARGV[5]) <= since + skew then
  return {'lost', since, created}
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return {'claimed', since, created}
"""
"""KEYS: the sorted set of claims. ARGV: the id's member ('' to write only the marker), the
token's expiry (its ``exp`` plus the verifier's leeway), the verifier's now, ``clock_skew``,
when the token was minted, and '1' if eviction is allowed. The policy is read when a marker is to
be written: a policy that evicts claims evicts the marker with them (they are one key), so the
next claim reads it; a Redis that does not show its policy is not refused, as an eviction is seen
all the same. The answer: the outcome, when the set's memory began (or the eviction
policy), and 1 if this call began it."""

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
# The errors fail_open rides out: no Redis answered the claim. Exact classes, never their
# subclasses: BusyLoadingError (-LOADING) and AuthenticationError (-WRONGPASS, -NOAUTH) are
# ConnectionErrors that a server answered; MaxConnectionsError is this process's own pool,
# full; a class that redis-py adds later fails closed until it is decided here.
_NO_ANSWER: Final = frozenset({RedisConnectionError, RedisTimeoutError, SlotNotCoveredError})
# What a BlockingConnectionPool raises (sync and asyncio, redis-py 6 to 8) when every connection
# stayed busy past its timeout: this process's own pool, full, not a Redis that did not answer.
_POOL_EXHAUSTED: Final = "No connection available."


def _unanswered(error: Exception) -> bool:
    """Whether ``error`` means that no Redis answered: the only failure ``fail_open`` rides out."""
    kind = type(error)
    if kind is RedisClusterException:
        # "Redis Cluster cannot be connected": no node answered, or the one that did is no
        # cluster's ("Cluster mode is not enabled"); the last node's error is its cause.
        return type(error.__cause__) in {RedisConnectionError, RedisTimeoutError}
    return kind in _NO_ANSWER and str(error) != _POOL_EXHAUSTED


class Claim(NamedTuple):
    """One claim, ready to send: its key and the script's arguments."""

    key: str
    minted: int
    args: tuple[int | str, ...]


class Outcome(NamedTuple):
    """The script's answer: what became of the claim, and when the set's memory began."""

    status: str
    """``claimed``, ``replayed``, ``lost`` (minted before the memory began), ``evicts`` or ``marked``."""
    since: int
    began_here: bool
    """Whether this call wrote the marker: the set was new, or had forgotten."""
    policy: str = ""


class Ledger:
    """A guard's bookkeeping, sync or async: the script's arguments and its verdict (thread-safe)."""

    __slots__ = ("_learned", "_lock", "_since", "_warned", "bucket_keys", "settings")

    def __init__(self, settings: GuardSettings) -> None:
        self.settings: Final = settings
        self.bucket_keys: Final = tuple(
            bucket_key(settings.namespace, bucket, settings.buckets) for bucket in range(settings.buckets)
        )
        self._lock: Final = threading.Lock()
        self._learned = 0  # the longest ttl + leeway a Codec told this guard
        # The latest start of Redis's memory this process read: fail_open rides out no outage for
        # a token minted before it. Only a cache: every verdict is Redis's.
        self._since: int | None = None
        self._warned: Final[set[str]] = set()

    @property
    def max_token_lifetime(self) -> int:
        """The longest a token lives: as given, else the longest ``ttl + leeway`` a codec told."""
        given = self.settings.max_token_lifetime
        if given is not None:
            return given
        return self._learned or DEFAULT_MAX_TOKEN_LIFETIME

    def learn_lifetime(self, lifetime: int) -> None:
        """A ``Codec``'s ``ttl + leeway``: refused if it outlives a given ``max_token_lifetime``."""
        given = self.settings.max_token_lifetime
        if given is not None and lifetime > given:
            raise ValueError(
                f"the guard's max_token_lifetime ({given} s) is shorter than the codec's ttl + leeway "
                f"({lifetime} s), so it would refuse every token: build the guard with "
                f"max_token_lifetime={lifetime} or more, or leave it out and let each codec tell the guard"
            )
        with self._lock:
            self._learned = max(self._learned, lifetime)

    def prepare(self, token_id: str, expires_at: int, now: int) -> Claim:
        """The claim of ``token_id``; ``GuardUnavailable`` if the token cannot be dated or placed."""
        check_claim_window(expires_at, now)
        if not -_MAX_SECONDS <= now <= expires_at <= _MAX_SECONDS:
            raise GuardUnavailable("a time past 2**53 s, which Redis cannot score exactly")
        settings = self.settings
        minted = minted_at(token_id)
        if minted is None:
            # An id that does not tell when it was minted: the earliest it can have been.
            lifetime = self.max_token_lifetime
            if expires_at - now > lifetime:
                self._warn_once(
                    "lifetime",
                    f"a token lives {expires_at - now} s more, past max_token_lifetime ({lifetime} s); "
                    "such tokens are refused: set max_token_lifetime to the codec's ttl + leeway",
                )
                raise GuardUnavailable(
                    f"the token lives {expires_at - now} s more, past max_token_lifetime "
                    f"({lifetime} s): set it to the codec's ttl + leeway"
                )
            minted = expires_at - lifetime
        elif minted > now + settings.clock_skew:
            self._warn_once(
                "future",
                f"a token was minted {minted - now} s in this verifier's future, past clock_skew "
                f"({settings.clock_skew} s): such tokens are refused; synchronise the hosts' clocks",
            )
            raise GuardUnavailable(
                f"the token was minted {minted - now} s after this verifier's now, past clock_skew "
                f"({settings.clock_skew} s): the hosts' clocks differ by more than the guard allows"
            )
        key, member = claim_location(settings.namespace, token_id, settings.buckets)
        return Claim(key, minted, self._args(member, expires_at, now, minted))

    def commands_with_wait(self, claim: Claim) -> list[tuple[int | str, ...]]:
        """``claim``'s script, then ``WAIT`` for the replicas: to send together, on one connection."""
        return [
            # EVAL, not EVALSHA: a batch sent at once has no turn to load a script Redis lacks.
            ("EVAL", CLAIM_SCRIPT, 1, claim.key, *claim.args),
            ("WAIT", self.settings.replicas, self.settings.wait_ms),
        ]

    def marker(self, key: str, now: int) -> Claim:
        """The script's call that only writes ``key``'s marker, if it is missing or not this server's."""
        return Claim(key, now, self._args("", now, now, now))

    def _args(self, member: str, expires_at: int, now: int, minted: int) -> tuple[int | str, ...]:
        settings = self.settings
        return (member, expires_at, now, settings.clock_skew, minted, int(settings.allow_eviction))

    def read(self, reply: object) -> Outcome:
        """The script's reply, or ``GuardUnavailable`` for one it never gives."""
        if isinstance(reply, list) and len(reply) == 3:
            status, since, began = (_text(part) for part in reply)
            if status == "evicts" and isinstance(since, str):
                return Outcome(status, 0, False, since)
            if status in _STATUSES and isinstance(since, int) and began in (0, 1):
                with self._lock:
                    self._since = since if self._since is None else max(self._since, since)
                return Outcome(status, since, began == 1)
        raise GuardUnavailable(f"Redis answered the claim with an unexpected {type(reply).__name__}")

    def marks_every_bucket(self, outcome: Outcome) -> bool:
        """Whether the guard marks every bucket now, after a claim's ``outcome``.

        One bucket's memory began here, so the others' may have too (a master that
        restarted, a new cluster): marked now, each accepts the tokens minted from now
        on. A bucket left unmarked is marked by its next claim all the same.
        """
        return outcome.began_here and self.settings.buckets > 1

    def began(self, replies: list[object]) -> int:
        """The first second whose tokens every bucket accepts, from ``begin``'s replies.

        ``GuardUnavailable`` for a reply that is not a marker's.
        """
        latest = None
        for reply in replies:
            if isinstance(reply, Exception):
                raise not_begun(reply)
            outcome = self.read(reply)
            if outcome.status == "evicts":
                raise GuardUnavailable(self._evicts(outcome.policy))
            latest = outcome.since if latest is None else max(latest, outcome.since)
        assert latest is not None  # one reply per bucket, and a guard has one bucket at least
        return latest + self.settings.clock_skew + 1

    def settle(self, claim: Claim, outcome: Outcome, acknowledged: object = None) -> bool:
        """The verdict from the script's ``outcome`` and ``WAIT``'s answer (or the error in its place).

        The verdict comes first: an id already claimed is a replay whatever else happened.
        """
        if outcome.status == "replayed":
            return False
        if outcome.status == "evicts":
            raise GuardUnavailable(self._evicts(outcome.policy))
        if outcome.status == "lost":
            skew = self.settings.clock_skew
            self._warn_once(
                f"lost {outcome.since}",
                f"Redis's memory of the claims (namespace {self.settings.namespace!r}) began at "
                f"{outcome.since} (unix time): it is new, or it forgot them (a restart, a flush, a failover, "
                f"an eviction); every token minted by {outcome.since + skew} is refused, as it may have "
                "been redeemed before",
            )
            raise GuardUnavailable(
                f"the token was minted at {claim.minted}, before Redis's memory of the claims began "
                f"({outcome.since}, plus clock_skew {skew} s): it may have been redeemed before"
            )
        replicas = self.settings.replicas
        if not replicas:
            return True
        if isinstance(acknowledged, Exception):
            # The claim stays written (see RedisGuard): removing it is a write a failover can reorder.
            raise GuardUnavailable(
                f"the replicas' acknowledgement of the claim was not read ({type(acknowledged).__name__})"
            )
        if not isinstance(acknowledged, int) or acknowledged < replicas:
            raise GuardUnavailable(
                f"{acknowledged} of {replicas} replicas acknowledged the claim "
                f"within {self.settings.wait_ms} ms"
            )
        return True

    def failed(self, claim: Claim, error: Exception) -> bool:
        """No verdict: ``True`` if ``fail_open`` rides ``error`` out, else raise ``GuardUnavailable``."""
        cause = type(error).__name__
        if self.settings.fail_open and _unanswered(error):
            with self._lock:
                since = self._since
            if since is None or claim.minted > since + self.settings.clock_skew:
                # The log names the failure, never the token id or its key.
                log.warning(
                    "Redis replay guard unavailable (%s); fail_open=True: token accepted without a "
                    "replay check",
                    cause,
                )
                return True
        raise GuardUnavailable(f"Redis could not record the claim ({cause})") from error

    def _evicts(self, policy: str) -> str:
        """Why a Redis that may evict claims is refused, logged once."""
        message = (
            f"Redis's maxmemory-policy is {policy}, which can evict the guard's claims: set "
            "maxmemory-policy to noeviction (or a volatile-* policy, which never evicts them), or build "
            "the guard with allow_eviction=True to claim anyway"
        )
        self._warn_once("evicts", message)
        return message

    def _warn_once(self, topic: str, message: str) -> None:
        """Log ``message`` the first time this guard meets ``topic``: one line, not one per claim."""
        with self._lock:
            if topic in self._warned:
                return
            self._warned.add(topic)
        log.warning("Redis replay guard: %s", message)


def not_begun(error: Exception) -> GuardUnavailable:
    """What ``begin`` raises when Redis answered ``error``, to the whole batch or to one bucket."""
    return GuardUnavailable(f"Redis did not record when its memory began ({type(error).__name__})")


_STATUSES: Final = frozenset({"claimed", "replayed", "lost", "marked"})


def _text(part: object) -> object:
    # A client built with decode_responses=True reads bulk strings as str, others as bytes.
    return part.decode("ascii", "replace") if isinstance(part, bytes) else part
