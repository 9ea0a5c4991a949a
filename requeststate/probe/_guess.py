"""Guessing a MAC's key offline from common secrets, and forging a state with a key found.

A token carries a MAC the client can check offline when its content is readable and
a tag follows it: ``content.tag`` (with or without a prefix such as ``v1.``; a JWT
``header.payload.signature`` is one), or one blob of ``content || tag``. A tag of
20, 32, 48 or 64 bytes is tried as HMAC-SHA1, -SHA256, -SHA384 or -SHA512 over the
text before it, over what that text decodes to, and over both after a prefix. The
secrets come from a list shipped with the package (``requeststate/common_secrets.txt``,
one per line, which ``KeyRing`` refuses too) and any lists the user adds, each line one
secret, the empty secret first.
No report names a secret: only where it was found (its list and line).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import IO, Final, TypeAlias

from requeststate._seam import COMMON_SECRETS

from ._decode import BASE64, HEX, b64decode, b64encode_like, hex_like, split_prefix
from ._edits import edits
from ._readings import Reading, byte_readings, readings, views

MAX_LINE_BYTES: Final = 1024  # a longer line of a wordlist is no secret anyone typed: skipped
FORGERIES_PER_KEY: Final = 3
_ALGORITHMS: Final = {20: "sha1", 32: "sha256", 48: "sha384", 64: "sha512"}


@dataclass(frozen=True)
class Secret:
    """A candidate key, and where it came from (never the key itself: reports show only this)."""

    key: bytes
    source: str


def secrets(wordlists: Sequence[Path]) -> Iterator[Secret]:
    """The empty secret, then the built-in list, then each of ``wordlists``, line by line (streamed)."""
    yield Secret(b"", "the empty secret")
    with resources.files("requeststate").joinpath(COMMON_SECRETS).open("rb") as builtin:
        yield from _lines(builtin, "the built-in list of common secrets")
    for path in wordlists:
        with path.open("rb") as extra:
            yield from _lines(extra, f"--wordlist {path}")


def _lines(file: IO[bytes], name: str) -> Iterator[Secret]:
    """Each line of ``file`` as a secret; a line too long to be one is skipped, never held whole."""
    number = 0
    while line := file.readline(MAX_LINE_BYTES + 2):
        number += 1
        if len(line) < MAX_LINE_BYTES + 2 or line.endswith(b"\n"):
            yield Secret(line.rstrip(b"\r\n"), f"{name}, line {number}")
            continue
        while line and not line.endswith(b"\n"):
            line = file.readline(MAX_LINE_BYTES + 2)


def check_wordlists(wordlists: Sequence[Path]) -> str | None:
    """Why one of ``wordlists`` cannot be read, or ``None`` when each can."""
    for path in wordlists:
        try:
            with path.open("rb"):
                pass
        except OSError as error:
            return f"cannot read the wordlist {path}: {error.strerror or error}"
    return None


Forge: TypeAlias = Callable[[bytes], list[tuple[str, str]]]


@dataclass(frozen=True)
class Mac:
    """A MAC in a token, over content the client can read.

    ``forge(key)`` makes tokens with one member of the content changed and the MAC
    recomputed under ``key``, each with what was changed.
    """

    what: str
    algorithm: str
    message: bytes
    tag: bytes
    forge: Forge

    def signed_by(self, key: bytes) -> bool:
        """Whether ``key`` makes this MAC."""
        return hmac.compare_digest(hmac.digest(key, self.message, self.algorithm), self.tag)


def macs(token: str) -> list[Mac]:
    """Every MAC found in ``token`` (see the module docstring); empty when none."""
    return [*_dotted(token), *_blob(token)]


def _decode_tag(text: str) -> tuple[bytes, Callable[[bytes], str]] | None:
    if HEX.fullmatch(text):
        return bytes.fromhex(text), hex_like(text)
    raw = b64decode(text) if BASE64.fullmatch(text) else None
    return None if raw is None else (raw, lambda tag: b64encode_like(tag, text))


def _edited(found: list[Reading]) -> Iterator[tuple[Reading, object, str]]:
    # Later parts first: a token's last parts carry the state (a JWT's payload), its first a header.
    for reading in reversed(found):
        for edit in edits(reading.value, FORGERIES_PER_KEY):
            yield reading, edit.value, f"`{edit.field}` changed ({edit.change})"


def _dotted(token: str) -> Iterator[Mac]:
    """``content.tag``: the tag over the text before it, or what it decodes to (after any prefix)."""
    head, dot, tail = token.rpartition(".")
    decoded = _decode_tag(tail) if dot and head else None
    if decoded is None or len(decoded[0]) not in _ALGORITHMS:
        return
    tag, spell = decoded
    algorithm = _ALGORITHMS[len(tag)]
    found = readings(head)
    if not found:
        return
    for view_name, view in views(head):
        message = view(head)
        if message is None:
            continue

        def forge(key: bytes, view: Callable[[str], bytes | None] = view) -> list[tuple[str, str]]:
            made = []
            for reading, value, what in _edited(found):
                changed = reading.rebuild(value)
                covered = view(changed)
                if covered is not None:
                    made.append((f"{changed}.{spell(hmac.digest(key, covered, algorithm))}", what))
            return made[:FORGERIES_PER_KEY]

        what = f"HMAC-{algorithm.upper()} of the text before the last '.'{view_name}"
        yield Mac(what, algorithm, message, tag, forge)


def _blob(token: str) -> Iterator[Mac]:
    """``[prefix.]encode(content || tag)``: one blob whose last bytes are a MAC of the readable rest."""
    lead, body = split_prefix(token)
    decoded = _decode_tag(body) if "." not in body else None
    if decoded is None:
        return
    raw, spell = decoded
    for size, algorithm in _ALGORITHMS.items():
        content = raw[:-size]
        found = byte_readings(content) if len(raw) > size else []
        if not found:
            continue

        def forge(
            key: bytes, algorithm: str = algorithm, found: list[Reading] = found
        ) -> list[tuple[str, str]]:
            made = []
            for reading, value, what in _edited(found):
                changed = reading.rebuild_bytes(value)
                made.append((lead + spell(changed + hmac.digest(key, changed, algorithm)), what))
            return made[:FORGERIES_PER_KEY]

        what = f"HMAC-{algorithm.upper()} appended to the decoded content"
        yield Mac(what, algorithm, content, raw[-size:], forge)


def first_hit(found: Sequence[Mac], batch: Sequence[Secret]) -> tuple[Mac, Secret] | None:
    """The first MAC of ``found`` that a secret of ``batch`` makes, with the secret."""
    for secret in batch:
        for mac in found:
            if mac.signed_by(secret.key):
                return mac, secret
    return None
