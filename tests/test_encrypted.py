"""requeststate._encrypted: v1e. and v1x. against the independent reference, each part tampered with."""

from __future__ import annotations

import pytest

import requeststate as rs
from requeststate._base64 import b64decode, b64encode
from requeststate._bind import BoundKey
from requeststate._encrypted import ENCRYPTED, XCHACHA, AeadMode
from tests.conftest import OTHER_SECRET, SECRET
from tests.support import reference as ref

PAYLOAD = b'{"s":"secret","exp":1,"b":"' + b"0" * 64 + b'"}'
TAG = "a" * 64
REFERENCE = {ENCRYPTED: ref.encrypted_token, XCHACHA: ref.xchacha_token}


@pytest.fixture(params=[ENCRYPTED, XCHACHA], ids=["v1e", "v1x"])
def aead(request: pytest.FixtureRequest) -> AeadMode:
    mode: AeadMode = request.param
    return mode


def nonce(aead: AeadMode) -> bytes:
    return bytes(range(aead.nonce_bytes))


def bound(ring: rs.KeyRing, *tags: str) -> tuple[BoundKey, ...]:
    """The ring's keys, in order, each bound to the tag given for it (any 64 characters)."""
    keys = [each.key for each in ring.bound("", None)]
    return tuple(BoundKey(key, tag, tag.encode()) for key, tag in zip(keys, tags, strict=True))


def sealed(aead: AeadMode, ring: rs.KeyRing) -> str:
    return aead.seal(PAYLOAD, bound(ring, TAG)[0], nonce(aead))


def blob(aead: AeadMode, token: str) -> bytes:
    return b64decode(token[len(aead.prefix) :]) or b""


def test_prefixes_and_nonce_sizes() -> None:
    assert (ENCRYPTED.prefix, ENCRYPTED.nonce_bytes) == ("v1e.", 12)
    assert (XCHACHA.prefix, XCHACHA.nonce_bytes) == ("v1x.", 24)


def test_seal_is_prefix_and_nonce_ciphertext_tag(aead: AeadMode, ring: rs.KeyRing) -> None:
    assert sealed(aead, ring) == REFERENCE[aead](SECRET, PAYLOAD, TAG, nonce(aead))


def test_seal_hides_the_payload(aead: AeadMode, ring: rs.KeyRing) -> None:
    assert b"secret" not in blob(aead, sealed(aead, ring))


def test_open_returns_payload_and_the_tag_it_was_sealed_under(aead: AeadMode) -> None:
    ring = rs.KeyRing(OTHER_SECRET, SECRET)
    old_tag = "old" + TAG[3:]
    token = REFERENCE[aead](SECRET, PAYLOAD, old_tag, nonce(aead))
    assert aead.open(token, bound(ring, TAG, old_tag)) == (PAYLOAD, old_tag)


def open_reason(aead: AeadMode, token: str, ring: rs.KeyRing, tag: str = TAG) -> rs.Reason:
    with pytest.raises(rs.InvalidToken) as refused:
        aead.open(token, bound(ring, tag))
    return refused.value.reason


@pytest.mark.parametrize("part", ["first nonce byte", "last nonce byte", "ciphertext", "tag"])
def test_each_part_tampered_is_a_bad_signature(aead: AeadMode, ring: rs.KeyRing, part: str) -> None:
    index = {"first nonce byte": 0, "last nonce byte": aead.nonce_bytes - 1, "ciphertext": aead.nonce_bytes}
    raw = bytearray(blob(aead, sealed(aead, ring)))
    raw[index.get(part, -1)] ^= 0x01
    assert open_reason(aead, aead.prefix + b64encode(bytes(raw)), ring) is rs.Reason.BAD_SIGNATURE


def test_another_aad_is_a_bad_signature(aead: AeadMode, ring: rs.KeyRing) -> None:
    assert open_reason(aead, sealed(aead, ring), ring, tag="b" * 64) is rs.Reason.BAD_SIGNATURE


def test_tag_stripped_is_a_bad_signature(aead: AeadMode, ring: rs.KeyRing) -> None:
    stripped = blob(aead, sealed(aead, ring))[:-16]
    assert open_reason(aead, aead.prefix + b64encode(stripped), ring) is rs.Reason.BAD_SIGNATURE


def test_blob_shorter_than_nonce_and_tag_is_malformed(aead: AeadMode, ring: rs.KeyRing) -> None:
    short = bytes(aead.nonce_bytes + 15)
    assert open_reason(aead, aead.prefix + b64encode(short), ring) is rs.Reason.MALFORMED


def test_smallest_blob_is_opened_not_refused_as_malformed(aead: AeadMode, ring: rs.KeyRing) -> None:
    # nonce + 16 bytes is the empty plaintext: framing accepts it, the tag decides.
    smallest = bytes(aead.nonce_bytes + 16)
    assert open_reason(aead, aead.prefix + b64encode(smallest), ring) is rs.Reason.BAD_SIGNATURE


def test_sealed_under_a_removed_key_is_a_bad_signature(aead: AeadMode, ring: rs.KeyRing) -> None:
    token = REFERENCE[aead](OTHER_SECRET, PAYLOAD, TAG, nonce(aead))
    assert open_reason(aead, token, ring) is rs.Reason.BAD_SIGNATURE


def test_repr_names_the_prefix() -> None:
    assert repr(XCHACHA) == "AeadMode('v1x.')"
