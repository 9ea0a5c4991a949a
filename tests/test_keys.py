from __future__ import annotations

import base64
import copy
import gc
import pickle
import sys
import threading
import tracemalloc

import pytest
from nacl.bindings import crypto_aead_xchacha20poly1305_ietf_decrypt

import requeststate as rs
from requeststate._keys import (
    BIND_TAG_CACHE_MAX_BYTES,
    BIND_TAG_CACHE_SIZE,
    BoundKey,
    bind_input,
    derive_subkey,
)
from tests.conftest import OTHER_SECRET, SECRET
from tests.support import reference as ref


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
    with pytest.raises(ValueError, match=r"^subject and tool must not contain U\+0000$"):
        bind_input(subject, tool)


@pytest.mark.parametrize(("subject", "tool"), [("\ud800", None), ("a", "\udfff")])
def test_bind_input_refuses_lone_surrogates(subject: str, tool: str | None) -> None:
    with pytest.raises(ValueError, match=r"^subject and tool must be valid Unicode \(no lone surrogates\)$"):
        bind_input(subject, tool)


@pytest.mark.parametrize(("subject", "tool"), [(None, None), (b"alice", None), ("alice", 5)])
def test_bind_input_refuses_non_str(subject: object, tool: object) -> None:
    with pytest.raises(TypeError, match=r"^subject must be a str and tool a str or None$"):
        bind_input(subject, tool)


def test_bound_keys_pair_each_key_with_its_spec_bind_tag_in_ring_order() -> None:
    ring = rs.KeyRing(SECRET, OTHER_SECRET)
    new, old = ref.bind_tag(SECRET, "alice", "tool"), ref.bind_tag(OTHER_SECRET, "alice", "tool")
    assert ring._bound_keys("alice", "tool") == (
        (ring._subkeys[0], new, new.encode("ascii")),
        (ring._subkeys[1], old, old.encode("ascii")),
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
    with pytest.raises(TypeError, match=r"^secret 0 must be bytes, not "):
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
    key = ring._subkeys[0]
    assert ref.mac_key(SECRET).hex() not in repr(key)
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


def test_bound_keys_are_the_same_from_many_threads(ring: rs.KeyRing) -> None:
    expected = ring._bound_keys("alice", "tool")
    results: list[tuple[BoundKey, ...]] = []

    def work() -> None:
        results.extend(ring._bound_keys(f"user{i % 50}", "tool") for i in range(500))
        results.append(ring._bound_keys("alice", "tool"))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(expected) == 8


@pytest.mark.parametrize("limit", [0, 2**32 + 1, 1.5])
def test_aesgcm_limit_out_of_range_is_refused(limit: object) -> None:
    with pytest.raises(ValueError, match="aesgcm_limit"):
        rs.KeyRing(SECRET, aesgcm_limit=limit)  # type: ignore[arg-type]


@pytest.mark.parametrize("share", [0, -0.1, 1.01, "half"])
def test_aesgcm_warn_share_out_of_range_is_refused(share: object) -> None:
    with pytest.raises(ValueError, match="aesgcm_warn_share"):
        rs.KeyRing(SECRET, aesgcm_warn_share=share)  # type: ignore[arg-type]


def test_subkeys_follow_our_xchacha_label() -> None:
    nonce = bytes(24)
    sealed = rs.KeyRing(SECRET)._subkeys[0].xchacha.encrypt(nonce, b"data", b"aad")
    assert (
        crypto_aead_xchacha20poly1305_ietf_decrypt(sealed, b"aad", nonce, ref.xchacha_key(SECRET)) == b"data"
    )


def test_xchacha_cipher_repr_shows_no_key() -> None:
    assert repr(rs.KeyRing(SECRET)._subkeys[0].xchacha) == "XChaCha20Poly1305(<key>)"


ENV_NAME = "REQUESTSTATE_KEYS"


def b64(secret: bytes) -> str:
    return ref.b64(secret)


def test_from_env_reads_secrets_newest_first() -> None:
    ring = rs.KeyRing.from_env(ENV_NAME, environ={ENV_NAME: f"{b64(SECRET)},{b64(OTHER_SECRET)}"})
    assert len(ring) == 2
    assert ring.fingerprint == rs.KeyRing(SECRET).fingerprint


def test_from_env_accepts_padding_and_spaces() -> None:
    padded = base64.urlsafe_b64encode(SECRET).decode()
    assert padded.endswith("=")
    ring = rs.KeyRing.from_env(ENV_NAME, environ={ENV_NAME: f" {padded} , {b64(OTHER_SECRET)}"})
    assert ring.fingerprint == rs.KeyRing(SECRET).fingerprint


def test_from_env_defaults_to_requeststate_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_NAME, b64(SECRET))
    assert rs.KeyRing.from_env().fingerprint == rs.KeyRing(SECRET).fingerprint


