"""``requeststate probe``: an adversary against any MCP server's ``requestState`` handling.

The probe is an MCP client (the official SDK's, protocol 2026-07-28). It finds a
tool, prompt or resource that answers "input required" with a ``requestState``,
then tries what an attacker holding only the client's view would try, each on a
fresh first round: tamper with the bytes (a byte flipped, truncated, extended,
the MAC or tag removed or truncated, the prefix swapped, re-padded), send a
state the server never minted, forge a changed state without the key (JSON,
form text, base64, hex, zlib and gzip read and re-encoded; an unkeyed hash
recomputed; a JWT re-signed with ``alg: none``), and redeem a genuine state
where it does not belong: with other arguments, at another target, as another
user, after it expired, twice. It needs nothing from the server but the wire.

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
  that moves on (asks something else).
- A lost connection or a timeout is neither: the check reports ERROR.

A PASS proves that this attempt was refused, no more: the probe has no key and
knows common encodings, not every one.

The package imports ``mcp``; the command line imports it only when ``probe`` runs.
"""

from __future__ import annotations

from ._report import Check, Options, Report, Result, Target
from ._run import DEFAULT_TIMEOUT, probe, run
from ._session import ProbeError

__all__ = ["DEFAULT_TIMEOUT", "Check", "Options", "ProbeError", "Report", "Result", "Target", "probe", "run"]
