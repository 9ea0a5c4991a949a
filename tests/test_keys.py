"""``KeyRing``: rotation, what it shows and refuses, the bound keys it hands the modes, the AES-GCM budget."""

from __future__ import annotations

import copy
import gc
import hashlib
import logging
import pickle
import sys
import threading
import tracemalloc
from collections.abc import Callable

import pytest

import requeststate as rs
from tests.conftest import NOW, OTHER_SECRET, SECRET
from tests.support import reference as ref


def secrets(count: int) -> list[bytes]:
    return [hashlib.sha256(bytes([index])).digest() for index in range(count)]


# --- construction ---------------------------------------------------------------------------------


def test_an_empty_ring_is_refused_stating_the_requirement() -> None:
    with pytest.raises(ValueError, match=r"^KeyRing needs at least one secret$"):
        rs.KeyRing()


def test_eight_secrets_are_accepted() -> None:
    assert len(rs.KeyRing(*secrets(8))) == 8


def test_more_than_eight_secrets_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^KeyRing holds at most 8 secrets, got 9$"):
        rs.KeyRing(*secrets(9))


def test_a_repeated_secret_is_refused_naming_its_position() -> None:
    with pytest.raises(ValueError, match=r"^secret 2 repeats an earlier secret$"):
        rs.KeyRing(SECRET, OTHER_SECRET, bytearray(SECRET))


@pytest.mark.parametrize("share", [0, -0.1, 1.01])
def test_a_warn_share_outside_zero_to_one_is_refused(share: float) -> None:
    with pytest.raises(ValueError, match=rf"^aesgcm_warn_share must be a number in \(0, 1\], got {share}$"):
        rs.KeyRing(SECRET, aesgcm_warn_share=share)


@pytest.mark.parametrize(("share", "type_name"), [("half", "str"), (True, "bool"), (None, "NoneType")])
def test_a_warn_share_that_is_no_number_is_a_type_error(share: object, type_name: str) -> None:
    with pytest.raises(TypeError, match=rf"^aesgcm_warn_share must be a number, not {type_name}$"):
        rs.KeyRing(SECRET, aesgcm_warn_share=share)  # type: ignore[arg-type]


# --- what a ring shows ----------------------------------------------------------------------------


def test_repr_shows_the_count_and_the_minting_fingerprint_only() -> None:
    ring = rs.KeyRing(SECRET, OTHER_SECRET)
    assert repr(ring) == f"KeyRing(keys=2, minting={rs.KeyRing(SECRET).fingerprint!r})"
    assert str(ring) == repr(ring)


def test_the_fingerprint_names_the_minting_key_in_eight_hex_digits() -> None:
    # A labelled digest of the minting key's MAC subkey, the same in every process and release.
    fingerprint = hashlib.sha256(b"requeststate fingerprint" + ref.mac_key(SECRET)).hexdigest()[:8]
    assert rs.KeyRing(SECRET, OTHER_SECRET).fingerprint == fingerprint


def test_the_fingerprint_is_no_part_of_a_subkey() -> None:
    # A labelled digest: nothing that verifies or mints a token.
    fingerprint = rs.KeyRing(SECRET).fingerprint
    assert fingerprint not in ref.mac_key(SECRET).hex() + ref.enc_key(SECRET).hex() + SECRET.hex()


def test_ephemeral_rings_are_fresh_and_say_so() -> None:
    first, second = rs.KeyRing.ephemeral(), rs.KeyRing.ephemeral()
    assert (first.is_ephemeral, second.is_ephemeral) == (True, True)
    assert first.fingerprint != second.fingerprint
    assert repr(first) == f"KeyRing(keys=1, minting={first.fingerprint!r}, ephemeral)"


def test_a_ring_from_secrets_is_not_ephemeral() -> None:
    assert rs.KeyRing(SECRET).is_ephemeral is False


def test_a_ring_is_immutable(ring: rs.KeyRing) -> None:
    with pytest.raises(AttributeError, match=r"^KeyRing is immutable$"):
        ring.minting = rs.KeyRing(OTHER_SECRET)
    with pytest.raises(AttributeError, match=r"^KeyRing is immutable$"):
        del ring.fingerprint


def test_a_ring_cannot_be_pickled_or_copied(ring: rs.KeyRing) -> None:
    message = r"^KeyRing cannot be pickled: share the secret through a secret store$"
    with pytest.raises(TypeError, match=message):
        pickle.dumps(ring)
    with pytest.raises(TypeError, match=message):
        copy.copy(ring)


