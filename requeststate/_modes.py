"""The mode registry: each mode's name, its wire format, and its prefix, in one table."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final, Literal, Protocol, TypeAlias

from ._encrypted import ENCRYPTED, XCHACHA
from ._env import ENV_MODE
from ._errors import InvalidToken, Reason
from ._keys import BoundKey
from ._signed import SIGNED

__all__ = [
    "MODE_BY_PREFIX",
    "Mode",
    "ModeName",
    "ModeSpec",
    "Modes",
    "WireMode",
    "modes_from_env",
    "wire_for",
    "wire_modes",
    "wire_of",
]


class Mode(enum.StrEnum):
    """A wire format. Chosen by the server on both sides, never by the token."""

    SIGNED = "signed"
    """``v1.``: HMAC-SHA256. The client can read the state but not change it."""
    ENCRYPTED = "encrypted"
    """``v1e.``: AES-256-GCM. The client can neither read nor change the state."""
    XCHACHA = "xchacha"
    """``v1x.``: XChaCha20-Poly1305, as ``ENCRYPTED`` without the 2^32 tokens per key
    limit of random 96-bit nonces. Our extension: mcp.d does not read it."""

    @property
    def prefix(self) -> str:
        """What every token of this mode starts with: ``v1.``, ``v1e.`` or ``v1x.``."""
        return _WIRE[self].prefix

    @classmethod
    def of(cls, token: str) -> Mode | None:
        """The mode a token's prefix names, or ``None``: a label to show or count, never a check."""
        # The prefixes are prefix-free and each ends at its first dot.
        return MODE_BY_PREFIX.get(token[: token.find(".") + 1])


ModeName: TypeAlias = Literal["signed", "encrypted", "xchacha"]
"""A mode by its name, so a typo fails the type checker."""
ModeSpec: TypeAlias = "Mode | ModeName"
"""One mode: a ``Mode`` or its name."""
Modes: TypeAlias = "ModeSpec | tuple[ModeSpec, ...]"
"""The modes a server accepts: one, or a tuple while migrating (the first mints)."""


class WireMode(Protocol):
    """One wire format: how a payload is sealed into a token and opened again."""

    @property
    def prefix(self) -> str: ...
    @property
    def nonce_bytes(self) -> int: ...
    def seal(self, payload: bytes, minting: BoundKey, nonce: bytes) -> str: ...
    def open(self, token: str, bound: tuple[BoundKey, ...]) -> tuple[bytes, BoundKey]: ...
    def peek(self, token: str) -> bytes | None: ...


# Keyed by Mode, a str enum: "signed" and Mode.SIGNED find the same entry.
_WIRE: Final[dict[str, WireMode]] = {Mode.SIGNED: SIGNED, Mode.ENCRYPTED: ENCRYPTED, Mode.XCHACHA: XCHACHA}

MODE_BY_PREFIX: Final = {wire.prefix: Mode(mode) for mode, wire in _WIRE.items()}
"""``{"v1.": Mode.SIGNED, "v1e.": Mode.ENCRYPTED, "v1x.": Mode.XCHACHA}``: prefix-free."""

_VERSIONS: Final = frozenset(prefix[:-1] for prefix in MODE_BY_PREFIX)
_VERSION_MAX_CHARS: Final = max(map(len, _VERSIONS)) + 1


def _wire_mode(mode: object) -> tuple[Mode, WireMode]:
    choices = ", ".join(repr(m.value) for m in Mode)
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a Mode or one of {choices}, not {type(mode).__name__}")
    wire = _WIRE.get(mode)
    if wire is None:
        raise ValueError(f"mode must be a Mode or one of {choices}, got {mode!r}")
    return Mode(mode), wire


def wire_of(mode: Mode) -> WireMode:
    """The wire format of ``mode``."""
    return _WIRE[mode]


def wire_modes(modes: object) -> tuple[tuple[Mode, ...], tuple[WireMode, ...]]:
    """The modes named by ``modes`` (one, or a non-empty tuple), in order, each once.

    Raises ``ValueError`` for an unknown mode or an empty tuple, ``TypeError`` for a
    mode that is not a string.
    """
    listed = modes if isinstance(modes, tuple) else (modes,)
    if not listed:
        raise ValueError("mode must name at least one Mode")
    found = dict(map(_wire_mode, listed))
    return tuple(found), tuple(found.values())


def wire_for(token: str, wires: tuple[WireMode, ...]) -> WireMode:
    """The wire mode among ``wires`` whose prefix ``token`` has (the prefixes are prefix-free).

    Raises:
        InvalidToken: ``wrong_mode`` for another known mode's prefix, else ``malformed``.
    """
    for wire in wires:
        if token.startswith(wire.prefix):
            return wire
    # "v1.xxx" -> "v1", "v1e.xxx" -> "v1e": the text before the first dot names
    # the format. Only the first few characters are read, however long the token.
    version, dot, _ = token[:_VERSION_MAX_CHARS].partition(".")
    raise InvalidToken(Reason.WRONG_MODE if dot and version in _VERSIONS else Reason.MALFORMED)


def modes_from_env(environ: Mapping[str, str], default: Modes, name: str = ENV_MODE) -> Modes:
    """``REQUESTSTATE_MODE``: a mode, or a comma list while migrating (the first mints); else ``default``."""
    text = environ.get(name, "").strip()
    if not text:
        return default
    names = tuple(part.strip() for part in text.split(","))
    try:
        wire_modes(names)
    except ValueError:
        choices = ", ".join(mode.value for mode in Mode)
        # Never the value: a secret pasted into the wrong variable would reach the log.
        raise ValueError(
            f"{name} must name modes among {choices}, comma-separated while migrating (the first mints); "
            f"its value is none of these: set it as {name}=encrypted, or {name}=encrypted,signed"
        ) from None
    return names  # type: ignore[return-value]  # each checked above
