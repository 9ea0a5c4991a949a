"""The encrypted modes: one AEAD framing, ``prefix + B64(nonce || ciphertext || tag)``.

``v1e.`` is AES-256-GCM (the shared spec, read by mcp.d); ``v1x.`` is
XChaCha20-Poly1305 (our extension, for keys that mint more than 2^32 tokens).
In both, the ASCII bind tag is the associated data, so a token presented for
another identity fails the tag check before any plaintext exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol, final

from cryptography.exceptions import InvalidTag

from ._base64 import b64decode, b64encode
from ._errors import InvalidToken, Reason
from ._keys import BoundKey, SubKeys

__all__ = ["ENCRYPTED", "XCHACHA", "AeadMode"]

_TAG_BYTES: Final = 16


class Aead(Protocol):
    """The shape of ``AESGCM`` and ``XChaCha20Poly1305``."""

    def encrypt(self, nonce: bytes, data: bytes, associated_data: bytes, /) -> bytes: ...
    def decrypt(self, nonce: bytes, data: bytes, associated_data: bytes, /) -> bytes: ...


def _aesgcm(key: SubKeys) -> Aead:
    return key.aesgcm


def _xchacha(key: SubKeys) -> Aead:
    return key.xchacha


@final
class AeadMode:
    """``prefix + B64(nonce || ciphertext || tag)`` under the AEAD ``cipher(key)`` gives."""

    __slots__ = ("_cipher", "_counts_seals", "_shortest_blob", "nonce_bytes", "prefix")

    def __init__(
        self, prefix: str, nonce_bytes: int, cipher: Callable[[SubKeys], Aead], *, counts_seals: bool
    ) -> None:
        self.prefix: Final = prefix
        self.nonce_bytes: Final = nonce_bytes
        self._cipher: Final = cipher
        # Random 96-bit nonces allow 2^32 seals per key; longer nonces need no count.
        self._counts_seals: Final = counts_seals
        # The shortest well-formed body: a nonce and a tag.
        self._shortest_blob: Final = nonce_bytes + _TAG_BYTES

    def seal(self, payload: bytes, minting: BoundKey, nonce: bytes) -> str:
        """Encrypt ``payload`` under ``nonce``, which must never repeat under a key, with the bind tag as AAD.

        Raises ``KeyBudgetExhausted`` when an AES-GCM key has sealed its limit.
        """
        if self._counts_seals:
            minting.key.count_aesgcm_seal()
        sealed = self._cipher(minting.key).encrypt(nonce, payload, minting.aad)
        return self.prefix + b64encode(nonce + sealed)

    def open(self, token: str, bound: tuple[BoundKey, ...]) -> tuple[bytes, BoundKey]:
        """The decrypted payload and the key it authenticated under, with its bind tag.

        Raises:
            InvalidToken: ``malformed`` framing, or ``bad_signature`` under every key.
        """
        blob = self._framed(token)
        nonce, sealed = blob[: self.nonce_bytes], blob[self.nonce_bytes :]
        for sealer in bound:
            try:
                return self._cipher(sealer.key).decrypt(nonce, sealed, sealer.aad), sealer
            except InvalidTag:  # both AEADs raise it for a tag that does not verify
                continue
        raise InvalidToken(Reason.BAD_SIGNATURE)

    def peek(self, token: str) -> None:
        """Nothing: a sealed token shows no payload without its key. Checks the framing only.

        Raises:
            InvalidToken: ``malformed`` framing (not a nonce and a tag in base64url).
        """
        self._framed(token)

    def _framed(self, token: str) -> bytes:
        """The decoded body, at least a nonce and a tag long; ``InvalidToken(malformed)`` otherwise."""
        blob = b64decode(token[len(self.prefix) :])
        if blob is None or len(blob) < self._shortest_blob:
            raise InvalidToken(Reason.MALFORMED)
        return blob

    def __repr__(self) -> str:
        return f"AeadMode({self.prefix!r})"


ENCRYPTED: Final = AeadMode("v1e.", 12, _aesgcm, counts_seals=True)
XCHACHA: Final = AeadMode("v1x.", 24, _xchacha, counts_seals=False)