# --- bound keys: each key of the ring with an identity's bind tag ---------------------------------


def test_bound_keys_pair_each_key_with_its_spec_bind_tag_minting_key_first() -> None:
    new, old = ref.bind_tag(SECRET, "alice", "tool"), ref.bind_tag(OTHER_SECRET, "alice", "tool")
    bound = rs.KeyRing(SECRET, OTHER_SECRET).bound("alice", "tool")
    assert [(key.bind_tag, key.aad) for key in bound] == [(new, new.encode()), (old, old.encode())]


def test_bound_keys_of_one_identity_are_the_same_each_time(ring: rs.KeyRing) -> None:
    first = [key.bind_tag for key in ring.bound("alice", "book")]
    ring.bound("bob", "book")
    assert [key.bind_tag for key in ring.bound("alice", "book")] == first


@pytest.mark.parametrize(
    ("subject", "tool", "error", "message"),
    [
        (["alice"], None, TypeError, r"^subject must be a str and tool a str or None$"),
        ("alice", {"book": 1}, TypeError, r"^subject must be a str and tool a str or None$"),
        ("ali\0ce", None, ValueError, r"^subject and tool must not contain U\+0000$"),
        ("{", None, ValueError, r"^a subject bound without a tool must not start with"),
    ],
    ids=["unhashable subject", "unhashable tool", "separator", "payload-shaped subject"],
)
def test_an_identity_that_cannot_be_bound_is_refused_saying_why(
    ring: rs.KeyRing, subject: object, tool: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ring.bound(subject, tool)


def test_a_str_subclass_identity_is_bound_by_its_content(ring: rs.KeyRing) -> None:
    class Tool(str):
        __slots__ = ()

        def __format__(self, spec: str) -> str:
            return "label:" + str.__str__(self)

    ring.bound("alice", "book")  # cached under ("alice", "book"), equal to the subclass's key
    expected = ref.bind_tag(SECRET, "alice", "book")
    assert ring.bound("alice", Tool("book"))[0].bind_tag == expected
    assert rs.KeyRing(SECRET).bound("alice", Tool("book"))[0].bind_tag == expected


def test_a_bound_key_shows_no_key_bytes(ring: rs.KeyRing) -> None:
    [bound] = ring.bound("alice", None)
    tag = ref.bind_tag(SECRET, "alice", None)
    assert repr(bound) == (
        f"BoundKey(key=SubKeys(fingerprint={ring.fingerprint!r}), bind_tag={tag!r}, aad={tag.encode()!r})"
    )


def test_a_bound_key_cannot_be_pickled(ring: rs.KeyRing) -> None:
    with pytest.raises(TypeError, match=r"^SubKeys cannot be pickled: it holds derived key material$"):
        pickle.dumps(ring.bound("alice", None))


def _memory_grown_by(work: Callable[[], None]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        work()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_many_distinct_identities_keep_a_ring_bounded_in_memory() -> None:
    # Clients choose identities: 10,000 of 500 bytes pin 9 MiB if every one is
    # kept; the ring keeps at most 4,096 of them (4 MiB).
    ring = rs.KeyRing(SECRET)

    def bind_many() -> None:
        for index in range(10_000):
            ring.bound(f"{index:08}".ljust(500, "u"), "book")

    assert _memory_grown_by(bind_many) < 6 << 20


def test_huge_identities_are_not_kept() -> None:
    # 50 requests naming a distinct 1 MiB tool, each refused at once, used to
    # keep every name alive in the bind-tag cache (50 MiB).
    ring = rs.KeyRing(SECRET)

    def refuse_huge() -> None:
        for index in range(50):
            tool = f"{index}:" + "n" * (1 << 20)
            assert rs.decode("v1e.AAAA", ring, mode="encrypted", subject="u", tool=tool) is None

    assert _memory_grown_by(refuse_huge) < 1 << 20


# --- the AES-GCM budget of random 96-bit nonces ---------------------------------------------------


def seal(ring: rs.KeyRing, mode: rs.ModeSpec = "encrypted") -> str:
    return rs.encode("x", ring, mode=mode, now=NOW)


def test_the_budget_warns_once_at_its_share_naming_the_key_the_count_the_limit_and_the_way_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=10, aesgcm_warn_share=0.5)
    with caplog.at_level("WARNING", logger="requeststate"):
        for count in range(1, 9):
            seal(ring)
            assert len(caplog.records) == (0 if count < 5 else 1), count
    assert [(record.name, record.getMessage()) for record in caplog.records] == [
        (
            "requeststate",
            f"requestState key {ring.fingerprint} has sealed 5 AES-GCM tokens in this process, "
            "of a limit of 10: rotate to a new secret, or move to mode='xchacha'",
        )
    ]


def test_a_warn_share_of_one_warns_at_the_limit(caplog: pytest.LogCaptureFixture) -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=2, aesgcm_warn_share=1)
    with caplog.at_level("WARNING", logger="requeststate"):
        seal(ring)
        assert caplog.record_tuples == []
        seal(ring)
    assert caplog.record_tuples == [
        (
            "requeststate",
            logging.WARNING,
            f"requestState key {ring.fingerprint} has sealed 2 AES-GCM tokens in this process, "
            "of a limit of 2: rotate to a new secret, or move to mode='xchacha'",
        )
    ]


