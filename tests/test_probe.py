"""``requeststate probe`` against real servers over stdio and streamable HTTP, and its pieces alone."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp_types import (
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequests,
    ListRootsRequest,
    ListRootsResult,
    Tool,
)

import requeststate as rs
from requeststate import _probe as probe
from requeststate._cli import main

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = shutil.which("requeststate", path=str(Path(sys.executable).parent))
SECRET = base64.urlsafe_b64encode(bytes(range(32))).rstrip(b"=").decode()
BOOKING = [sys.executable, str(ROOT / "examples" / "booking_server.py")]
INSECURE = [sys.executable, str(ROOT / "examples" / "insecure_server.py")]
TIMEOUT = "30"


@pytest.fixture
def server_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a spawned server inherits: a shared key, and this checkout on its import path."""
    monkeypatch.setenv("REQUESTSTATE_KEYS", SECRET)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.chdir(ROOT)


def probe_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    """Run ``requeststate probe --json`` in this process; the exit code and the report."""
    code = main(["probe", "--json", "--timeout", TIMEOUT, *args])
    return code, json.loads(capsys.readouterr().out)


def results(report: dict[str, Any]) -> dict[str, str]:
    return {check["id"]: check["result"] for check in report["checks"]}


TAMPERING = ["bit_flip", "truncated", "extended", "tag_stripped", "prefix_swapped", "repadded"]
ALL_CHECKS = [*TAMPERING, "edited", "cross_tool", "replay", "confidential"]


# --- the example servers ---------------------------------------------------------------------------------


