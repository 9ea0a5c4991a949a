"""The ``v1e.`` encrypted mode: AES-256-GCM, the bind tag as associated data."""

from __future__ import annotations

from typing import Final, final

from cryptography.exceptions import InvalidTag

from ._base64 import b64decode, b64encode
from ._errors import InvalidToken, Reason
from ._keys import SubKeys

__all__ = ["ENCRYPTED"]

_TAG_BYTES: Final = 16


@final
class AesGcmMode:
    """``"v1e." + B64(nonce || ciphertext || tag)``, AAD = ASCII of the bind tag.

    A token presented for another identity has another expected bind tag, so
    it fails the GCM tag check before any plaintext exists.
    """

    prefix: Final = "v1e."
    nonce_bytes: Final = 12

    def seal(self, payload: bytes, key: SubKeys, bind_tag: str, nonce: bytes) -> str:
        """Encrypt ``payload`` under ``nonce``, which must never repeat under a key."""
        sealed = key.aesgcm.encrypt(nonce, payload, bind_tag.encode("ascii"))
        return f"{self.prefix}{b64encode(nonce + sealed)}"

    def open(self, token: str, keys: tuple[SubKeys, ...], bind_tags: tuple[str, ...]) -> tuple[bytes, str]:
        """The decrypted payload and the bind tag it was authenticated under."""
        blob = b64decode(token[len(self.prefix) :])
        if blob is None or len(blob) < self.nonce_bytes + _TAG_BYTES:
            raise InvalidToken(Reason.MALFORMED)
        nonce, sealed = blob[: self.nonce_bytes], blob[self.nonce_bytes :]
        for key, bind_tag in zip(keys, bind_tags, strict=True):
            try:
                return key.aesgcm.decrypt(nonce, sealed, bind_tag.encode("ascii")), bind_tag
            except InvalidTag:
                continue
        raise InvalidToken(Reason.BAD_SIGNATURE)


ENCRYPTED: Final = AesGcmMode()
