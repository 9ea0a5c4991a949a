"""What ``import requeststate`` costs a fresh interpreter, from ``python -X importtime``.

``python -m benchmarks.importtime [--runs N]`` prints it alone; the benchmark
reports it with its target. Each run is a new interpreter that imports only
``requeststate``, from bytecode as an installed package is (a first, untimed
run writes what is missing); the figure is the cumulative time of the
``requeststate`` entry (everything it imported, not the interpreter's own
start-up), best and median of the runs. The run also lists which of the modules a call may never
need were imported.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

IMPORT_TARGET_MS = 50.0
# Imported by no call of the core, or only by v1x. (nacl): importing them up front
# is start-up time every process pays.
# inspect is not listed: msgspec loads it (through typing_extensions) whoever imports msgspec.
NOT_AT_IMPORT = ("asyncio", "nacl", "opentelemetry")


@dataclass(frozen=True)
class ImportTime:
    """``import requeststate`` in fresh interpreters."""

    runs: int
    best_ms: float
    median_ms: float
    modules: int
    """Modules the import loaded, beyond those a bare interpreter starts with."""
    unwanted: tuple[str, ...]
    """The packages of ``NOT_AT_IMPORT`` that it loaded."""
    dependencies_ms: float
    """Best ms of importing only what requeststate imports (``import_floor``), in the same run."""


_FLOOR_MODULE = "benchmarks.import_floor"


def _with_bytecode() -> dict[str, str]:
    # An installed package imports from the bytecode pip compiled: with
    # PYTHONDONTWRITEBYTECODE set, every run would compile our sources again
    # (about 15 ms) while the dependencies, installed, would not.
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def _one_run(module: str = "requeststate") -> tuple[float, list[str]]:
    done = subprocess.run(  # noqa: S603 (our interpreter, one of two fixed module names)
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        env=_with_bytecode(),
    )
    return parse_importtime(done.stderr, module)


def parse_importtime(stderr: str, top: str = "requeststate") -> tuple[float, list[str]]:
    """The cumulative ms of the top-level import of ``top``, and the modules it loaded."""
    # "import time: self [us] | cumulative | imported package", one line as each
    # import ends, nested ones indented: requeststate's own line comes after all
    # it imported, which follow the interpreter's own start-up imports.
    modules: list[str] = []
    for line in stderr.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if len(fields) != 3 or not fields[1].strip().isdigit():
            continue
        name = fields[2].strip()
        if fields[2].startswith("  "):  # nested: part of the next top-level import
            modules.append(name)
        elif name == top:
            return int(fields[1]) / 1000, [*modules, name]
        else:
            modules = []
    raise RuntimeError(f"python -X importtime printed no line for {top}")


def measure_import(runs: int = 7) -> ImportTime:
    """Import ``requeststate`` in ``runs`` fresh interpreters."""
    times, floors = [], []
    modules: list[str] = []
    _one_run(), _one_run(_FLOOR_MODULE)  # untimed: writes any bytecode that is missing
    for _ in range(runs):  # interleaved, so both see the same machine
        milliseconds, modules = _one_run()
        times.append(milliseconds)
        floors.append(_one_run(_FLOOR_MODULE)[0])
    unwanted = tuple(name for name in NOT_AT_IMPORT if any(m.split(".")[0] == name for m in modules))
    return ImportTime(runs, min(times), statistics.median(times), len(modules), unwanted, min(floors))


def main(argv: Sequence[str] | None = None) -> int:
    """Print the import time against its target."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.importtime", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters to time (default 7)")
    result = measure_import(parser.parse_args(argv).runs)
    verdict = "PASS" if result.best_ms <= IMPORT_TARGET_MS else "FAIL"
    print(
        f"import requeststate: best {result.best_ms:.1f} ms, median {result.median_ms:.1f} ms "
        f"of {result.runs} runs, {result.modules} modules (target <= {IMPORT_TARGET_MS:.0f} ms: {verdict})"
    )
    print(
        f"its imports alone (benchmarks/import_floor.py): best {result.dependencies_ms:.1f} ms; "
        f"requeststate's own code adds {result.best_ms - result.dependencies_ms:.1f} ms"
    )
    print(f"imported though no call may need them: {', '.join(result.unwanted) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
