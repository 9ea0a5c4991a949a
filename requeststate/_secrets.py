"""Operator secrets as they arrive: checked for length and evident low entropy, and read from text."""

from __future__ import annotations

import binascii
import functools
import hashlib
import itertools
from collections.abc import Callable
from typing import Final, Literal, TypeAlias

from ._base64 import b64decode

__all__ = ["MIN_DISTINCT_BYTES", "MIN_SECRET_BYTES", "SecretEncoding", "check_secret", "decode_secret"]

MIN_SECRET_BYTES: Final = 32
MIN_DISTINCT_BYTES: Final = 16
"""32 bytes from a CSPRNG hold about 30 distinct values; fewer than 16 happens
with a probability of about 2**-54.8 (3.2e-17, counted exactly over the 256**32
secrets), so it means the secret was not random."""

COMMON_SECRETS: Final = "common_secrets.txt"
"""The list of common secrets a ring refuses and the probe guesses: a data file of this package."""

MAX_PERIOD: Final = 64
"""The longest repeated pattern looked for."""

SecretEncoding: TypeAlias = Literal["base64url", "base64", "hex"]
"""How ``KeyRing.from_env`` reads each secret of the variable."""

_FIX: Final = "use 32 random bytes: requeststate keygen, or os.urandom(32)"


def check_secret(index: int, secret: object) -> bytes:
    """``secret`` as ``bytes`` if it can key a ring; else raise, naming its position, never its bytes.

    ``TypeError`` for a ``str`` or another type; ``ValueError`` for fewer than
    32 bytes, or bytes that are evidently not random: one byte repeated, a
    counter, a pattern repeated, fewer than 16 distinct bytes, or a well-known
    secret (``common_secrets.txt``, each word's SHA-256, and that in hex).
    """
    if isinstance(secret, str):
        raise TypeError(
            f"secret {index} is a str; KeyRing takes bytes "
            "(decode a base64 secret first, or use KeyRing.from_env)"
        )
    if not isinstance(secret, bytes | bytearray):
        raise TypeError(f"secret {index} must be bytes, not {type(secret).__name__}")
    if len(secret) < MIN_SECRET_BYTES:
        raise ValueError(
            f"secret {index} is {len(secret)} bytes; "
            f"each secret must be at least {MIN_SECRET_BYTES} bytes of secret randomness"
        )
    material = bytes(secret)
    weakness = _evident_weakness(material)
    if weakness is not None:
        raise ValueError(f"secret {index} is {weakness}, not secret randomness: {_FIX}")
    return material


def _evident_weakness(secret: bytes) -> str | None:
    distinct = len(set(secret))
    if distinct == 1:
        return "one byte repeated"
    if len({(after - before) % 256 for before, after in itertools.pairwise(secret)}) == 1:
        return "a counter (each byte a fixed step from the one before)"
    if secret in _well_known():
        return "a well-known secret (a common password or default, or its SHA-256), which the probe guesses"
    # A period p means secret[i] == secret[i + p] throughout: a pattern of p
    # bytes repeated at least twice (p up to half the length, and MAX_PERIOD).
    longest = min(len(secret) // 2, MAX_PERIOD)
    if any(secret[period:] == secret[:-period] for period in range(1, longest + 1)):
        return "a short pattern repeated"
    if distinct < MIN_DISTINCT_BYTES:
        return f"made of only {distinct} distinct byte values"
    return None


@functools.cache
def _well_known() -> frozenset[bytes]:
    """Each secret of ``common_secrets.txt`` (the probe guesses from it), its SHA-256, and that in hex."""
    from importlib import resources  # here: read at the first ring built, not at import

    known: set[bytes] = set()
    for word in resources.files("requeststate").joinpath(COMMON_SECRETS).read_bytes().splitlines():
        digest = hashlib.sha256(word).digest()
        known |= {word, digest, digest.hex().encode("ascii")}
    return frozenset(known)


def _from_base64url(text: str) -> bytes | None:
    return b64decode(text.rstrip("="))


def _from_base64(text: str) -> bytes | None:
    try:
        # strict_mode: only the standard alphabet, padding only at the end.
        return binascii.a2b_base64(text + "=" * (-len(text) % 4), strict_mode=True)
    except binascii.Error:
        return None


_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")


def _from_hex(text: str) -> bytes | None:
    if len(text) % 2 or not _HEX_DIGITS.issuperset(text):
        return None
    return bytes.fromhex(text)


DECODERS: Final[dict[str, Callable[[str], bytes | None]]] = {
    "base64url": _from_base64url,
    "base64": _from_base64,
    "hex": _from_hex,
}


def decode_secret(text: str, encoding: SecretEncoding | None) -> bytes:
    """One secret written as text; ``ValueError`` says what is wrong, never the text.

    ``None`` reads base64url, but refuses text another service could read
    otherwise: standard base64, and hex digits of any length (48 hex digits read
    as base64url are a 36-byte secret, 24 bytes as hex). Text of base64url from a
    CSPRNG is all hex digits with a chance of (22/64)**43, about 2**-66.
    """
    if encoding is None:
        if "+" in text or "/" in text:
            raise ValueError(
                "looks like standard base64 ('+' or '/'), not base64url: pass encoding='base64' "
                "(on the command line: --key-encoding base64) to read it so, "
                "or use a secret from requeststate keygen"
            )
        if text and _HEX_DIGITS.issuperset(text):
            raise ValueError(
                "looks like hex, which base64url would misread: pass encoding='hex' "
                "(on the command line: --key-encoding hex) to read it so, "
                "or use a secret from requeststate keygen"
            )
        encoding = "base64url"
    secret = DECODERS[encoding](text)
    if secret is None:
        raise ValueError(f"is not {encoding}")
    return secret
