"""``Redemption``: a token redeemed exactly once, and its answer, sealed for the retries of its first call.

``Codec.redeem`` claims a token's id for a request (what makes a retry identical: for an MCP
server, the method, target, arguments and input responses) in a ``KeepingGuard``. The first
call runs the action and keeps its answer (``Codec.keep``); an identical retry gets that answer.
A kept answer is sealed as the state is, with the deployment's keys, always encrypted (it may
hold what the user must not leak): a token bound to the same subject and to the tool
(``answer_tool``), that names the claim it answers, valid until the state's own expiry. (The
claim is in the sealed payload, not the bind tag: a bind tag per claim would fill the key ring's
cache of bound identities, which serves every state token, with one-off entries.) An answer
whose token would be longer than ``max_token_bytes`` is kept as "too large" and its retry is told so.
"""

from __future__ import annotations

from typing import Final, Generic, final

import msgspec

from ._claims import Claims
from ._modes import Mode
from ._payload import T
from ._token_id import ClaimId

__all__ = ["ANSWER_CONTEXT", "Kept", "Redemption", "answer_mode", "answer_tool"]

ANSWER_CONTEXT: Final = "requeststate/answer/1"
"""The head of a kept answer's bound tool: no state token verifies as an answer, nor one as a state."""


class Kept(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a kept answer's token carries: the claim it answers, and the answer (``None``: too large)."""

    claim: ClaimId
    answer: str | None


def answer_tool(tool: str | None) -> str:
    """The tool a kept answer is bound to: its context, and the state's tool (a JSON array)."""
    return msgspec.json.encode([ANSWER_CONTEXT, tool]).decode()


def answer_mode(minting: Mode) -> Mode:
    """The mode an answer is sealed in: the codec's minting mode if it encrypts, else ``encrypted``."""
    return Mode.ENCRYPTED if minting is Mode.SIGNED else minting


@final
class Redemption(Generic[T]):
    """What ``Codec.redeem`` returns for a token accepted exactly once.

    ``answer`` is ``None`` on the first call: run the action, then ``Codec.keep`` its answer.
    On an identical retry it is the answer the first call kept: return it, and run nothing.
    Its repr shows neither the state nor the answer.
    """

    __slots__ = ("answer", "claims", "request", "subject", "tool")

    def __init__(self, claims: Claims[T], answer: str | None, request: str, subject: str, tool: str | None):
        self.claims: Final = claims
        """The token's claims (its state, expiry, id), as ``Codec.open`` returns them."""
        self.answer: Final = answer
        """The first call's answer on an identical retry; ``None`` on the first call."""
        self.request: Final = request
        """What makes a retry identical, as the caller gave it."""
        self.subject: Final = subject
        self.tool: Final = tool

    @property
    def state(self) -> T:
        """The state the token carries."""
        return self.claims.state

    @property
    def first(self) -> bool:
        """Whether this is the first call, which runs the action."""
        return self.answer is None

    def __repr__(self) -> str:
        return f"Redemption(first={self.first}, claims={self.claims!r})"
