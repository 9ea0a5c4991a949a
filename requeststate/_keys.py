"""Operator secrets, their HKDF subkeys, bind tags, and the rotation ring."""

from __future__ import annotations

import _thread
import binascii
import hashlib
import itertools
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final, Literal, NoReturn, TypeAlias, final

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.hmac import HMAC
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ._base64 import b64decode
from ._errors import KeyBudgetExhausted

if TYPE_CHECKING:
    from ._xchacha import XChaCha20Poly1305

__all__ = [
    "AESGCM_NONCE_LIMIT",
    "MAX_KEYS",
    "MIN_SECRET_BYTES",
    "BoundKey",
    "KeyRing",
    "SubKeys",
    "bind_input",
    "derive_subkey",
]

MIN_SECRET_BYTES: Final = 32
MAX_KEYS: Final = 8
BIND_TAG_CACHE_SIZE: Final = 4096
# The longest bind input (UTF-8 bytes) whose bind tags are cached.
BIND_TAG_CACHE_MAX_BYTES: Final = 512
# NIST SP 800-38D, 8.3: with random 96-bit nonces, at most 2^32 encryptions per key.
AESGCM_NONCE_LIMIT: Final = 2**32
DEFAULT_AESGCM_WARN_SHARE: Final = 0.5

# The logger is "requeststate". logging is imported where a warning is logged,
# not at the top: it costs `import requeststate` about 8 ms, for a rare warning.

# docs/wire-format.md, "Keys": HKDF-SHA256, 32 zero bytes of salt, one info label per subkey.
_HKDF_SALT: Final = bytes(32)
_ENC_INFO: Final = b"mcp.requestState aes-256-gcm key"
_MAC_INFO: Final = b"mcp.requestState bind-hmac key"
# Our own label for the v1x. mode, which mcp.d does not read.
_XCHACHA_INFO: Final = b"requeststate v1x xchacha20-poly1305 key"
_FINGERPRINT_LABEL: Final = b"requeststate fingerprint"


def derive_subkey(secret: bytes, info: bytes) -> bytes:
    """One 32-byte HKDF-SHA256 subkey of ``secret`` for the label ``info``."""
    return HKDF(algorithm=SHA256(), length=32, salt=_HKDF_SALT, info=info).derive(secret)


# JSON's whitespace: what may stand before the "{" that opens a payload.
_JSON_SPACE: Final = " \t\r\n"


def bind_input(subject: object, tool: object) -> bytes:
    """The bytes a bind tag covers (docs/wire-format.md, "The bind tag").

    Takes any values, as a client's request may hold any: raises ``TypeError``
    for a subject that is not a ``str`` or a tool neither a ``str`` nor
    ``None``, and ``ValueError``
    for one containing U+0000 (the separator) or a lone surrogate, or for a
    subject-only identity that reads as a JSON object.
    """
    if not isinstance(subject, str) or not (tool is None or isinstance(tool, str)):
        raise TypeError("subject must be a str and tool a str or None")
    if "\0" in subject or (tool is not None and "\0" in tool):
        raise ValueError("subject and tool must not contain U+0000")
    # mac_key keys both the bind tag and the v1. MAC, and a signed token shows
    # its bind tag. A subject-only bind input that is itself a payload would
    # make its tag a valid MAC of that payload: a forgery for any identity.
    # Every payload opens with "{" after JSON whitespace; with a tool the input
    # holds U+0000, which no payload does.
    if tool is None and subject.lstrip(_JSON_SPACE).startswith("{"):
        raise ValueError(
            "a subject bound without a tool must not start with '{' (it would read as a payload)"
        )
    # join, not an f-string: a str subclass (a StrEnum) is bound by its content,
    # as the cache (keyed by equality) and the spec see it, not by its __format__.
    text = subject if tool is None else "\0".join((subject, tool))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("subject and tool must be valid Unicode (no lone surrogates)") from None


