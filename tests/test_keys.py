"""requeststate._keys: KeyRing's secrets, subkeys, bound keys, AES-GCM budget, and what never leaks."""

from __future__ import annotations

import base64
import copy
import gc
import hashlib
import pickle
import sys
import threading
import tracemalloc

import pytest

import requeststate as rs
from requeststate._keys import derive_subkey
from tests.conftest import OTHER_SECRET, SECRET
from tests.support import reference as ref


def secret_of(label: str) -> bytes:
    return hashlib.sha256(label.encode()).digest()


def test_subkeys_follow_the_spec_hkdf_labels() -> None:
    assert derive_subkey(SECRET, b"mcp.requestState bind-hmac key") == ref.mac_key(SECRET)
    assert derive_subkey(SECRET, b"mcp.requestState aes-256-gcm key") == ref.enc_key(SECRET)


def test_bound_pairs_each_key_with_its_spec_bind_tag_minting_key_first() -> None:
    new, old = rs.KeyRing(SECRET, OTHER_SECRET).bound("alice", "tool")
    assert (new.bind_tag, old.bind_tag) == (
        ref.bind_tag(SECRET, "alice", "tool"),
        ref.bind_tag(OTHER_SECRET, "alice", "tool"),
    )
    assert (new.aad, old.aad) == (new.bind_tag.encode("ascii"), old.bind_tag.encode("ascii"))
    assert (new.key.fingerprint, old.key.fingerprint) == (
        rs.KeyRing(SECRET).fingerprint,
        rs.KeyRing(OTHER_SECRET).fingerprint,
    )


def test_an_identity_that_cannot_be_bound_raises_what_an_identity_must_be() -> None:
    with pytest.raises(TypeError, match=r"^subject must be a str and tool a str or None$"):
        rs.KeyRing(SECRET).bound(["alice"], None)
    with pytest.raises(ValueError, match=r"^subject and tool must not contain U\+0000$"):
        rs.KeyRing(SECRET).bound("a\0b", None)


def test_empty_ring_error_states_the_requirement() -> None:
    with pytest.raises(ValueError, match=r"^KeyRing needs at least one secret$"):
        rs.KeyRing()


def test_short_secret_is_refused_stating_the_requirement() -> None:
    with pytest.raises(
        ValueError,
        match=r"^secret 0 is 31 bytes; each secret must be at least 32 bytes of secret randomness$",
    ):
        rs.KeyRing(bytes(31))


def test_str_secret_error_points_to_from_env() -> None:
    with pytest.raises(TypeError, match=r"\(decode a base64 secret first, or use KeyRing\.from_env\)$"):
        rs.KeyRing("x" * 64)  # type: ignore[arg-type]


@pytest.mark.parametrize("secret", [None, 32, [0] * 32, memoryview(bytes(32))])
def test_non_bytes_secret_is_refused(secret: object) -> None:
    with pytest.raises(TypeError, match=r"^secret 0 must be bytes, not "):
        rs.KeyRing(secret)  # type: ignore[arg-type]


def test_non_bytes_secret_error_names_its_position_and_type() -> None:
    with pytest.raises(TypeError, match=r"^secret 1 must be bytes, not int$"):
        rs.KeyRing(SECRET, 32)  # type: ignore[arg-type]


def test_bytearray_secret_is_copied() -> None:
    secret = bytearray(SECRET)
    ring = rs.KeyRing(secret)
    secret[:] = OTHER_SECRET
    assert ring.fingerprint == rs.KeyRing(SECRET).fingerprint


def test_duplicate_secret_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^secret 2 repeats an earlier secret$"):
        rs.KeyRing(SECRET, OTHER_SECRET, SECRET)


def test_eight_secrets_are_accepted_and_a_ninth_refused() -> None:
    secrets = [secret_of(str(index)) for index in range(9)]
    assert len(rs.KeyRing(*secrets[:8])) == 8
    with pytest.raises(ValueError, match=r"^KeyRing holds at most 8 secrets, got 9$"):
        rs.KeyRing(*secrets)


def test_errors_never_contain_key_bytes() -> None:
    secret = b"\x41" * 31
    with pytest.raises(ValueError, match="secret 0") as caught:
        rs.KeyRing(secret)
    assert "AAAA" not in str(caught.value)
    assert repr(secret) not in str(caught.value)


def test_repr_shows_count_and_fingerprint_only() -> None:
    ring = rs.KeyRing(SECRET, OTHER_SECRET)
    text = repr(ring)
    assert text == f"KeyRing(keys=2, minting={ring.fingerprint!r})"
    assert str(ring) == text


def test_fingerprint_is_short_and_stable() -> None:
    assert rs.KeyRing(SECRET).fingerprint == rs.KeyRing(SECRET, OTHER_SECRET).fingerprint
    assert rs.KeyRing(SECRET).fingerprint != rs.KeyRing(OTHER_SECRET).fingerprint
    assert len(rs.KeyRing(SECRET).fingerprint) == 8


def test_subkeys_repr_shows_the_fingerprint_and_no_key_bytes(ring: rs.KeyRing) -> None:
    key = ring.bound("", None)[0].key
    assert repr(key) == f"SubKeys(fingerprint={ring.fingerprint!r})"


def test_xchacha_cipher_repr_shows_no_key(ring: rs.KeyRing) -> None:
    assert repr(ring.bound("", None)[0].key.xchacha) == "XChaCha20Poly1305(<key>)"


