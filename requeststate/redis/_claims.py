"""What a Redis guard does around each claim, sync or async: the command, its verdict, and Redis's memory.

A claim is one Lua script (``CLAIM_SCRIPT``), atomic on the server: ``SET key 1 NX EX``,
then the marker of the key's store read (and written when it is missing) in the
same step. The marker holds an ``epoch`` (random), ``created`` (the verifier's
clock when the marker was written: the first claim after a loss, or ever) and
``refuse_through`` (the expiry up to which tokens are refused after a loss). A
guard remembers the epoch it saw: a marker gone or replaced means Redis lost the
claims it held (a restart without persistence, ``FLUSHALL``, a failover to an
empty replica) before the marker was written again, so every token that expires
within one ``max_token_lifetime`` of ``created`` may have been redeemed before,
and is refused.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Final, NamedTuple

import redis.exceptions
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException, RedisError, SlotNotCoveredError
from redis.exceptions import TimeoutError as RedisTimeoutError

from requeststate._guard import GuardUnavailable, check_claim_window

from ._keys import marker_key, redis_key, slot_tags
from ._options import Options

__all__ = ["CLAIM_SCRIPT", "ERRORS", "Claim", "Claims", "log"]

log: Final = logging.getLogger("requeststate.redis")

CLAIM_SCRIPT: Final = """
local claimed = redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1])
local marker = redis.call('HMGET', KEYS[2], 'epoch', 'refuse_through', 'created')
local epoch, refuse = marker[1] or ARGV[2], tonumber(marker[2] or '0')
local created = tonumber(marker[3] or ARGV[4])
local through = math.max(refuse, tonumber(ARGV[5]))
if ARGV[3] ~= '' and epoch ~= ARGV[3] then
  through = math.max(through, created + tonumber(ARGV[6]))
end
through = string.format('%d', through)
if not marker[1] or tonumber(through) > refuse then
  created = string.format('%d', created)
  redis.call('HSET', KEYS[2], 'epoch', epoch, 'refuse_through', through, 'created', created)
end
return {claimed and 1 or 0, epoch, through}
"""
"""KEYS: the claim, its marker (in one slot). ARGV: the claim's lifetime in seconds, an epoch
for a new marker, the epoch this guard last saw there ('' if none), the verifier's now, the
guard's own ``refuse_through``, and ``max_token_lifetime``. The window after a loss is counted
from the marker's ``created``, whoever notices it and however late."""

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
    """One claim, ready to send: its keys and the script's arguments."""

    key: str
    marker: str
    expires_at: int
    now: int
    args: tuple[int | str, ...]


