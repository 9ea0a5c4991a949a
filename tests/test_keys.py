from __future__ import annotations

import copy
import pickle
import threading

import pytest

import requeststate as rs
from requeststate._keys import bind_input, derive_subkey
from tests import reference as ref
from tests.conftest import OTHER_SECRET, SECRET


def test_subkeys_follow_the_spec_hkdf_labels() -> None:
    assert derive_subkey(SECRET, b"mcp.requestState bind-hmac key") == ref.mac_key(SECRET)
    assert derive_subkey(SECRET, b"mcp.requestState aes-256-gcm key") == ref.enc_key(SECRET)


@pytest.mark.parametrize(
    ("subject", "tool", "expected"),
    [
        ("", None, b""),
        ("alice", None, b"alice"),
        ("alice", "book", b"alice\0book"),
        ("", "book", b"\0book"),
        ("é", "日", "é\0日".encode()),
    ],
)
def test_bind_input_of_each_binding_shape(subject: str, tool: str | None, expected: bytes) -> None:
    assert bind_input(subject, tool) == expected


@pytest.mark.parametrize(("subject", "tool"), [("a\0b", None), ("a", "b\0c"), ("\0", "")])
def test_bind_input_refuses_the_separator(subject: str, tool: str | None) -> None:
    with pytest.raises(ValueError, match="U\\+0000"):
        bind_input(subject, tool)


@pytest.mark.parametrize(("subject", "tool"), [("\ud800", None), ("a", "\udfff")])
def test_bind_input_refuses_lone_surrogates(subject: str, tool: str | None) -> None:
    with pytest.raises(ValueError, match="surrogate"):
        bind_input(subject, tool)


@pytest.mark.parametrize(("subject", "tool"), [(None, None), (b"alice", None), ("alice", 5)])
def test_bind_input_refuses_non_str(subject: object, tool: object) -> None:
    with pytest.raises(TypeError):
        bind_input(subject, tool)  # type: ignore[arg-type]


def test_bind_tags_match_the_spec_for_each_key() -> None:
    ring = rs.KeyRing(SECRET, OTHER_SECRET)
    assert ring.bind_tags("alice", "tool") == (
        ref.bind_tag(SECRET, "alice", "tool"),
        ref.bind_tag(OTHER_SECRET, "alice", "tool"),
    )


def test_empty_ring_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        rs.KeyRing()


def test_short_secret_is_refused_stating_the_requirement() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        rs.KeyRing(bytes(31))


def test_str_secret_is_refused_with_a_hint() -> None:
    with pytest.raises(TypeError, match="bytes"):
        rs.KeyRing("x" * 64)  # type: ignore[arg-type]


@pytest.mark.parametrize("secret", [None, 32, [0] * 32, memoryview(bytes(32))])
def test_non_bytes_secret_is_refused(secret: object) -> None:
    with pytest.raises(TypeError):
        rs.KeyRing(secret)  # type: ignore[arg-type]


def test_bytearray_secret_is_copied() -> None:
    secret = bytearray(SECRET)
    ring = rs.KeyRing(secret)
    secret[:] = bytes(32)
    assert ring.fingerprint == rs.KeyRing(SECRET).fingerprint


def test_duplicate_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="repeats"):
        rs.KeyRing(SECRET, OTHER_SECRET, SECRET)


def test_more_than_eight_secrets_are_refused() -> None:
    with pytest.raises(ValueError, match="at most 8"):
        rs.KeyRing(*(bytes([i]) * 32 for i in range(9)))


def test_eight_secrets_are_accepted() -> None:
    assert len(rs.KeyRing(*(bytes([i]) * 32 for i in range(8)))) == 8


def test_errors_never_contain_key_bytes() -> None:
    secret = b"\x41" * 31
    with pytest.raises(ValueError, match="secret 0") as caught:
        rs.KeyRing(secret)
    assert "AAAA" not in str(caught.value)
    assert repr(secret) not in str(caught.value)


def test_repr_shows_count_and_fingerprint_only() -> None:
    secret = b"S" * 32
    ring = rs.KeyRing(secret, OTHER_SECRET)
    text = repr(ring)
    assert text == f"KeyRing(keys=2, minting={ring.fingerprint!r})"
    assert "SSSS" not in text
    assert str(ring) == text


def test_fingerprint_is_short_and_stable() -> None:
    assert rs.KeyRing(SECRET).fingerprint == rs.KeyRing(SECRET, OTHER_SECRET).fingerprint
    assert rs.KeyRing(SECRET).fingerprint != rs.KeyRing(OTHER_SECRET).fingerprint
    assert len(rs.KeyRing(SECRET).fingerprint) == 8


def test_subkeys_repr_shows_no_key_bytes(ring: rs.KeyRing) -> None:
    key = ring.subkeys[0]
    assert key.mac_key.hex() not in repr(key)
    assert repr(key) == f"SubKeys(fingerprint={ring.fingerprint!r})"


def test_ring_is_immutable(ring: rs.KeyRing) -> None:
    with pytest.raises(AttributeError, match="immutable"):
        ring._keys = ()
    with pytest.raises(AttributeError, match="immutable"):
        del ring._keys


def test_ring_cannot_be_pickled_or_copied(ring: rs.KeyRing) -> None:
    with pytest.raises(TypeError, match="pickled"):
        pickle.dumps(ring)
    with pytest.raises(TypeError, match="pickled"):
        copy.copy(ring)


def test_ephemeral_rings_are_fresh_and_marked() -> None:
    first, second = rs.KeyRing.ephemeral(), rs.KeyRing.ephemeral()
    assert first.is_ephemeral
    assert first.fingerprint != second.fingerprint
    assert "ephemeral" in repr(first)


def test_a_ring_from_secrets_is_not_ephemeral(ring: rs.KeyRing) -> None:
    assert not ring.is_ephemeral


def test_bind_tags_are_the_same_from_many_threads(ring: rs.KeyRing) -> None:
    expected = ring.bind_tags("alice", "tool")
    results: list[tuple[str, ...]] = []

    def work() -> None:
        results.extend(ring.bind_tags(f"user{i % 50}", "tool") for i in range(500))
        results.append(ring.bind_tags("alice", "tool"))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(expected) == 8
