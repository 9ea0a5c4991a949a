"""``python -m scripts.nemesis``: run the topologies asked for, print the checker's tables, and exit 1 on
any token accepted twice."""

from __future__ import annotations

import argparse
import json
import sys

from scripts.nemesis.checker import report
from scripts.nemesis.run import run
from scripts.nemesis.topologies import TOPOLOGIES
from scripts.nemesis.workers import quiet_logs

__all__ = ["DESCRIPTION", "main"]

DESCRIPTION = (
    "A nemesis test of single use, in the manner of Jepsen: redeem tokens from a fleet while its store fails."
)


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.nemesis", description=DESCRIPTION)
    parser.add_argument(
        "--seconds", type=float, default=40.0, help="how long each topology runs (default 40)"
    )
    parser.add_argument("--workers", type=int, default=4, help="worker processes (default 4)")
    parser.add_argument("--seed", type=int, default=1, help="the nemesis's seed (default 1)")
    parser.add_argument("--topology", action="append", choices=TOPOLOGIES, help="one topology (repeatable)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--mcp", action="store_true", help="over real MCP flows: scripts/mcp_nemesis/run.py")
    args = parser.parse_args(argv)
    if args.mcp:
        from scripts.mcp_nemesis import run as mcp_run  # the SDK, uvicorn: only for --mcp

        return mcp_run.main(
            args.topology or list(TOPOLOGIES), args.seconds, args.workers, args.seed, args.json
        )
    quiet_logs()  # the mismatched verifiers' guards run here
    runs = []
    for topology in args.topology or TOPOLOGIES:
        say(f"nemesis: {topology}, {args.seconds:g} s, {args.workers} workers, seed {args.seed}")
        runs.append(run(topology, args.seconds, args.workers, args.seed, say))
    print(report(runs))
    if args.json:
        with open(args.json, "w") as out:
            figures = [
                {
                    **one.summary(),
                    "by fault": one.by_fault(),
                    "resume by fault": one.resume_by_fault(),
                    "in flight by fault": one.in_flight_by_fault(),
                }
                for one in runs
            ]
            json.dump(figures, out, indent=2)
    doubles = sum(one.doubles() for one in runs)
    print(f"\n{doubles} double redemptions in {sum(len(one.history) for one in runs):,} redemptions")
    return 1 if doubles else 0
