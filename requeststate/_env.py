"""The environment variables a deployment configures requeststate with: each name, declared once."""

from __future__ import annotations

from typing import Final

__all__ = ["ENV_GUARD", "ENV_KEYS", "ENV_MODE", "ENV_TTL"]

ENV_KEYS: Final = "REQUESTSTATE_KEYS"
"""The secrets, base64url, comma-separated, newest first (``KeyRing.from_env``)."""
ENV_MODE: Final = "REQUESTSTATE_MODE"
"""The mode, or a comma list while migrating, the first minting (``Codec.from_env``)."""
ENV_TTL: Final = "REQUESTSTATE_TTL"
"""Seconds a minted token lives (``Codec.from_env``)."""
ENV_GUARD: Final = "REQUESTSTATE_GUARD"
"""The replay guard, as a URL: ``memory``, ``redis://``, ``sqlite:////path`` (``guard_from_url``)."""
