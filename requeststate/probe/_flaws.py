"""The flaw each check's FAIL proves: shown on its row, and named by the rows that build on it."""

from __future__ import annotations

from typing import Final

FLAWS: Final = {
    "bit_flip": "malleable state: no MAC or AEAD tag covers these bytes, so flipped bits go through",
    "truncated": "the token is not authenticated to its end: a truncated one is accepted",
    "extended": "the token is not authenticated as a whole: bytes appended to it are ignored",
    "tag_stripped": "the MAC/tag is optional: a token without it is accepted",
    "tag_truncated": "the MAC/tag is compared only as far as it goes: a shortened one is accepted",
    "prefix_swapped": "the prefix is not authenticated: a token relabelled as another version is accepted",
    "random": "the state is not authenticated before use: one the server never minted got in",
    "forged": "no integrity over these members: the client changes them at will",
    "rehashed": "an unkeyed hash is no MAC: anyone recomputes it over a changed state",
    "guessed_key": "guessable MAC key: anyone can sign a state with it",
    "alg_none": "the JWT's own alg header is trusted: alg none turns its signature off",
    "repadded": "any spelling of the token is read alike, and the state lacks integrity (see the row named)",
    "arguments": "the state is not bound to the call's arguments",
    "cross_tool": "the state is not bound to the tool, prompt or resource that minted it",
    "other_user": "the state is not bound to the user it was minted for",
    "expiry": "the state's expiry is not enforced",
    "replay": "a state can be redeemed more than once",
    "fleet_shared": "the workers do not share keys or audience: a retry on another worker is refused",
    "fleet_replay": "a state redeemed on one worker is redeemed again on another: single use per worker",
    "confidential": "the client can read the state",
    "race": "redemptions of one state sent at once get through: single use is not atomic, or kept per worker",
    "exactly_once": "an identical retry of an exactly-once tool does not get the first call's answer",
    "exactly_once_changed": "a retry with other answers is accepted: an exactly-once tool's state runs twice",
    "exactly_once_race": "identical calls sent at once get different answers, or refusals: not exactly once",
}
"""What a FAIL of each check proves."""