def test_a_limit_of_one_warns_at_the_first_seal(caplog: pytest.LogCaptureFixture) -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=1, aesgcm_warn_share=0.1)
    with caplog.at_level("WARNING", logger="requeststate"):
        seal(ring)
    assert caplog.record_tuples == [
        (
            "requeststate",
            logging.WARNING,
            f"requestState key {ring.fingerprint} has sealed 1 AES-GCM tokens in this process, "
            "of a limit of 1: rotate to a new secret, or move to mode='xchacha'",
        )
    ]


def test_the_budget_refuses_past_the_limit_naming_the_key_and_the_way_out() -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=3)
    for _ in range(3):
        seal(ring)
    with pytest.raises(rs.KeyBudgetExhausted) as caught:
        seal(ring)
    assert str(caught.value) == (
        f"requestState key {ring.fingerprint} has sealed its limit of 3 "
        "AES-GCM tokens in this process (random 96-bit nonces, NIST SP 800-38D); "
        "rotate to a new secret with KeyRing(new, old), or use mode='xchacha'"
    )


@pytest.mark.parametrize("mode", ["signed", "xchacha"])
def test_other_modes_spend_no_aesgcm_budget(mode: rs.ModeName) -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=1)
    for _ in range(3):
        seal(ring, mode)
    assert seal(ring).startswith("v1e.")


def test_verifying_spends_no_aesgcm_budget() -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=2)
    token = seal(ring)
    for _ in range(3):
        assert rs.decode(token, ring, mode="encrypted", now=NOW) == "x"
    seal(ring)
    with pytest.raises(rs.KeyBudgetExhausted, match="has sealed its limit of 2"):
        seal(ring)


def test_an_exhausted_key_still_verifies_what_it_sealed() -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=1)
    token = seal(ring)
    with pytest.raises(rs.KeyBudgetExhausted, match="has sealed its limit of 1"):
        seal(ring)
    assert rs.decode(token, ring, mode="encrypted", now=NOW) == "x"


def test_rotating_to_a_new_secret_mints_again_and_still_verifies_the_old_tokens() -> None:
    old = rs.KeyRing(OTHER_SECRET, aesgcm_limit=1)
    token = seal(old)
    with pytest.raises(rs.KeyBudgetExhausted, match="has sealed its limit of 1"):
        seal(old)
    rotated = rs.KeyRing(SECRET, OTHER_SECRET, aesgcm_limit=1)
    assert rs.decode(seal(rotated), rs.KeyRing(SECRET), mode="encrypted", now=NOW) == "x"
    assert rs.decode(token, rotated, mode="encrypted", now=NOW) == "x"


def test_bound_keys_stay_right_and_never_raise_under_threads() -> None:
    # Past 4096 identities the cache evicts, iterating its dict: unguarded, a second
    # writer made decode raise RuntimeError. Seen failing 3 of 3 runs without the lock.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    ring = rs.KeyRing(SECRET)
    errors: list[BaseException] = []
    wrong: list[str] = []

    def churn(worker: int) -> None:
        try:
            for index in range(1500):
                tool = f"{worker}-{index}"
                if ring.bound("alice", tool)[0].bind_tag != ref.bind_tag(SECRET, "alice", tool):
                    wrong.append(tool)
        except BaseException as error:  # collected for the assertion below
            errors.append(error)

    try:
        threads = [threading.Thread(target=churn, args=(worker,)) for worker in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert (errors, wrong) == ([], [])