@final
class SubKeys:
    """The subkeys derived from one operator secret, and its AES-GCM budget.

    Internal: never printed, pickled or compared.
    """

    __slots__ = (
        "_aesgcm_limit",
        "_mac",
        "_xchacha",
        "_xchacha_key",
        "aesgcm",
        "aesgcm_count",
        "aesgcm_warn_at",
        "fingerprint",
    )

    def __init__(self, secret: bytes, aesgcm_limit: int, aesgcm_warn_at: int) -> None:
        mac_key = derive_subkey(secret, _MAC_INFO)
        # Keyed once; every MAC copies this state instead of re-keying.
        self._mac: Final = HMAC(mac_key, SHA256())
        self.aesgcm: Final = AESGCM(derive_subkey(secret, _ENC_INFO))
        # PyNaCl loads on the first v1x. token, not with the package.
        self._xchacha_key: Final = derive_subkey(secret, _XCHACHA_INFO)
        self._xchacha: XChaCha20Poly1305 | None = None
        # A one-way, labelled digest of a subkey: it names the key in a repr or a
        # log without revealing anything that verifies or mints a token.
        self.fingerprint: Final = hashlib.sha256(_FINGERPRINT_LABEL + mac_key).hexdigest()[:8]
        # Each AES-GCM seal takes next(aesgcm_count) (atomic: no lock needed) and,
        # from aesgcm_warn_at on, passes it to check_aesgcm_budget.
        self.aesgcm_count: Final = itertools.count(1)
        self.aesgcm_warn_at: Final = aesgcm_warn_at
        self._aesgcm_limit: Final = aesgcm_limit

    @property
    def xchacha(self) -> XChaCha20Poly1305:
        """The XChaCha20-Poly1305 cipher, built on first use."""
        if self._xchacha is None:
            # Imported here: `import requeststate` must not load PyNaCl for modes that never use it.
            from ._xchacha import XChaCha20Poly1305

            self._xchacha = XChaCha20Poly1305(self._xchacha_key)
        return self._xchacha

    def mac(self, data: bytes) -> bytes:
        """``HMAC-SHA256(mac_key, data)``."""
        state = self._mac.copy()
        state.update(data)
        return state.finalize()

    def bind_tag(self, data: bytes) -> str:
        """``lowercase_hex(HMAC-SHA256(mac_key, data))``: 64 characters."""
        return self.mac(data).hex()

    def check_aesgcm_budget(self, count: int) -> None:
        """For the ``count``-th AES-GCM seal past the warning share: warn once, refuse past the limit.

        Raises ``KeyBudgetExhausted`` once the key has sealed its limit in this process.
        """
        if count == self.aesgcm_warn_at:
            import logging

            logging.getLogger("requeststate").warning(
                "requestState key %s has sealed %d AES-GCM tokens in this process, of a limit of %d: "
                "rotate to a new secret, or move to mode='xchacha'",
                self.fingerprint,
                count,
                self._aesgcm_limit,
            )
        if count > self._aesgcm_limit:
            raise KeyBudgetExhausted(
                f"requestState key {self.fingerprint} has sealed its limit of {self._aesgcm_limit} "
                "AES-GCM tokens in this process (random 96-bit nonces, NIST SP 800-38D); "
                "rotate to a new secret with KeyRing(new, old), or use mode='xchacha'"
            )

    def __repr__(self) -> str:
        return f"SubKeys(fingerprint={self.fingerprint!r})"

    def __reduce__(self) -> NoReturn:
        raise TypeError("SubKeys cannot be pickled: it holds derived key material")


BoundKey: TypeAlias = "tuple[SubKeys, str, bytes]"
"""A key, the bind tag of one identity under it, and that tag as AEAD associated data."""


# Keyed by (subject, tool) as the caller passed them: only a valid identity gets in.
BoundKeysCache: TypeAlias = "dict[tuple[object, object], tuple[BoundKey, ...]]"
BoundKeys: TypeAlias = "Callable[[object, object], tuple[BoundKey, ...]]"


