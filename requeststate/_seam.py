"""The one internal seam: what the integrations take from the core that is no user's API.

``requeststate.mcp``, ``requeststate.redis``, ``requeststate.sqlite``, ``requeststate.probe``,
``requeststate.bench``, ``requeststate.cli`` and ``requeststate.pytest_plugin`` import the public
``requeststate`` and, beside it, only this module (tests/test_import_graph.py checks the import
graph). Each name is private for a reason:

- ``Counts``: the counters of docs/metrics.md, for an integration that counts with
  attributes of its own (``requeststate.mcp`` adds each request's method). A user's codec
  counts by itself; the instruments' names and attributes are the documented surface.
- ``check_int``, ``check_seconds`` and ``refuse_unknown``: the checks of every integer
  option, of every timeout, and of option names, so that a guard's options fail in the
  very words of a codec's ("ttl must be an int from 1 to 86400, got 0", "unexpected
  option(s) tll; the options are ...").
- ``Ledger`` (with its ``Claim``, ``Answer``, ``Status`` and ``claimed_member``): the rules that make single
  use hold on a store that can forget (dating its memory, the ``iat`` rule, pruning, the
  terms a namespace's verifiers share), in one place for ``MemoryGuard``, the Redis guards
  and the SQLite guards: each store only runs them atomically.
- ``StoredGuard``: the properties every store's guard answers (``namespace``, ``clock_skew``,
  ``timeout``) and the leeway it learns, written once for every store.
- ``split_guard_url``, ``check_guard_timeout`` and ``ENCODE_HINT``: what every store's URL shares (the
  query's ``namespace``, ``timeout`` and ``clock_skew``) and the bound of every guard's
  ``timeout``, so that each store's ``from_url`` takes them in the same words.
- ``COMMON_SECRETS``: the package's data file of well-known secrets, which ``KeyRing``
  refuses and the probe guesses: one list for both.
"""

from __future__ import annotations

from ._bounds import check_int, check_seconds
from ._guard import keeps_answers
from ._guard_url import ENCODE_HINT, check_guard_timeout, split_guard_url
from ._ledger import Answer, Claim, Ledger, Status, claimed_member
from ._metrics import Counts
from ._options import refuse_unknown
from ._secrets import COMMON_SECRETS
from ._stored import StoredGuard

__all__ = [
    "COMMON_SECRETS",
    "ENCODE_HINT",
    "Answer",
    "Claim",
    "Counts",
    "Ledger",
    "Status",
    "StoredGuard",
    "check_guard_timeout",
    "check_int",
    "check_seconds",
    "claimed_member",
    "keeps_answers",
    "refuse_unknown",
    "split_guard_url",
]
