"""The encrypted modes: one AEAD framing, ``prefix + B64(nonce || ciphertext || tag)``.

``v1e.`` is AES-256-GCM (the shared spec, read by mcp.d); ``v1x.`` is
XChaCha20-Poly1305 (our extension, for keys that mint more than 2^32 tokens).
In both, the ASCII bind tag is the associated data, so a token presented for
another identity fails the tag check before any plaintext exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, final

from cryptography.exceptions import InvalidTag
from nacl.bindings import (
    crypto_aead_xchacha20poly1305_ietf_decrypt,
    crypto_aead_xchacha20poly1305_ietf_encrypt,
)
from nacl.exceptions import CryptoError

from ._base64 import b64decode, b64encode
from ._errors import InvalidToken, Reason
from ._keys import SubKeys

__all__ = ["ENCRYPTED", "XCHACHA", "AeadMode"]

_TAG_BYTES: Final = 16

Encrypt = Callable[[SubKeys, bytes, bytes, bytes], bytes]
"""``(key, nonce, payload, aad) -> ciphertext || tag``."""
Decrypt = Callable[[SubKeys, bytes, bytes, bytes], "bytes | None"]
"""``(key, nonce, ciphertext || tag, aad) -> payload``, or ``None`` when the tag fails."""


@final
class AeadMode:
    """``prefix + B64(nonce || ciphertext || tag)`` under one AEAD."""

    __slots__ = ("_decrypt", "_encrypt", "nonce_bytes", "prefix")

    def __init__(self, prefix: str, nonce_bytes: int, encrypt: Encrypt, decrypt: Decrypt) -> None:
        self.prefix: Final = prefix
        self.nonce_bytes: Final = nonce_bytes
        self._encrypt = encrypt
        self._decrypt = decrypt

    def seal(self, payload: bytes, key: SubKeys, bind_tag: str, nonce: bytes) -> str:
        """Encrypt ``payload`` under ``nonce``, which must never repeat under a key."""
        sealed = self._encrypt(key, nonce, payload, bind_tag.encode("ascii"))
        return f"{self.prefix}{b64encode(nonce + sealed)}"

    def open(self, token: str, keys: tuple[SubKeys, ...], bind_tags: tuple[str, ...]) -> tuple[bytes, str]:
        """The decrypted payload and the bind tag it was authenticated under."""
        blob = b64decode(token[len(self.prefix) :])
        if blob is None or len(blob) < self.nonce_bytes + _TAG_BYTES:
            raise InvalidToken(Reason.MALFORMED)
        nonce, sealed = blob[: self.nonce_bytes], blob[self.nonce_bytes :]
        for key, bind_tag in zip(keys, bind_tags, strict=True):
            payload = self._decrypt(key, nonce, sealed, bind_tag.encode("ascii"))
            if payload is not None:
                return payload, bind_tag
        raise InvalidToken(Reason.BAD_SIGNATURE)

    def __repr__(self) -> str:
        return f"AeadMode({self.prefix!r})"


def _aesgcm_encrypt(key: SubKeys, nonce: bytes, payload: bytes, aad: bytes) -> bytes:
    count = next(key.aesgcm_count)
    if count >= key.aesgcm_warn_at:  # the common case stays one comparison
        key.check_aesgcm_budget(count)
    return key.aesgcm.encrypt(nonce, payload, aad)


def _aesgcm_decrypt(key: SubKeys, nonce: bytes, sealed: bytes, aad: bytes) -> bytes | None:
    try:
        return key.aesgcm.decrypt(nonce, sealed, aad)
    except InvalidTag:
        return None


def _xchacha_encrypt(key: SubKeys, nonce: bytes, payload: bytes, aad: bytes) -> bytes:
    return crypto_aead_xchacha20poly1305_ietf_encrypt(payload, aad, nonce, key.xchacha_key)


def _xchacha_decrypt(key: SubKeys, nonce: bytes, sealed: bytes, aad: bytes) -> bytes | None:
    try:
        return crypto_aead_xchacha20poly1305_ietf_decrypt(sealed, aad, nonce, key.xchacha_key)
    except CryptoError:
        return None


ENCRYPTED: Final = AeadMode("v1e.", 12, _aesgcm_encrypt, _aesgcm_decrypt)
XCHACHA: Final = AeadMode("v1x.", 24, _xchacha_encrypt, _xchacha_decrypt)
