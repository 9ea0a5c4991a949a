#!/usr/bin/env python3
"""Atheris harness over ``verify`` and ``decode``: every mode, with and without a guard.

    python -m fuzz.fuzz_verify [libFuzzer options] [corpus dirs]

Run it through ``python -m fuzz.run``, which writes the seed inputs (valid
tokens of each mode) and bounds the time. The properties are in
``fuzz/properties.py``; a failing input is a crash, saved by libFuzzer.
"""

from __future__ import annotations

import sys
from pathlib import Path

# libFuzzer's -merge and -fork re-run this file as a script: let it find the package ``fuzz``.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import atheris  # type: ignore[import-not-found,import-untyped,unused-ignore]

# Instrument the package (and the harness's own decisions) for coverage feedback.
with atheris.instrument_imports(include=["requeststate", "fuzz.properties"]):
    from fuzz.properties import check_input


def test_one_input(data: bytes) -> None:
    check_input(data)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
