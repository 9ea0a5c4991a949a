"""``run``: check the options, measure, print the report; every usage or configuration error exits 2."""

from __future__ import annotations

import argparse
import sys
from typing import Final, TextIO

from ._measure import measure_all
from ._options import ConfigError, settings_from
from ._report import as_json, text

__all__ = ["EXIT_OK", "EXIT_USAGE", "run"]

EXIT_OK: Final = 0
EXIT_USAGE: Final = 2


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Measure what ``args`` (parsed with ``add_arguments``' options) asks for, and print it to ``out``.

    Returns:
        0 once the report is printed; 2 for an option that cannot be used (a size
        out of range, an unknown mode, a state file that cannot be read, a guard
        that cannot be built or does not answer), with one line on stderr saying
        why and nothing on ``out``.
    """
    try:
        settings = settings_from(args)
        results = measure_all(settings)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    out.write(as_json(results) + "\n" if settings.as_json else text(results))
    return EXIT_OK
