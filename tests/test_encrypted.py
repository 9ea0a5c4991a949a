from __future__ import annotations

import pytest

import requeststate as rs
from requeststate._base64 import b64decode, b64encode
from requeststate._encrypted import ENCRYPTED
from tests import reference as ref
from tests.conftest import OTHER_SECRET, SECRET

PAYLOAD = b'{"s":"secret","exp":1,"b":"' + b"0" * 64 + b'"}'
NONCE = bytes(12)
TAG = "a" * 64


def sealed(ring: rs.KeyRing) -> str:
    return ENCRYPTED.seal(PAYLOAD, ring.subkeys[0], TAG, NONCE)


def test_seal_is_prefix_and_nonce_ciphertext_tag(ring: rs.KeyRing) -> None:
    assert sealed(ring) == ref.encrypted_token(SECRET, PAYLOAD, TAG, NONCE)


def test_seal_hides_the_payload(ring: rs.KeyRing) -> None:
    assert b"secret" not in (b64decode(sealed(ring)[4:]) or b"")


def test_open_returns_payload_and_the_tag_it_was_sealed_under() -> None:
    ring = rs.KeyRing(OTHER_SECRET, SECRET)
    token = ref.encrypted_token(SECRET, PAYLOAD, "old" + TAG[3:], NONCE)
    assert ENCRYPTED.open(token, ring.subkeys, (TAG, "old" + TAG[3:])) == (PAYLOAD, "old" + TAG[3:])


def open_reason(token: str, ring: rs.KeyRing, tag: str = TAG) -> rs.Reason:
    with pytest.raises(rs.InvalidToken) as caught:
        ENCRYPTED.open(token, ring.subkeys, (tag,))
    return caught.value.reason


@pytest.mark.parametrize(("part", "index"), [("nonce", 0), ("nonce", 11), ("ciphertext", 12), ("tag", -1)])
def test_each_part_tampered_is_a_bad_signature(ring: rs.KeyRing, part: str, index: int) -> None:
    blob = bytearray(b64decode(sealed(ring)[4:]) or b"")
    blob[index] ^= 0x01
    assert open_reason("v1e." + b64encode(bytes(blob)), ring) is rs.Reason.BAD_SIGNATURE


def test_another_aad_is_a_bad_signature(ring: rs.KeyRing) -> None:
    assert open_reason(sealed(ring), ring, tag="b" * 64) is rs.Reason.BAD_SIGNATURE


def test_tag_stripped_is_a_bad_signature_or_malformed(ring: rs.KeyRing) -> None:
    blob = b64decode(sealed(ring)[4:]) or b""
    assert open_reason("v1e." + b64encode(blob[:-16]), ring) is rs.Reason.BAD_SIGNATURE
    assert open_reason("v1e." + b64encode(blob[:27]), ring) is rs.Reason.MALFORMED


def test_smallest_blob_is_opened_not_refused_as_malformed(ring: rs.KeyRing) -> None:
    # 12 + 16 bytes is the empty plaintext: framing accepts it, the tag decides.
    assert open_reason("v1e." + b64encode(bytes(28)), ring) is rs.Reason.BAD_SIGNATURE


def test_sealed_under_a_removed_key_is_a_bad_signature(ring: rs.KeyRing) -> None:
    token = ref.encrypted_token(OTHER_SECRET, PAYLOAD, TAG, NONCE)
    assert open_reason(token, ring) is rs.Reason.BAD_SIGNATURE
