"""Our formats as the SDK's ``RequestStateCodec``, for its own ``RequestStateBoundary``."""

from __future__ import annotations

import base64
import binascii
from typing import Final, Unpack

from mcp.server.request_state import (
    InvalidRequestState,
    RequestStateBoundary,
    RequestStateSecurity,
    authenticated_principal,
)

import requeststate as rs

from ._binding import SDK_CODEC_TOOL
from ._boundary import Boundary
from ._config import SubjectSource
from ._install import AnyServer, chain, install, warn_if_ephemeral

_GUARD_REFUSED: Final = (
    "a replay guard cannot run in the SDK's codec seam: the SDK checks the method, target, "
    "arguments, audience and principal after unseal, so the guard would burn a token on a misbound "
    "echo. Use requeststate.mcp.protect(server, keys, guard=...), which claims after every check."
)


class SDKCodec:
    """Our token formats as a ``RequestStateCodec`` for the SDK's own ``RequestStateBoundary``.

    ``seal`` carries the SDK's claims envelope (any bytes) as base64url in a
    requeststate token bound to this use's own context (docs/wire-format.md,
    "MCP bindings"), so no token minted by the bare functions, a ``Boundary``
    or another use of the key ever unseals here. The SDK's boundary binds the
    method, target, arguments, audience and principal itself. ``unseal`` turns
    every refusal into the SDK's ``InvalidRequestState`` with a log-only reason.

    Args:
        keys: a ``KeyRing`` shared by every worker, or one raw secret.
        **options: the codec's (``requeststate.CodecOptions``). ``ttl`` is also
            the SDK envelope's lifetime. A ``guard`` is refused: the SDK's codec
            seam runs before the SDK's binding checks, so it would burn a token
            on a misbound echo. The default ``max_token_bytes`` (128 KiB) carries
            the envelope of any payload up to 73,500 bytes in every mode, the SDK's
            own tests' 64 KiB among them (``n`` payload bytes travel as base64url
            in the state: about ``16n/9 + 250`` bytes of token).

    Raises:
        TypeError, ValueError: a bad option, or a ``guard``.
    """

    def __init__(self, keys: rs.Keys, /, **options: Unpack[rs.CodecOptions]) -> None:
        if options.get("guard") is not None:
            raise ValueError(_GUARD_REFUSED)
        self._codec = rs.Codec(keys, **options)

    @property
    def keys(self) -> rs.KeyRing:
        """The key ring tokens are minted and verified with."""
        return self._codec.keys

    @property
    def ttl(self) -> int:
        """Seconds a token lives."""
        return self._codec.ttl

    @property
    def max_token_bytes(self) -> int:
        """The longest token this codec mints or accepts."""
        return self._codec.max_token_bytes

    def __repr__(self) -> str:
        modes = ",".join(m.value for m in self._codec.modes)
        return f"SDKCodec(keys={self.keys!r}, mode={modes}, ttl={self.ttl})"

    def seal(self, payload: bytes) -> str:
        """Mint a token carrying ``payload`` (any bytes).

        Raises:
            ValueError: the token would exceed ``max_token_bytes`` (the SDK then answers -32603).
        """
        # Unpadded base64url, as requeststate 0.3 wrote it: a token minted before an upgrade still opens.
        text = base64.urlsafe_b64encode(payload).rstrip(b"=").decode("ascii")
        return self._codec.encode(text, tool=SDK_CODEC_TOOL)

    def unseal(self, token: str) -> bytes:
        """Return the bytes a token carries, or raise ``InvalidRequestState`` (reason code only)."""
        try:
            text: str = self._codec.verify(token, tool=SDK_CODEC_TOOL)
        except rs.InvalidToken as refused:
            raise InvalidRequestState(refused.reason.value) from None
        try:
            return base64.urlsafe_b64decode(text.encode("ascii") + b"=" * (-len(text) % 4))
        except (UnicodeEncodeError, binascii.Error):
            # Authentic, under our context, yet not what seal writes: refuse all the same.
            raise InvalidRequestState(rs.Reason.MALFORMED.value) from None


def sdk_security(
    keys: rs.Keys,
    /,
    *,
    audience: str | None = None,
    subject: SubjectSource | None = authenticated_principal,
    **options: Unpack[rs.CodecOptions],
) -> RequestStateSecurity:
    """The SDK's ``RequestStateSecurity`` policy with ``SDKCodec`` as its codec.

    One line on an ``MCPServer``: ``MCPServer("name", request_state_security=sdk_security(keys))``.
    ``ttl`` is both the SDK's envelope lifetime and our token's. ``subject`` is
    the SDK's ``bind_principal`` (``None`` disables principal binding);
    ``audience=None`` defers to the boundary's default (the server's name).
    """
    codec = SDKCodec(keys, **options)
    warn_if_ephemeral(codec.keys)
    return RequestStateSecurity(codec=codec, ttl=float(codec.ttl), bind_principal=subject, audience=audience)


def use_codec(
    server: AnyServer,
    keys: rs.Keys,
    /,
    *,
    audience: str | None = None,
    subject: SubjectSource | None = authenticated_principal,
    **options: Unpack[rs.CodecOptions],
) -> RequestStateBoundary:
    """Install the SDK's ``RequestStateBoundary`` with ``SDKCodec`` on ``server``; return it.

    On an ``MCPServer`` it replaces the boundary the SDK installed; on the
    low-level ``Server`` it adds the one the SDK leaves out. The audience
    defaults to the server's name. Refusals answer -32602 (the SDK's boundary
    has no re-elicit option). A replay guard is refused: use ``protect``.
    """
    chain(server)  # type check before any side effect
    security = sdk_security(keys, audience=audience, subject=subject, **options)
    boundary = RequestStateBoundary(security, default_audience=server.name)
    install(server, boundary, Boundary)
    return boundary
