"""MCP identities and tokens from the wire format alone (docs/wire-format.md), never through requeststate.

Tokens are minted and opened as an mcp.d server would, through the
independent tests/support/reference.py; the MCP bindings' tool strings are built here
from their documented layout, so a change of layout fails a test.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from tests.support.reference import b64, bind_tag, enc_key, mac_key, token

__all__ = ["b64", "bind_tag", "boundary_tool", "mint", "open_token", "principal"]

BOUNDARY_CONTEXT = "requeststate.mcp/boundary/1"
SDK_CODEC_TOOL = '["requeststate.mcp/sdk-codec/1"]'


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def mint(secret: bytes, state: str, exp: int, subject: str, tool: str | None, mode: str) -> str:
    """A token as mcp.d writes it (no id member), through tests/support/reference.py."""
    return token(mode, secret, state, exp, subject, tool, os.urandom(24 if mode == "xchacha" else 12))


def open_token(secret: bytes, token: str, subject: str, tool: str | None) -> dict[str, Any]:
    """The payload of a token bound to (subject, tool); raises if it is not."""
    tag = bind_tag(secret, subject, tool)
    if token.startswith("v1."):
        _, body, mac = token.split(".")
        payload = unb64(body)
        expected = hmac.new(mac_key(secret), payload, hashlib.sha256).digest()
        if not hmac.compare_digest(unb64(mac), expected):
            raise ValueError("bad MAC")
    else:
        blob = unb64(token.removeprefix("v1e."))
        payload = AESGCM(enc_key(secret)).decrypt(blob[:12], blob[12:], tag.encode())
    claims: dict[str, Any] = json.loads(payload)
    if claims["b"] != tag:
        raise ValueError("bound to another identity")
    return claims


def arguments_digest(arguments: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(arguments, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def boundary_tool(
    method: str, target: str, arguments: dict[str, Any] | None, audience: str | None, principal: bool
) -> str:
    """The documented layout: [context, method, target, digest or null, audience or null, principal bound]."""
    digest = None if arguments is None else arguments_digest(arguments)
    return json.dumps([BOUNDARY_CONTEXT, method, target, digest, audience, principal], separators=(",", ":"))


def principal(user: str | None, client: str = "test-client", issuer: str = "https://issuer.test") -> str:
    """The SDK's authenticated principal for a token of ``user``: "" when anonymous."""
    return "" if user is None else json.dumps([client, issuer, user], separators=(",", ":"))
