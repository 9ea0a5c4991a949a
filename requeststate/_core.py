"""The strict core: mint a token, and check one, under options a ``Codec`` has validated.

Every refusal is returned as its ``Reason``, never raised, so a refused token
costs no more than an accepted one: the attacker chooses how many of them we
pay for. ``Codec`` (in ``_codec``) validates the options, adds the replay
guard's claim, and is the adapter that turns a reason into ``InvalidToken`` or
``None``.

Compiled: a wheel built with the mypyc hook compiles this module, ``_envelope``,
``_encrypted`` and ``_base64`` with mypyc (docs/architecture.md, "The
compiled build"). A compiled function checks its parameters' annotated types
itself and raises its own ``TypeError``, so every value a caller passes
through is typed ``object`` here and checked by our code, which refuses or
raises as documented.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Final, SupportsInt, TypeAlias, final

import msgspec

from ._envelope import INT64_MAX, INT64_MIN, Payload, build_payload, read_payload, too_deep
from ._errors import Reason
from ._keys import KeyRing
from ._modes import WireMode, unexpected_prefix
from ._options import check_int

__all__ = ["TOKEN_ID_BYTES", "Core", "Verified"]

TOKEN_ID_BYTES: Final = 16  # 128 random bits, written as 32 hex: unique across every token

Verified: TypeAlias = "tuple[Any, Payload, int] | Reason"
"""(state, the payload it came in, the time it was checked at), or why not."""

_encode_state: Final = msgspec.json.Encoder().encode


@lru_cache(maxsize=64)
def _state_decoder(state_type: Any) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(state_type)


@final
class Core:
    """The token's own work, for one ``Codec``: no option is checked here, only the call's values."""

    __slots__ = (
        "_bound_keys",
        "_bound_keys_cached",
        "_clock",
        "_nonce_bytes",
        "_prefixed",
        "_random_bytes",
        "_seal",
        "leeway",
        "max_token_bytes",
        "ttl",
        "urandom",
    )

    def __init__(
        self,
        keys: KeyRing,
        wires: tuple[WireMode, ...],
        ttl: int,
        leeway: int,
        max_token_bytes: int,
        clock: Callable[[], SupportsInt] | None,
    ) -> None:
        # Each mode with its prefix, read without an attribute lookup per token.
        self._prefixed: Final = tuple((wire.prefix, wire) for wire in wires)
        # The codec's options, held here once (Codec reads them back).
        self.ttl: Final = ttl
        self.leeway: Final = leeway
        self.max_token_bytes: Final = max_token_bytes
        # SupportsInt, not float: compiled, a float annotation would check what
        # the clock returns (a Fraction, an int past 1e308), where int() reads it.
        self._clock: Final = clock
        # What every call reaches for, one attribute away.
        # Any identity may be looked up: an invalid one raises TypeError or ValueError.
        self._bound_keys: Final = keys._bound_keys
        self._bound_keys_cached: Final = keys._bound_keys_cached
        mint = wires[0]
        # The first mode mints; its seal is held bound, not looked up per token.
        self._seal: Final = mint.seal
        self._nonce_bytes: Final = mint.nonce_bytes
        self._random_bytes: Final = self._nonce_bytes + TOKEN_ID_BYTES
        # The CSPRNG. The known-answer vectors replace it with fixed bytes, as
        # Fernet's _encrypt_from_parts takes them; nothing else may.
        self.urandom: Callable[[int], bytes] = os.urandom

    def encode(self, state: object, subject: object, tool: object, now: object) -> str:
        """A token for ``state``, bound to the identity; ``Codec.encode`` says what raises."""
        # The clock is read inline, as in verified: a call less per token.
        if now is None:
            exp = (int(time.time()) if self._clock is None else int(self._clock())) + self.ttl
        else:
            exp = check_int("now", now, INT64_MIN) + self.ttl
        if exp > INT64_MAX:
            raise ValueError("now + ttl must fit in a signed 64-bit integer")
        text = state if isinstance(state, str) else _encode_state(state).decode("utf-8")
        # The fast path inline: a cached identity is one dict lookup; any other
        # is derived (and checked, raising what an identity must be).
        try:
            bound_keys = self._bound_keys_cached.get((subject, tool))
        except TypeError:  # unhashable: _bound_keys raises, saying what an identity must be
            bound_keys = None
        key, bind_tag, aad = (bound_keys or self._bound_keys(subject, tool))[0]
        split = self._nonce_bytes
        # One read of the CSPRNG per token: the nonce (if any), then the token id.
        random = self.urandom(self._random_bytes)
        payload = build_payload(text, exp, bind_tag, random[split:].hex())
        token = self._seal(payload, key, aad, random[:split])
        if len(token) > self.max_token_bytes:
            raise ValueError(
                f"the token would be {len(token)} bytes, over max_token_bytes={self.max_token_bytes}"
            )
        return token

    def verified(
        self, token: object, subject: object, tool: object, now: object, state_type: object
    ) -> Verified:
        """Every check but the guard, in the documented order; the reason for a refusal is returned.

        Raises only ``TypeError``/``ValueError`` for a ``now`` that is not a valid int.
        """
        # time.time is looked up on each call (a test may patch it), inline: a call less per token.
        if now is None:
            moment = int(time.time()) if self._clock is None else int(self._clock())
        else:
            moment = check_int("now", now, INT64_MIN)
        if not isinstance(token, str):
            return Reason.MALFORMED
        if len(token) > self.max_token_bytes:
            return Reason.TOO_LARGE
        # The prefixes are prefix-free, so at most one matches; usually one mode is allowed.
        for prefix, wire in self._prefixed:  # noqa: B007 (wire is the match, read after the loop)
            if token.startswith(prefix):
                break
        else:
            return unexpected_prefix(token)
        try:
            # A cached identity is one dict lookup here; any other is derived (and checked).
            bound_keys = self._bound_keys_cached.get((subject, tool)) or self._bound_keys(subject, tool)
        except (TypeError, ValueError):  # an invalid identity, of any type, is a refusal
            return Reason.WRONG_BINDING
        opened = wire.open(token, bound_keys)
        # Test for the success type: an exact match is isinstance's fast path, while
        # isinstance(x, Reason) always pays for the Enum metaclass's __instancecheck__.
        if not isinstance(opened, tuple):
            return opened
        payload = read_payload(opened[0], opened[1], moment, self.leeway)
        if not isinstance(payload, Payload):
            return payload
        if state_type is None:
            return payload.s, payload, moment
        if too_deep(payload.s):
            return Reason.WRONG_TYPE
        try:
            return _state_decoder(state_type).decode(payload.s), payload, moment
        except (msgspec.DecodeError, RecursionError):
            return Reason.WRONG_TYPE
