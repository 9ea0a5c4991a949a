"""The probe's race (requeststate/probe/_race.py): under ``--single-use``, identical redemptions of one
state sent at once, of which at most one may be accepted; in process, over one connection and over
the workers of a fleet."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from requeststate import probe
from tests.support import probe_gallery as gallery
from tests.support import probe_retries
from tests.support.memory_guard import memory_guard
from tests.support.probe_in_process import in_process

REFUSED = "refused: JSON-RPC -32602 Invalid or expired requestState"
ONE_CONNECTION = "8 identical redemptions of one state sent at once over one connection"
TWO_WORKERS = "8 identical redemptions of one state sent at once over 2 workers"


def race(server: object, **options: Any) -> tuple[str, str]:
    """The result and detail of the race row of a ``--single-use`` probe of ``server``."""
    (row,) = [check for check in in_process(server, single_use=True, **options).checks if check.id == "race"]
    return row.result, row.detail


def test_a_guard_lets_one_of_eight_redemptions_at_once_through() -> None:
    assert race(gallery.protected(guard=memory_guard())) == (
        "PASS",
        f"{ONE_CONNECTION}: 1 accepted, the others {REFUSED}",
    )


def test_without_a_guard_every_redemption_at_once_is_accepted_and_counted() -> None:
    assert race(gallery.protected()) == ("FAIL", f"{ONE_CONNECTION}: 8 were accepted")


def test_a_guard_that_checks_then_claims_passes_a_replay_in_a_row_and_fails_the_race() -> None:
    # What no sequential replay shows: the check and the claim are two steps, and every redemption
    # sent at once passes the check before the first claims.
    report = in_process(probe_retries.server("check-then-claim"), single_use=True)
    found = {check.id: (check.result, check.detail) for check in report.checks}
    assert (found["replay"][0], found["race"]) == ("PASS", ("FAIL", f"{ONE_CONNECTION}: 8 were accepted"))


def test_a_guard_that_claims_in_one_step_passes_the_race() -> None:
    assert race(probe_retries.server("atomic")) == (
        "PASS",
        f"{ONE_CONNECTION}: 1 accepted, the others {REFUSED}",
    )


def test_workers_that_do_not_share_a_store_fail_the_race_once_per_worker() -> None:
    second = probe.Target(server=gallery.protected(guard=memory_guard()))
    assert race(gallery.protected(guard=memory_guard()), workers=(second,)) == (
        "FAIL",
        f"{TWO_WORKERS}: 2 were accepted",
    )


def test_workers_sharing_a_store_pass_the_race() -> None:
    guard = memory_guard()  # one guard object: what a Redis is to workers in processes of their own
    second = probe.Target(server=gallery.protected(guard=guard))
    assert race(gallery.protected(guard=guard), workers=(second,)) == (
        "PASS",
        f"{TWO_WORKERS}: 1 accepted, the others {REFUSED}",
    )


def test_racers_sets_how_many_are_sent_at_once() -> None:
    assert race(gallery.protected(), racers=3) == (
        "FAIL",
        "3 identical redemptions of one state sent at once over one connection: 3 were accepted",
    )


def test_without_single_use_there_is_no_race_row() -> None:
    report = in_process(gallery.protected())
    assert "race" not in {check.id for check in report.checks}


def test_racers_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^racers must be a positive int, not 0$"):
        probe.ProbeOptions(racers=0)
