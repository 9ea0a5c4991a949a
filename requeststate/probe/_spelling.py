"""A token as bytes in the server's own spelling: for flipping single bits of what it encodes.

A token is read as an optional prefix (``v1e.``, ``enc:``), then parts separated by dots, each
decoded from hex or base64 (either alphabet, padded or not); a token that is not an
encoding (JSON, plain text) is one part of its own characters. A flipped bit is
spelled back exactly as the server spells the part, so the server decodes the very
bytes the probe changed: a server that authenticates its state refuses every one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ._decode import BASE64, HEX, TOKEN, b64decode, b64encode_like, hex_like, split_prefix

MAX_PARTS: Final = 64
"""The most dot-separated parts a token is read as; a token of more is one part of plain text.

Each part is an object and a closure: 900,000 parts took 963 MB and 25 s."""


@dataclass(frozen=True)
class Part:
    """One dot-separated part: its text, its bytes, the name of its spelling, how to spell new bytes alike."""

    text: str
    raw: bytes
    encoding: str
    spell: Callable[[bytes], str]


@dataclass(frozen=True)
class Spelling:
    """A token as ``prefix`` (with its dot, or empty) and decoded ``parts``."""

    prefix: str
    parts: tuple[Part, ...]

    @property
    def size(self) -> int:
        """How many bytes the parts hold together."""
        return sum(len(part.raw) for part in self.parts)

    def locate(self, position: int) -> tuple[int, int]:
        """``(part index, byte offset in it)`` of byte ``position`` of the parts taken together."""
        for index, part in enumerate(self.parts):
            if position < len(part.raw):
                return index, position
            position -= len(part.raw)
        raise IndexError(position)

    def flipped(self, position: int) -> str | None:
        """The token with the lowest bit of byte ``position`` flipped, spelled as the server spells it.

        The lowest bit: it keeps a digit a digit and a letter a letter, so a plaintext
        under an unauthenticated cipher stays well-formed, and its acceptance shows.
        ``None`` where the change cannot be spelled (a non-ASCII byte of plain text).
        """
        index, offset = self.locate(position)
        part = self.parts[index]
        raw = bytearray(part.raw)
        raw[offset] ^= 1
        if part.encoding == "text" and raw[offset] >= 0x80:
            return None
        texts = [p.text for p in self.parts]
        texts[index] = part.spell(bytes(raw))
        return self.prefix + ".".join(texts)

    def region(self, positions: list[int]) -> str:
        """Where ``positions`` lie: ``bytes 3-40 of 58 of part 2 of 2 (base64url)``, a clause per part."""
        by_part: dict[int, list[int]] = {}
        for position in positions:
            index, offset = self.locate(position)
            by_part.setdefault(index, []).append(offset)
        clauses = []
        for index, offsets in by_part.items():
            part = self.parts[index]
            span = f"byte {offsets[0]}" if len(offsets) == 1 else f"bytes {offsets[0]}-{offsets[-1]}"
            where = f" of part {index + 1} of {len(self.parts)}" if len(self.parts) > 1 else ""
            clauses.append(f"{span} of {len(part.raw)}{where} ({part.encoding})")
        after = f" after '{self.prefix}'" if self.prefix else ""
        return "; ".join(clauses) + after


def _text_part(text: str) -> Part:
    return Part(text, text.encode("utf-8"), "text", lambda raw: raw.decode("utf-8"))


def _part(text: str) -> Part:
    if len(text) >= 2 and HEX.fullmatch(text):
        return Part(text, bytes.fromhex(text), "hex", hex_like(text))
    raw = b64decode(text) if BASE64.fullmatch(text) or not text else None
    if raw is None:
        return _text_part(text)
    standard = any(c in text for c in "+/")
    name = ("base64" if standard else "base64url") + (", padded" if text.endswith("=") else "")
    return Part(text, raw, name, lambda raw: b64encode_like(raw, text))


def spelling(token: str) -> Spelling:
    """``token`` as the server spells it (see the module docstring)."""
    prefix, body = split_prefix(token)
    if body.count(".") >= MAX_PARTS or not TOKEN.fullmatch(body):
        return Spelling("", (_text_part(token),))
    return Spelling(prefix, tuple(_part(piece) for piece in body.split(".")))


RESPELLINGS: Final = (
    "with '=' appended",
    "with '==' appended",
    "in the standard base64 alphabet (+/)",
    "with a newline before its last character",
    "with an unused bit of its last character set",
)
"""The names ``respellings`` gives, in its order: each spelling a token may have."""
_URL_ALPHABET: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_STANDARD_ALPHABET: Final = _URL_ALPHABET[:62] + "+/"


def respellings(token: str) -> list[tuple[str, str]]:
    """The same bytes spelled another way, each named: re-padded, in the other base64 alphabet,
    with a newline inside, with the unused low bits of its last character set.

    A server that decodes leniently accepts these; only the text differs, not what it encodes.
    """
    body = token[len(spelling(token).prefix) :]
    if not TOKEN.fullmatch(body) or token.endswith("="):
        return []
    head = token[: len(token) - len(body)]
    repadded, twice, swapped, newline, unused = RESPELLINGS
    found = [(token + "=", repadded), (token + "==", twice)]
    other = body.translate(str.maketrans("-_", "+/"))
    if other != body:
        found.append((head + other, swapped))
    found.append((token[:-1] + "\n" + token[-1], newline))
    spare = _spare_bit_set(body)
    if spare is not None:
        found.append((head + spare, unused))
    return found


def _spare_bit_set(body: str) -> str | None:
    """``body`` with the lowest unused bit of its last base64 character set, if it has unused bits.

    A last part of 2 or 3 characters past a multiple of 4 spells 4 or 2 bits that encode nothing:
    a canonical encoder leaves them 0, a lenient decoder ignores them.
    """
    last = body.rpartition(".")[2]
    if len(last) % 4 not in (2, 3):
        return None
    alphabet = _STANDARD_ALPHABET if any(c in body for c in "+/") else _URL_ALPHABET
    index = alphabet.find(body[-1])
    if index < 0:
        return None
    return body[:-1] + alphabet[index ^ 1]