@pytest.mark.parametrize("value", [None, "", "  "])
def test_from_env_unset_names_the_variable(value: str | None) -> None:
    environ = {} if value is None else {"MY_KEYS": value}
    with pytest.raises(ValueError, match="MY_KEYS is not set"):
        rs.KeyRing.from_env("MY_KEYS", environ=environ)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("not base64!", "MY_KEYS: secret 0 is not base64url"),
        (f"{b64(SECRET)},a+b/", "MY_KEYS: secret 1 looks like standard base64"),
        (b64(bytes(16)), "MY_KEYS: secret 0 is 16 bytes"),
        (f"{b64(SECRET)},{b64(SECRET)}", "MY_KEYS: secret 1 repeats"),
        (f"{b64(SECRET)},", "MY_KEYS: secret 1 is 0 bytes"),
    ],
)
def test_from_env_errors_name_the_variable_never_the_value(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        rs.KeyRing.from_env("MY_KEYS", environ={"MY_KEYS": value})
    assert b64(SECRET) not in str(caught.value)


# --- options reach the ring, and errors state the requirement ----------------------------------


def test_warn_share_of_one_is_accepted_and_warns_at_the_limit(caplog: pytest.LogCaptureFixture) -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=2, aesgcm_warn_share=1)
    with caplog.at_level("WARNING", logger="requeststate"):
        rs.encode("x", ring, mode="encrypted")
        assert caplog.records == []
        rs.encode("x", ring, mode="encrypted")
    assert len(caplog.records) == 1


def test_a_limit_of_one_warns_at_the_first_seal(caplog: pytest.LogCaptureFixture) -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=1, aesgcm_warn_share=0.1)
    with caplog.at_level("WARNING", logger="requeststate"):
        rs.encode("x", ring, mode="encrypted")
    assert len(caplog.records) == 1


def test_budget_warning_names_the_key_the_count_the_limit_and_the_way_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=4, aesgcm_warn_share=0.5)
    with caplog.at_level("WARNING", logger="requeststate"):
        for _ in range(2):
            rs.encode("x", ring, mode="encrypted")
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        (
            "requeststate",
            f"requestState key {ring.fingerprint} has sealed 2 AES-GCM tokens in this process, "
            "of a limit of 4: rotate to a new secret, or move to mode='xchacha'",
        )
    ]


def test_budget_error_names_the_key_the_limit_and_the_way_out() -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=1)
    rs.encode("x", ring, mode="encrypted")
    with pytest.raises(rs.KeyBudgetExhausted) as caught:
        rs.encode("x", ring, mode="encrypted")
    assert str(caught.value) == (
        f"requestState key {ring.fingerprint} has sealed its limit of 1 "
        "AES-GCM tokens in this process (random 96-bit nonces, NIST SP 800-38D); "
        "rotate to a new secret with KeyRing(new, old), or use mode='xchacha'"
    )


def test_a_ring_from_secrets_reports_is_ephemeral_as_false() -> None:
    assert rs.KeyRing(SECRET).is_ephemeral is False


def test_ephemeral_repr_marks_it_after_the_fingerprint() -> None:
    ring = rs.KeyRing.ephemeral()
    assert repr(ring) == f"KeyRing(keys=1, minting={ring.fingerprint!r}, ephemeral)"


def test_empty_ring_error_states_the_requirement() -> None:
    with pytest.raises(ValueError, match=r"^KeyRing needs at least one secret$"):
        rs.KeyRing()


