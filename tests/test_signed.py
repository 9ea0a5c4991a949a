from __future__ import annotations

import hmac

import pytest

import requeststate as rs
from requeststate._base64 import b64decode, b64encode
from requeststate._signed import SIGNED
from tests import reference as ref
from tests.conftest import OTHER_SECRET, SECRET

PAYLOAD = b'{"s":"x","exp":1,"b":"' + b"0" * 64 + b'"}'


def test_seal_is_prefix_payload_and_mac(ring: rs.KeyRing) -> None:
    token = SIGNED.seal(PAYLOAD, ring.subkeys[0], "", b"")
    assert token == ref.signed_token(SECRET, PAYLOAD)


def test_seal_is_deterministic(ring: rs.KeyRing) -> None:
    assert SIGNED.seal(PAYLOAD, ring.subkeys[0], "", b"") == SIGNED.seal(PAYLOAD, ring.subkeys[0], "", b"")


def test_open_returns_payload_and_the_signing_keys_tag() -> None:
    ring = rs.KeyRing(OTHER_SECRET, SECRET)
    token = ref.signed_token(SECRET, PAYLOAD)
    bound_keys = tuple(zip(ring.subkeys, ("tag-new", "tag-old"), strict=True))
    assert SIGNED.open(token, bound_keys) == (PAYLOAD, "tag-old")


def open_reason(token: str, ring: rs.KeyRing) -> object:
    return SIGNED.open(token, ring.bound_keys("", None))


def test_payload_tampered_is_a_bad_signature(ring: rs.KeyRing) -> None:
    mac = ref.signed_token(SECRET, PAYLOAD).split(".")[2]
    tampered = b64encode(PAYLOAD.replace(b'"x"', b'"y"'))
    assert open_reason(f"v1.{tampered}.{mac}", ring) is rs.Reason.BAD_SIGNATURE


def test_mac_tampered_is_a_bad_signature(ring: rs.KeyRing) -> None:
    _, body, mac = ref.signed_token(SECRET, PAYLOAD).split(".")
    raw = bytearray(b64decode(mac) or b"")
    raw[0] ^= 0x80
    assert open_reason(f"v1.{body}.{b64encode(bytes(raw))}", ring) is rs.Reason.BAD_SIGNATURE


def test_mac_stripped_is_malformed(ring: rs.KeyRing) -> None:
    _, body, _ = ref.signed_token(SECRET, PAYLOAD).split(".")
    assert open_reason(f"v1.{body}", ring) is rs.Reason.MALFORMED


def test_mac_under_a_removed_key_is_a_bad_signature() -> None:
    token = ref.signed_token(OTHER_SECRET, PAYLOAD)
    assert open_reason(token, rs.KeyRing(SECRET)) is rs.Reason.BAD_SIGNATURE


def test_mac_comparison_is_constant_time(ring: rs.KeyRing, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    SIGNED.open(ref.signed_token(SECRET, PAYLOAD), ((ring.subkeys[0], "t"),))
    assert len(calls) == 1