def test_console_script_passes_the_example_booking_server() -> None:
    assert SCRIPT is not None, "the requeststate console script is not installed beside this Python"
    # The probe hands its whole environment to the server it spawns (the SDK's stdio client alone
    # would pass only a safe subset): the server finds REQUESTSTATE_KEYS.
    env = {**os.environ, "REQUESTSTATE_KEYS": SECRET, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [SCRIPT, "probe", "--timeout", TIMEOUT, "--", *BOOKING],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    table = done.stdout
    assert "tool:      book_table" in table
    assert "state:     v1e. token" in table
    assert "  FAIL  " not in table
    for line in table.splitlines():
        if line.startswith(("one byte flipped", "truncated", "extended", "MAC/tag", "prefix", "re-padded")):
            assert "PASS    refused: JSON-RPC -32602 Invalid or expired requestState" in line
    assert "0 FAIL" in table
    assert done.stderr == ""  # the server's refusal log stays out of the probe's output


def test_insecure_server_fails(server_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", "--timeout", TIMEOUT, "--", *INSECURE])
    table = capsys.readouterr().out
    assert code == 1
    assert "state:     JSON text" in table
    assert "the server accepted a mutated state" in table
    lines = {line.split("  ")[0]: line for line in table.splitlines()}
    assert "FAIL" in lines["one byte flipped"]
    assert "FAIL" in lines["readable state edited"]
    assert "book_table -> change_booking: accepted" in lines["state sent to another tool"]
    assert "INFO" in lines["same state redeemed twice"]
    assert "INFO" in lines["state hidden from the client"]


def test_insecure_server_strict_json_report(server_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = probe_json(capsys, "--single-use", "--require-confidential", "--", *INSECURE)
    assert code == 1
    assert report["exit_code"] == 1
    assert report["target"] == {"transport": "stdio", "command": INSECURE}
    assert report["server"] == "insecure-booking"
    assert report["protocol"] == "2026-07-28"
    assert report["tool"] == {"name": "book_table", "arguments": {"restaurant": "probe"}, "asks": ["date"]}
    assert report["other_tool"] == "change_booking"
    assert report["baseline"].startswith("the unmodified state is accepted")
    assert [check["id"] for check in report["checks"]] == ALL_CHECKS
    for check in report["checks"]:
        assert set(check) == {"id", "name", "result", "detail"}
    found = results(report)
    assert {found[c] for c in ("bit_flip", "edited", "cross_tool", "replay", "confidential")} == {"FAIL"}
    assert found["prefix_swapped"] == "SKIP"  # plain JSON has no prefix
    assert report["summary"] == {
        result: list(found.values()).count(result) for result in ("PASS", "FAIL", "INFO", "SKIP", "ERROR")
    }


def test_guarded_reeliciting_server_passes_with_single_use(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    command = [sys.executable, "-m", "tests.probe_server", "guarded"]
    arguments = '{"topic": "chosen"}'
    code, report = probe_json(
        capsys, "--single-use", "--tool", "wizard", "--arguments", arguments, "--", *command
    )
    assert code == 0, report
    assert report["tool"]["arguments"] == {"topic": "chosen"}
    found = results(report)
    assert {found[c] for c in [*TAMPERING, "cross_tool", "replay"]} == {"PASS"}
    assert found["confidential"] == "PASS"
    assert report["other_tool"] == "other"
    details = {check["id"]: check["detail"] for check in report["checks"]}
    assert "re-elicited" in details["bit_flip"]  # a refusal told apart from acceptance without an error
    assert details["replay"].startswith("single-use")


def test_first_rounds_that_vary_are_compared_by_their_keys(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = probe_json(capsys, "--", sys.executable, "-m", "tests.probe_server", "varying")
    assert code == 0, report
    assert report["baseline"] == "the unmodified state is accepted: the tool completed"
    found = results(report)
    assert {found[c] for c in TAMPERING} == {"PASS"}
    assert found["replay"] == "INFO"
    assert found["cross_tool"] == "SKIP"  # the destructive tool is never called (it would crash the test)
    assert report["other_tool"] is None


def test_a_server_that_dies_mid_probe_gives_errors_not_passes(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = probe_json(capsys, "--", sys.executable, "-m", "tests.probe_server", "crashing")
    assert code == 2
    assert report["exit_code"] == 2
    assert results(report)["bit_flip"] == "ERROR"
    assert "Connection closed" in report["checks"][0]["detail"]
    assert "PASS" not in results(report).values()


# --- streamable HTTP ---------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def http_booking() -> Iterator[str]:
    """examples/booking_server.py --http on a free loopback port; its URL."""
    port = _free_port()
    env = {**os.environ, "REQUESTSTATE_KEYS": SECRET, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [*BOOKING, "--http", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert server.poll() is None, "the HTTP example server exited"
            assert time.monotonic() < deadline, "the HTTP example server did not start"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_booking_server_over_http_passes(http_booking: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = probe_json(capsys, "--url", http_booking, "--header", "X-Probe: yes")
    assert code == 0, report
    assert report["target"] == {"transport": "streamable-http", "url": http_booking}
    found = results(report)
    assert {found[c] for c in TAMPERING} == {"PASS"}
    assert found["replay"] == "INFO"
    assert found["cross_tool"] == "SKIP"  # one tool only


# --- setup and usage errors ---------------------------------------------------------------------------------


def test_no_server_named_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe"]) == 2
    assert "a command after -- or with --url" in capsys.readouterr().err


def test_both_command_and_url_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--url", "http://127.0.0.1:9/mcp", "--", "true"]) == 2
    assert "either" in capsys.readouterr().err


def test_header_without_url_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--header", "A: b", "--", "true"]) == 2
    assert "--url only" in capsys.readouterr().err


@pytest.mark.parametrize(
    "option",
    [["--arguments", "{not json"], ["--arguments", "[1]"], ["--timeout", "0"], ["--header", "nocolon"]],
)
def test_bad_option_values_are_usage_errors(option: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["probe", *option, "--", "true"])
    assert exited.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_server_that_exits_at_once_is_a_setup_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", "--", sys.executable, "-c", "import sys; print('boom', file=sys.stderr)"])
    err = capsys.readouterr().err
    assert code == 2
    assert "could not connect to the server" in err
    assert "  | boom" in err  # the server's stderr, shown because the probe could not run


def test_command_not_found_is_a_setup_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--", str(ROOT / "no-such-server")]) == 2
    assert "could not connect to the server" in capsys.readouterr().err


def test_server_that_never_answers_times_out(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", "--timeout", "1", "--", sys.executable, "-c", "import time; time.sleep(30)"])
    assert code == 2
    assert "timed out after 1 s" in capsys.readouterr().err


def test_unreachable_url_is_a_setup_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--url", f"http://127.0.0.1:{_free_port()}/mcp"]) == 2
    assert "could not connect to the server" in capsys.readouterr().err


def test_server_without_an_input_required_tool_is_a_setup_error(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["probe", "--", sys.executable, "-m", "tests.probe_server", "plain"]) == 2
    assert "no listed tool answered input-required" in capsys.readouterr().err


def test_unknown_tool_is_a_setup_error(server_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--tool", "nope", "--", sys.executable, "-m", "tests.probe_server", "plain"]) == 2
    assert "no tool named 'nope'" in capsys.readouterr().err


def test_server_refusing_its_own_state_is_a_setup_error(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    # Were it not caught, every mutation would "pass" against a server that refuses everything.
    code = main(["probe", "--tool", "ask", "--", sys.executable, "-m", "tests.probe_server", "refusing"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert "the unmodified state is not accepted (JSON-RPC -32602" in captured.err


def test_server_that_asks_the_same_whatever_it_gets_is_a_setup_error(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["probe", "--", sys.executable, "-m", "tests.probe_server", "amnesiac"])
    assert code == 2
    assert "a re-elicit cannot be told from acceptance" in capsys.readouterr().err


def test_probe_without_the_mcp_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delitem(sys.modules, "requeststate._probe")
    monkeypatch.delattr(rs, "_probe", raising=False)
    monkeypatch.setitem(sys.modules, "mcp", None)
    assert main(["probe", "--", "true"]) == 2
    assert capsys.readouterr().err.strip() == (
        "requeststate probe needs the mcp extra: pip install 'requeststate[mcp]'"
    )


def test_help_explains_the_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["probe", "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    for needle in ("-- COMMAND", "--url URL", "--single-use", "--require-confidential", "re-elicit"):
        assert needle in text


# --- the pieces alone ---------------------------------------------------------------------------------------

SIGNED = rs.encode('{"step":1,"secret":"hold-123"}', bytes(32), mode="signed", tool="t")
SEALED = rs.encode('{"step":1,"secret":"hold-123"}', bytes(32), mode="encrypted", tool="t")


def test_mutations_change_the_token() -> None:
    for mutate in (*(probe.flip(f) for f in (0.2, 0.5, 0.8)), probe.truncated, probe.extended):
        for token in (SIGNED, SEALED):
            changed = mutate(token)
            assert changed is not None
            assert changed != token
    assert probe.tag_stripped(SIGNED) == SIGNED.rsplit(".", 1)[0]
    assert probe.tag_stripped(SEALED) == SEALED[:-22]
    assert probe.tag_stripped("v1.short") is None
    assert probe.prefix_swapped(SIGNED) == "v1e." + SIGNED[3:]
    assert probe.prefix_swapped(SEALED) == "v1." + SEALED[4:]
    assert probe.prefix_swapped("v1x.abc") == "v1e.abc"
    assert probe.prefix_swapped("tok.abc") == "tokx.abc"
    assert probe.prefix_swapped('{"a":1.5}') is None
    assert probe.repadded("==")(SEALED) == SEALED + "=="
    assert probe.truncated("abc") is None


def test_flip_avoids_separators_and_padding() -> None:
    token = "ab.cd.ef=="
    for fraction in (0.1, 0.3, 0.5):
        changed = probe.flip(fraction)(token)
        assert changed is not None
        where = [i for i, (a, b) in enumerate(zip(token, changed, strict=True)) if a != b]
        assert where in ([3], [6])  # never b, d or f: the last character of a part may be padding bits
    assert probe.flip(0.7)(token) is None
    assert probe.flip(0.5)("a.") is None


def test_readable_sees_json_plain_text_and_signed_payloads() -> None:
    assert probe.readable(SEALED) is None
    signed = probe.readable(SIGNED)
    assert signed is not None
    assert "part 2 of 3 base64-decodes to a JSON object" in signed
    assert probe.readable('{"step":1}') == "the state is a JSON object (keys: step)"
    assert probe.readable("step=1; user=alice") == "the state is plain text, not an encoding"
    text = base64.urlsafe_b64encode(b"this is a long readable sentence").decode()
    assert probe.readable(text) == "the token base64-decodes to readable text"
    assert probe.readable(base64.urlsafe_b64encode(os.urandom(64)).decode().rstrip("=")) is None


def test_edited_changes_a_value_and_keeps_the_encoding() -> None:
    assert probe.edited('{"a":"x","n":1}') == '{"a":"xx","n":1}'
    assert probe.edited('{"a":"","n":1}') == '{"a":"","n":2}'
    assert probe.edited('{"flag":true}') == '{"flag":false}'
    assert probe.edited('{"a":null}') is None
    assert probe.edited(SEALED) is None
    changed = probe.edited(SIGNED)
    assert changed is not None
    prefix, payload, mac = changed.split(".")
    assert (prefix, mac) == ("v1", SIGNED.split(".")[2])
    assert payload != SIGNED.split(".")[1]
    assert rs.decode(changed, bytes(32), mode="signed", tool="t") is None
    assert probe.edited("v1." + base64.urlsafe_b64encode(b'{"a":[1]}').decode() + ".x") == (
        "v1." + base64.urlsafe_b64encode(b'{"a":[2]}').decode() + ".x"
    )


def test_placeholder_arguments_fill_required_properties_from_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "when": {"type": "string", "format": "date"},
            "code": {"type": "string", "minLength": 8, "maxLength": 9},
            "count": {"type": "integer", "minimum": 3},
            "cap": {"type": "number", "maximum": 0.5},
            "flag": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "kind": {"enum": ["a", "b"]},
            "fixed": {"const": 7},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "maybe": {"type": ["null", "string"]},
            "nothing": {"type": "null"},
            "nested": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
            "optional": {"type": "string"},
        },
        "required": [
            "name", "when", "code", "count", "cap", "flag", "tags", "kind", "fixed", "either", "maybe",
            "nothing", "nested",
        ],
    }  # fmt: skip
    tool = Tool(name="t", input_schema=schema)
    assert probe.placeholder_arguments(tool) == {
        "name": "probe",
        "when": "2026-12-01",
        "code": "probexxx",
        "count": 3,
        "cap": 0.5,
        "flag": True,
        "tags": ["probe"],
        "kind": "a",
        "fixed": 7,
        "either": 1,
        "maybe": "probe",
        "nothing": None,
        "nested": {"x": 1},
    }
    assert probe.placeholder_arguments(Tool(name="t", input_schema={"type": "object"})) == {}


def test_answers_cover_every_kind_of_input_request() -> None:
    form = {"type": "object", "properties": {"date": {"type": "string"}, "party": {"type": "integer"}}}
    requests: InputRequests = {
        "form": ElicitRequest(params=ElicitRequestFormParams(message="?", requested_schema=form)),
        "url": ElicitRequest(params=ElicitRequestURLParams(message="?", url="https://example.com/")),
        "sample": CreateMessageRequest(params=CreateMessageRequestParams(messages=[], max_tokens=5)),
        "roots": ListRootsRequest(),
    }
    replies = probe.answers(requests)
    assert replies["form"] == ElicitResult(action="accept", content={"date": "probe", "party": 1})
    assert replies["url"] == ElicitResult(action="accept")
    assert isinstance(replies["sample"], CreateMessageResult)
    assert isinstance(replies["roots"], ListRootsResult)
    assert probe.answers(None) == {}


def test_report_exit_codes_and_summary() -> None:
    report = probe.Report(
        probe.Target(url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer s3cret"})
    )
    report.checks = [probe.Check("a", "a", "PASS", ""), probe.Check("b", "b", "ERROR", "lost")]
    assert report.exit_code == 2
    assert report.summary().endswith("1 ERROR: some checks could not complete")
    report.checks.append(probe.Check("c", "c", "FAIL", ""))
    assert report.exit_code == 1
    assert "s3cret" not in report.table() + json.dumps(report.to_json())
