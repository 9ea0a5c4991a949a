"""requeststate._signed: the v1. format against the independent reference, and each part tampered with."""

from __future__ import annotations

import contextlib
import hmac
import json

import pytest

import requeststate as rs
from requeststate._base64 import b64decode, b64encode, b64encode_joined
from requeststate._signed import SIGNED
from tests.conftest import NOW, OTHER_SECRET, SECRET
from tests.support import reference as ref

PAYLOAD = b'{"s":"x","exp":1,"b":"' + b"0" * 64 + b'"}'


def test_seal_is_prefix_payload_and_mac_as_the_reference_writes_them(ring: rs.KeyRing) -> None:
    assert SIGNED.seal(PAYLOAD, ring.bound("", None)[0], b"") == ref.signed_token(SECRET, PAYLOAD)


def test_open_returns_the_payload_and_the_tag_of_the_key_that_signed_it() -> None:
    ring = rs.KeyRing(OTHER_SECRET, SECRET)
    new, old = ring.bound("alice", None)
    assert SIGNED.open(ref.signed_token(SECRET, PAYLOAD), (new, old)) == (PAYLOAD, old.bind_tag)
    assert new.bind_tag != old.bind_tag


def open_reason(token: str, ring: rs.KeyRing) -> rs.Reason:
    with pytest.raises(rs.InvalidToken) as refused:
        SIGNED.open(token, ring.bound("", None))
    return refused.value.reason


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


def _payload_text(state: str, exp: int, bind_tag: str) -> str:
    return json.dumps({"s": state, "exp": exp, "b": bind_tag}, separators=(",", ":"))


def test_a_payload_shaped_subject_cannot_forge_a_signed_token(ring: rs.KeyRing) -> None:
    # The attack, end to end: read the victim's bind tag from any of their signed
    # tokens, register a username that is a payload carrying it, have the server
    # mint a signed token for that username with no tool, and present the
    # username as the payload and its bind tag (HMAC under mac_key) as the MAC.
    victim = rs.encode("{}", ring, mode="signed", subject="alice", now=NOW)
    victim_tag = json.loads(b64decode(victim.split(".")[1]) or b"")["b"]
    username = _payload_text('{"paid":true}', 2**63 - 1, victim_tag)
    forged = None
    with contextlib.suppress(ValueError):
        minted = rs.encode("x", ring, mode="signed", subject=username, now=NOW)
        attacker_tag = json.loads(b64decode(minted.split(".")[1]) or b"")["b"]
        forged = "v1." + b64encode_joined(username.encode(), bytes.fromhex(attacker_tag))
    accepted = None if forged is None else rs.decode(forged, ring, mode="signed", subject="alice")
    assert forged is None, f"minted for a payload-shaped subject; alice's decode gives {accepted!r}"


def test_the_mac_of_a_payload_is_the_bind_tag_of_that_text(ring: rs.KeyRing) -> None:
    # Why the rule exists: were the tag of a payload-shaped subject ever minted
    # (by a writer without the rule), it would verify as that payload's MAC.
    payload = _payload_text('{"paid":true}', 2**63 - 1, ref.bind_tag(SECRET, "alice", None)).encode()
    forged = "v1." + b64encode_joined(payload, hmac.digest(ref.mac_key(SECRET), payload, "sha256"))
    assert rs.verify(forged, ring, mode="signed", subject="alice") == '{"paid":true}'


@pytest.mark.parametrize(
    "shape",
    [
        ("v1." + "." * (rs.DEFAULT_MAX_TOKEN_BYTES - 3)),
        ("v1." + "A" * (rs.DEFAULT_MAX_TOKEN_BYTES - 6) + ".AA"),
        ("v1." + "A" * (rs.DEFAULT_MAX_TOKEN_BYTES - 50) + "." + "A" * 43 + "."),
        ("v1." + "!" * (rs.DEFAULT_MAX_TOKEN_BYTES - 3)),
    ],
    ids=["dots", "short-mac", "four-parts", "not-base64"],
)
def test_a_hostile_token_at_the_size_cap_is_malformed(ring: rs.KeyRing, shape: str) -> None:
    # What each costs is the benchmark's to say (docs/performance.md): split at most
    # four ways, 65,533 dots cost no more than a valid token of that length.
    with pytest.raises(rs.InvalidToken, match=r"^malformed$"):
        rs.verify(shape, ring, mode="signed", now=NOW)
