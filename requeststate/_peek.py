"""``peek``: what anyone who holds a token can read of it without a key, verified by nothing."""

from __future__ import annotations

from typing import Final

import msgspec

from ._errors import InvalidToken, Reason
from ._modes import MODE_BY_PREFIX, Mode, wire_for, wire_of

__all__ = ["Peek", "peek"]

# Every mode's wire format: a token names its own, as no server chose one here.
_EVERY_WIRE: Final = tuple(map(wire_of, Mode))


class Peek(msgspec.Struct, frozen=True, gc=False):
    """A token as its holder sees it: its mode, and for ``v1.`` its payload. NOTHING here is verified."""

    mode: Mode
    """The mode its prefix names."""
    payload: bytes | None
    """A ``v1.`` token's payload (JSON: ``s``, ``exp``, ``b`` and ours, ``id`` and ``iat``),
    as the client can read and forge it; ``None`` for a sealed token, which shows none."""

    def __repr__(self) -> str:
        # The payload holds the server's state: its size only, never its bytes, in a log.
        shown = "None" if self.payload is None else f"<{len(self.payload)} bytes>"
        return f"Peek(mode={self.mode.value}, payload={shown})"


def peek(token: object) -> Peek:
    """A token's mode and, for ``v1.``, its payload bytes, read without a key and NOT verified.

    For debugging and for showing what a client sees (``requeststate inspect``), as
    itsdangerous's ``loads_unsafe``: never act on what it returns; ``Codec.open``
    verifies. A ``v1.`` token's payload is readable by design; a sealed one's is not.

    Raises:
        InvalidToken: ``malformed``: not a ``str``, no known prefix, or not framed as its mode.
    """
    if not isinstance(token, str):
        raise InvalidToken(Reason.MALFORMED)
    wire = wire_for(token, _EVERY_WIRE)
    return Peek(MODE_BY_PREFIX[wire.prefix], wire.peek(token))