def _bound_keys_cache(
    keys: tuple[SubKeys, ...],
) -> tuple[BoundKeysCache, BoundKeys]:
    # The cache, and a closure over it and the keys (not a method, so neither
    # holds a reference back to the ring). A plain dict: a hit is one lookup,
    # which the codec makes itself on the path every request takes. Errors
    # are not cached.
    cache: BoundKeysCache = {}
    # Readers only call cache.get, which is safe beside a writer. Writers take
    # the lock: evicting iterates the dict, which another writer must not change.
    writing = _thread.allocate_lock()

    def bound_keys(subject: object, tool: object) -> tuple[BoundKey, ...]:
        try:
            found = cache.get((subject, tool))
        except TypeError:  # unhashable: bind_input says what is wrong with it
            found = None
        if found is not None:
            return found
        data = bind_input(subject, tool)
        # One tuple per key, not parallel tuples to zip: a fifth of zip(strict=True).
        pairs = tuple((key, tag, tag.encode("ascii")) for key in keys for tag in (key.bind_tag(data),))
        # The cache fills before any MAC check, from values a client may choose
        # (an MCP tool name): a long identity is computed, never kept, so the
        # cache holds at most BIND_TAG_CACHE_SIZE short ones (a few MiB).
        if len(data) <= BIND_TAG_CACHE_MAX_BYTES:
            with writing:
                if len(cache) >= BIND_TAG_CACHE_SIZE:
                    del cache[next(iter(cache))]  # the oldest entry
                cache[subject, tool] = pairs
        return pairs

    return cache, bound_keys


@final
class KeyRing:
    """An ordered, immutable set of operator secrets: the first mints, all verify.

    ``KeyRing(secret)`` for one key; ``KeyRing(new, old)`` while rotating, then
    ``KeyRing(new)`` once every token minted under ``old`` has expired (one TTL).
    Each secret is at least 32 bytes of secret randomness; subkeys are derived
    once, here. Its keys are immutable (it only counts its AES-GCM seals, atomically),
    and it is safe to share between threads. Its
    ``repr`` shows the number of keys and the minting key's fingerprint, never
    key bytes.
    """

    __slots__ = ("_bound_keys", "_bound_keys_cached", "_ephemeral", "_keys")

    _keys: tuple[SubKeys, ...]
    _ephemeral: bool
    _bound_keys: BoundKeys
    _bound_keys_cached: BoundKeysCache
    # _bound_keys(subject, tool): each key with the bind tag of that identity
    # under it, in ring order (the first mints). Cached per ring (bounded) in
    # _bound_keys_cached, keyed by (subject, tool); raises like bind_input.
    # Internal to the codec.

    def __init__(
        self,
        *secrets: bytes | bytearray,
        aesgcm_limit: int = AESGCM_NONCE_LIMIT,
        aesgcm_warn_share: float = DEFAULT_AESGCM_WARN_SHARE,
    ) -> None:
        if not isinstance(aesgcm_limit, int) or not 1 <= aesgcm_limit <= AESGCM_NONCE_LIMIT:
            raise ValueError(f"aesgcm_limit must be an int from 1 to 2**32, got {aesgcm_limit!r}")
        if not isinstance(aesgcm_warn_share, int | float) or not 0 < aesgcm_warn_share <= 1:
            raise ValueError(f"aesgcm_warn_share must be a number in (0, 1], got {aesgcm_warn_share!r}")
        if not secrets:
            raise ValueError("KeyRing needs at least one secret")
        if len(secrets) > MAX_KEYS:
            raise ValueError(f"KeyRing holds at most {MAX_KEYS} secrets, got {len(secrets)}")
        for index, secret in enumerate(secrets):
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
        material = [bytes(secret) for secret in secrets]
        for index, secret in enumerate(material):
            if secret in material[:index]:
                raise ValueError(f"secret {index} repeats an earlier secret")
        warn_at = max(1, int(aesgcm_limit * aesgcm_warn_share))
        keys = tuple(SubKeys(secret, aesgcm_limit, warn_at) for secret in material)
        object.__setattr__(self, "_keys", keys)
        object.__setattr__(self, "_ephemeral", False)
        # The cached function itself, not a method around it: one call less per token.
        cached, bound_keys = _bound_keys_cache(keys)
        object.__setattr__(self, "_bound_keys_cached", cached)
        object.__setattr__(self, "_bound_keys", bound_keys)

    @classmethod
    def ephemeral(cls) -> KeyRing:
        """A ring of one fresh 32-byte secret from the OS CSPRNG.

        Only this process can verify its tokens: a restart, or another worker
        behind the same load balancer, rejects them. Share a secret instead
        whenever more than one process serves the same clients.
        """
        ring = cls(os.urandom(MIN_SECRET_BYTES))
        object.__setattr__(ring, "_ephemeral", True)
        return ring

    @classmethod
    def from_env(
        cls,
        name: str = "REQUESTSTATE_KEYS",
        /,
        *,
        environ: Mapping[str, str] | None = None,
        encoding: SecretEncoding | None = None,
        aesgcm_limit: int = AESGCM_NONCE_LIMIT,
        aesgcm_warn_share: float = DEFAULT_AESGCM_WARN_SHARE,
    ) -> KeyRing:
        """A ring from an environment variable of secrets, newest first.

        ``REQUESTSTATE_KEYS="<new>,<old>"``: comma-separated, each at least 32
        random bytes. By default each is base64url (padded or not), as
        ``requeststate keygen`` prints; a value that looks like standard base64
        (it has ``+`` or ``/``) or hex (64 or more hex digits) is refused with a
        hint rather than read as something else, because another service
        decoding the same text another way would derive other keys.
        ``encoding="base64url"``, ``"base64"`` or ``"hex"`` says how the
        secrets are written, and reads exactly that. Errors name the variable
        and the position, never the value.
        """
        if encoding is not None and encoding not in _SECRET_DECODERS:
            raise ValueError(
                f"encoding must be one of {', '.join(map(repr, _SECRET_DECODERS))}, got {encoding!r}"
            )
        value = (os.environ if environ is None else environ).get(name, "")
        if not value.strip():
            raise ValueError(
                f"{name} is not set: set it to base64url secrets separated by commas, newest first "
                "(generate one with: requeststate keygen)"
            )
        secrets = []
        for index, item in enumerate(value.split(",")):
            try:
                secrets.append(_decode_secret(item.strip(), encoding))
            except ValueError as error:
                raise ValueError(f"{name}: secret {index} {error}") from None
        try:
            return cls(*secrets, aesgcm_limit=aesgcm_limit, aesgcm_warn_share=aesgcm_warn_share)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None

    @property
    def is_ephemeral(self) -> bool:
        """True for a ring made by ``ephemeral()``: its tokens die with the process."""
        return self._ephemeral

    @property
    def fingerprint(self) -> str:
        """A short, one-way name for the minting key, safe to log."""
        return self._keys[0].fingerprint

    @property
    def _subkeys(self) -> tuple[SubKeys, ...]:
        # The derived subkeys, minting key first. Internal to the codec.
        return self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        kind = ", ephemeral" if self._ephemeral else ""
        return f"KeyRing(keys={len(self._keys)}, minting={self.fingerprint!r}{kind})"

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("KeyRing is immutable")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("KeyRing is immutable")

    def __reduce__(self) -> NoReturn:
        # Pickling would write derived key material wherever the pickle goes.
        raise TypeError("KeyRing cannot be pickled: share the secret through a secret store")


