"""Operator secrets, the subkeys derived from them, and ``KeyRing``, the ordered set that rotates them."""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Final, NamedTuple, NoReturn, TypeAlias, final

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.hmac import HMAC
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ._base64 import b64encode
from ._bind_input import bind_input
from ._bounds import check_int
from ._env import ENV_KEYS
from ._errors import KeyBudgetExhausted
from ._secrets import DECODERS, MIN_SECRET_BYTES, SecretEncoding, check_secret, decode_secret

if TYPE_CHECKING:
    from ._xchacha import XChaCha20Poly1305

__all__ = [
    "AESGCM_NONCE_LIMIT",
    "MAX_KEYS",
    "BoundKey",
    "KeyRing",
    "Keys",
    "SubKeys",
    "as_key_ring",
    "derive_subkey",
    "known_answer_ring",
]

MAX_KEYS: Final = 8
# NIST SP 800-38D, 8.3: with random 96-bit nonces, at most 2^32 encryptions per key.
AESGCM_NONCE_LIMIT: Final = 2**32
DEFAULT_AESGCM_WARN_SHARE: Final = 0.5
# The bind tags of this many identities are kept per ring, each identity at most
# this many UTF-8 bytes long: a few MiB at most, whatever identities clients send.
BIND_TAG_CACHE_SIZE: Final = 4096
BIND_TAG_CACHE_MAX_BYTES: Final = 512

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


@final
class SubKeys:
    """The subkeys derived from one operator secret, and its AES-GCM budget.

    Internal to the wire modes: never printed, pickled or compared.
    """

    __slots__ = (
        "_aesgcm_limit",
        "_aesgcm_seals",
        "_aesgcm_warn_at",
        "_mac",
        "_xchacha",
        "_xchacha_key",
        "aesgcm",
        "fingerprint",
    )

    def __init__(self, secret: bytes, aesgcm_limit: int, aesgcm_warn_at: int) -> None:
        mac_key = derive_subkey(secret, _MAC_INFO)
        # Keyed once; every MAC copies this state instead of keying a new one.
        self._mac: Final = HMAC(mac_key, SHA256())
        self.aesgcm: Final = AESGCM(derive_subkey(secret, _ENC_INFO))
        # PyNaCl loads on the first v1x. token, not with the package.
        self._xchacha_key: Final = derive_subkey(secret, _XCHACHA_INFO)
        self._xchacha: XChaCha20Poly1305 | None = None
        # A one-way, labelled digest of a subkey: it names the key in a repr or a
        # log without revealing anything that verifies or mints a token.
        self.fingerprint: Final = hashlib.sha256(_FINGERPRINT_LABEL + mac_key).hexdigest()[:8]
        # next() of an itertools.count is atomic: the budget needs no lock.
        self._aesgcm_seals: Final = itertools.count(1)
        self._aesgcm_limit: Final = aesgcm_limit
        self._aesgcm_warn_at: Final = aesgcm_warn_at

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

    def count_aesgcm_seal(self) -> None:
        """Count one AES-GCM seal under this key: warn once at the warning share, refuse past the limit.

        Raises ``KeyBudgetExhausted`` once the key has sealed its limit in this process.
        """
        count = next(self._aesgcm_seals)
        if count == self._aesgcm_warn_at:
            import logging  # here: a rare warning is not worth 8 ms of `import requeststate`

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


class BoundKey(NamedTuple):
    """One key of a ring with the bind tag of one identity under it."""

    key: SubKeys
    bind_tag: str
    """64 lowercase hex: what the payload's ``b`` must equal."""
    aad: bytes
    """``bind_tag`` as ASCII: the associated data of the encrypted modes."""