def test_str_secret_error_points_to_from_env() -> None:
    with pytest.raises(TypeError, match=r"\(decode a base64 secret first, or use KeyRing\.from_env\)$"):
        rs.KeyRing("x" * 64)  # type: ignore[arg-type]


def test_non_bytes_secret_error_names_its_position_and_type() -> None:
    with pytest.raises(TypeError, match=r"^secret 1 must be bytes, not int$"):
        rs.KeyRing(SECRET, 32)  # type: ignore[arg-type]


def test_immutability_error_names_the_class(ring: rs.KeyRing) -> None:
    with pytest.raises(AttributeError, match=r"^KeyRing is immutable$"):
        del ring._keys


def test_pickling_error_names_the_alternative(ring: rs.KeyRing) -> None:
    with pytest.raises(
        TypeError, match=r"^KeyRing cannot be pickled: share the secret through a secret store$"
    ):
        pickle.dumps(ring)


def test_from_env_keeps_a_trailing_x_of_a_secret() -> None:
    secret = bytes(32) + b"\x17"  # 33 bytes: base64url "...AX", no padding, no unused bits
    assert b64(secret).endswith("X")
    ring = rs.KeyRing.from_env(ENV_NAME, environ={ENV_NAME: b64(secret)})
    assert ring.fingerprint == rs.KeyRing(secret).fingerprint


def test_from_env_passes_the_aesgcm_limit_on() -> None:
    ring = rs.KeyRing.from_env(ENV_NAME, environ={ENV_NAME: b64(SECRET)}, aesgcm_limit=1)
    rs.encode("x", ring, mode="encrypted")
    with pytest.raises(rs.KeyBudgetExhausted):
        rs.encode("x", ring, mode="encrypted")


def test_from_env_passes_the_warn_share_on(caplog: pytest.LogCaptureFixture) -> None:
    ring = rs.KeyRing.from_env(
        ENV_NAME, environ={ENV_NAME: b64(SECRET)}, aesgcm_limit=10, aesgcm_warn_share=0.1
    )
    with caplog.at_level("WARNING", logger="requeststate"):
        rs.encode("x", ring, mode="encrypted")
    assert len(caplog.records) == 1


def test_from_env_unset_error_says_how_to_make_a_secret() -> None:
    with pytest.raises(ValueError, match=r"\(generate one with: requeststate keygen\)$"):
        rs.KeyRing.from_env("MY_KEYS", environ={})


@pytest.mark.parametrize("subject", ["{", '{"s":"x"}', ' {"s"', "\t\r\n{", "\n\n {}"])
def test_bind_input_refuses_a_subject_alone_that_reads_as_a_payload(subject: str) -> None:
    with pytest.raises(ValueError, match="must not start with '\\{'"):
        bind_input(subject, None)


@pytest.mark.parametrize(
    ("subject", "tool"),
    [("{", ""), ('{"s":"x"}', "book"), ("\f{", None), ("\u00a0{", None), ("x{", None), ("}", None)],
)
def test_bind_input_allows_a_brace_that_no_payload_can_start_with(subject: str, tool: str | None) -> None:
    # With a tool the input holds U+0000, which no payload does; and JSON
    # whitespace is only space, tab, CR and LF.
    assert bind_input(subject, tool).startswith(subject.encode())


def test_bound_keys_of_a_short_identity_are_cached(ring: rs.KeyRing) -> None:
    assert ring._bound_keys("alice", "book") is ring._bound_keys("alice", "book")


def test_bound_keys_of_a_long_identity_are_not_kept(ring: rs.KeyRing) -> None:
    tool = "t" * 600
    assert ring._bound_keys("alice", tool) is not ring._bound_keys("alice", tool)


def test_hostile_identities_cannot_pin_memory() -> None:
    # 100 requests, each naming a distinct 1 MiB tool and a token refused at
    # once, used to keep every name alive in the bind-tag cache (100 MiB).
    ring = rs.KeyRing(SECRET)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for index in range(100):
            tool = f"{index}:" + "n" * (1 << 20)
            assert rs.decode("v1e.AAAA", ring, mode="encrypted", subject="u", tool=tool) is None
        del tool
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 1 << 20


