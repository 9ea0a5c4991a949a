"""The one internal seam: what the integrations use from the core that is no user's API.

``requeststate.mcp``, ``requeststate.redis``, ``requeststate.probe`` and the CLI import
the public ``requeststate`` and, beside it, only this module (tests/test_imports.py
checks the import graph). Each name here is private for a reason given beside it.
"""

from __future__ import annotations

from ._guard import check_claim_window
from ._options import check_int

__all__ = ["check_claim_window", "check_int"]
