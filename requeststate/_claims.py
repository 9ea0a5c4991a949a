"""``Claims``: what a verified token holds, for a caller who needs more than its state."""

from __future__ import annotations

from typing import Generic

import msgspec

from ._modes import Mode
from ._payload import T
from ._token_id import ClaimId, claim_id

__all__ = ["Claims"]


class Claims(msgspec.Struct, Generic[T], frozen=True):
    """A token that passed every check of ``Codec.verify``: its state, and the claims around it.

    ``Codec.open`` returns it (``aopen`` under asyncio). Immutable. Its repr leaves
    ``state`` out, as the server's plaintext never goes to a log by accident.
    """

    state: T
    """The state, as ``verify`` returns it: its text, or a value of the ``type=`` asked for."""
    exp: int
    """Unix seconds: the last second the token is accepted, before the codec's ``leeway``."""
    token_id: str | None
    """The token's random id (32 hex); ``None`` in a token of another writer (mcp.d mints none)."""
    minted: int | None
    """Unix seconds the token was minted at (its ``iat``); ``None`` when it does not say."""
    mode: Mode
    """The mode the token was minted in: one of the codec's."""
    fingerprint: str
    """The fingerprint of the key that verified it (``KeyRing.fingerprint`` when it is the minting key)."""

    @property
    def claim_id(self) -> ClaimId | None:
        """What a replay guard claims for this token (its id and ``minted``); ``None`` if it lacks either."""
        return claim_id(self.token_id, self.minted)

    def __repr__(self) -> str:
        return (
            f"Claims(exp={self.exp}, token_id={self.token_id!r}, minted={self.minted}, "
            f"mode={self.mode.value}, fingerprint={self.fingerprint!r})"
        )
