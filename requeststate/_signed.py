"""The ``v1.`` signed mode: the payload in the clear, HMAC-SHA256 over its bytes."""

from __future__ import annotations

import hmac
from typing import Final, final

from ._base64 import b64decode, b64encode_joined
from ._errors import InvalidToken, Reason
from ._keys import BoundKey

__all__ = ["SIGNED", "SignedMode"]

_MAC_BYTES: Final = 32


@final
class SignedMode:
    """``"v1." + B64(payload) + "." + B64(HMAC-SHA256(mac_key, payload))``."""

    prefix: Final = "v1."
    nonce_bytes: Final = 0

    def seal(self, payload: bytes, minting: BoundKey, nonce: bytes) -> str:
        """Sign ``payload``, whose ``b`` is the minting key's bind tag; no nonce is used."""
        return self.prefix + b64encode_joined(payload, minting.key.mac(payload))

    def open(self, token: str, bound: tuple[BoundKey, ...]) -> tuple[bytes, BoundKey]:
        """The authenticated payload and the key that signed it, with its bind tag.

        Raises:
            InvalidToken: ``malformed`` framing, or ``bad_signature`` under every key.
        """
        payload, mac = _framed(token)
        for signer in bound:
            if hmac.compare_digest(signer.key.mac(payload), mac):
                return payload, signer
        raise InvalidToken(Reason.BAD_SIGNATURE)

    def peek(self, token: str) -> bytes:
        """The payload, NOT authenticated: what anyone who holds the token reads.

        Raises:
            InvalidToken: ``malformed`` framing.
        """
        return _framed(token)[0]


def _framed(token: str) -> tuple[bytes, bytes]:
    """The payload and the MAC of a ``v1.`` token, decoded; ``InvalidToken(malformed)`` if it is not one."""
    # At most four parts: splitting a token of 65,533 dots in full would
    # cost six valid decodes, at the attacker's choice of how often.
    parts = token.split(".", 3)
    if len(parts) != 3:
        raise InvalidToken(Reason.MALFORMED)
    payload = b64decode(parts[1])
    mac = b64decode(parts[2])
    if payload is None or mac is None or len(mac) != _MAC_BYTES:
        raise InvalidToken(Reason.MALFORMED)
    return payload, mac


SIGNED: Final = SignedMode()
