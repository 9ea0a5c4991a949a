"""The state schemes of the probe's gallery (tests/support/probe_gallery.py): how each server
wraps its state on the way out and trusts it on the way in.

DELIBERATELY INSECURE: every scheme in ``BROKEN`` trusts a ``requestState`` it cannot
authenticate, in its own way. Never copy them. ``SOUND_BUT_LENIENT`` is sound, and reads
base64 leniently (another spelling of a token is the same token).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import hmac
import json
import os
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

import requeststate as rs

KEY: Final = bytes.fromhex("c41d7e93a20f5b68e7d1b4c9f03a26e58b1c7d4f90e2a3b65d8c1f07e4b9a236")


@dataclass(frozen=True)
class Call:
    """What a scheme may bind a state to."""

    method: str
    target: str
    arguments: Mapping[str, Any]
    user: str


class Refused(Exception):
    """A scheme's refusal: the middleware answers -32602."""


Seal = Callable[[str, Call], str]
Open = Callable[[str, Call], str]  # raises Refused (or crashes) on a state it will not trust


def _b64u(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64u(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise Refused from None


def _mac(data: bytes) -> bytes:
    return hmac.new(KEY, data, hashlib.sha256).digest()


# --- keyless encodings: anyone can decode, change and re-encode ---------------------------------------------

KEYLESS: Final[dict[str, tuple[Seal, Open]]] = {
    "json": (lambda s, c: s, lambda t, c: t),
    "base64url(zlib(json))": (
        lambda s, c: _b64u(zlib.compress(s.encode())),
        lambda t, c: zlib.decompress(_unb64u(t)).decode(),
    ),
    "base64(json)": (
        lambda s, c: base64.b64encode(s.encode()).decode(),
        lambda t, c: base64.b64decode(t).decode(),
    ),
    "base64url(gzip(json))": (
        lambda s, c: _b64u(gzip.compress(s.encode())),
        lambda t, c: gzip.decompress(_unb64u(t)).decode(),
    ),
    "hex(json)": (lambda s, c: s.encode().hex(), lambda t, c: bytes.fromhex(t).decode()),
    "hex(zlib(json))": (
        lambda s, c: zlib.compress(s.encode()).hex(),
        lambda t, c: zlib.decompress(bytes.fromhex(t)).decode(),
    ),
}

_NONE_HEADER: Final = _b64u(b'{"alg":"none","typ":"JWT"}')
_HS256_HEADER: Final = _b64u(b'{"alg":"HS256","typ":"JWT"}')


def _jwt_none_open(token: str, call: Call) -> str:
    header, payload, signature = token.split(".")
    if json.loads(_unb64u(header)).get("alg") != "none" or signature:
        raise Refused
    return _unb64u(payload).decode()


def _jwt_hs256_seal(state: str, call: Call) -> str:
    signing = f"{_HS256_HEADER}.{_b64u(state.encode())}"
    return f"{signing}.{_b64u(_mac(signing.encode()))}"


def _jwt_confused_open(token: str, call: Call) -> str:
    """The classic bug: the token names its own algorithm, and ``none`` means no check."""
    header, payload, signature = token.split(".")
    trusted = json.loads(_unb64u(header)).get("alg") == "none"
    if not trusted and not hmac.compare_digest(_unb64u(signature), _mac(f"{header}.{payload}".encode())):
        raise Refused
    return _unb64u(payload).decode()


def _hashed_seal(state: str, call: Call) -> str:
    return f"{_b64u(state.encode())}.{hashlib.sha256(state.encode()).hexdigest()}"


def _hashed_open(token: str, call: Call) -> str:
    """An unkeyed SHA-256 "MAC": it catches typos, not forgers."""
    body, _, digest = token.partition(".")
    state = _unb64u(body)
    if not hmac.compare_digest(hashlib.sha256(state).hexdigest(), digest):
        raise Refused
    return state.decode()


def _mac_optional(prefix: str) -> tuple[Seal, Open]:
    """A real HMAC, checked as a prefix of the expected one: an empty or cut MAC passes."""

    def seal(state: str, call: Call) -> str:
        payload = _b64u(state.encode())
        return f"{prefix}{payload}.{_b64u(_mac(payload.encode()))}"

    def open_(token: str, call: Call) -> str:
        payload, _, mac = token.removeprefix(prefix).partition(".")
        if not _b64u(_mac(payload.encode())).startswith(mac):
            raise Refused
        return _unb64u(payload).decode()

    return seal, open_


def _codec_seal(bind: Callable[[Call], tuple[str, str]]) -> tuple[Seal, Open]:
    """requeststate tokens, bound to ``bind(call)`` = (subject, tool): sound crypto, a binding left out."""

    def seal(state: str, call: Call) -> str:
        subject, tool = bind(call)
        return rs.encode(state, KEY, mode="encrypted", subject=subject, tool=tool)

    def open_(token: str, call: Call) -> str:
        subject, tool = bind(call)
        state = rs.decode(token, KEY, mode="encrypted", subject=subject, tool=tool)
        if state is None:
            raise Refused
        return state

    return seal, open_


def _arguments_digest(call: Call) -> str:
    return hashlib.sha256(json.dumps(dict(call.arguments), sort_keys=True).encode()).hexdigest()


def _form_seal(state: str, call: Call) -> str:
    return "&".join(f"{name}={value}" for name, value in json.loads(state).items())


def _form_open(token: str, call: Call) -> str:
    """Plain text, trusted: the state is whatever the client says it is."""
    fields = dict(piece.split("=", 1) for piece in token.split("&"))
    return json.dumps({name: int(value) if value.isdigit() else value for name, value in fields.items()})


def _expiring_seal(state: str, call: Call) -> str:
    body = _b64u(json.dumps({"s": state, "exp": int(time.time()) + 1}).encode())
    return f"{body}.{_b64u(_mac(body.encode()))}"


def _expiring_open(token: str, call: Call) -> str:
    """Checks the MAC, then forgets to check ``exp``."""
    body, _, mac = token.partition(".")
    if not hmac.compare_digest(_unb64u(mac), _mac(body.encode())):
        raise Refused
    state: str = json.loads(_unb64u(body))["s"]
    return state


# --- flaws a probe reading only the bytes missed (issue 22) -------------------------------------------


def guessable(key: bytes) -> tuple[Seal, Open]:
    """A correct HMAC-SHA256 over the whole state, under ``key``: sound, unless anyone can guess it."""

    def seal(state: str, call: Call) -> str:
        body = _b64u(state.encode())
        return f"{body}.{_b64u(hmac.new(key, body.encode(), hashlib.sha256).digest())}"

    def open_(token: str, call: Call) -> str:
        body, _, mac = token.partition(".")
        if not hmac.compare_digest(_unb64u(mac), hmac.new(key, body.encode(), hashlib.sha256).digest()):
            raise Refused
        return _unb64u(body).decode()

    return seal, open_


def _ctr(nonce: bytes) -> Cipher[modes.CTR]:
    return Cipher(algorithms.AES(KEY), modes.CTR(nonce))


def _ctr_seal(state: str, call: Call) -> str:
    nonce = os.urandom(16)
    encryptor = _ctr(nonce).encryptor()
    return _b64u(nonce + encryptor.update(state.encode()) + encryptor.finalize())


def _ctr_open(token: str, call: Call) -> str:
    """AES-CTR and no MAC: secret, but a flipped ciphertext bit flips the same plaintext bit."""
    raw = _unb64u(token)
    decryptor = _ctr(raw[:16]).decryptor()
    return (decryptor.update(raw[16:]) + decryptor.finalize()).decode()


def _prefixed(prefix: str, scheme: tuple[Seal, Open]) -> tuple[Seal, Open]:
    """``scheme`` behind ``prefix`` (``ctr:``), which the opening checks and strips."""
    seal, open_ = scheme

    def open_prefixed(token: str, call: Call) -> str:
        if not token.startswith(prefix):
            raise Refused
        return open_(token.removeprefix(prefix), call)

    return (lambda state, call: prefix + seal(state, call)), open_prefixed


def _covered(draft: Mapping[str, Any]) -> str:
    return hmac.new(KEY, f"{draft['restaurant']}|{draft['step']}".encode(), hashlib.sha256).hexdigest()


def _partial_seal(state: str, call: Call) -> str:
    draft = json.loads(state)
    return json.dumps({"state": draft, "mac": _covered(draft)})


def _partial_open(token: str, call: Call) -> str:
    """An HMAC over the restaurant and the step only: the price goes uncovered."""
    envelope = json.loads(token)
    if not hmac.compare_digest(_covered(envelope["state"]), str(envelope["mac"])):
        raise Refused
    return json.dumps(envelope["state"])


def wide(padding: int, *, price_covered: bool) -> tuple[Seal, Open]:
    """The state behind ``padding`` members (``pad.m00``...), all under an HMAC; the price too, if
    ``price_covered``. Uncovered, the price is member ``padding + 2`` of ``padding + 4`` (the MAC last)."""

    def covered(envelope: Mapping[str, Any]) -> str:
        draft = envelope["state"]
        members = [envelope["pad"], draft["restaurant"], draft["step"]]
        if price_covered:
            members.append(draft["price"])
        return hmac.new(KEY, json.dumps(members).encode(), hashlib.sha256).hexdigest()

    def seal(state: str, call: Call) -> str:
        envelope = {"pad": {f"m{i:02}": i for i in range(padding)}, "state": json.loads(state)}
        return json.dumps({**envelope, "mac": covered(envelope)})

    def open_(token: str, call: Call) -> str:
        envelope = json.loads(token)
        if not hmac.compare_digest(covered(envelope), str(envelope["mac"])):
            raise Refused
        return json.dumps(envelope["state"])

    return seal, open_


def _v1_digest_seal(state: str, call: Call) -> str:
    return f"v1.{_b64u(state.encode())}.{_b64u(hashlib.sha256(state.encode()).digest())}"


def _v1_digest_open(token: str, call: Call) -> str:
    """Our ``v1.`` prefix over an unkeyed SHA-256 of the decoded state."""
    prefix, body, digest = token.split(".")
    state = _unb64u(body)
    if prefix != "v1" or not hmac.compare_digest(hashlib.sha256(state).digest(), _unb64u(digest)):
        raise Refused
    return state.decode()


def _v1e_digest_seal(state: str, call: Call) -> str:
    return "v1e." + _b64u(state.encode() + hashlib.sha256(state.encode()).digest())


def _v1e_digest_open(token: str, call: Call) -> str:
    """Our ``v1e.`` prefix over a readable state with its unkeyed SHA-256 appended."""
    prefix, _, body = token.partition(".")
    raw = _unb64u(body)
    state, digest = raw[:-32], raw[-32:]
    if prefix != "v1e" or not hmac.compare_digest(hashlib.sha256(state).digest(), digest):
        raise Refused
    return state.decode()


def _digest_first_seal(state: str, call: Call) -> str:
    return f"{hashlib.sha256(state.encode()).hexdigest()}.{_b64u(state.encode())}"


def _digest_first_open(token: str, call: Call) -> str:
    """An unkeyed SHA-256 of the decoded state, in hex, before it."""
    digest, _, body = token.partition(".")
    state = _unb64u(body)
    if not hmac.compare_digest(hashlib.sha256(state).hexdigest(), digest):
        raise Refused
    return state.decode()


def _v1e_digest_first_seal(state: str, call: Call) -> str:
    return "v1e." + _b64u(hashlib.sha256(state.encode()).digest() + state.encode())


def _v1e_digest_first_open(token: str, call: Call) -> str:
    """Our ``v1e.`` prefix over a readable state after its unkeyed SHA-256."""
    prefix, _, body = token.partition(".")
    raw = _unb64u(body)
    digest, state = raw[:32], raw[32:]
    if prefix != "v1e" or not hmac.compare_digest(hashlib.sha256(state).digest(), digest):
        raise Refused
    return state.decode()


def _bound_mac(state: bytes, nonce: bytes, call: Call) -> bytes:
    return _mac(b"|".join([state, nonce, call.target.encode(), _arguments_digest(call).encode()]))


def _lenient_seal(state: str, call: Call) -> str:
    nonce = os.urandom(16)
    return f"{_b64u(state.encode())}.{_b64u(nonce)}.{_b64u(_bound_mac(state.encode(), nonce, call))}"


def _lenient_open(token: str, call: Call) -> str:
    """Sound: an HMAC under a strong key over the decoded state, a nonce, the tool and its arguments.
    Lenient: either base64 alphabet, any padding (another spelling of a token is the same token)."""
    body, nonce, mac = token.split(".")
    state = _unb64u(body)
    if not hmac.compare_digest(_bound_mac(state, _unb64u(nonce), call), _unb64u(mac)):
        raise Refused
    return state.decode()


SOUND_BUT_LENIENT: Final = (_lenient_seal, _lenient_open)


def single_use_by_text() -> tuple[Seal, Open]:
    """``SOUND_BUT_LENIENT``, each token redeemed once: by its text, which another spelling changes."""
    redeemed: set[str] = set()

    def open_(token: str, call: Call) -> str:
        if token in redeemed:
            raise Refused
        state = _lenient_open(token, call)
        redeemed.add(token)
        return state

    return _lenient_seal, open_


BROKEN: Final[dict[str, tuple[Seal, Open]]] = {
    **KEYLESS,
    "jwt alg none": (lambda s, c: f"{_NONE_HEADER}.{_b64u(s.encode())}.", _jwt_none_open),
    "jwt accepting alg none": (_jwt_hs256_seal, _jwt_confused_open),
    "unkeyed hash": (_hashed_seal, _hashed_open),
    "mac optional, two parts": _mac_optional(""),
    "mac optional, three parts": _mac_optional("gx."),
    "no argument binding": _codec_seal(lambda c: (c.user, f"{c.method}:{c.target}")),
    "no user binding": _codec_seal(lambda c: ("", f"{c.method}:{c.target}:{_arguments_digest(c)}")),
    "plaintext echo": (_form_seal, _form_open),
    "expiry not checked": (_expiring_seal, _expiring_open),
    "guessable key": guessable(b"secret"),
    "aes-ctr without a mac": (_ctr_seal, _ctr_open),
    "aes-ctr without a mac, behind ctr:": _prefixed("ctr:", (_ctr_seal, _ctr_open)),
    "mac over part of the state": (_partial_seal, _partial_open),
    # 44 members, the price 43rd: a sample of 24 evenly spread over them edited the 42nd and 44th.
    "mac over part of a wide state": wide(40, price_covered=False),
    "v1. prefix over an unkeyed hash": (_v1_digest_seal, _v1_digest_open),
    "v1e. prefix over an unkeyed hash": (_v1e_digest_seal, _v1e_digest_open),
    "unkeyed hash before the state": (_digest_first_seal, _digest_first_open),
    "v1e. prefix over an unkeyed hash before the state": (_v1e_digest_first_seal, _v1e_digest_first_open),
}
