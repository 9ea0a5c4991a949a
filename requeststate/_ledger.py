"""The rules that make single use hold on a store that can forget: one place, for every store.

A shared store (Redis, a Redis Cluster's buckets, an SQLite file, PostgreSQL) keeps, per
namespace, the **claims** (each claimed id's SHA-256, held until its token can no longer
verify anywhere) and one **marker**: which memory the store holds (the store says how it
names one: Redis by its process, replication history and database), when that memory
began, and the **terms** that every verifier of the namespace shares. A store runs one
claim atomically, in this order (its ``Answer``), and each store's contract test
(tests/test_guard_contract.py) checks each step:

1. The marker is missing or names another memory (a restart, a flush, a failover, a new
   file): the store writes a new one, dated the later of the verifier's ``now`` and the
   store's own clock read inside the claim, so that a stale ``now`` (a paused verifier)
   never dates a memory earlier than it began. Its terms are the claim's.
2. The marker is the store's, but its terms are not the claim's: nothing else is done
   (``TERMS``): a verifier that scored or pruned otherwise could reopen a token.
3. Claims whose token expired ``clock_skew`` ago are pruned (``Claim.prune_before``), by the
   earlier of the verifier's clock and the store's where the store has one of its own (Redis's
   ``TIME``): a verifier whose clock runs far ahead cannot prune claims still live elsewhere.
4. The claim's digest is added unless it is there (``CLAIMED``, ``REPLAYED``). An
   exactly-once claim (``prepare_redeem``) adds, with it, the digest of its request and its
   lease, and a ``REPLAYED`` answer carries back what the first claim left: its request, its
   lease and the answer kept for it (``keep``), if any; a claim of single use left none.

Keeping an answer (``prepare_keep``) is a step of its own, after the action ran: the store
writes it into the claim's record if that record is still there, holds the first call's
request, and has no answer yet. A record that is gone (a loss) keeps nothing: its token is
refused anyway.

``Ledger`` prepares the claim (its digest, when its token was minted, what to prune, the
terms) and decides what the answer means. A token is refused unless it was minted more
than ``clock_skew`` after the memory began: before, it may have been redeemed into the
memory that was lost. That refusal is ``InvalidToken(Reason.OUTSIDE_MEMORY)``, not an
outage: no retry of the token can succeed. Only a store that did not answer, or a
namespace whose terms are not this verifier's, is ``GuardUnavailable``.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Final, NamedTuple

from ._bounds import check_int
from ._errors import InvalidToken, Reason
from ._guard import GuardUnavailable, check_claim_window
from ._options import DEFAULT_LEEWAY, MAX_TTL
from ._token_id import ClaimId

__all__ = [
    "DEFAULT_CLOCK_SKEW",
    "REMEMBERED_CLAIMS",
    "Answer",
    "Claim",
    "Keep",
    "Ledger",
    "Status",
    "checked_answer",
    "claimed_member",
    "member_of",
    "request_of",
    "retried",
]

DEFAULT_CLOCK_SKEW: Final = 5
"""Seconds that any two hosts' clocks (those that mint and those that verify, and a
store's) may differ by, unless ``clock_skew=`` says otherwise. The SQLite file, a store of
one host whose verifiers and minters read one clock, defaults to 0 instead."""
REMEMBERED_CLAIMS: Final = 4096
"""How many of its own store's answers a guard remembers, to refuse a replay of them without
asking the store again (a flood of one redeemed token costs no round trip)."""
# Scores are doubles in Redis and integers in SQLite: the times a guard writes stay below
# 2**53, where every second is exact in both (285 million years).
_MAX_SECONDS: Final = 2**53 - 1


class Status:
    """What a store's atomic claim did, as its ``Answer`` names it."""

    CLAIMED: Final = "claimed"
    REPLAYED: Final = "replayed"
    TERMS: Final = "terms"
    """The namespace's terms are not this verifier's: nothing was done."""
    MARKED: Final = "marked"
    """Only the marker was asked for (``Ledger.mark``)."""


_STATUSES: Final = frozenset({Status.CLAIMED, Status.REPLAYED, Status.TERMS, Status.MARKED})


class Claim(NamedTuple):
    """One claim, ready for a store: what it adds and prunes, when its token was minted, the terms."""

    member: str
    """The SHA-256 of the claimed id, in hex (the id itself never reaches a store); ``""``
    to write only the marker."""
    expires_at: int
    """Its score: the token's ``exp`` plus the leeway, the last second it verifies."""
    now: int
    prune_before: int
    """Claims scored before this second are removed: their tokens expired ``clock_skew`` ago."""
    minted: int
    terms: str
    """What every verifier of the namespace must share (``Ledger.terms``): a new marker records
    them, and a marker that records others answers ``TERMS``."""
    request: str = ""
    """An exactly-once claim's request, as the SHA-256 in hex of what makes a retry identical
    (``Ledger.prepare_redeem``); ``""`` for a claim of single use."""
    lease_until: int = 0
    """An exactly-once claim's lease: until this second, a retry is told the first call runs."""


