"""The combinations of a parametrized test that ``make test`` runs, and those left to ``make matrix``.

A behaviour that starts real server processes is tested on every combination of its axes (a
framework and a store, say), and each combination costs seconds of processes. ``make test`` runs
a covering set: every value of every axis at least once (the SDK and FastMCP each, each store
each), so a bug in one store's or one framework's path still fails the loop. The other
combinations are marked ``matrix``: pyproject.toml's addopts leave them out, and ``make matrix``
runs every one on every Python (noxfile.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from _pytest.mark import ParameterSet

__all__ = ["covering"]


def covering(*axes: Sequence[str]) -> list[ParameterSet]:
    """Every combination of ``axes``, in product order; those outside a covering set marked ``matrix``.

    The covering set takes the i-th value of each axis for i up to the longest axis (a shorter
    axis wraps around), so it holds every value of every axis and no more combinations than the
    longest axis has values. The ids are the values joined by ``-``, as stacked parametrizes name them.
    """
    longest = max(len(axis) for axis in axes)
    covered = {tuple(axis[i % len(axis)] for axis in axes) for i in range(longest)}
    return [
        pytest.param(
            *combination, id="-".join(combination), marks=() if combination in covered else pytest.mark.matrix
        )
        for combination in itertools.product(*axes)
    ]