def test_subkeys_cannot_be_pickled(ring: rs.KeyRing) -> None:
    with pytest.raises(TypeError, match="SubKeys cannot be pickled"):
        pickle.dumps(ring._subkeys[0])


def test_the_xchacha_cipher_cannot_be_pickled(ring: rs.KeyRing) -> None:
    # Its state is the raw 32-byte key: a pickle would write it out.
    with pytest.raises(TypeError, match="XChaCha20Poly1305 cannot be pickled"):
        pickle.dumps(ring._subkeys[0].xchacha)


def test_the_bind_tag_cache_holds_a_bounded_number_of_identities_dropping_the_oldest() -> None:
    # A fresh ring: the cache is built with the ring (a shared fixture's is not).
    ring = rs.KeyRing(SECRET)
    for index in range(BIND_TAG_CACHE_SIZE + 1):
        ring._bound_keys(f"user-{index}", "book")
    cached = ring._bound_keys_cached
    assert len(cached) == BIND_TAG_CACHE_SIZE
    assert ("user-0", "book") not in cached
    assert ("user-1", "book") in cached
    assert (f"user-{BIND_TAG_CACHE_SIZE}", "book") in cached


def test_a_fresh_ring_serves_a_short_identity_from_its_cache() -> None:
    ring = rs.KeyRing(SECRET)
    first = ring._bound_keys("alice", "book")
    assert ring._bound_keys_cached[("alice", "book")] is first
    assert ring._bound_keys("alice", "book") is first


def test_an_identity_of_exactly_the_cached_size_is_cached() -> None:
    ring = rs.KeyRing(SECRET)
    tool = "t" * (BIND_TAG_CACHE_MAX_BYTES - len("alice\0"))
    ring._bound_keys("alice", tool)
    ring._bound_keys("alice", tool + "t")
    assert list(ring._bound_keys_cached) == [("alice", tool)]


def test_an_unhashable_identity_is_refused_by_what_an_identity_must_be() -> None:
    with pytest.raises(TypeError, match=r"^subject must be a str and tool a str or None$"):
        rs.KeyRing(SECRET)._bound_keys(["alice"], None)


def test_the_payload_rule_error_states_the_rule() -> None:
    with pytest.raises(
        ValueError,
        match=r"^a subject bound without a tool must not start with '\{' \(it would read as a payload\)$",
    ):
        bind_input("{", None)


def test_the_subkeys_pickling_error_says_why() -> None:
    with pytest.raises(TypeError, match=r"^SubKeys cannot be pickled: it holds derived key material$"):
        pickle.dumps(rs.KeyRing(SECRET)._subkeys[0])


def test_the_bind_tag_cache_stays_bounded_and_never_raises_under_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Evicting iterates the dict: unguarded, a second writer made it raise
    # RuntimeError out of decode, and pushed the cache past its bound.
    monkeypatch.setattr("requeststate._keys.BIND_TAG_CACHE_SIZE", 8)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        ring = rs.KeyRing(SECRET)
        errors: list[BaseException] = []

        def churn(worker: int) -> None:
            try:
                for index in range(3000):
                    ring._bound_keys("alice", f"{worker}-{index}")
            except BaseException as error:  # collected for the assertion below
                errors.append(error)

        threads = [threading.Thread(target=churn, args=(worker,)) for worker in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert len(ring._bound_keys_cached) == 8


class Labelled(str):
    """A str whose format is not its content, as a (str, Enum) member's is on 3.12+."""

    __slots__ = ()

    def __format__(self, spec: str) -> str:
        return "label:" + str.__str__(self)


def test_a_str_subclass_is_bound_by_its_content() -> None:
    # An f-string used its __format__ while the cache matched by content: the
    # tag depended on what was cached, and was not the spec's.
    assert bind_input("alice", Labelled("book")) == b"alice\0book"
    tags = rs.KeyRing(SECRET)._bound_keys("alice", Labelled("book"))
    assert tags[0][1] == ref.bind_tag(SECRET, "alice", "book")