class Claims:
    """A guard's claims: the script's arguments, its verdict, the loss window (thread-safe)."""

    __slots__ = ("_epochs", "_lock", "_refuse_through", "_warned_lifetime", "options")

    def __init__(self, options: Options) -> None:
        self.options: Final = options
        self._lock: Final = threading.Lock()
        # The epoch seen at each marker (one, or one per cluster slot); _refuse_through: tokens
        # that expire by then may have been redeemed before a loss.
        self._epochs: Final[dict[str, str]] = {}
        self._refuse_through = 0
        self._warned_lifetime = False
        if options.cluster:
            slot_tags()  # now, rather than at the first claim

    def prepare(self, token_id: str, expires_at: int, now: int) -> Claim:
        """The claim of ``token_id``; ``GuardUnavailable`` if it outlives ``max_token_lifetime``."""
        check_claim_window(expires_at, now)
        options = self.options
        if expires_at - now > options.max_token_lifetime:
            self._warn_lifetime(expires_at - now)
            raise GuardUnavailable(
                f"the token lives {expires_at - now} s more, past max_token_lifetime "
                f"({options.max_token_lifetime} s): set it to the codec's ttl + leeway"
            )
        key = redis_key(options.namespace, token_id)
        marker = marker_key(options.namespace, key, cluster=options.cluster)
        with self._lock:
            seen, floor = self._epochs.get(marker, ""), self._refuse_through
        # The id stays claimed through all of second expires_at, and now has partly gone by.
        lifetime = expires_at - now + 1
        args = (lifetime, os.urandom(8).hex(), seen, now, floor, options.max_token_lifetime)
        return Claim(key, marker, expires_at, now, args)

    def settle(self, claim: Claim, reply: object, acknowledged: object = None) -> bool:
        """The claim's outcome from the script's ``reply`` and ``WAIT``'s answer (or the error in its place).

        The verdict comes first: an id already claimed is a replay whatever else happened.
        """
        claimed, epoch, refuse_through = _verdict(reply)
        through = self._observe(claim, epoch, refuse_through)
        if not claimed:
            return False
        if claim.expires_at <= through:
            raise GuardUnavailable(
                f"Redis lost the guard's claims: a token that expires by {through} may have been "
                "redeemed before the loss, and is refused"
            )
        replicas = self.options.replicas
        if not replicas:
            return True
        if isinstance(acknowledged, Exception):
            # The key stays written (see RedisGuard): deleting it is a write a failover can reorder.
            raise GuardUnavailable(
                f"the replicas' acknowledgement of the claim was not read ({type(acknowledged).__name__})"
            )
        if not isinstance(acknowledged, int) or acknowledged < replicas:
            raise GuardUnavailable(
                f"{acknowledged} of {replicas} replicas acknowledged the claim "
                f"within {self.options.wait_ms} ms"
            )
        return True

    def failed(self, claim: Claim, error: Exception) -> bool:
        """No verdict: ``True`` if ``fail_open`` rides ``error`` out, else raise ``GuardUnavailable``."""
        cause = type(error).__name__
        if self.options.fail_open and _unanswered(error):
            with self._lock:
                lost = claim.expires_at <= self._refuse_through
            if not lost:
                # The log names the failure, never the token id or its key.
                log.warning(
                    "Redis replay guard unavailable (%s); fail_open=True: token accepted without a "
                    "replay check",
                    cause,
                )
                return True
        raise GuardUnavailable(f"Redis could not record the claim ({cause})") from error

    def _observe(self, claim: Claim, epoch: str, refuse_through: int) -> int:
        """Remember the marker's epoch; the expiry up to which tokens are refused now."""
        # The script compared the marker with the epoch this guard saw, and recorded a loss in it.
        with self._lock:
            seen = self._epochs.get(claim.marker)
            self._epochs[claim.marker] = epoch
            before = self._refuse_through
            through = self._refuse_through = max(before, refuse_through)
        if before < claim.now <= through:
            # One line per loss, when the window opens: every claim in it is refused, and says why.
            log.warning(
                "Redis lost the replay guard's claims (namespace %r; %s): every token that expires "
                "by %d (unix time) is refused, as it may have been redeemed before the loss",
                self.options.namespace,
                "another guard saw its marker change" if seen in (None, epoch) else "its marker changed",
                through,
            )
        return through

    def _warn_lifetime(self, lifetime: int) -> None:
        with self._lock:
            warned, self._warned_lifetime = self._warned_lifetime, True
        if not warned:
            log.warning(
                "Redis replay guard: a token lives %d s more, past max_token_lifetime (%d s); such "
                "tokens are refused: set max_token_lifetime to the codec's ttl + leeway",
                lifetime,
                self.options.max_token_lifetime,
            )


def _verdict(reply: object) -> tuple[bool, str, int]:
    """The script's reply as (claimed, the marker's epoch, its refuse_through), or ``GuardUnavailable``."""
    if isinstance(reply, list) and len(reply) == 3:
        claimed, epoch, refuse = (_text(part) for part in reply)
        # refuse_through is a verifier's unix time: negative only for a clock set before 1970.
        number = isinstance(refuse, str) and refuse.removeprefix("-").isdecimal()
        if claimed in (0, 1) and isinstance(epoch, str) and isinstance(refuse, str) and number:
            return claimed == 1, epoch, int(refuse)
    raise GuardUnavailable(f"Redis answered the claim with an unexpected {type(reply).__name__}")


def _text(part: object) -> object:
    # A client built with decode_responses=True reads bulk strings as str, others as bytes.
    return part.decode("ascii", "replace") if isinstance(part, bytes) else part
