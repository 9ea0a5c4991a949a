"""A pytest plugin that swaps ``SDKCodec`` in for the SDK's built-in ``AESGCMRequestStateCodec``.

Used by tests/test_mcp_sdk_suite.py to run the SDK's own request-state tests
(shipped in the ``mcp`` sdist) against our codec: ``-p tests.support.sdk_codec_swap``.
Loaded before the test modules import the SDK's names, so every
``AESGCMRequestStateCodec(keys)`` they build, and every policy built from
``keys=[...]`` or ``ephemeral()``, is an ``SDKCodec``. ``RS_SDK_CODEC_MODE``
picks our mode (default ``encrypted``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence

import mcp.server.request_state as request_state

import requeststate as rs
from requeststate.mcp import SDKCodec

_SDK_CODEC = request_state.AESGCMRequestStateCodec


class SwappedCodec(SDKCodec):
    """``SDKCodec`` behind the SDK codec's constructor: a ring of raw secrets, newest first."""

    def __init__(self, keys: Sequence[bytes | bytearray | str]) -> None:
        # The SDK's own checks (types, length, duplicates) and its messages, then our ring.
        _SDK_CODEC(keys)
        # The SDK's test keys are one byte repeated (b"a" * 32), which KeyRing refuses as
        # no secret at all: each is stretched into a random-looking key of its own, so
        # equal keys stay equal and distinct keys distinct.
        secrets = [_stretched(key.encode() if isinstance(key, str) else bytes(key)) for key in keys]
        # The default max_token_bytes (128 KiB): the suite seals payloads of up to 64 KiB.
        super().__init__(rs.KeyRing(*secrets), mode=rs.Mode(os.environ.get("RS_SDK_CODEC_MODE", "encrypted")))


def _stretched(key: bytes) -> bytes:
    return hashlib.sha256(b"sdk test key " + key).digest()


request_state.AESGCMRequestStateCodec = SwappedCodec  # type: ignore[misc,assignment]
