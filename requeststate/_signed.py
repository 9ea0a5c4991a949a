"""The ``v1.`` signed mode: the payload in the clear, HMAC-SHA256 over its bytes."""

from __future__ import annotations

import hmac
from typing import Final, final

from ._base64 import b64decode, b64encode_joined
from ._errors import Reason
from ._keys import BoundKey, SubKeys

__all__ = ["SIGNED"]

_MAC_BYTES: Final = 32


@final
class SignedMode:
    """``"v1." + B64(payload) + "." + B64(HMAC-SHA256(mac_key, payload))``."""

    prefix: Final = "v1."
    nonce_bytes: Final = 0

    def seal(self, payload: bytes, key: SubKeys, aad: bytes, nonce: bytes) -> str:
        """Sign ``payload``; the bind tag is inside it, and neither ``aad`` nor a nonce is used."""
        return self.prefix + b64encode_joined(payload, key.mac(payload))

    def open(self, token: str, bound_keys: tuple[BoundKey, ...]) -> tuple[bytes, str] | Reason:
        """The authenticated payload and the bind tag of the key that signed it, or why not."""
        # At most four parts: splitting a token of 65,533 dots in full would
        # cost six valid decodes, at the attacker's choice of how often.
        parts = token.split(".", 3)
        if len(parts) != 3:
            return Reason.MALFORMED
        payload = b64decode(parts[1])
        mac = b64decode(parts[2])
        if payload is None or mac is None or len(mac) != _MAC_BYTES:
            return Reason.MALFORMED
        for key, bind_tag, _ in bound_keys:
            if hmac.compare_digest(key.mac(payload), mac):
                return payload, bind_tag
        return Reason.BAD_SIGNATURE


SIGNED: Final = SignedMode()
