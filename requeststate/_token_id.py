"""What a replay guard claims: a token's own id, and when the token was minted.

A token carries an ``id`` (128 random bits in hex) and ``iat``, the unix second it
was minted (docs/wire-format.md). A guard is asked to claim both, as one ``ClaimId``,
so that it can refuse every token minted before its store's memory began
(docs/replay-guards.md). A token with no ``iat`` (requeststate 0.3's, another
writer's) tells no time: it has no claim id, and a guard is never asked.
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = ["TOKEN_ID_BYTES", "ClaimId", "claim_id"]

TOKEN_ID_BYTES: Final = 16
"""128 random bits per token, written as 32 hex: the token's ``id``."""


class ClaimId(NamedTuple):
    """What a replay guard claims for one token: its id, and when it was minted.

    Hashable and comparable, as a guard keeps it; a shared store keeps a digest of it
    instead (the token's id never reaches a store).
    """

    token_id: str
    """The token's random id (32 hex)."""
    minted: int
    """Unix seconds the token was minted at (its ``iat``)."""


def claim_id(token_id: str | None, minted: int | None) -> ClaimId | None:
    """What a guard claims for a token of ``id`` ``token_id`` and ``iat`` ``minted``.

    ``None`` for a token with no id or no ``iat``: it cannot be made single-use.
    """
    if token_id is None or minted is None:
        return None
    return ClaimId(token_id, minted)
