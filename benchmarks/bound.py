"""How close pure Python can come to the ``v1e.`` floor: ``python -m benchmarks.bound``.

Times four decodes of one valid 64 B ``v1e.`` token, interleaved in one run:

- ``floor``: the benchmark's floor (base64url decode + ``AESGCM.decrypt``);
- ``parts only``: the pieces every spec-following decoder runs, glued with
  nothing else: the cached bind tag, our base64url reader, the decrypt, and
  the payload parse with its claim checks (``read_payload``). No option
  checks, no mode dispatch, no key rotation, no reasons: not a decoder to use,
  a lower bound for any decoder written in Python on these primitives;
- ``Codec.decode``: a ``Codec`` built once, as a server holds it;
- ``decode``: the ``requeststate.decode`` function, over its cached ``Codec``.

It times whichever requeststate is imported: the sources in ``.venv``, and
the compiled build with ``PYTHONSAFEPATH=1 .venv-bench/bin/python -m
benchmarks.bound`` (after ``make bench``). In pure Python ``parts only``
is already about 1.55x the floor, so no rearrangement of the Python reached
the 1.6x target; compiled, ``Codec.decode`` comes to about ``parts only``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence

import requeststate as rs
from requeststate._base64 import b64decode
from requeststate._envelope import Payload, read_payload

from .cases import FLOORS, SUBJECT, TOOL, make_state
from .timing import measure_interleaved

__all__ = ["bound_cases", "main"]


def _parts_only(ring: rs.KeyRing) -> Callable[[str], str | None]:
    def decode(token: str) -> str | None:
        key, bind_tag, aad = ring._bound_keys(SUBJECT, TOOL)[0]
        blob = b64decode(token[4:])
        if blob is None:
            return None
        authenticated = key.aesgcm.decrypt(blob[:12], blob[12:], aad)
        payload = read_payload(authenticated, bind_tag, int(time.time()), 0)
        return payload.s if isinstance(payload, Payload) else None

    return decode


def bound_cases(ring: rs.KeyRing) -> dict[str, Callable[[], object]]:
    """The four decodes of one fresh 64 B ``v1e.`` token, each checked to return the state."""
    state = make_state(64)
    token = rs.encode(state, ring, mode="encrypted", subject=SUBJECT, tool=TOOL)
    parts_only = _parts_only(ring)
    codec = rs.Codec(ring, mode="encrypted")
    blob = b64decode(token[4:]) or b""
    payload = ring._subkeys[0].aesgcm.decrypt(blob[:12], blob[12:], ring._bound_keys(SUBJECT, TOOL)[0][2])
    floor = FLOORS["encrypted"](payload, json.loads(payload)["b"].encode("ascii"))
    cases: dict[str, Callable[[], object]] = {
        "floor": floor.decode,
        "parts only": lambda: parts_only(token),
        "Codec.decode": lambda: codec.decode(token, subject=SUBJECT, tool=TOOL),
        "decode": lambda: rs.decode(token, ring, mode="encrypted", subject=SUBJECT, tool=TOOL),
    }
    if (
        any(cases[name]() != state for name in ("parts only", "Codec.decode", "decode"))
        or not cases["floor"]()
    ):
        raise RuntimeError("a case did not decode the valid token")
    return cases


def main(argv: Sequence[str] | None = None) -> int:
    """Print each case's best µs and its ratio to the floor."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bound", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=25, help="interleaved samples per case")
    args = parser.parse_args(argv)
    stats = measure_interleaved(
        bound_cases(rs.KeyRing(os.urandom(32))), rounds=args.rounds, sample_seconds=0.02
    )
    floor = stats["floor"].best_us
    for name, one in stats.items():
        print(f"{name:>12}  {one.best_us:6.2f} µs  {one.best_us / floor:5.2f}x floor")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
