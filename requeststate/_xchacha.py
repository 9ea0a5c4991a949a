"""XChaCha20-Poly1305 (IETF) from libsodium, shaped like ``cryptography``'s AEAD objects."""

from __future__ import annotations

from typing import Final, NoReturn, final

from cryptography.exceptions import InvalidTag
from nacl.bindings import (
    crypto_aead_xchacha20poly1305_ietf_decrypt,
    crypto_aead_xchacha20poly1305_ietf_encrypt,
)
from nacl.exceptions import CryptoError

__all__ = ["XChaCha20Poly1305"]


@final
class XChaCha20Poly1305:
    """``encrypt``/``decrypt(nonce, data, aad)`` like ``AESGCM``, so one framing serves both.

    ``decrypt`` raises ``cryptography``'s ``InvalidTag`` when the tag does not verify, as
    ``AESGCM`` does, so the framing catches one error and never imports PyNaCl itself.
    """

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        self._key: Final = key

    def encrypt(self, nonce: bytes, data: bytes, associated_data: bytes) -> bytes:
        """``ciphertext || tag`` of ``data`` under a 24-byte ``nonce``."""
        return crypto_aead_xchacha20poly1305_ietf_encrypt(data, associated_data, nonce, self._key)

    def decrypt(self, nonce: bytes, data: bytes, associated_data: bytes) -> bytes:
        """The plaintext of ``ciphertext || tag``; raises ``InvalidTag`` on a bad tag."""
        try:
            return crypto_aead_xchacha20poly1305_ietf_decrypt(data, associated_data, nonce, self._key)
        except CryptoError:
            raise InvalidTag from None

    def __repr__(self) -> str:
        return "XChaCha20Poly1305(<key>)"

    def __reduce__(self) -> NoReturn:
        # A pickle would carry the raw key wherever it goes.
        raise TypeError("XChaCha20Poly1305 cannot be pickled: it holds a key")
