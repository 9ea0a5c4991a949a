"""The ``v1.`` signed mode: the payload in the clear, HMAC-SHA256 over its bytes, each part tampered alone."""

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


def open_reason(token: str, ring: rs.KeyRing) -> rs.Reason:
    with pytest.raises(rs.InvalidToken) as caught:
        SIGNED.open(token, ring.bound("", None))
    return caught.value.reason


def test_seal_is_prefix_payload_and_mac(ring: rs.KeyRing) -> None:
    assert SIGNED.seal(PAYLOAD, ring.bound("", None)[0], b"") == ref.signed_token(SECRET, PAYLOAD)


def test_open_returns_the_payload_and_the_key_that_signed_it() -> None:
    # Rotation: signed under the older key, opened by a ring whose first key is newer.
    bound = rs.KeyRing(OTHER_SECRET, SECRET).bound("alice", None)
    assert SIGNED.open(ref.signed_token(SECRET, PAYLOAD), bound) == (PAYLOAD, bound[1])


def test_payload_tampered_is_a_bad_signature(ring: rs.KeyRing) -> None:
    mac = ref.signed_token(SECRET, PAYLOAD).split(".")[2]
    tampered = b64encode(PAYLOAD.replace(b'"x"', b'"y"'))
    assert open_reason(f"v1.{tampered}.{mac}", ring) is rs.Reason.BAD_SIGNATURE


@pytest.mark.parametrize("index", [0, 31], ids=["first byte", "last byte"])
def test_mac_tampered_is_a_bad_signature(ring: rs.KeyRing, index: int) -> None:
    _, body, mac = ref.signed_token(SECRET, PAYLOAD).split(".")
    raw = bytearray(b64decode(mac) or b"")
    raw[index] ^= 0x01
    assert open_reason(f"v1.{body}.{b64encode(bytes(raw))}", ring) is rs.Reason.BAD_SIGNATURE


def test_mac_of_another_payload_is_a_bad_signature(ring: rs.KeyRing) -> None:
    body = ref.signed_token(SECRET, PAYLOAD).split(".")[1]
    mac = ref.signed_token(SECRET, b"{}").split(".")[2]
    assert open_reason(f"v1.{body}.{mac}", ring) is rs.Reason.BAD_SIGNATURE


def test_mac_under_a_removed_key_is_a_bad_signature() -> None:
    assert open_reason(ref.signed_token(OTHER_SECRET, PAYLOAD), rs.KeyRing(SECRET)) is rs.Reason.BAD_SIGNATURE


@pytest.mark.parametrize(
    "shape",
    [
        "v1.{body}",
        "v1.{body}.{mac}.{mac}",
        "v1.{body}.",
        "v1.{body}.{short}",
        "v1.{body}.{long}",
        "v1.{body}.{mac}=",
        "v1.{body}!.{mac}",
        "v1." + "." * 100,
    ],
    ids=[
        "mac stripped",
        "four parts",
        "empty mac",
        "31-byte mac",
        "33-byte mac",
        "padded",
        "not base64",
        "dots",
    ],
)
def test_a_token_not_framed_as_three_canonical_parts_is_malformed(ring: rs.KeyRing, shape: str) -> None:
    _, body, mac = ref.signed_token(SECRET, PAYLOAD).split(".")
    token = shape.format(body=body, mac=mac, short=ref.b64(bytes(31)), long=ref.b64(bytes(33)))
    assert open_reason(token, ring) is rs.Reason.MALFORMED


# --- the bind tag and the MAC share mac_key: a subject alone must not read as a payload -----------


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
