"""``requeststate probe`` against a gallery of broken servers, the project's secure ones (in process,
over stdio and streamable HTTP), and its pieces alone."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
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
from requeststate import probe
from requeststate._cli import main
from requeststate.probe import _encodings as encodings
from requeststate.probe import _mutations as mutations
from requeststate.probe import _placeholders as placeholders
from tests.support import probe_gallery as gallery
from tests.support import probe_server, processes

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


TAMPERING = [
    "bit_flip",
    "truncated",
    "extended",
    "tag_stripped",
    "tag_truncated",
    "prefix_swapped",
    "repadded",
]
FORGERY = ["forged", "rehashed", "alg_none"]
BINDING = ["arguments", "cross_tool", "other_user", "expiry", "replay"]
ALL_CHECKS = [*TAMPERING, "random", *FORGERY, *BINDING, "confidential"]


def in_process(server: object, **options: Any) -> probe.Report:
    """Probe an in-process server (the SDK's memory transport): no subprocess, no port."""

    async def run() -> probe.Report:
        target = probe.Target(server=server)
        return await probe.probe(target, probe.Options(**options), server_log=io.StringIO(), timeout=60)

    return anyio.run(run)


def rows(report: probe.Report) -> dict[str, probe.Check]:
    return {check.id: check for check in report.checks}


# --- the gallery: one broken server per failure mode, each caught on its own row ---------------------------

KEYLESS_WRAPPING = {
    "json": "re-encoded as JSON",
    "base64url(zlib(json))": "re-encoded as base64url(zlib(JSON))",
    "base64(json)": "(JSON)",  # either alphabet spells this one state alike
    "base64url(gzip(json))": "re-encoded as base64url(gzip(JSON))",
    "hex(json)": "re-encoded as hex(JSON)",
    "hex(zlib(json))": "re-encoded as hex(zlib(JSON))",
}


@pytest.mark.parametrize("kind", sorted(gallery.KEYLESS))
def test_a_keyless_encoding_is_forged_and_the_field_named(kind: str) -> None:
    found = rows(in_process(gallery.broken(kind)))
    assert found["forged"].result == "FAIL"
    assert "`restaurant` changed ('x' appended)" in found["forged"].detail
    assert KEYLESS_WRAPPING[kind] in found["forged"].detail


def test_a_compressed_state_is_neither_hidden_nor_safe_with_the_strict_options() -> None:
    # The issue's false PASS: base64url(zlib(json)) was "opaque" and nothing was "accepted".
    report = in_process(gallery.broken("base64url(zlib(json))"), single_use=True, require_confidential=True)
    found = rows(report)
    assert found["confidential"].result == "FAIL"
    assert "base64url(zlib(JSON))" in found["confidential"].detail
    assert report.exit_code == 1


def test_an_unkeyed_hash_is_recomputed() -> None:
    found = rows(in_process(gallery.broken("unkeyed hash")))
    assert found["rehashed"].result == "FAIL"
    assert "sha256 hex of the decoded bytes" in found["rehashed"].detail
    assert found["forged"].result == "PASS"  # an edit under the stale hash is refused: the hash row tells


def test_a_jwt_with_alg_none_is_forged() -> None:
    found = rows(in_process(gallery.broken("jwt alg none")))
    assert found["forged"].result == "FAIL"
    assert found["alg_none"].result == "FAIL"


def test_a_signed_jwt_that_accepts_alg_none_fails_only_the_alg_none_row() -> None:
    found = rows(in_process(gallery.broken("jwt accepting alg none")))
    assert found["alg_none"].result == "FAIL"
    assert "sent as JWT alg none" in found["alg_none"].detail
    assert found["forged"].result == "PASS"  # the payload edited under the HS256 signature is refused


@pytest.mark.parametrize("kind", ["mac optional, two parts", "mac optional, three parts"])
def test_a_mac_checked_as_a_prefix_fails_removed_and_truncated(kind: str) -> None:
    found = rows(in_process(gallery.broken(kind)))
    assert found["tag_stripped"].result == "FAIL"
    assert found["tag_truncated"].result == "FAIL"
    assert {found[c].result for c in ("bit_flip", "forged", "random")} == {"PASS"}


def test_a_state_not_bound_to_its_arguments_fails_the_arguments_row() -> None:
    found = rows(in_process(gallery.broken("no argument binding")))
    assert found["arguments"].result == "FAIL"
    assert "minted for other arguments" in found["arguments"].detail
    assert {found[c].result for c in [*TAMPERING, "random"]} == {"PASS"}


def test_a_state_not_bound_to_its_user_fails_the_other_user_row() -> None:
    second = probe.Target(server=gallery.broken("no user binding", user="mallory"))
    found = rows(in_process(gallery.broken("no user binding"), second=second))
    assert found["other_user"].result == "FAIL"
    assert "from the second" in found["other_user"].detail
    assert found["arguments"].result == "PASS"


def test_a_plaintext_state_is_forged_as_form_text() -> None:
    found = rows(in_process(gallery.broken("plaintext echo")))
    assert found["forged"].result == "FAIL"
    assert "re-encoded as form-encoded text" in found["forged"].detail
    assert found["confidential"].result == "INFO"


def test_a_crash_on_a_bad_state_fails_the_random_row_and_passes_nothing() -> None:
    report = in_process(gallery.crashing())
    found = rows(report)
    assert found["random"].result == "FAIL"
    assert found["random"].detail.startswith("a random state reached the handler (a tool error (isError)")
    assert {found[c].result for c in ("bit_flip", "truncated", "extended", "repadded")} == {"WARN"}
    assert "PASS" not in {found[c].result for c in [*TAMPERING, "random"]}


def test_an_expiry_read_from_the_state_is_waited_out() -> None:
    found = rows(in_process(gallery.broken("expiry not checked")))
    assert found["expiry"].result == "FAIL"
    assert "past the exp the state carries" in found["expiry"].detail


@pytest.mark.parametrize("build", [gallery.prompt_only, gallery.resource_only])
def test_prompts_and_resources_are_discovered_and_probed(build: Any) -> None:
    report = in_process(build(secure=False))
    assert report.kind == ("prompt" if build is gallery.prompt_only else "resource")
    found = rows(report)
    assert found["forged"].result == "FAIL"
    assert found["random"].result == "FAIL"  # a crash there is JSON-RPC -32603, not isError
    secure = rows(in_process(build(secure=True)))
    assert {secure[c].result for c in [*TAMPERING, "random"]} == {"PASS"}


# --- the secure servers pass every row that applies --------------------------------------------------------


def test_the_sdk_default_boundary_passes_every_row() -> None:
    report = in_process(gallery.wizard_server("sdk-default"))
    found = {check.id: check.result for check in report.checks}
    assert {found[c] for c in [*TAMPERING, "random", "arguments", "confidential"]} == {"PASS"}
    assert {found[c] for c in [*FORGERY, "cross_tool", "other_user", "expiry"]} == {"SKIP"}
    assert found["replay"] == "INFO"
    assert report.exit_code == 0
    assert report.to_json()["target"] == {"transport": "in-process"}


def test_the_sdk_boundary_with_a_shared_key_refuses_another_user() -> None:
    second = probe.Target(server=gallery.sdk_shared(user="mallory"))
    found = rows(in_process(gallery.sdk_shared(), second=second))
    assert found["other_user"].result == "PASS"
    assert found["other_user"].detail.endswith("(the second identity)")


def test_protect_passes_every_row_but_arguments() -> None:
    ring = rs.KeyRing(gallery.KEY)
    second = probe.Target(server=gallery.protected(user="mallory", keys=ring, ttl=1))
    report = in_process(gallery.protected(keys=ring, ttl=1), second=second, ttl=1, single_use=False)
    found = {check.id: check.result for check in report.checks}
    assert {found[c] for c in [*TAMPERING, "random", "other_user", "expiry", "confidential"]} == {"PASS"}
    assert {found[c] for c in [*FORGERY, "cross_tool"]} == {"SKIP"}
    assert rows(report)["expiry"].detail.endswith("after 3 s (a TTL of 1 s (--ttl))")


def test_protect_binds_the_arguments() -> None:
    assert rows(in_process(gallery.protected()))["arguments"].result == "PASS"


def test_a_key_per_process_makes_the_other_user_row_an_error_not_a_pass(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each process of this server draws its own key: a second process refuses every state, so the
    # control (a second process as the same identity) fails and a refusal would prove nothing.
    command = [sys.executable, "-m", "tests.support.probe_server", "varying"]
    code, report = probe_json(capsys, "--env2", "PROBE_USER=mallory", "--", *command)
    check = next(c for c in report["checks"] if c["id"] == "other_user")
    assert check["result"] == "ERROR"
    assert "not accepted even on another connection as the same identity" in check["detail"]
    assert code == 2


# --- the example servers over stdio -------------------------------------------------------------------------


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
    table = done.stdout
    assert "tool:      book_table" in table
    assert "state:     v1e. token" in table
    lines = {line.split("  ")[0]: line for line in table.splitlines()}
    tampering = (
        "one byte flipped",
        "truncated (-4 chars)",
        "extended (+AAAA)",
        "MAC/tag removed",
        "MAC/tag truncated",
    )
    for name in tampering:
        assert "PASS    refused: JSON-RPC -32602 Invalid or expired requestState" in lines[name]
    # The arguments row waits for issue 14 (see test_protect_binds_the_arguments); no other FAILs.
    failing = [line for line in table.splitlines() if "  FAIL  " in line]
    assert [line.split("  ")[0] for line in failing] in ([], ["same state, other arguments"])
    assert done.returncode == (1 if failing else 0)
    assert done.stderr == ""  # the server's refusal log stays out of the probe's output


def test_insecure_server_fails(server_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", "--timeout", TIMEOUT, "--", *INSECURE])
    table = capsys.readouterr().out
    assert code == 1
    assert "state:     JSON text" in table
    assert "the server accepted a state it should have refused" in table
    lines = {line.split("  ")[0]: line for line in table.splitlines()}
    assert "FAIL" in lines["one byte flipped"]
    assert "FAIL" in lines["state forged without the key"]
    assert "tool book_table -> tool change_booking: accepted" in lines["state sent to another target"]
    assert "INFO" in lines["same state redeemed twice"]
    assert "INFO" in lines["state hidden from the client"]


def test_insecure_server_strict_json_report(server_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = probe_json(capsys, "--single-use", "--require-confidential", "--", *INSECURE)
    assert code == 1
    assert report["exit_code"] == 1
    assert report["target"] == {"transport": "stdio", "command": INSECURE}
    assert report["server"] == "insecure-booking"
    assert report["protocol"] == "2026-07-28"
    assert report["tool"] == {
        "kind": "tool", "name": "book_table", "arguments": {"restaurant": "probe"}, "asks": ["date"]
    }  # fmt: skip
    assert report["other_tool"] == "tool change_booking"
    assert report["baseline"].startswith("the unmodified state is accepted")
    assert [check["id"] for check in report["checks"]] == ALL_CHECKS
    for check in report["checks"]:
        assert set(check) == {"id", "name", "result", "detail"}
    found = results(report)
    failing = ("bit_flip", "random", "forged", "arguments", "cross_tool", "replay", "confidential")
    assert {found[c] for c in failing} == {"FAIL"}
    assert found["prefix_swapped"] == "SKIP"  # plain JSON has no prefix
    assert found["truncated"] == "WARN"  # the handler crashed parsing it: no proof of a refusal
    assert report["summary"] == {
        result: list(found.values()).count(result)
        for result in ("PASS", "FAIL", "WARN", "INFO", "SKIP", "ERROR")
    }
    assert report["verdict_scope"] == probe._report.VERDICT_SCOPE


def test_guarded_reeliciting_server_passes_with_single_use(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    command = [sys.executable, "-m", "tests.support.probe_server", "guarded"]
    arguments = '{"topic": "chosen"}'
    _, report = probe_json(
        capsys, "--single-use", "--tool", "wizard", "--arguments", arguments, "--", *command
    )
    assert report["tool"]["arguments"] == {"topic": "chosen"}
    found = results(report)
    assert {found[c] for c in [*TAMPERING, "random", "cross_tool", "replay", "confidential"]} == {"PASS"}
    assert report["other_tool"] == "tool other"
    details = {check["id"]: check["detail"] for check in report["checks"]}
    assert "re-elicited" in details["bit_flip"]  # a refusal told apart from acceptance without an error
    assert details["replay"].startswith("single-use")


def test_first_rounds_that_vary_are_compared_by_their_keys(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = probe_json(capsys, "--", sys.executable, "-m", "tests.support.probe_server", "varying")
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
    code, report = probe_json(capsys, "--", sys.executable, "-m", "tests.support.probe_server", "crashing")
    assert code == 2
    assert report["exit_code"] == 2
    assert results(report)["bit_flip"] == "ERROR"
    assert "Connection closed" in report["checks"][0]["detail"]
    assert "PASS" not in results(report).values()


# --- streamable HTTP ---------------------------------------------------------------------------------------


@pytest.fixture
def http_booking() -> Iterator[str]:
    """examples/booking_server.py --http on a free loopback port; its URL."""
    port = processes.free_port()
    env = {**os.environ, "REQUESTSTATE_KEYS": SECRET, "PYTHONPATH": str(ROOT)}
    with processes.serving([*BOOKING, "--http", "--port", str(port)], port, env, ROOT) as url:
        yield url


def test_booking_server_over_http_binds_no_user_without_auth(
    http_booking: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The example serves HTTP without auth=: there is no user to bind, so a second identity's
    # headers change nothing and its state is accepted. The probe says so.
    _, report = probe_json(
        capsys, "--url", http_booking, "--header", "X-User: alice", "--header2", "X-User: mallory"
    )
    assert report["target"] == {"transport": "streamable-http", "url": http_booking}
    found = results(report)
    assert {found[c] for c in [*TAMPERING, "random"]} == {"PASS"}
    assert found["other_user"] == "FAIL"
    assert found["cross_tool"] == "SKIP"  # one tool only
    assert "alice" not in json.dumps(report)
    assert "mallory" not in json.dumps(report)


class _Unauthorized(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", "Bearer")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def http_401() -> Iterator[str]:
    """A loopback HTTP server answering 401 to everything; its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_401_names_header_as_the_way_in(http_401: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--timeout", TIMEOUT, "--url", http_401]) == 2
    err = capsys.readouterr().err
    assert "the server answered HTTP 401" in err
    assert "--header 'Authorization: Bearer ...'" in err


# --- setup and usage errors ---------------------------------------------------------------------------------


def test_no_server_named_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe"]) == 2
    assert "a command after -- or with --url" in capsys.readouterr().err


def test_both_command_and_url_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--url", "http://127.0.0.1:9/mcp", "--", "true"]) == 2
    assert "either" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--header", "--header2"])
def test_header_without_url_is_a_usage_error(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", option, "A: b", "--", "true"]) == 2
    assert "--url only" in capsys.readouterr().err


def test_env2_with_url_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--env2", "A=b", "--url", "http://127.0.0.1:9/mcp"]) == 2
    assert "--env2 applies to a command only" in capsys.readouterr().err


@pytest.mark.parametrize(
    "option",
    [
        ["--arguments", "{not json"],
        ["--arguments", "[1]"],
        ["--timeout", "0"],
        ["--ttl", "-1"],
        ["--header", "nocolon"],
        ["--env2", "noequals"],
    ],
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
    assert main(["probe", "--url", f"http://127.0.0.1:{processes.free_port()}/mcp"]) == 2
    assert "could not connect to the server" in capsys.readouterr().err


def test_server_without_an_input_required_tool_is_a_setup_error() -> None:
    with pytest.raises(probe.ProbeError, match="no listed tool, prompt or resource answered input-required"):
        in_process(probe_server.plain())


def test_unknown_tool_is_a_setup_error() -> None:
    with pytest.raises(probe.ProbeError, match="no tool named 'nope'"):
        in_process(probe_server.plain(), tool="nope")


def test_server_refusing_its_own_state_is_a_setup_error(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    # Were it not caught, every mutation would "pass" against a server that refuses everything.
    server = [sys.executable, "-m", "tests.support.probe_server", "refusing"]
    code = main(["probe", "--tool", "ask", "--", *server])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert "the unmodified state is not accepted (JSON-RPC -32602" in captured.err


def test_server_that_asks_the_same_whatever_it_gets_is_a_setup_error() -> None:
    with pytest.raises(probe.ProbeError, match="a re-elicit cannot be told from acceptance"):
        in_process(probe_server.amnesiac())


def test_probe_without_the_mcp_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [name for name in sys.modules if name.startswith("requeststate.probe")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(rs, "probe", raising=False)
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
    needles = ("-- COMMAND", "--url URL", "--single-use", "--require-confidential", "re-elicit", "--header2")
    for needle in (*needles, "--env2", "--ttl SECONDS", "isError", "A PASS proves that"):
        assert needle in text


# --- the pieces alone ---------------------------------------------------------------------------------------

PIECES_KEY = hashlib.sha256(b"probe pieces").digest()
SIGNED = rs.encode('{"step":1,"secret":"hold-123"}', PIECES_KEY, mode="signed", tool="t")
SEALED = rs.encode('{"step":1,"secret":"hold-123"}', PIECES_KEY, mode="encrypted", tool="t")
STATE = '{"restaurant":"probe","step":1,"price":20}'


def _b64u(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _raw_deflate(raw: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-15)
    return compressor.compress(raw) + compressor.flush()


def test_mutations_change_the_token() -> None:
    for mutate in (*(mutations.flip(f) for f in (0.2, 0.5, 0.8)), mutations.truncated, mutations.extended):
        for token in (SIGNED, SEALED):
            changed = mutate(token)
            assert changed is not None
            assert changed != token
    assert mutations.prefix_swapped(SIGNED) == "v1e." + SIGNED[3:]
    assert mutations.prefix_swapped(SEALED) == "v1." + SEALED[4:]
    assert mutations.prefix_swapped("v1x.abc") == "v1e.abc"
    assert mutations.prefix_swapped("tok.abc") == "tokx.abc"
    assert mutations.prefix_swapped('{"a":1.5}') is None
    assert mutations.repadded("==")(SEALED) == SEALED + "=="
    assert mutations.truncated("abc") is None


def test_the_mac_of_a_three_part_token_is_removed_whole() -> None:
    head, _, mac = SIGNED.rpartition(".")
    assert mutations.tag_removed(SIGNED) == head
    assert mutations.tag_emptied(SIGNED) == head + "."
    assert mutations.tag_halved(SIGNED) == f"{head}.{_b64u(encodings.b64decode(mac)[:16])}"  # type: ignore[index]
    assert mutations.tag_text_halved(SIGNED) == f"{head}.{mac[: len(mac) // 2]}"


def test_the_tag_of_a_two_part_token_is_its_last_16_bytes() -> None:
    blob = encodings.b64decode(SEALED[4:])
    assert blob is not None
    assert mutations.tag_removed(SEALED) == "v1e." + _b64u(blob[:-16])
    assert mutations.tag_halved(SEALED) == "v1e." + _b64u(blob[:-8])
    assert mutations.tag_emptied(SEALED) is None  # no separate MAC part to empty
    assert mutations.tag_removed("v1e." + _b64u(bytes(16))) is None  # nothing left but a tag


def test_the_mac_of_a_prefixless_two_part_token_is_its_last_part() -> None:
    token = f"{_b64u(STATE.encode())}.{_b64u(bytes(32))}"
    assert mutations.tag_removed(token) == _b64u(STATE.encode())
    assert mutations.tag_emptied(token) == _b64u(STATE.encode()) + "."


def test_tag_mutations_leave_json_alone() -> None:
    for mutate in (
        mutations.tag_removed,
        mutations.tag_emptied,
        mutations.tag_halved,
        mutations.tag_text_halved,
    ):
        assert mutate('{"a":1.5}') is None


def test_a_random_state_keeps_the_prefix_and_the_length() -> None:
    forged = mutations.random_like(SEALED)
    assert forged.startswith("v1e.")
    assert len(forged) == len(SEALED)
    assert forged != SEALED
    assert len(mutations.random_like(STATE)) == len(STATE)


def test_flip_avoids_separators_and_padding() -> None:
    token = "ab.cd.ef=="
    for fraction in (0.1, 0.3, 0.5):
        changed = mutations.flip(fraction)(token)
        assert changed is not None
        where = [i for i, (a, b) in enumerate(zip(token, changed, strict=True)) if a != b]
        assert where in ([3], [6])  # never b, d or f: the last character of a part may be padding bits
    assert mutations.flip(0.7)(token) is None
    assert mutations.flip(0.5)("a.") is None


LAYERED = {
    "JSON": STATE,
    "base64url(zlib(JSON))": _b64u(zlib.compress(STATE.encode())),
    "base64(JSON)": base64.b64encode(STATE.encode()).decode(),
    "hex(JSON)": STATE.encode().hex(),
    "hex(zlib(JSON))": zlib.compress(STATE.encode()).hex(),
    "form-encoded text": "restaurant=probe&step=1",
    "base64url(deflate(JSON))": _b64u(_raw_deflate(STATE.encode())),
}


@pytest.mark.parametrize("wrapping", sorted(LAYERED))
def test_a_layered_state_is_read_and_rebuilt_the_same_way(wrapping: str) -> None:
    token = LAYERED[wrapping]
    reading = next(r for r in encodings.readings(token) if r.wrapping == wrapping)
    assert reading.rebuild(reading.value) == token


def test_an_unkeyed_hash_is_recognised_and_recomputed() -> None:
    token = f"{_b64u(STATE.encode())}.{hashlib.sha256(STATE.encode()).hexdigest()}"
    reading = next(r for r in encodings.readings(token) if r.hashed is not None)
    assert reading.hashed == "sha256 hex of the decoded bytes"
    edit = encodings.edits(reading.value)[0]
    body, _, digest = reading.rebuild(edit.value).partition(".")
    changed = encodings.b64decode(body)
    assert changed is not None
    assert json.loads(changed)["restaurant"] == "probex"
    assert digest == hashlib.sha256(changed).hexdigest()


def test_a_compression_bomb_is_not_inflated() -> None:
    bomb = _b64u(zlib.compress(b'{"a":"' + b"x" * (2 << 20) + b'"}'))
    assert encodings.readings(bomb) == []


def test_a_keyed_mac_is_not_taken_for_an_unkeyed_hash() -> None:
    assert [r for r in encodings.readings(SIGNED) if r.hashed is not None] == []


def test_a_jwt_is_re_signed_with_alg_none() -> None:
    header = _b64u(b'{"alg":"HS256","typ":"JWT"}')
    token = f"{header}.{_b64u(STATE.encode())}.{_b64u(bytes(32))}"
    reading = encodings.alg_none(token)[0]
    forged_header, payload, signature = reading.rebuild(reading.value).split(".")
    assert json.loads(encodings.b64decode(forged_header) or b"") == {"alg": "none", "typ": "JWT"}
    assert encodings.b64decode(payload) == STATE.encode()
    assert signature == ""
    assert encodings.alg_none(SIGNED) == []  # a v1. token's first part is no JWT header


def test_edits_change_one_field_each_and_name_it() -> None:
    found = encodings.edits({"a": "x", "n": 1, "flag": True})
    assert [(e.value, e.field, e.change) for e in found] == [
        ({"a": "xx", "n": 1, "flag": True}, "a", "'x' appended"),
        ({"a": "x", "n": 2, "flag": True}, "n", "number +1"),
        ({"a": "x", "n": 1, "flag": False}, "flag", "boolean flipped"),
    ]
    assert encodings.edits({"a": None}) == []


def test_edits_go_inside_a_state_nested_as_json_text() -> None:
    (edit, *_) = encodings.edits({"s": '{"step":1,"who":"al"}', "exp": 5})
    assert edit.field == "s.who"
    assert edit.value == {"s": '{"step":1,"who":"alx"}', "exp": 5}


def test_readable_sees_json_compressed_and_signed_payloads() -> None:
    assert encodings.readable(SEALED) is None
    assert encodings.readable(SIGNED) == "part 2 of 3: base64url(JSON), an object (keys: b, exp, id, s)"
    assert encodings.readable('{"step":1}') == "JSON, an object (keys: step)"
    assert encodings.readable(LAYERED["base64url(zlib(JSON))"]) == (
        "base64url(zlib(JSON)), an object (keys: price, restaurant, step)"
    )
    assert encodings.readable("step 1; user alice") == "the state is plain text, not an encoding"
    text = base64.urlsafe_b64encode(b"this is a long readable sentence").decode()
    assert encodings.readable(text) == "part 1 base64-decodes to readable text"
    assert encodings.readable(base64.urlsafe_b64encode(os.urandom(64)).decode().rstrip("=")) is None


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
    assert placeholders.placeholder_arguments(tool) == {
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
    assert placeholders.placeholder_arguments(Tool(name="t", input_schema={"type": "object"})) == {}


def test_a_uri_template_is_expanded_with_the_placeholder() -> None:
    assert placeholders.expand("booking://{restaurant}/{+path}") == "booking://probe/probe"


def test_answers_cover_every_kind_of_input_request() -> None:
    form = {"type": "object", "properties": {"date": {"type": "string"}, "party": {"type": "integer"}}}
    requests: InputRequests = {
        "form": ElicitRequest(params=ElicitRequestFormParams(message="?", requested_schema=form)),
        "url": ElicitRequest(params=ElicitRequestURLParams(message="?", url="https://example.com/")),
        "sample": CreateMessageRequest(params=CreateMessageRequestParams(messages=[], max_tokens=5)),
        "roots": ListRootsRequest(),
    }
    replies = placeholders.answers(requests)
    assert replies["form"] == ElicitResult(action="accept", content={"date": "probe", "party": 1})
    assert replies["url"] == ElicitResult(action="accept")
    assert isinstance(replies["sample"], CreateMessageResult)
    assert isinstance(replies["roots"], ListRootsResult)
    assert placeholders.answers(None) == {}


def test_report_exit_codes_and_summary() -> None:
    target = probe.Target(
        url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer s3cret"}, env={"TOKEN": "s3cret"}
    )
    report = probe.Report(target)
    report.checks = [probe.Check("a", "a", "PASS", ""), probe.Check("w", "w", "WARN", "")]
    assert report.exit_code == 0
    assert report.summary() == (
        "1 PASS, 0 FAIL, 1 WARN, 0 INFO, 0 SKIP: no attempt was accepted, "
        "but some refusals looked like crashes (WARN), which prove nothing"
    )
    report.checks.append(probe.Check("b", "b", "ERROR", "lost"))
    assert report.exit_code == 2
    assert report.summary().endswith("1 ERROR: some checks could not complete")
    report.checks.append(probe.Check("c", "c", "FAIL", ""))
    assert report.exit_code == 1
    assert "s3cret" not in report.table() + json.dumps(report.to_json())


def test_the_table_says_what_a_pass_does_not_prove() -> None:
    table = probe.Report(probe.Target(command=("srv",))).table()
    assert "It does not prove the state unforgeable" in table.replace("\n", " ")


def test_server_text_is_escaped_in_the_table() -> None:
    report = probe.Report(probe.Target(command=("srv",)), server="evil\x1b[2J", tool="t\x07")
    report.checks = [probe.Check("a", "a", "PASS", "refused: JSON-RPC -32602 \x1b]0;owned\x07")]
    table = report.table()
    assert "\x1b" not in table
    assert "\x07" not in table
    assert "evil\\x1b[2J" in table
    assert "-32602 \\x1b]0;owned\\x07" in table


def test_a_server_name_with_escapes_reaches_the_terminal_escaped() -> None:
    server = gallery.wizard_server("evil\x1b[31m")
    table = in_process(server).table()
    assert "server:    evil\\x1b[31m, protocol" in table
    assert "\x1b" not in table