@final
class KeyRing:
    """An ordered, immutable set of operator secrets: the first mints, all verify.

    ``KeyRing(secret)`` for one key; ``KeyRing(new, old)`` while rotating, then
    ``KeyRing(new)`` once every token minted under ``old`` has expired (one TTL).
    Each secret is at least 32 bytes of secret randomness: one byte repeated, a
    short pattern repeated or fewer than 16 distinct bytes is refused. Subkeys
    are derived once, here. Safe to share between threads. Its ``repr`` shows
    the number of keys and the minting key's fingerprint, never key bytes.

    Args:
        *secrets: the secrets, newest (minting) first; at most 8.
        aesgcm_limit: AES-GCM seals allowed per key in this process, from 1 to
            2**32 (the NIST limit for random 96-bit nonces, the default).
        aesgcm_warn_share: the share of ``aesgcm_limit`` at which one warning is
            logged, in (0, 1].

    Raises:
        TypeError, ValueError: a secret or option that cannot be used, saying why
            (and which secret, by position), never showing key bytes.
    """

    __slots__ = ("_bound", "_ephemeral", "_keys", "_writing")

    def __init__(
        self,
        *secrets: bytes | bytearray,
        aesgcm_limit: int = AESGCM_NONCE_LIMIT,
        aesgcm_warn_share: float = DEFAULT_AESGCM_WARN_SHARE,
    ) -> None:
        check_int("aesgcm_limit", aesgcm_limit, 1, AESGCM_NONCE_LIMIT)
        if not isinstance(aesgcm_warn_share, int | float) or isinstance(aesgcm_warn_share, bool):
            raise TypeError(f"aesgcm_warn_share must be a number, not {type(aesgcm_warn_share).__name__}")
        if not 0 < aesgcm_warn_share <= 1:
            raise ValueError(f"aesgcm_warn_share must be a number in (0, 1], got {aesgcm_warn_share!r}")
        if not secrets:
            raise ValueError("KeyRing needs at least one secret")
        if len(secrets) > MAX_KEYS:
            raise ValueError(f"KeyRing holds at most {MAX_KEYS} secrets, got {len(secrets)}")
        material = [check_secret(index, secret) for index, secret in enumerate(secrets)]
        for index, secret in enumerate(material):
            if secret in material[:index]:
                raise ValueError(f"secret {index} repeats an earlier secret")
        self._hold(material, aesgcm_limit, max(1, int(aesgcm_limit * aesgcm_warn_share)))

    def _hold(self, material: list[bytes], aesgcm_limit: int, warn_at: int) -> None:
        set_ = object.__setattr__
        set_(self, "_keys", tuple(SubKeys(secret, aesgcm_limit, warn_at) for secret in material))
        set_(self, "_ephemeral", False)
        # (subject, tool) -> bound keys. Readers only call dict.get, which is safe
        # beside a writer; writers take the lock, as evicting iterates the dict.
        set_(self, "_bound", {})
        set_(self, "_writing", threading.Lock())

    _keys: tuple[SubKeys, ...]
    _ephemeral: bool
    _bound: dict[tuple[object, object], tuple[BoundKey, ...]]
    _writing: threading.Lock

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

    @staticmethod
    def generate_secret(size: int = MIN_SECRET_BYTES) -> str:
        """A new secret of ``size`` bytes from the OS CSPRNG, as unpadded base64url: what ``from_env`` reads.

        ``requeststate keygen`` prints one. Put it first in ``REQUESTSTATE_KEYS`` on every server
        that shares the tokens. Raises ``ValueError`` for fewer than 32 bytes.
        """
        check_int("size", size, MIN_SECRET_BYTES)
        return b64encode(os.urandom(size))

    @classmethod
    def from_env(
        cls,
        name: str = ENV_KEYS,
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
        secrets are written, and reads exactly that.

        Raises:
            ValueError: the variable is unset or a secret is unusable; the
                message names the variable and the position, never the value.
        """
        if encoding is not None and encoding not in DECODERS:
            raise ValueError(f"encoding must be one of {', '.join(map(repr, DECODERS))}, got {encoding!r}")
        value = (os.environ if environ is None else environ).get(name, "")
        if not value.strip():
            raise ValueError(
                f"{name} is not set, or empty: set it to base64url secrets separated by commas, newest first "
                "(generate one with: requeststate keygen)"
            )
        secrets = []
        for index, item in enumerate(value.split(",")):
            try:
                secrets.append(decode_secret(item.strip(), encoding))
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

    def bound(self, subject: object, tool: object) -> tuple[BoundKey, ...]:
        """Each key of the ring with the bind tag of ``(subject, tool)`` under it, minting key first.

        What the wire modes seal and open with. Computed once per identity and
        kept (at most 4096 identities of up to 512 bytes: the identities come
        from clients). Raises ``TypeError`` or ``ValueError`` for an identity
        that cannot be bound (see docs/wire-format.md, "The bind tag").
        """
        try:
            found = self._bound.get((subject, tool))
        except TypeError:  # unhashable: bind_input says what is wrong with it
            found = None
        if found is not None:
            return found
        data = bind_input(subject, tool)
        bound = tuple(
            BoundKey(key, tag, tag.encode("ascii")) for key in self._keys for tag in (key.bind_tag(data),)
        )
        if len(data) <= BIND_TAG_CACHE_MAX_BYTES:
            with self._writing:
                if len(self._bound) >= BIND_TAG_CACHE_SIZE:
                    del self._bound[next(iter(self._bound))]  # the oldest entry
                self._bound[subject, tool] = bound
        return bound

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


Keys: TypeAlias = "KeyRing | bytes"
"""What a codec takes as keys: a ``KeyRing``, or one raw secret of at least 32 bytes."""


@lru_cache(maxsize=16)
def _ring_of_secret(secret: bytes) -> KeyRing:
    return KeyRing(secret)


def as_key_ring(keys: object) -> KeyRing:
    """``keys`` as a ring: a ``KeyRing`` itself, or the ring of one raw secret (derived once per secret)."""
    if isinstance(keys, KeyRing):
        return keys
    if isinstance(keys, bytes):
        # HKDF costs more than a token: the module functions take raw secrets per call.
        return _ring_of_secret(keys)
    raise TypeError(f"keys must be a KeyRing or bytes, not {type(keys).__name__}")


def known_answer_ring(*secrets: bytes) -> KeyRing:
    """A ring of ``secrets`` unchecked for weakness: for known-answer tests, never a deployment.

    The test vector of docs/wire-format.md is keyed with the bytes 0x00 to 0x1f, a
    counter, which ``KeyRing`` refuses as it refuses every evidently weak secret; the
    vectors must still verify (tests/test_vectors.py). Private, as Fernet's
    ``_encrypt_from_parts`` is.
    """
    ring = KeyRing.__new__(KeyRing)
    ring._hold([bytes(secret) for secret in secrets], AESGCM_NONCE_LIMIT, AESGCM_NONCE_LIMIT)
    return ring
