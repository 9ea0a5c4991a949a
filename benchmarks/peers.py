"""The peers, each used the way a server author would reasonably use it for ``requestState``.

One round is what a server does per input-required round trip: mint a token
for the state, then check the echoed token and get the state back. Every peer
carries the same state and the same identity claims as our codec (the user,
``sub``, and the tool) with a 300 s lifetime wherever the peer enforces one,
and its decode checks them, so it does what ``rs.decode`` does:

- **mcp SDK**: ``mcp.server.request_state.RequestStateBoundary`` under
  ``RequestStateSecurity(keys=[secret], bind_principal=<the user>)``, its
  built-in ``AESGCMRequestStateCodec``. Encode is ``boundary._seal(ctx, state)``:
  the SDK's claims envelope (version, iat, exp, method, target, arguments
  digest, audience, salted principal claim) as compact JSON, then
  ``codec.seal``. Decode is ``boundary._unseal(ctx)``: ``codec.unseal``, then
  ``json.loads`` and the version, iat, exp, request-binding, audience and
  principal checks. ``ctx`` is a stand-in holding only the method
  (``tools/call``) and params the boundary reads; the middleware plumbing
  around these two calls (``dataclasses.replace`` of the context, the result
  model copy) is not timed.
- **itsdangerous**: ``URLSafeTimedSerializer(secret, salt=...)``, ``dumps``
  and ``loads(max_age=300)`` of the claims dict.
- **Fernet** (cryptography): ``encrypt`` of the claims as JSON, ``decrypt(ttl=300)``.
- **PyJWT HS256**: ``jwt.encode`` with an ``exp`` claim, ``jwt.decode(algorithms=["HS256"])``.
- **joserfc JWE**: compact JWE, ``dir`` + ``A256GCM``, of the claims as JSON; the
  decode validates ``exp`` and ``sub`` with a ``JWTClaimsRegistry``.
- **pyseto v4.local**: ``pyseto.encode(..., exp=300)`` of the claims with the
  ``json`` serializer, ``pyseto.decode`` (which checks ``exp``).

Peers are optional (the ``bench`` extra): a missing one is reported as not
installed. They are imported with ``importlib`` so that type-checking the
harness needs none of them.
"""

from __future__ import annotations

import base64
import importlib
import importlib.metadata
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from cryptography.fernet import Fernet

from .cases import SUBJECT, TOOL, TTL

__all__ = ["PEERS", "Peer", "build_peer"]

_COMPACT: Final = (",", ":")


@dataclass(frozen=True)
class Peer:
    """A peer: its name in the tables, the distribution it comes from, and how one round is built."""

    name: str
    distribution: str
    build: Callable[[str], Callable[[], object]]
    """Given the state, the callable that runs one round and returns the state."""


def _claims(state: str) -> dict[str, object]:
    return {"s": state, "sub": SUBJECT, "tool": TOOL}


def _state_of(claims: Mapping[str, Any]) -> str:
    # The binding check every peer's decode ends with, as ``rs.decode`` does it.
    if claims["sub"] != SUBJECT or claims["tool"] != TOOL:
        raise ValueError("token bound to another identity")
    state: str = claims["s"]
    return state


@dataclass(frozen=True)
class _RequestContext:
    """The two fields of ``ServerRequestContext`` that the SDK's boundary reads."""

    method: str
    params: Mapping[str, Any]


def _mcp_sdk(state: str) -> Callable[[], object]:
    request_state = importlib.import_module("mcp.server.request_state")
    security = request_state.RequestStateSecurity(
        keys=[os.urandom(32)], ttl=float(TTL), bind_principal=lambda ctx: SUBJECT
    )
    boundary = request_state.RequestStateBoundary(security, default_audience="bench-server")
    params = {"name": TOOL, "arguments": {"date": "2026-12-01"}}
    first = _RequestContext("tools/call", params)

    def one_round() -> object:
        token = boundary._seal(first, state)
        plaintext, _binding = boundary._unseal(
            _RequestContext("tools/call", {**params, "requestState": token})
        )
        return plaintext

    return one_round


def _itsdangerous(state: str) -> Callable[[], object]:
    itsdangerous = importlib.import_module("itsdangerous")
    serializer = itsdangerous.URLSafeTimedSerializer(os.urandom(32), salt="requestState")

    def one_round() -> object:
        token = serializer.dumps(_claims(state))
        return _state_of(serializer.loads(token, max_age=TTL))

    return one_round


def _fernet(state: str) -> Callable[[], object]:
    fernet = Fernet(base64.urlsafe_b64encode(os.urandom(32)))

    def one_round() -> object:
        token = fernet.encrypt(json.dumps(_claims(state), separators=_COMPACT).encode()).decode("ascii")
        return _state_of(json.loads(fernet.decrypt(token, ttl=TTL)))

    return one_round


def _pyjwt(state: str) -> Callable[[], object]:
    jwt = importlib.import_module("jwt")
    key = os.urandom(32)

    def one_round() -> object:
        token = jwt.encode({**_claims(state), "exp": int(time.time()) + TTL}, key, algorithm="HS256")
        return _state_of(jwt.decode(token, key, algorithms=["HS256"]))

    return one_round


def _joserfc(state: str) -> Callable[[], object]:
    jwe = importlib.import_module("joserfc.jwe")
    key = importlib.import_module("joserfc.jwk").OctKey.import_key(os.urandom(32))
    registry = importlib.import_module("joserfc.jwt").JWTClaimsRegistry(
        exp={"essential": True}, sub={"essential": True, "value": SUBJECT}
    )
    header = {"alg": "dir", "enc": "A256GCM"}

    def one_round() -> object:
        claims = {**_claims(state), "exp": int(time.time()) + TTL}
        token = jwe.encrypt_compact(header, json.dumps(claims, separators=_COMPACT), key)
        opened = json.loads(jwe.decrypt_compact(token, key).plaintext)
        registry.validate(opened)
        return _state_of(opened)

    return one_round


def _pyseto(state: str) -> Callable[[], object]:
    pyseto = importlib.import_module("pyseto")
    key = pyseto.Key.new(version=4, purpose="local", key=os.urandom(32))

    def one_round() -> object:
        token = pyseto.encode(key, _claims(state), serializer=json, exp=TTL).decode("ascii")
        return _state_of(pyseto.decode(key, token, deserializer=json).payload)

    return one_round


PEERS: Final = (
    Peer("mcp SDK", "mcp", _mcp_sdk),
    Peer("itsdangerous", "itsdangerous", _itsdangerous),
    Peer("Fernet", "cryptography", _fernet),
    Peer("PyJWT HS256", "PyJWT", _pyjwt),
    Peer("joserfc JWE", "joserfc", _joserfc),
    Peer("pyseto v4.local", "pyseto", _pyseto),
)


def build_peer(peer: Peer, state: str) -> Callable[[], object] | None:
    """The peer's round for ``state``, checked once; ``None`` if the peer is not installed.

    Raises:
        RuntimeError: the round does not give the state back.
    """
    try:
        importlib.metadata.version(peer.distribution)
        one_round = peer.build(state)
    except (ModuleNotFoundError, importlib.metadata.PackageNotFoundError):
        return None
    if one_round() != state:
        raise RuntimeError(f"{peer.name}: a round did not give the state back")
    return one_round
