"""``requeststate probe``: an adversary against any MCP server's ``requestState`` handling.

The probe is an MCP client (the official SDK's, protocol 2026-07-28). It finds
every tool, prompt and resource that answers "input required" with a
``requestState`` (up to ``ProbeOptions.max_targets``), walks each flow to its end
with placeholder answers (up to ``ProbeOptions.max_rounds`` rounds), and attacks
the state of every round as an attacker holding only the client's view would,
each attempt on a fresh round (the first state probed gets every check, each
other state those that attack a state, with fewer bits flipped):

- change the bytes: single bits flipped across the decoded token (base64, hex,
  behind any prefix, spelled back as the server spells it), truncated, extended,
  the MAC or tag removed or truncated, the prefix swapped, a random state;
- forge a changed state without the key: every member of a readable state edited
  in turn (JSON, form text, base64, hex, zlib and gzip read and re-encoded, behind
  any prefix), an unkeyed hash recomputed, the MAC's key guessed offline from a
  list of common secrets (and the user's, ``ProbeOptions.wordlists``) and proven by a
  state signed with it, a JWT re-signed with ``alg: none``;
- spell the same token otherwise (re-padded, the other base64 alphabet);
- redeem a genuine state where it does not belong: with other arguments, at
  another target, as another user, after it expired, twice;
- across the workers of one deployment (``ProbeOptions.workers``): a state minted
  by one sent to every other (refused: the workers do not share keys or audience),
  a state redeemed on one redeemed again on another, and every other check with
  its states sent to another worker than the one that minted them. Behind one
  URL, under ``single_use``, a refused replay is sent again over new connections,
  which a load balancer places on the workers it picks (one, under client-IP
  affinity): the report's ``coverage`` says what one address covers;
- race, under ``single_use``: one state redeemed ``ProbeOptions.racers`` times at once, over one
  connection or spread over the workers (at most one may be accepted);
- retry a tool named exactly-once (``ProbeOptions.exactly_once``): its final round sent again
  identically (the first call's answer, the same JSON, must come back; "in progress", JSON-RPC
  -32603 ``request_state_in_progress``, is retried a few times), with other answers (refused), and
  ``racers`` times at once (one answer, or "in progress").

The verdicts print as a table, as JSON, or (``run(junit=...)``) are written as JUnit XML.

It needs nothing from the server but the wire.

How an answer is judged:

- **Refused** (PASS): a JSON-RPC error (the spec's -32602 "Invalid or expired
  requestState", or any other server error), or a re-elicit: an
  input-required result that asks exactly what a call without any
  ``requestState`` asks. That last rule needs the server to answer a valid
  echo differently from a first call; the probe checks this on the unmodified
  state and stops with a setup error when it cannot tell the two apart.
- **Refused like a crash** (WARN): a tool result with ``isError: true``, or
  JSON-RPC -32603. A handler that crashed parsing the state answers the same
  way, so this proves nothing; a random state answered so is a FAIL (it
  reached the handler).
- **Accepted** (FAIL): anything else, a normal result or an input-required
  that moves on (asks something else). Each FAIL names the flaw it proves
  (``Check.flaw``). Another spelling of the same token accepted is a WARN, not
  a FAIL: the server decodes leniently, which matters to a replay guard keyed on
  the token's text, not to integrity; unless another check found its integrity broken
  (the row names it).
- A lost connection or a timeout is neither: the check reports ERROR.

A PASS proves that this attempt was refused, no more: the probe has no key,
knows common encodings and common secrets, not every one, and edits a bounded
sample of bytes and members.

A hostile server cannot break the probe: every message it sends is bounded (4 MiB,
50,000 JSON values), every parse is bounded in size and depth, listings stop after
a few pages, and a server that breaks the protocol ends the probe with
``ProbeError`` (exit 2), never a verdict on its state.

The package imports ``mcp``; the command line imports it only when ``probe`` runs. Without the
``mcp`` extra, importing the package raises an ``ImportError`` named ``requeststate.probe`` that
says what to install: the command line and the pytest fixture tell it from any other.
"""

from __future__ import annotations

try:  # the mcp extra, all of it: the probe imports each of these
    import anyio  # noqa: F401
    import httpx2  # noqa: F401
    import mcp  # noqa: F401
    import mcp_types  # noqa: F401
except ImportError as missing:
    raise ImportError(
        "requeststate.probe needs the mcp extra: pip install 'requeststate[mcp]' "
        f"(cannot import {missing.name})",
        name=__name__,
    ) from missing

from ._report import Check, ProbeOptions, Report, Result, Scope, Target
from ._run import DEFAULT_TIMEOUT, probe, run
from ._session import ProbeError

__all__ = [
    "DEFAULT_TIMEOUT",
    "Check",
    "ProbeError",
    "ProbeOptions",
    "Report",
    "Result",
    "Scope",
    "Target",
    "probe",
    "run",
]
