"""``requeststate bench``: what each layer a request crosses costs in your configuration, on this machine.

It measures, through the public API as a server calls it, for your state (a
size, or a sample file), your modes and the length of your key ring:

- the codec: ``encode``, ``decode`` and one round (``encode`` then ``decode``)
  per mode, in µs, and the rounds one core sustains;
- one MCP round through ``protect()``'s boundary beside the SDK's own (and
  FastMCP's, when installed), in process (with the mcp extra);
- a whole MCP round over streamable HTTP on loopback: real servers, the SDK's
  as shipped and protected, served by uvicorn, and real clients (``_http``);
- each replay guard ``--guard URL`` names (``memory``, a Redis, a Redis
  Cluster, an SQLite file), sync from 1, 8 and 64 threads and async from as many tasks: claims
  per second, p50 and p99 latency, and where more concurrency stops adding
  claims; a Redis guard writes under a namespace of its own, deleted after;

and prints a table per layer with a verdict (``_analysis``: which bounds a
round, the transport included, and what each guard sustains), or one JSON
object (``--json``). Numbers mean most within one run.

It needs nothing but the installed package (and the extras of what it
measures). The repository's ``benchmarks/`` (``make bench``) is the
development suite: floors, peers, targets; its ``benchmarks.mcp_rounds``
times the rounds ``boundary_rounds`` builds.

For the command line: ``add_arguments`` adds the options to the ``bench``
subparser, and ``run`` runs it (exit 0, or 2 for an option that cannot be used).

For the repository's ``benchmarks/``, the one harness both time with:
``measure`` (interleaved batches under a budget, ``repeated`` for a plain
call, ``Timing``), ``percentile_us``, ``measure_guard`` (claims through a
guard URL at each concurrency, ``ClaimLevel``) and ``boundary_rounds``.
"""

from __future__ import annotations

from ._claim_load import ClaimLevel
from ._mcp import boundary_rounds, signed_in
from ._measure import ASYNC, SYNC, measure_guard
from ._options import add_arguments
from ._run import run
from ._timing import Batch, Timing, measure, percentile_us, repeated

__all__ = [
    "ASYNC",
    "SYNC",
    "Batch",
    "ClaimLevel",
    "Timing",
    "add_arguments",
    "boundary_rounds",
    "measure",
    "measure_guard",
    "percentile_us",
    "repeated",
    "run",
    "signed_in",
]
