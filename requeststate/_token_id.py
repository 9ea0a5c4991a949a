"""The id a replay guard claims: the token's own id, and when the token was minted.

A token carries an ``id`` (128 random bits in hex) and ``iat``, the unix second it
was minted (docs/wire-format.md). A guard is asked to claim ``<iat>-<id>``
(``claim_id``), so that it can read when the token was minted (``minted_at``) and
refuse every token minted before its store's memory began (docs/replay-guards.md),
with the ``Guard`` protocol unchanged. A token with no ``iat`` (requeststate 0.3's,
another writer's) tells no time: it has no claim id, and a guard refuses it.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["TOKEN_ID_BYTES", "claim_id", "dated_id", "minted_at"]

TOKEN_ID_BYTES: Final = 16
"""128 random bits per token, written as 32 hex: the token's ``id``."""
_DATED: Final = re.compile(r"(-?[0-9]{1,19})-[0-9a-f]{32}")


def claim_id(token_id: str | None, minted: int | None) -> str | None:
    """What a guard claims for a token of ``id`` ``token_id`` and ``iat`` ``minted``.

    ``None`` for a token with no id or no ``iat``: it cannot be made single-use.
    """
    if token_id is None or minted is None:
        return None
    return dated_id(token_id, minted)


def dated_id(token_id: str, minted: int) -> str:
    """The claimed id of a token with both: ``<iat>-<id>``."""
    return f"{minted}-{token_id}"


def minted_at(claimed: str) -> int | None:
    """The unix second the token was minted, read from the id a guard claims; ``None`` if it does not tell.

    It tells for a token requeststate minted (``<iat>-`` and its 32-hex id), not for one
    with no ``iat``, or an id of another layout.
    """
    match = _DATED.fullmatch(claimed)
    return None if match is None else int(match[1])
