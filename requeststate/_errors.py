"""The one error a bad token raises, and the closed set of reasons it carries."""

from __future__ import annotations

import enum

__all__ = ["InvalidToken", "KeyBudgetExhausted", "Reason"]


class Reason(enum.StrEnum):
    """Why a token was refused: for the server's log only, never for the wire."""

    MALFORMED = "malformed"
    """Not a well-formed token: not a ``str``, bad prefix, base64, framing or payload."""
    TOO_LARGE = "too_large"
    """Longer than ``max_token_bytes``; refused before any decoding."""
    WRONG_MODE = "wrong_mode"
    """A well-known prefix, but of a mode the caller did not ask for."""
    BAD_SIGNATURE = "bad_signature"
    """The MAC or AEAD tag does not verify under any key in the ring.

    In the encrypted modes the bind tag is the AEAD's associated data, so a token
    presented for another identity also lands here.
    """
    EXPIRED = "expired"
    """Authentic, but ``now > exp + leeway``."""
    WRONG_BINDING = "wrong_binding"
    """Authentic, but bound to another subject or tool; or, before any decoding, an invalid identity."""
    WRONG_TYPE = "wrong_type"
    """Authentic, but the state does not decode as the requested ``type``."""
    REPLAYED = "replayed"
    """Valid, but already redeemed: the replay guard holds its id."""
    GUARD_UNAVAILABLE = "guard_unavailable"
    """Valid, but the replay guard could not say whether it was redeemed (fail closed): its store
    did not answer in time, answered an error, or its verifiers' terms differ; a full ``MemoryGuard``."""
    OUTSIDE_MEMORY = "outside_memory"
    """Valid, but minted outside what the replay guard's memory covers, so it cannot be made single use:
    before the store's memory began (a restart, a flush, a failover: it may have been redeemed into the
    memory that was lost), or after the verifier's ``now`` plus ``clock_skew`` (clocks apart). No retry
    of it can succeed: the client starts over."""
    IN_PROGRESS = "in_progress"
    """Valid, and redeemed by an earlier identical call (``Codec.redeem``, exactly once) that has not
    answered yet, within its ``lease``: the action runs once, so this call does not run it. Retry
    shortly: the retry gets the first call's answer once it is kept."""
    OUTCOME_UNKNOWN = "outcome_unknown"
    """Valid, and redeemed by an earlier identical call (exactly once) that did not answer within its
    ``lease``: its worker stopped, or its answer could not be kept or read. Whether the action ran is
    unknown here, and it is not run again: the client stops retrying and tells the user."""
    ANSWER_TOO_LARGE = "answer_too_large"
    """Valid, and redeemed by an earlier identical call (exactly once) that ran, but whose answer was
    larger than ``max_token_bytes`` and is not kept: the action ran once, and its answer is gone."""


class InvalidToken(Exception):
    """A token failed verification: ``InvalidToken(reason)``.

    ``reason`` says why, for logs. The message is the reason code and nothing
    else: never token bytes, state, or key material.
    """

    __module__ = "requeststate"  # where users import it: tracebacks and logs name no private module

    # No __init__ of our own: Exception's, in C, keeps raising cheap on the
    # refusal path, where an attacker chooses how often we pay for it.
    args: tuple[Reason]

    @property
    def reason(self) -> Reason:
        """Why the token was refused."""
        return self.args[0]


class KeyBudgetExhausted(RuntimeError):
    """A key has sealed as many AES-GCM tokens as random 96-bit nonces safely allow.

    Rotate to a new secret (``KeyRing(new, old)``) or mint with ``mode="xchacha"``.
    """

    __module__ = "requeststate"  # as InvalidToken's
