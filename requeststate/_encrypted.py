"""The encrypted modes: one AEAD framing, ``prefix + B64(nonce || ciphertext || tag)``.

``v1e.`` is AES-256-GCM (the shared spec, read by mcp.d); ``v1x.`` is
XChaCha20-Poly1305 (our extension, for keys that mint more than 2^32 tokens).
In both, the ASCII bind tag is the associated data, so a token presented for
another identity fails the tag check before any plaintext exists.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Final, Protocol, final

from cryptography.exceptions import InvalidTag

from ._base64 import b64decode, b64encode
from ._errors import Reason
from ._keys import BoundKey, SubKeys

__all__ = ["ENCRYPTED", "XCHACHA", "AeadMode"]

_TAG_BYTES: Final = 16


class Aead(Protocol):
    """The shape of ``AESGCM`` and ``XChaCha20Poly1305``."""

    def encrypt(self, nonce: bytes, data: bytes, associated_data: bytes, /) -> bytes: ...
    def decrypt(self, nonce: bytes, data: bytes, associated_data: bytes, /) -> bytes: ...


@final
class AeadMode:
    """``prefix + B64(nonce || ciphertext || tag)`` under the AEAD ``cipher(key)`` returns."""

    __slots__ = ("_cipher", "_counts_nonces", "_shortest_blob", "nonce_bytes", "prefix")

    def __init__(
        self, prefix: str, nonce_bytes: int, cipher: Callable[[SubKeys], Aead], *, counts_nonces: bool
    ) -> None:
        self.prefix: Final = prefix
        self.nonce_bytes: Final = nonce_bytes
        self._cipher: Final = cipher
        self._shortest_blob: Final = nonce_bytes + _TAG_BYTES
        # Random 96-bit nonces allow 2^32 seals per key; longer nonces need no count.
        self._counts_nonces: Final = counts_nonces

    def seal(self, payload: bytes, key: SubKeys, aad: bytes, nonce: bytes) -> str:
        """Encrypt ``payload`` under ``nonce``, which must never repeat under a key; ``aad`` is the bind tag.

        Raises ``KeyBudgetExhausted`` when a counted key has sealed its limit.
        """
        if self._counts_nonces:
            count = next(key.aesgcm_count)
            if count >= key.aesgcm_warn_at:  # the common case stays one comparison
                key.check_aesgcm_budget(count)
        sealed = self._cipher(key).encrypt(nonce, payload, aad)
        return self.prefix + b64encode(nonce + sealed)

    def open(self, token: str, bound_keys: tuple[BoundKey, ...]) -> tuple[bytes, str] | Reason:
        """The decrypted payload and the bind tag it was authenticated under, or why not."""
        blob = b64decode(token[len(self.prefix) :])
        if blob is None or len(blob) < self._shortest_blob:
            return Reason.MALFORMED
        nonce, sealed = blob[: self.nonce_bytes], blob[self.nonce_bytes :]
        for key, bind_tag, aad in bound_keys:
            try:
                return self._cipher(key).decrypt(nonce, sealed, aad), bind_tag
            except InvalidTag:  # both AEADs raise it for a tag that does not verify
                continue
        return Reason.BAD_SIGNATURE

    def __repr__(self) -> str:
        return f"AeadMode({self.prefix!r})"


ENCRYPTED: Final = AeadMode("v1e.", 12, attrgetter("aesgcm"), counts_nonces=True)
XCHACHA: Final = AeadMode("v1x.", 24, attrgetter("xchacha"), counts_nonces=False)