def test_ring_is_immutable(ring: rs.KeyRing) -> None:
    with pytest.raises(AttributeError, match=r"^KeyRing is immutable$"):
        ring.fingerprint = "0" * 8  # type: ignore[misc]
    with pytest.raises(AttributeError, match=r"^KeyRing is immutable$"):
        del ring.fingerprint


def test_ring_cannot_be_pickled_or_copied(ring: rs.KeyRing) -> None:
    message = r"^KeyRing cannot be pickled: share the secret through a secret store$"
    with pytest.raises(TypeError, match=message):
        pickle.dumps(ring)
    with pytest.raises(TypeError, match=message):
        copy.copy(ring)


def test_subkeys_and_the_xchacha_cipher_cannot_be_pickled(ring: rs.KeyRing) -> None:
    key = ring.bound("", None)[0].key
    with pytest.raises(TypeError, match=r"^SubKeys cannot be pickled: it holds derived key material$"):
        pickle.dumps(key)
    # Its state is the raw 32-byte key: a pickle would write it out.
    with pytest.raises(TypeError, match=r"^XChaCha20Poly1305 cannot be pickled: it holds a key$"):
        pickle.dumps(key.xchacha)


def test_ephemeral_rings_are_fresh_and_marked() -> None:
    first, second = rs.KeyRing.ephemeral(), rs.KeyRing.ephemeral()
    assert (first.is_ephemeral, second.is_ephemeral) == (True, True)
    assert first.fingerprint != second.fingerprint
    assert repr(first) == f"KeyRing(keys=1, minting={first.fingerprint!r}, ephemeral)"


def test_a_ring_from_secrets_reports_is_ephemeral_as_false() -> None:
    assert rs.KeyRing(SECRET).is_ephemeral is False


@pytest.mark.parametrize("limit", [0, 2**32 + 1])
def test_aesgcm_limit_out_of_range_is_refused(limit: int) -> None:
    with pytest.raises(ValueError, match=rf"^aesgcm_limit must be an int from 1 to {2**32}, got {limit}$"):
        rs.KeyRing(SECRET, aesgcm_limit=limit)


@pytest.mark.parametrize("limit", [1.5, True, "1"])
def test_aesgcm_limit_of_another_type_is_refused(limit: object) -> None:
    with pytest.raises(TypeError, match=rf"^aesgcm_limit must be an int, not {type(limit).__name__}$"):
        rs.KeyRing(SECRET, aesgcm_limit=limit)  # type: ignore[arg-type]


@pytest.mark.parametrize("share", [0, -0.1, 1.01])
def test_aesgcm_warn_share_out_of_range_is_refused(share: float) -> None:
    with pytest.raises(ValueError, match=r"^aesgcm_warn_share must be a number in \(0, 1\], got "):
        rs.KeyRing(SECRET, aesgcm_warn_share=share)


@pytest.mark.parametrize("share", ["half", True])
def test_aesgcm_warn_share_of_another_type_is_refused(share: object) -> None:
    name = type(share).__name__
    with pytest.raises(TypeError, match=rf"^aesgcm_warn_share must be a number, not {name}$"):
        rs.KeyRing(SECRET, aesgcm_warn_share=share)  # type: ignore[arg-type]


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


def test_the_budget_is_counted_per_key_and_only_for_aes_gcm() -> None:
    ring = rs.KeyRing(SECRET, aesgcm_limit=1)
    rs.encode("x", ring, mode="encrypted")
    for _ in range(3):  # XChaCha20-Poly1305's 192-bit nonces need no count
        rs.encode("x", ring, mode="xchacha")
    rs.encode("x", rs.KeyRing(OTHER_SECRET, SECRET, aesgcm_limit=1), mode="encrypted")
    with pytest.raises(rs.KeyBudgetExhausted):
        rs.encode("x", ring, mode="encrypted")


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
def test_from_env_unset_names_the_variable_and_how_to_make_a_secret(value: str | None) -> None:
    environ = {} if value is None else {"MY_KEYS": value}
    with pytest.raises(
        ValueError, match=r"^MY_KEYS is not set: .*\(generate one with: requeststate keygen\)$"
    ):
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


def test_from_env_keeps_a_trailing_x_of_a_secret() -> None:
    secret = secret_of("trailing") + b"\x17"  # 33 bytes: base64url ends "X", no padding, no unused bits
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


def traced_growth(work: object) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        work()  # type: ignore[operator]
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_hostile_long_identities_cannot_pin_memory() -> None:
    # 100 requests, each naming a distinct 1 MiB tool with a junk token, used to keep
    # every name alive in the bind-tag cache (100 MiB).
    ring = rs.KeyRing(SECRET)

    def flood() -> None:
        for index in range(100):
            tool = f"{index}:" + "n" * (1 << 20)
            assert rs.decode("v1e.AAAA", ring, mode="encrypted", subject="u", tool=tool) is None

    assert traced_growth(flood) < 1 << 20


def test_countless_short_identities_keep_memory_bounded() -> None:
    # Kept without a bound, 30,000 identities' tags would hold about 15 MiB.
    ring = rs.KeyRing(SECRET)

    def flood() -> None:
        for index in range(30_000):
            ring.bound(f"user-{index}", "book")

    assert traced_growth(flood) < 4 << 20


def test_bound_keys_stay_right_and_never_raise_under_threads() -> None:
    # Evicting iterates the cache's dict: unguarded, a second writer made decode
    # raise RuntimeError, and pushed the cache past its bound.
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