SecretEncoding: TypeAlias = Literal["base64url", "base64", "hex"]
"""How ``KeyRing.from_env`` reads each secret of the variable."""

_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")


def _from_base64url(text: str) -> bytes | None:
    return b64decode(text.rstrip("="))


def _from_base64(text: str) -> bytes | None:
    try:
        # strict_mode: only the standard alphabet, padding only at the end.
        return binascii.a2b_base64(text + "=" * (-len(text) % 4), strict_mode=True)
    except binascii.Error:
        return None


def _from_hex(text: str) -> bytes | None:
    if len(text) % 2 or not _HEX_DIGITS.issuperset(text):
        return None
    return bytes.fromhex(text)


_SECRET_DECODERS: Final[dict[str, Callable[[str], bytes | None]]] = {
    "base64url": _from_base64url,
    "base64": _from_base64,
    "hex": _from_hex,
}


def _decode_secret(text: str, encoding: SecretEncoding | None) -> bytes:
    """One secret of ``from_env``'s variable; ``ValueError`` says what is wrong, never the text."""
    if encoding is None:
        # The default reads base64url, but refuses text another service could read
        # otherwise: a 32-byte secret in base64url is 43 characters, never 64 hex digits.
        if "+" in text or "/" in text:
            raise ValueError(
                "looks like standard base64 ('+' or '/'), not base64url: pass encoding='base64' "
                "(inspect: --key-encoding base64) to read it so, or use a secret from requeststate keygen"
            )
        if len(text) >= 64 and _HEX_DIGITS.issuperset(text):
            raise ValueError(
                "looks like hex, which base64url would misread: pass encoding='hex' "
                "(inspect: --key-encoding hex) to read it so, or use a secret from requeststate keygen"
            )
        encoding = "base64url"
    secret = _SECRET_DECODERS[encoding](text)
    if secret is None:
        raise ValueError(f"is not {encoding}")
    return secret
