"""The probe's verdicts as JUnit XML (requeststate/probe/_junit.py, ``--junit FILE``): a file a CI system
parses, a test case per row, counts as the report's, and whatever a server said escaped."""

from __future__ import annotations

import io
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from requeststate import probe
from requeststate.cli import main
from requeststate.probe._junit import write_junit
from tests.support import probe_retries

HOSTILE = 'refused: "quoted" <b>bold</b> & ]]> \x1b[2J\x00\x07 \ud800 end'


def parsed(path: Path) -> ET.Element:
    """The root of a JUnit file the probe wrote: its own output, which declares no entity."""
    return ET.parse(path).getroot()  # noqa: S314


def probed(path: Path, kind: str = "runs-again") -> dict[str, object]:
    """A probe of a ``probe_retries`` server of ``kind`` with ``junit=path``: its JSON report."""
    out = io.StringIO()
    target = probe.Target(server=probe_retries.server(kind))
    options = probe.ProbeOptions(exactly_once=("book",), max_rounds=1)
    probe.run(target, options, as_json=True, junit=path, out=out, err=io.StringIO())
    report: dict[str, object] = json.loads(out.getvalue())
    return report


def test_the_file_parses_and_counts_what_the_report_counts(tmp_path: Path) -> None:
    path = tmp_path / "probe.xml"
    report = probed(path)
    summary = report["summary"]
    assert isinstance(summary, dict)
    root = parsed(path)
    (suite,) = root.findall("testsuite")
    counted = {name: suite.get(name) for name in ("tests", "failures", "errors", "skipped")}
    assert counted == {
        "tests": str(sum(summary.values())),
        "failures": str(summary["FAIL"]),
        "errors": str(summary["ERROR"]),
        "skipped": str(summary["SKIP"]),
    }
    assert (summary["FAIL"] > 0, root.get("tests"), root.get("failures")) == (
        True,
        counted["tests"],
        counted["failures"],
    )


def test_a_test_case_per_row_named_by_its_id_and_scope(tmp_path: Path) -> None:
    path = tmp_path / "probe.xml"
    report = probed(path)
    checks = report["checks"]
    assert isinstance(checks, list)
    cases = parsed(path).iter("testcase")
    assert [(case.get("classname"), case.get("name")) for case in cases] == [
        (check["scope"], f"{check['id']}: {check['name']}") for check in checks
    ]


def test_a_failed_check_is_a_failure_with_its_flaw_and_evidence(tmp_path: Path) -> None:
    path = tmp_path / "probe.xml"
    report = probed(path)
    checks = report["checks"]
    assert isinstance(checks, list)
    (failed,) = [check for check in checks if check["id"] == "exactly_once"]
    (case,) = [
        case for case in parsed(path).iter("testcase") if case.get("name", "").startswith("exactly_once:")
    ]
    failure = case.find("failure")
    assert failure is not None
    assert (failed["result"], failure.get("message"), failure.text) == (
        "FAIL",
        failed["flaw"],
        failed["detail"],
    )


def test_a_passed_check_has_neither_failure_nor_skipped_and_a_skip_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "probe.xml"
    probed(path, "exactly-once")
    cases = {case.get("name", "").partition(":")[0]: case for case in parsed(path).iter("testcase")}
    inside = {name: [child.tag for child in cases[name]] for name in ("exactly_once", "replay")}
    assert inside == {"exactly_once": ["system-out"], "replay": ["skipped", "system-out"]}


def test_what_a_server_said_is_escaped_and_the_file_still_parses(tmp_path: Path) -> None:
    report = probe.Report(probe.Target(url="http://127.0.0.1:1/mcp"), server=HOSTILE, protocol="2026-07-28")
    report.checks = [
        probe.Check(
            "replay", "same state redeemed twice", "FAIL", HOSTILE, "a state can be redeemed", "tool x"
        ),
        probe.Check("expiry", "state used after expiry", "SKIP", HOSTILE, "", "tool x"),
    ]
    path = tmp_path / "probe.xml"
    write_junit(report, path)
    raw = path.read_bytes()
    root = parsed(path)
    (failure,) = root.iter("failure")
    (skipped,) = root.iter("skipped")
    (server,) = [item for item in root.iter("property") if item.get("name") == "server"]
    expected = 'refused: "quoted" <b>bold</b> & ]]> \\x1b[2J\\x00\\x07 \\ud800 end'
    assert (failure.text, skipped.get("message"), server.get("value")) == (expected, expected, expected)
    assert (b"\x1b" in raw, b"\x00" in raw, b"]]>" in raw, b"<b>" in raw) == (False, False, False, False)


def test_the_command_line_writes_the_file_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(__file__).resolve().parent.parent
    monkeypatch.setenv("PYTHONPATH", str(root))
    monkeypatch.chdir(root)
    path = tmp_path / "probe.xml"
    # A server without the SDK, that starts in a blink: the file is the subject, not the server.
    command = [sys.executable, "-m", "tests.support.probe_hostile", "sound"]
    code = main(["probe", "--junit", str(path), "--timeout", "60", "--max-rounds", "1", "--", *command])
    table = capsys.readouterr().out
    suite = parsed(path).find("testsuite")
    assert suite is not None
    assert (code, suite.get("name"), suite.get("failures")) == (
        0,
        "requeststate probe: stdio: " + " ".join(command),
        "0",
    )
    assert table.startswith("requeststate probe: stdio: ")


def test_a_file_that_cannot_be_written_is_a_setup_error(tmp_path: Path) -> None:
    err = io.StringIO()
    target = probe.Target(server=probe_retries.server("exactly-once"))
    missing = tmp_path / "no such directory" / "probe.xml"
    code = probe.run(target, probe.ProbeOptions(max_rounds=1), junit=missing, out=io.StringIO(), err=err)
    assert (code, err.getvalue().startswith("error: cannot write the JUnit report: ")) == (2, True)