class Answer(NamedTuple):
    """A store's answer to one claim."""

    status: str
    since: int
    """When the store's memory of the claims began (unix seconds)."""
    began_here: bool
    """Whether this claim wrote the marker: the memory was new, or had been lost."""
    terms: str
    """The namespace's terms, as its marker holds them."""
    request: str = ""
    """On ``REPLAYED``: the request the id was first claimed with; ``""`` if that claim was one of
    single use (or the store holds no record of it)."""
    lease_until: int = 0
    """On ``REPLAYED``: the first claim's lease."""
    kept: str = ""
    """On ``REPLAYED``: the answer kept for the first claim; ``""`` while none is."""


class Keep(NamedTuple):
    """An answer to keep, for a store: into ``member``'s record, if it holds ``request`` and no answer."""

    member: str
    request: str
    answer: str
    """The sealed answer (an ASCII token, which every store holds as text)."""


def member_of(text: str) -> str:
    """What a store holds for ``text`` (a claimed id's layout, a request): its SHA-256 in hex, so that
    the text itself never reaches the store."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def claimed_member(claimed: ClaimId) -> str:
    """What a store holds for ``claimed``: the digest of ``<minted>-<token_id>``, the layout requeststate
    0.4 claimed, so that in a rolling upgrade the old workers and the new hold one member per token."""
    return member_of(f"{claimed.minted}-{claimed.token_id}")


def request_of(request: str, lease_until: int, now: int) -> str:
    """What a store holds of an exactly-once claim's ``request``: its SHA-256 in hex, once the request
    and the lease are checked (``TypeError``, ``ValueError``: a lease that ends before ``now``)."""
    if not isinstance(request, str):
        raise TypeError(f"request must be a str, not {type(request).__name__}")
    check_int("lease_until", lease_until, now, _MAX_SECONDS)
    return member_of(request)


def checked_answer(answer: str) -> str:
    """``answer``, if it is what a store keeps: a sealed token, non-empty ASCII text (else ``ValueError``)."""
    if not (isinstance(answer, str) and answer.isascii() and answer):
        raise ValueError("a kept answer is a sealed token: non-empty ASCII text")
    return answer


def retried(request: str, now: int, first: str, lease_until: int, kept: str) -> str:
    """What an exactly-once retry gets, at ``now``, of a claim first made for ``first`` with ``lease_until``
    and ``kept`` since: the kept answer; else why it is refused.

    Raises:
        InvalidToken: ``replayed``: another request (or the first claim was one of single use);
            ``in_progress``: no answer yet, within the lease; ``outcome_unknown``: none, past it.
    """
    if not hmac.compare_digest(first, request):  # "" (a claim of single use) matches no digest
        raise InvalidToken(Reason.REPLAYED)
    if kept:
        return kept
    raise InvalidToken(Reason.IN_PROGRESS if now <= lease_until else Reason.OUTCOME_UNKNOWN)


class Ledger:
    """A guard's rules around its store: thread-safe, and shared by every guard.

    ``namespace`` (the verifiers that share claims: one per application sharing a
    store) and ``clock_skew`` are checked here; ``log`` names the logger of the store's
    integration, which says once what it meets (a loss, terms that differ, clocks apart).
    It remembers the last ``REMEMBERED_CLAIMS`` claims its store answered, so that a
    replay of one is refused without a round trip: only ever a refusal (the store stays the
    authority for every first claim), and right for as long as the token verifies, since a
    loss of the store's memory refuses the token anyway.
    """

    __slots__ = (
        "_answered",
        "_leeway",
        "_lock",
        "_log",
        "_seen",
        "_told",
        "_warned",
        "clock_skew",
        "describe",
        "namespace",
    )

    def __init__(self, namespace: str, clock_skew: int, *, log: str, describe: str) -> None:
        """``describe`` names the store in what is logged and raised ("Redis", "the SQLite file")."""
        if not isinstance(namespace, str):
            raise TypeError(f"namespace must be a str, not {type(namespace).__name__}")
        if not namespace:
            raise ValueError("namespace must not be empty")
        self.namespace: Final = namespace
        self.clock_skew: Final = check_int("clock_skew", clock_skew, 0, MAX_TTL)
        self.describe: Final = describe
        self._log: Final = log
        self._lock: Final = threading.Lock()
        self._leeway: int | None = None
        # Whether a claim carried the terms to the store (which then holds this leeway).
        self._told = False
        self._warned: Final[set[str]] = set()
        # Whether this guard has seen its store's memory (a marker it wrote or found).
        self._seen = False
        # member -> expires_at of the claims the store answered, oldest first.
        self._answered: Final[OrderedDict[str, int]] = OrderedDict()

    @property
    def leeway(self) -> int:
        """The leeway its claims are held for: the codecs', once one told it; else ``DEFAULT_LEEWAY``."""
        return DEFAULT_LEEWAY if self._leeway is None else self._leeway

    @property
    def terms(self) -> str:
        """What every verifier of a namespace must share, as the marker records it."""
        return f"clock_skew={self.clock_skew};leeway={self.leeway}"

    def learn_leeway(self, leeway: int) -> None:
        """A ``Codec``'s leeway; ``ValueError`` if another codec told this guard another one, or its
        store already holds another (the guard began, or claimed, before the codec was built)."""
        with self._lock:
            if self._leeway is not None and self._leeway != leeway:
                raise ValueError(
                    f"this guard serves codecs with leeway={self._leeway}, not {leeway}: a claim is held "
                    "for its token's exp plus the leeway, so every codec of a guard (and every verifier "
                    "of a namespace) must use one leeway"
                )
            if self._told and self.leeway != leeway:
                raise ValueError(
                    f"this guard already gave {self.describe} its terms with leeway={self.leeway}, not "
                    f"{leeway}: build every Codec with the guard before its begin() or first claim"
                )
            self._leeway = leeway

    def prepare(self, claimed: ClaimId, expires_at: int, now: int) -> Claim:
        """The claim of ``claimed``, for a store; raises as ``dated`` does."""
        return self._claim(claimed_member(claimed), expires_at, now, self.dated(claimed, expires_at, now))

    def dated(self, claimed: ClaimId, expires_at: int, now: int) -> int:
        """When ``claimed``'s token was minted, once its claim's window is checked.

        Raises:
            InvalidToken: ``outside_memory``: it was minted after ``now`` plus ``clock_skew``.
            GuardUnavailable: a time past 2**53 s, which a store cannot hold exactly.
            ValueError: ``expires_at`` is before ``now``.
        """
        # The codec has checked this of every token it passes on (its expiry); a guard is public, and a
        # caller of its own has not: one comparison keeps that caller from claiming an expired window.
        check_claim_window(expires_at, now)
        if not -_MAX_SECONDS <= now <= expires_at <= _MAX_SECONDS:
            raise GuardUnavailable("a time past 2**53 s, which a store cannot hold exactly")
        minted = claimed.minted
        skew = self.clock_skew
        if minted > now + skew:
            self._warn_once(
                "future",
                f"a token was minted {minted - now} s in this verifier's future, past clock_skew ({skew} s): "
                "such tokens are refused (outside_memory); synchronise the hosts' clocks",
            )
            raise InvalidToken(Reason.OUTSIDE_MEMORY)
        return minted

    def prepare_redeem(
        self, claimed: ClaimId, expires_at: int, now: int, request: str, lease_until: int
    ) -> Claim:
        """The exactly-once claim of ``claimed`` for ``request`` (what makes a retry identical), its first
        call holding the action until ``lease_until``; raises as ``dated`` does, and ``ValueError`` for a
        ``request`` that is not a ``str`` or a lease that ends before ``now``."""
        digest = request_of(request, lease_until, now)
        return self.prepare(claimed, expires_at, now)._replace(request=digest, lease_until=lease_until)

    @staticmethod
    def prepare_keep(claimed: ClaimId, request: str, answer: str) -> Keep:
        """The answer to keep for the exactly-once claim of ``claimed`` for ``request``."""
        return Keep(claimed_member(claimed), member_of(request), checked_answer(answer))

    def mark(self, now: int) -> Claim:
        """The claim that only writes the marker, where it is missing or names another memory."""
        return self._claim("", now, now, now)

    def _claim(self, member: str, expires_at: int, now: int, minted: int) -> Claim:
        self._told = True  # the store may now hold these terms: learn_leeway refuses others
        return Claim(member, expires_at, now, now - self.clock_skew, minted, self.terms)

    def answered_before(self, claim: Claim) -> bool:
        """Whether the store already answered a claim of ``claim``'s id to this guard (a replay, refused
        without asking it again); a remembered claim whose token expired is forgotten. Never for an
        exactly-once claim, whose retry asks the store for the first call's answer."""
        if claim.request:
            return False
        with self._lock:
            expires = self._answered.get(claim.member)
            if expires is None:
                return False
            if expires < claim.now:
                del self._answered[claim.member]
                return False
            return True

    def read(
        self,
        status: object,
        since: object,
        began: object,
        terms: object,
        request: object = "",
        lease_until: object = 0,
        kept: object = "",
    ) -> Answer:
        """A store's reply, checked; ``GuardUnavailable`` for one that no store gives.

        ``request``, ``lease_until`` and ``kept``: what a ``REPLAYED`` answer read of the first claim's
        record (``None`` where the store holds none: a claim of single use).
        """
        request = "" if request is None else request
        lease_until = 0 if lease_until is None else lease_until
        kept = "" if kept is None else kept
        if (
            status in _STATUSES
            and _is_int(since)
            and began in (0, 1, False, True)
            and isinstance(terms, str)
            and isinstance(request, str)
            and _is_int(lease_until)
            and isinstance(kept, str)
        ):
            return Answer(str(status), since, bool(began), terms, request, lease_until, kept)  # type: ignore[arg-type]
        raise GuardUnavailable(f"{self.describe} answered the claim with a reply no claim gives")

    def settle(self, claim: Claim, answer: Answer) -> bool:
        """The verdict: ``True`` on a first claim, ``False`` on a replay.

        Raises:
            GuardUnavailable: the namespace's terms are not this verifier's.
            InvalidToken: ``outside_memory``: the token was minted by the time the store's memory
                began (plus ``clock_skew``).
        """
        if answer.status == Status.TERMS:
            raise GuardUnavailable(self._differ(answer.terms))
        self._observe(answer.since if answer.began_here else None)
        self._remember(claim)
        if answer.status == Status.REPLAYED:
            return False
        if not self.postdates(claim.minted, answer.since):
            raise InvalidToken(Reason.OUTSIDE_MEMORY)
        return True

    def settle_redeem(self, claim: Claim, answer: Answer) -> str | None:
        """The verdict on an exactly-once claim: ``None`` on its first claim (the caller runs the action),
        or the answer kept for an identical retry; raises as ``settle`` does, and as ``retried``."""
        if self.settle(claim, answer):
            return None
        return retried(claim.request, claim.now, answer.request, answer.lease_until, answer.kept)

    def postdates(self, minted: int, since: int) -> bool:
        """Whether a token minted at ``minted`` is minted after ``since`` plus ``clock_skew``.

        ``since``: when the store's memory of the claims began. A token minted by then
        may have been redeemed into a memory that was lost.
        """
        return minted > since + self.clock_skew

    def first_accepted(self, answers: Iterable[Answer]) -> int:
        """The first second whose tokens every marker accepts, from ``mark``'s answers.

        ``GuardUnavailable`` if a namespace's terms are not this verifier's.
        """
        latest = began = None
        for answer in answers:
            if answer.status == Status.TERMS:
                raise GuardUnavailable(self._differ(answer.terms))
            latest = answer.since if latest is None else max(latest, answer.since)
            if answer.began_here:  # one of a cluster's many markers, say: one loss, logged once
                began = answer.since if began is None else max(began, answer.since)
        if latest is None:
            raise GuardUnavailable(f"{self.describe} answered no marker")
        self._observe(began)
        return latest + self.clock_skew + 1

    def _observe(self, began: int | None) -> None:
        """Log once when a claim of this guard began the store's memory again (at ``began``) after
        it had seen one.

        A memory this guard meets first is merely new (a first deploy, or a loss before this
        process started: nothing to do); one that this guard's claim must begin again is a
        loss, which an operator wants to know of, once (the guard that wrote the marker says it).
        """
        if began is not None and self._seen:
            self._warn_once(
                f"lost {began}",
                f"{self.describe} lost its memory of the claims (a restart, a flush, a failover, a replaced "
                f"file): it began again at {began} (unix time), and every token minted by "
                f"{began + self.clock_skew} is refused (outside_memory), as it may have been redeemed before",
            )
        self._seen = True

    def _remember(self, claim: Claim) -> None:
        with self._lock:
            answered = self._answered
            answered[claim.member] = claim.expires_at
            if len(answered) > REMEMBERED_CLAIMS:
                answered.popitem(last=False)

    def _differ(self, theirs: str) -> str:
        message = (
            f"the namespace's verifiers use {theirs}, this one {self.terms}: every verifier of a namespace "
            "must use the same clock_skew and leeway (or another namespace), or a claim one prunes "
            "another would accept again"
        )
        self._warn_once(f"terms {theirs}", message)
        return message

    def _warn_once(self, topic: str, message: str) -> None:
        """Log ``message`` the first time this guard meets ``topic``: one line, not one per claim."""
        with self._lock:
            if topic in self._warned:
                return
            self._warned.add(topic)
        import logging  # here: a rare warning is not worth 8 ms of `import requeststate`

        logging.getLogger(self._log).warning("replay guard: %s", message)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
