"""tests/support/combinations.py: make test's covering set of a process-starting test's combinations."""

from __future__ import annotations

from tests.support.combinations import covering

KINDS = ("fastmcp", "sdk")
STORES = ("redis", "sqlite", "postgres")


def kept(axes: tuple[tuple[str, ...], ...]) -> list[tuple[object, ...]]:
    return [tuple(param.values) for param in covering(*axes) if not param.marks]


def test_every_combination_is_a_parameter_named_as_stacked_parametrizes_name_it() -> None:
    ids = [param.id for param in covering(KINDS, STORES)]
    assert ids == [f"{kind}-{store}" for kind in KINDS for store in STORES]


def test_make_test_keeps_every_value_of_every_axis_in_as_many_combinations_as_the_longest_axis() -> None:
    # Catches: a covering set that drops a store or a framework (its path no longer in the loop),
    # and one that keeps more than it needs (the loop pays for combinations the matrix runs).
    assert kept((KINDS, STORES)) == [("fastmcp", "redis"), ("fastmcp", "postgres"), ("sdk", "sqlite")]


def test_the_combinations_make_test_leaves_out_are_marked_for_make_matrix() -> None:
    marks = {param.id: [mark.name for mark in param.marks] for param in covering(KINDS, STORES)}
    assert marks == {
        "fastmcp-redis": [],
        "fastmcp-sqlite": ["matrix"],
        "fastmcp-postgres": [],
        "sdk-redis": ["matrix"],
        "sdk-sqlite": [],
        "sdk-postgres": ["matrix"],
    }
