"""Run the ``verify``/``decode`` fuzzer for a set time, from fresh seeds and the committed corpus.

    python -m fuzz.run --seconds 60            # the bounded pass in make test
    python -m fuzz.run --seconds 600 --keep build/fuzz   # keep what it found

Seeds (valid tokens of each mode, each under a configuration that accepts it
and a few that refuse it) are written to a temporary directory; libFuzzer
reads them and ``fuzz/corpus/`` and writes new inputs to a scratch directory,
never to the committed corpus. A property violation stops the run with exit
status 1 and leaves the input as ``crash-*`` in ``--artifacts``; copy it into
``fuzz/corpus/`` so ``tests/test_fuzz_corpus.py`` keeps it as a regression test.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FUZZ_DIR = Path(__file__).resolve().parent
ROOT = FUZZ_DIR.parent
CORPUS = FUZZ_DIR / "corpus"
MAX_LEN = 4096


def write_seeds(directory: Path) -> int:
    from fuzz.properties import seed_inputs

    seeds = seed_inputs()
    for data in seeds:
        (directory / hashlib.sha1(data, usedforsecurity=False).hexdigest()).write_bytes(data)
    return len(seeds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=600, help="total fuzzing time (default 600)")
    parser.add_argument("--keep", type=Path, help="copy the inputs libFuzzer found into this directory")
    parser.add_argument("--artifacts", type=Path, default=ROOT / "build" / "fuzz-artifacts")
    args = parser.parse_args(argv)

    if importlib.util.find_spec("atheris") is None:
        # The fuzz group installs atheris where it ships as a wheel (Linux x86_64).
        # Elsewhere say so, loudly, rather than fail every check for a missing fuzzer;
        # tests/test_fuzz_corpus.py still replays the corpus there.
        print("fuzz: SKIPPED: atheris is not installed on this platform (pip install atheris needs clang)")
        return 0
    args.artifacts.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="requeststate-fuzz-") as scratch:
        found, seeds = Path(scratch, "found"), Path(scratch, "seeds")
        found.mkdir()
        seeds.mkdir()
        count = write_seeds(seeds)
        print(
            f"fuzz: {count} seeds, {len(list(CORPUS.iterdir()))} corpus inputs, {args.seconds} s", flush=True
        )
        command = [
            sys.executable,
            "-m",
            "fuzz.fuzz_verify",
            str(found),
            str(seeds),
            str(CORPUS),
            f"-max_total_time={args.seconds}",
            f"-max_len={MAX_LEN}",
            "-timeout=10",
            "-rss_limit_mb=2048",
            "-print_final_stats=1",
            f"-artifact_prefix={args.artifacts}/",
        ]
        result = subprocess.run(command, cwd=ROOT, check=False, text=True, stderr=subprocess.PIPE)  # noqa: S603 (our interpreter, fixed arguments)
        sys.stderr.write(result.stderr)
        report(result.stderr)
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            for path in found.iterdir():
                shutil.copy2(path, args.keep / path.name)
            print(f"fuzz: kept {len(list(found.iterdir()))} inputs in {args.keep}")
    if result.returncode != 0:
        print(f"fuzz: FAILED (exit {result.returncode}); the input is in {args.artifacts}", file=sys.stderr)
    return 0 if result.returncode == 0 else 1


def report(stderr: str) -> None:
    stats = dict(re.findall(r"^stat::(\w+):\s*(\d+)", stderr, re.MULTILINE))
    if stats:
        print(
            f"fuzz: {stats.get('number_of_executed_units', '?')} inputs, "
            f"{stats.get('average_exec_per_sec', '?')} execs/s on average, "
            f"peak RSS {stats.get('peak_rss_mb', '?')} MB"
        )


if __name__ == "__main__":
    sys.exit(main())
