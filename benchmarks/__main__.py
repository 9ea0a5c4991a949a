"""``python -m benchmarks [--quick] [--strict] [--out DIR]``: measure, print, and write the results.

Writes ``bench.md`` (the tables), ``bench.json`` and ``bench.png`` under
``benchmarks/results/`` (``quick.*`` for a ``--quick`` run, so an everyday run
does not replace the published one). The exit code is 0 even when a target
fails, unless ``--strict`` is given.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from .chart import write_chart
from .report import render, to_json
from .run import Settings, run
from .targets import judge

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 1 if ``--strict`` and a target failed, else 0."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[1])
    parser.add_argument("--quick", action="store_true", help="a shorter run, under 30 s, for everyday use")
    parser.add_argument("--strict", action="store_true", help="exit non-zero if any target fails")
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help=f"where to write results (default {RESULTS})"
    )
    args = parser.parse_args(argv)

    settings = Settings.quick_run() if args.quick else Settings.full()
    results = run(settings, progress=lambda line: print(f"... {line}", file=sys.stderr, flush=True))
    targets = judge(results)
    report = render(results, targets)
    print(report)

    args.out.mkdir(parents=True, exist_ok=True)
    stem = "quick" if args.quick else "bench"
    (args.out / f"{stem}.md").write_text(report, encoding="utf-8")
    (args.out / f"{stem}.json").write_text(
        json.dumps(to_json(results, targets), indent=2) + "\n", encoding="utf-8"
    )
    chart = args.out / f"{stem}.png"
    written = [f"{stem}.md", f"{stem}.json"] + ([chart.name] if write_chart(results, chart) else [])
    print(
        f"Wrote {', '.join(written)} to {args.out}"
        + ("" if chart.name in written else " (no chart: matplotlib is not installed)")
    )
    failed = sum(target.status == "FAIL" for target in targets)
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
