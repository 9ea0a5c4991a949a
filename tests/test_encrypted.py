"""The encrypted modes ``v1e.`` and ``v1x.``: the bind tag as AAD, and each part tampered alone."""

from __future__ import annotations

import pickle

import pytest
from cryptography.exceptions import InvalidTag

import requeststate as rs
from requeststate._base64 import b64decode, b64encode
from requeststate._encrypted import ENCRYPTED, XCHACHA, AeadMode
from requeststate._keys import BoundKey
from requeststate._xchacha import XChaCha20Poly1305
from tests.conftest import OTHER_SECRET, SECRET
from tests.support import reference as ref

PAYLOAD = b'{"s":"secret","exp":1,"b":"' + b"0" * 64 + b'"}'
REFERENCE = {ENCRYPTED: ref.encrypted_token, XCHACHA: ref.xchacha_token}


@pytest.fixture(params=[ENCRYPTED, XCHACHA], ids=["v1e", "v1x"])
def aead(request: pytest.FixtureRequest) -> AeadMode:
    mode: AeadMode = request.param
    return mode


def nonce(aead: AeadMode) -> bytes:
    return bytes(range(aead.nonce_bytes))


def minting(ring: rs.KeyRing, subject: str = "alice") -> BoundKey:
    return ring.bound(subject, None)[0]


def sealed(aead: AeadMode, ring: rs.KeyRing) -> str:
    return aead.seal(PAYLOAD, minting(ring), nonce(aead))


def blob(aead: AeadMode, token: str) -> bytes:
    return b64decode(token[len(aead.prefix) :]) or b""


def open_reason(aead: AeadMode, token: str, ring: rs.KeyRing, subject: str = "alice") -> rs.Reason:
    with pytest.raises(rs.InvalidToken) as caught:
        aead.open(token, ring.bound(subject, None))
    return caught.value.reason


def test_seal_is_prefix_and_nonce_ciphertext_tag(aead: AeadMode, ring: rs.KeyRing) -> None:
    tag = ref.bind_tag(SECRET, "alice", None)
    assert sealed(aead, ring) == REFERENCE[aead](SECRET, PAYLOAD, tag, nonce(aead))


def test_seal_hides_the_payload(aead: AeadMode, ring: rs.KeyRing) -> None:
    assert b"secret" not in blob(aead, sealed(aead, ring))


def test_open_returns_the_payload_and_the_key_it_was_sealed_under(aead: AeadMode) -> None:
    # Rotation: sealed under the older key, opened by a ring whose first key is newer.
    bound = rs.KeyRing(OTHER_SECRET, SECRET).bound("alice", None)
    token = REFERENCE[aead](SECRET, PAYLOAD, bound[1].bind_tag, nonce(aead))
    assert aead.open(token, bound) == (PAYLOAD, bound[1])


@pytest.mark.parametrize("part", ["first nonce byte", "last nonce byte", "ciphertext", "tag"])
def test_each_part_tampered_is_a_bad_signature(aead: AeadMode, ring: rs.KeyRing, part: str) -> None:
    index = {"first nonce byte": 0, "last nonce byte": aead.nonce_bytes - 1, "ciphertext": aead.nonce_bytes}
    raw = bytearray(blob(aead, sealed(aead, ring)))
    raw[index.get(part, -1)] ^= 0x01
    assert open_reason(aead, aead.prefix + b64encode(bytes(raw)), ring) is rs.Reason.BAD_SIGNATURE


def test_another_identity_fails_the_tag_check(aead: AeadMode, ring: rs.KeyRing) -> None:
    # The bind tag is the AAD: a token for alice, opened for bob, never decrypts.
    assert open_reason(aead, sealed(aead, ring), ring, subject="bob") is rs.Reason.BAD_SIGNATURE


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


@pytest.mark.parametrize("suffix", ["=", ".", "!"], ids=["padded", "dot", "not base64"])
def test_a_body_that_is_not_canonical_base64url_is_malformed(
    aead: AeadMode, ring: rs.KeyRing, suffix: str
) -> None:
    assert open_reason(aead, sealed(aead, ring) + suffix, ring) is rs.Reason.MALFORMED


def test_sealed_under_a_removed_key_is_a_bad_signature(aead: AeadMode, ring: rs.KeyRing) -> None:
    token = REFERENCE[aead](OTHER_SECRET, PAYLOAD, ref.bind_tag(OTHER_SECRET, "alice", None), nonce(aead))
    assert open_reason(aead, token, ring) is rs.Reason.BAD_SIGNATURE


def test_repr_names_the_prefix() -> None:
    assert (repr(ENCRYPTED), repr(XCHACHA)) == ("AeadMode('v1e.')", "AeadMode('v1x.')")


# --- the XChaCha20-Poly1305 cipher: shaped like cryptography's AESGCM -----------------------------


def test_the_xchacha_cipher_raises_invalid_tag_as_aesgcm_does() -> None:
    cipher = XChaCha20Poly1305(ref.xchacha_key(SECRET))
    sealed = cipher.encrypt(bytes(24), b"data", b"aad")
    assert cipher.decrypt(bytes(24), sealed, b"aad") == b"data"
    with pytest.raises(InvalidTag):
        cipher.decrypt(bytes(24), sealed, b"other aad")


def test_the_xchacha_cipher_shows_no_key() -> None:
    assert repr(XChaCha20Poly1305(ref.xchacha_key(SECRET))) == "XChaCha20Poly1305(<key>)"


def test_the_xchacha_cipher_cannot_be_pickled() -> None:
    # Its state is the raw 32-byte key: a pickle would write it out.
    with pytest.raises(TypeError, match=r"^XChaCha20Poly1305 cannot be pickled: it holds a key$"):
        pickle.dumps(XChaCha20Poly1305(ref.xchacha_key(SECRET)))
