"""``requeststate bench``: what requeststate costs in your configuration, on this machine.

It measures, through the public API as a server calls it, for your state (a
size, or a sample file), your modes and the length of your key ring:

- ``encode``, ``decode`` and one round (``encode`` then ``decode``) per mode,
  in µs, and the rounds one core sustains;
- what a replay guard adds to a round: a ``MemoryGuard``, and with ``--redis
  URL`` (and ``--cluster``) a ``RedisGuard`` on your Redis, under a namespace of
  its own that it deletes after;

and prints a report with a one-line reading ("encrypted costs 0.40 µs (5%) a
round more than signed here"), or one JSON object (``--json``). Cases are timed
in interleaved batches within a budget (``--seconds``, 5 by default), and
their medians compared: numbers mean most within one run.

It needs nothing but the installed package (and the redis extra for
``--redis``). The repository's ``benchmarks/`` (``make bench``) is the
development suite: floors, peers, targets.

For the command line: ``add_arguments`` adds the options to the ``bench``
subparser, and ``run`` runs it (exit 0, or 2 for an option that cannot be used).
"""

from __future__ import annotations

from ._options import add_arguments
from ._run import run

__all__ = ["add_arguments", "run"]
