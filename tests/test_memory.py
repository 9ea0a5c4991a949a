"""MemoryGuard: single use in one process, through its clocks, its capacity and a restart."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Any

import pytest

import requeststate as rs
from requeststate import GuardUnavailable

NOW = 2_000_000_000


def id_of(number: int, minted: int = NOW) -> rs.ClaimId:
    """A claim id as a codec makes it: 32 hex, minted at ``minted``."""
    return rs.ClaimId(f"{number:032x}", minted)


ID = id_of(1)
OTHER_ID = id_of(2)


def MemoryGuard(capacity: int = 100_000, **options: Any) -> rs.MemoryGuard:  # noqa: N802  # the class, built earlier
    """A guard built 100 s before NOW: the tokens of these tests postdate it."""
    options.setdefault("clock_skew", 0)  # purged by now: the purge tests' clocks are the verifier's
    return rs.MemoryGuard(capacity, clock=lambda: NOW - 100, **options)


# The whole refusal of a guard of capacity 1: it names neither the id claimed nor those it holds.
FULL_ONE = r"^MemoryGuard is full: 1 ids have not expired yet \(raise its capacity\)$"
FULL_WARNING = (
    "requeststate",
    logging.WARNING,
    "MemoryGuard is full (1 live ids): every redemption is refused until ids expire; "
    "raise its capacity or rate-limit minting per user",
)


class _SteadyClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self) -> float:
        return self.seconds


def test_first_claim_wins() -> None:
    assert MemoryGuard().claim(ID, NOW + 300, NOW) is True


def test_second_claim_is_a_replay() -> None:
    guard = MemoryGuard()
    guard.claim(ID, NOW + 300, NOW)
    assert guard.claim(ID, NOW + 300, NOW + 1) is False


def test_ids_are_claimed_independently() -> None:
    guard = MemoryGuard()
    guard.claim(ID, NOW + 300, NOW)
    assert guard.claim(OTHER_ID, NOW + 300, NOW) is True


def test_id_stays_claimed_through_expires_at() -> None:
    guard = MemoryGuard()
    guard.claim(ID, NOW + 300, NOW)
    assert guard.claim(ID, NOW + 300, NOW + 300) is False


def test_id_is_free_after_expires_at() -> None:
    monotonic = _SteadyClock()
    guard = MemoryGuard(monotonic=monotonic)
    guard.claim(ID, NOW + 300, NOW)
    monotonic.seconds = 301.0
    assert guard.claim(ID, NOW + 601, NOW + 301) is True


def test_claim_after_expires_at_is_refused_as_a_caller_mistake() -> None:
    with pytest.raises(
        ValueError, match=r"^expires_at is before now: an expired token has nothing to claim$"
    ):
        MemoryGuard().claim(ID, NOW - 1, NOW)


def test_full_guard_fails_closed() -> None:
    guard = MemoryGuard(capacity=2)
    guard.claim(id_of(10), NOW + 300, NOW)
    guard.claim(id_of(11), NOW + 300, NOW)
    with pytest.raises(
        GuardUnavailable, match=r"^MemoryGuard is full: 2 ids have not expired yet \(raise its capacity\)$"
    ):
        guard.claim(id_of(12), NOW + 300, NOW)


def test_full_guard_keeps_its_live_ids() -> None:
    guard = MemoryGuard(capacity=1)
    guard.claim(ID, NOW + 300, NOW)
    with pytest.raises(GuardUnavailable, match=FULL_ONE):
        guard.claim(OTHER_ID, NOW + 300, NOW)
    assert guard.claim(ID, NOW + 300, NOW + 300) is False


def test_purging_expired_ids_frees_capacity() -> None:
    monotonic = _SteadyClock()
    guard = MemoryGuard(capacity=2, monotonic=monotonic)
    guard.claim(id_of(10), NOW + 10, NOW)
    guard.claim(id_of(11), NOW + 300, NOW)
    monotonic.seconds = 11.0
    assert guard.claim(id_of(12), NOW + 300, NOW + 11) is True
    assert len(guard) == 2


def test_purge_removes_only_expired_ids() -> None:
    monotonic = _SteadyClock()
    guard = MemoryGuard(monotonic=monotonic)
    for offset in range(10):
        guard.claim(id_of(100 + offset), NOW + offset, NOW)
    monotonic.seconds = 5.0
    guard.claim(id_of(99), NOW + 300, NOW + 5)
    assert len(guard) == 6  # id-5 .. id-9 and late
    assert guard.claim(id_of(105), NOW + 300, NOW + 5) is False


def test_capacity_defaults_to_one_hundred_thousand() -> None:
    assert MemoryGuard().capacity == 100_000


def test_repr_shows_capacity_and_size_only() -> None:
    guard = MemoryGuard(capacity=5)
    guard.claim(ID, NOW + 300, NOW)
    assert repr(guard) == "MemoryGuard(capacity=5, size=1)"


def test_full_error_does_not_name_the_id() -> None:
    guard = MemoryGuard(capacity=1)
    guard.claim(OTHER_ID, NOW + 300, NOW)
    with pytest.raises(GuardUnavailable, match=FULL_ONE):
        guard.claim(ID, NOW + 300, NOW)


# --- the clocks; a full guard ------------------------------------------------------------------


def test_a_clock_stepping_forward_then_back_cannot_replay_a_live_id() -> None:
    # The wall clock jumps an hour ahead for one claim, then is set back: the
    # jump must not purge ids whose tokens are still valid by the real time.
    monotonic = _SteadyClock()
    guard = MemoryGuard(monotonic=monotonic)
    guard.claim(ID, NOW + 300, NOW)
    monotonic.seconds = 1.0
    guard.claim(OTHER_ID, NOW + 3900, NOW + 3600)
    monotonic.seconds = 2.0
    assert guard.claim(ID, NOW + 300, NOW + 2) is False


def test_ids_expire_as_both_clocks_advance() -> None:
    monotonic = _SteadyClock()
    guard = MemoryGuard(monotonic=monotonic)
    guard.claim(ID, NOW + 300, NOW)
    monotonic.seconds = 400.0
    guard.claim(OTHER_ID, NOW + 700, NOW + 400)
    assert len(guard) == 1


def test_after_a_forward_step_the_purge_clock_catches_up_at_a_bounded_rate() -> None:
    monotonic = _SteadyClock()
    guard = MemoryGuard(monotonic=monotonic)
    guard.claim(ID, NOW + 100, NOW)
    # The wall clock has stepped 1000 s ahead: the purge clock follows real
    # time plus 1 s per 64 s, not the step.
    monotonic.seconds = 50.0
    guard.claim(OTHER_ID, NOW + 2000, NOW + 1050)
    assert len(guard) == 2  # purge clock at NOW + 50.78: ID (NOW + 100) is live
    monotonic.seconds = 100.0
    guard.claim(id_of(13), NOW + 2000, NOW + 1100)
    assert len(guard) == 2  # purge clock at NOW + 101.56: ID is gone


def test_a_full_guard_warns_once_until_it_has_room_again(caplog: pytest.LogCaptureFixture) -> None:
    monotonic = _SteadyClock()
    guard = MemoryGuard(capacity=1, monotonic=monotonic)
    guard.claim(ID, NOW + 10, NOW)
    for attempt in range(3):
        with pytest.raises(GuardUnavailable, match=FULL_ONE):
            guard.claim(id_of(200 + attempt), NOW + 10, NOW)
    assert caplog.record_tuples == [FULL_WARNING]
    monotonic.seconds = 20.0
    guard.claim(OTHER_ID, NOW + 40, NOW + 20)  # ID expired: room again
    with pytest.raises(GuardUnavailable, match=FULL_ONE):
        guard.claim(id_of(14), NOW + 40, NOW + 20)
    assert caplog.record_tuples == [FULL_WARNING, FULL_WARNING]


def test_a_purge_clock_gains_nothing_while_the_monotonic_clock_stands_still() -> None:
    monotonic = _SteadyClock()
    monotonic.seconds = 1000.0  # a monotonic clock need not start at zero
    guard = MemoryGuard(monotonic=monotonic)
    guard.claim(ID, NOW + 1, NOW)
    guard.claim(OTHER_ID, NOW + 3600, NOW + 3600)  # the wall clock jumps; no real time passed
    assert len(guard) == 2
    monotonic.seconds = 1002.0
    guard.claim(id_of(15), NOW + 3600, NOW + 3600)  # two real seconds: ID (NOW + 1) has expired
    assert len(guard) == 2


@pytest.mark.parametrize("monotonic", [None, 1.0])
def test_a_monotonic_clock_that_is_not_callable_is_refused_stating_the_requirement(monotonic: object) -> None:
    with pytest.raises(TypeError, match=r"^monotonic must be a callable returning seconds$"):
        rs.MemoryGuard(monotonic=monotonic)  # type: ignore[arg-type]


# --- its memory began when it was built ---------------------------------------------------------


def outside_memory(claim: Callable[[], object]) -> None:
    """Assert that ``claim`` is refused as ``outside_memory`` (a refusal, not an outage)."""
    with pytest.raises(rs.InvalidToken) as refused:
        claim()
    assert refused.value.reason is rs.Reason.OUTSIDE_MEMORY


def test_a_token_minted_elsewhere_by_the_second_the_guard_was_built_is_refused() -> None:
    guard = rs.MemoryGuard(clock_skew=0, clock=lambda: NOW + 0.9)
    outside_memory(lambda: guard.claim(id_of(1, NOW), NOW + 300, NOW + 1))
    assert guard.claim(id_of(2, NOW + 1), NOW + 300, NOW + 1) is True


def test_a_new_guard_accepts_what_its_own_codec_mints_in_its_first_second() -> None:
    # Issue 40: twenty fresh guards, each minting and redeeming at once (0 of 20 before).
    accepted = []
    for _ in range(20):
        codec = rs.Codec(secrets.token_bytes(32), guard=rs.MemoryGuard())
        accepted.append(codec.decode(codec.encode("state")))
    assert accepted == ["state"] * 20


def test_a_token_its_codec_minted_is_accepted_once_whatever_its_date() -> None:
    codec = rs.Codec(secrets.token_bytes(32), guard=rs.MemoryGuard(clock=lambda: NOW))
    token = codec.encode("state", now=NOW - 100)  # minted after the guard was built, dated before
    assert [codec.decode(token, now=NOW - 100), codec.decode(token, now=NOW - 100)] == ["state", None]


def test_a_token_minted_before_the_guard_existed_is_refused_though_this_process_minted_it() -> None:
    keys = secrets.token_bytes(32)
    token = rs.Codec(keys).encode("state", now=NOW)  # a codec of this process, but no guard yet
    codec = rs.Codec(keys, guard=rs.MemoryGuard(clock=lambda: NOW))
    outside_memory(lambda: codec.verify(token, now=NOW))


def test_a_token_of_another_codec_with_the_same_keys_is_refused_in_the_guards_first_seconds() -> None:
    keys = secrets.token_bytes(32)
    guard = rs.MemoryGuard(clock=lambda: NOW)
    token = rs.Codec(keys).encode("state", now=NOW + 1)  # no guard heard of it
    outside_memory(lambda: rs.Codec(keys, guard=guard).verify(token, now=NOW + 1))


def test_clock_skew_widens_what_the_guard_refuses() -> None:
    guard = rs.MemoryGuard(clock_skew=3, clock=lambda: NOW)
    outside_memory(lambda: guard.claim(id_of(1, NOW + 3), NOW + 300, NOW + 3))
    assert guard.claim(id_of(2, NOW + 4), NOW + 300, NOW + 4) is True


def test_an_id_is_held_clock_skew_past_its_expiry() -> None:
    # Another verifier's clock may run clock_skew behind: it still accepts the token until then.
    elapsed = [0.0]
    guard = rs.MemoryGuard(clock_skew=3, clock=lambda: NOW - 100, monotonic=lambda: elapsed[0])
    assert guard.claim(ID, NOW + 10, NOW) is True
    answers = []
    for second in (13, 14):
        elapsed[0] = second
        answers.append(guard.claim(ID, NOW + second, NOW + second))
    assert answers == [False, True]


def test_clock_skew_defaults_to_the_packages() -> None:
    assert rs.MemoryGuard().clock_skew == rs.DEFAULT_CLOCK_SKEW == 5


def test_begin_says_its_own_tokens_are_accepted_at_once() -> None:
    assert [
        rs.MemoryGuard(clock=lambda: NOW + 0.5).begin(),
        rs.MemoryGuard(clock_skew=5, clock=lambda: NOW).begin(),
    ] == [NOW, NOW]


def test_a_restarted_process_refuses_every_replay_of_what_its_predecessor_redeemed() -> None:
    # Row M of issue 34: the same keys, a new process (a new guard) built after the old one died.
    keys = secrets.token_bytes(32)
    before = rs.Codec(keys, guard=rs.MemoryGuard(clock=lambda: NOW - 100))
    tokens = [before.encode("state", now=NOW + second % 5) for second in range(50)]
    assert [before.decode(token, now=NOW + 5) for token in tokens] == ["state"] * 50
    after = rs.Codec(keys, guard=rs.MemoryGuard(clock=lambda: NOW + 5))
    refusals = set()
    for token in tokens:
        with pytest.raises(rs.InvalidToken) as refused:
            after.verify(token, now=NOW + 6)
        refusals.add(refused.value.reason)
    assert refusals == {rs.Reason.OUTSIDE_MEMORY}


def test_a_restart_after_the_clock_stepped_back_within_clock_skew_accepts_no_replay() -> None:
    # Issue 41's limit: the wall clock stepped back 4 s across a restart; the default skew covers it.
    keys = secrets.token_bytes(32)
    before = rs.Codec(keys, guard=rs.MemoryGuard(clock=lambda: NOW - 100))
    tokens = [before.encode("state", now=NOW) for _ in range(20)]
    assert [before.decode(token, now=NOW) for token in tokens] == ["state"] * 20
    after = rs.Codec(keys, guard=rs.MemoryGuard(clock=lambda: NOW - 4))
    assert [after.decode(token, now=NOW - 4 + 1) for token in tokens] == [None] * 20


def test_a_token_minted_past_clock_skew_in_the_future_is_refused() -> None:
    outside_memory(lambda: MemoryGuard(clock_skew=0).claim(id_of(1, NOW + 1), NOW + 300, NOW))


def test_a_codec_with_another_leeway_is_refused_at_construction() -> None:
    guard = MemoryGuard()
    rs.Codec(secrets.token_bytes(32), guard=guard, leeway=0)
    with pytest.raises(ValueError, match=r"^this guard serves codecs with leeway=0, not 30: a claim is held"):
        rs.Codec(secrets.token_bytes(32), guard=guard, leeway=30)


def test_tokens_minted_elsewhere_after_clock_skew_are_accepted() -> None:
    guard = rs.MemoryGuard(clock=lambda: NOW)
    outside_memory(lambda: guard.claim(id_of(1, NOW + 5), NOW + 300, NOW + 5))
    assert guard.claim(id_of(2, NOW + 6), NOW + 300, NOW + 6) is True
