"""The probe's exactly-once checks (requeststate/probe/_exactly_once.py, and the race of
requeststate/probe/_race.py on such a tool), against tools that keep exactly once by hand, right and
wrong (tests/support/probe_retries.py), and against the real boundary (examples/exactly_once_server.py),
in process."""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import requeststate as rs
from requeststate.cli import main
from tests.conftest import SECRET
from tests.support import probe_gallery as gallery
from tests.support import probe_retries
from tests.support.probe_in_process import in_process
from tests.support.reference import b64

ROOT = Path(__file__).resolve().parent.parent
ROWS = ("exactly_once", "exactly_once_changed", "exactly_once_race")
BOOKED = r"'booked probe-[0-9a-f]{6} runs=(\d+)'"
AT_ONCE = "8 identical calls of one state sent at once over one connection"


def exactly_once(server: object, **options: Any) -> dict[str, tuple[str, str]]:
    """The exactly-once rows (and the replay row) of a probe of ``server``'s ``book``: result and detail."""
    report = in_process(server, exactly_once=("book",), **options)
    return {
        check.id: (check.result, check.detail) for check in report.checks if check.id in (*ROWS, "replay")
    }


def test_a_tool_kept_exactly_once_passes_every_row() -> None:
    found = exactly_once(probe_retries.server("exactly-once"))
    assert {id_: result for id_, (result, _) in found.items()} == {
        "replay": "SKIP",
        "exactly_once": "PASS",
        "exactly_once_changed": "PASS",
        "exactly_once_race": "PASS",
    }
    identical = rf"the identical retry got the first call's answer again \({BOOKED}\)"
    assert re.fullmatch(identical, found["exactly_once"][1]) is not None, found
    assert found["exactly_once_changed"][1] == (
        "a retry with other inputResponses is refused: JSON-RPC -32602 Invalid or expired requestState"
    )
    race = rf"{AT_ONCE}: 1 got one answer \({BOOKED}\), 7 were told in progress"
    assert re.fullmatch(race, found["exactly_once_race"][1]) is not None, found


def test_a_tool_that_runs_the_action_again_on_a_retry_fails_naming_both_answers() -> None:
    result, detail = exactly_once(probe_retries.server("runs-again"))["exactly_once"]
    match = re.fullmatch(rf"the first call answered {BOOKED}, its identical retry {BOOKED}", detail)
    assert (result, match is not None) == ("FAIL", True), detail
    assert match is not None
    assert int(match[2]) == int(match[1]) + 1  # the action ran once more


def test_a_tool_that_answers_a_retry_otherwise_fails() -> None:
    result, detail = exactly_once(probe_retries.server("other-answer"))["exactly_once"]
    pattern = rf"the first call answered {BOOKED}, its identical retry 'already booked'"
    assert (result, re.fullmatch(pattern, detail) is not None) == ("FAIL", True), detail


def test_a_tool_that_accepts_a_retry_with_other_answers_fails() -> None:
    result, detail = exactly_once(probe_retries.server("accepts-changed"))["exactly_once_changed"]
    pattern = (
        rf"after the first call answered {BOOKED}, a retry of its state with other inputResponses was "
        "accepted: the tool completed"
    )
    assert (result, re.fullmatch(pattern, detail) is not None) == ("FAIL", True), detail


def test_identical_calls_at_once_that_each_run_the_action_fail_the_race() -> None:
    result, detail = exactly_once(probe_retries.server("runs-again"))["exactly_once_race"]
    pattern = rf"{AT_ONCE}: 8 different answers \({BOOKED}, {BOOKED}\): the action ran more than once"
    assert (result, re.fullmatch(pattern, detail) is not None) == ("FAIL", True), detail


def test_an_answer_the_server_did_not_keep_is_a_warn_not_a_verdict() -> None:
    result, detail = exactly_once(probe_retries.server("too-large"))["exactly_once"]
    assert (result, detail) == (
        "WARN",
        "the server kept no answer to compare (JSON-RPC -32602 requestState was redeemed by an earlier call "
        "whose answer was too large to keep (request_state_answer_too_large)): nothing is proven either way",
    )


def test_a_retry_told_in_progress_is_sent_again_until_it_gets_the_answer() -> None:
    result, detail = exactly_once(probe_retries.server("late-keep"))["exactly_once"]
    pattern = rf"the identical retry got the first call's answer again \({BOOKED}\)"
    assert (result, re.fullmatch(pattern, detail) is not None) == ("PASS", True), detail


def test_a_retry_still_in_progress_after_the_first_call_answered_fails() -> None:
    result, detail = exactly_once(probe_retries.server("stuck"))["exactly_once"]
    assert (result, detail) == (
        "FAIL",
        "the identical retry was still told in progress 5 times over 0.8 s, though the first call had "
        "answered",
    )


def test_single_use_alone_fails_the_identical_retry_as_refused() -> None:
    # A guard refuses every retry: at most once, not exactly once; an answer lost is lost for good.
    result, detail = exactly_once(probe_retries.server("atomic"), single_use=True)["exactly_once"]
    pattern = (
        rf"the first call answered {BOOKED}, its identical retry was refused: JSON-RPC -32602 Invalid "
        r"or expired requestState \(invalid_request_state\)"
    )
    assert (result, re.fullmatch(pattern, detail) is not None) == ("FAIL", True), detail


def test_retries_refused_are_not_called_a_state_accepted() -> None:
    # Single use alone refuses the retries: it accepted nothing it should have refused.
    report = in_process(probe_retries.server("atomic"), exactly_once=("book",))
    assert report.headline() == (
        "8 PASS, 2 FAIL, 0 INFO, 11 SKIP: identical retries of an exactly-once tool did not all get its "
        "first answer"
    )


def test_a_flow_not_walked_to_its_end_skips_the_exactly_once_rows() -> None:
    # The gallery's wizard completes in round 3; one round walked is not its final round.
    server = gallery.protected()
    report = in_process(server, exactly_once=("book_table",))
    found = {check.id: check.result for check in report.checks if check.id in ROWS}
    assert found == dict.fromkeys(ROWS, "SKIP")


def test_the_command_line_runs_the_exactly_once_rows_of_the_tool_it_names(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.chdir(ROOT)
    command = [sys.executable, "-m", "tests.support.probe_retries", "exactly-once"]
    code = main(["probe", "--json", "--timeout", "60", "--exactly-once", "book", "--", *command])
    report = json.loads(capsys.readouterr().out)
    found = {check["id"]: check["result"] for check in report["checks"] if check["id"] in ROWS}
    assert (code, found) == (0, dict.fromkeys(ROWS, "PASS"))


def test_the_example_protected_exactly_once_passes_every_row_and_the_race(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The real boundary: protect(..., exactly_once={"book"}), as examples/exactly_once_server.py runs it.
    monkeypatch.setenv(rs.ENV_KEYS, b64(SECRET))
    monkeypatch.delenv(rs.ENV_GUARD, raising=False)
    example = importlib.import_module("examples.exactly_once_server")
    report = in_process(
        importlib.reload(example).server, exactly_once=("book",), single_use=True, max_rounds=2
    )
    found = {check.id: check.result for check in report.checks if check.id in (*ROWS, "race")}
    assert found == {"exactly_once": "PASS", "exactly_once_changed": "PASS", "exactly_once_race": "PASS"}
