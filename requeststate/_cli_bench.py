"""``requeststate bench``: the benchmark of the checkout the package runs from, a command only there."""

from __future__ import annotations

import argparse
import importlib.util
import runpy
import sys
from pathlib import Path
from typing import Final

from ._cli_shared import EXIT_OK, EXIT_USAGE

__all__ = ["BENCH_NEEDS_CHECKOUT", "add_bench", "checkout_benchmarks", "run_bench"]

BENCH_NEEDS_CHECKOUT: Final = (
    "the benchmark ships with the source tree, not the wheel: run from a checkout (make bench)"
)


def checkout_benchmarks() -> bool:
    """Whether ``benchmarks`` would import from the checkout this package came from.

    Under ``python -m`` the current directory comes first on ``sys.path``: any
    ``benchmarks`` package there would run. Only the one beside the package's
    own source is ours.
    """
    try:
        spec = importlib.util.find_spec("benchmarks")
    except (ImportError, ValueError):
        return False
    if spec is None or spec.origin is None:
        return False
    checkout = Path(__file__).resolve().parent.parent
    return Path(spec.origin).resolve().parent.parent == checkout


def run_bench(args: argparse.Namespace) -> int:
    """Run the checkout's ``benchmarks`` package; only offered where ``checkout_benchmarks()`` holds."""
    argv = ["benchmarks", *(["--quick"] if args.quick else [])]
    saved, sys.argv = sys.argv, argv
    try:
        runpy.run_module("benchmarks", run_name="__main__", alter_sys=True)
    except ImportError as missing:  # a peer or the chart library: the bench group is not installed
        print(
            f"the benchmark cannot import {missing.name or 'a module'}: run it with make bench, "
            "which installs the bench dependency group",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else EXIT_OK
    finally:
        sys.argv = saved
    return EXIT_OK


def add_bench(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``bench`` subcommand: add it only where ``checkout_benchmarks()`` holds."""
    bench = commands.add_parser("bench", help="run the benchmark (from a source checkout)")
    bench.add_argument("--quick", action="store_true", help="a short run, under 30 seconds")
