"""Replays the fuzzer's seeds and its committed corpus through the fuzzer's own property checks.

Every file in ``fuzz/corpus/`` is an input the fuzzer found worth keeping (a
crash once fixed, or a case that reached new code); ``fuzz/properties.py``
decodes it into a ``verify``/``decode`` call and checks it. No atheris needed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.properties import check_input, seed_inputs

CORPUS = Path(__file__).resolve().parent.parent / "fuzz" / "corpus"
CORPUS_FILES = sorted(path for path in CORPUS.iterdir() if path.is_file() and not path.name.startswith("."))


@pytest.mark.parametrize("path", CORPUS_FILES, ids=[path.name[:12] for path in CORPUS_FILES])
def test_corpus_input_keeps_every_property(path: Path) -> None:
    check_input(path.read_bytes())


def test_every_seed_keeps_every_property() -> None:
    for data in seed_inputs():
        check_input(data)
