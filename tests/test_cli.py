from __future__ import annotations

import io
import json
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import requeststate as rs
from requeststate._base64 import b64decode
from requeststate.cli import main
from requeststate.cli._demo import run_demo
from tests.conftest import NOW, OTHER_SECRET, SECRET
from tests.support.reference import b64

SCRIPT = shutil.which("requeststate", path=str(Path(sys.executable).parent))
KEY_ENV = {"TEST_KEYS": b64(SECRET)}


def run(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real console script, in a subprocess."""
    assert SCRIPT is not None, "the requeststate console script is not installed beside this Python"
    return subprocess.run(
        [SCRIPT, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        # inspect reads REQUESTSTATE_KEYS when set: only a test that sets it sees one.
        env={**{k: v for k, v in os.environ.items() if k != "REQUESTSTATE_KEYS"}, **(env or {})},
    )


def token(mode: rs.Modes, state: str = '{"step":1}') -> str:
    return rs.encode(state, SECRET, mode=mode, subject="alice", tool="book", now=NOW)


def token_id(minted: str, mode: rs.Modes) -> str | None:
    """The id of a token for alice and book, as the codec reads it."""
    codec = rs.Codec(SECRET, mode=mode, metrics=None)
    return codec.open(minted, subject="alice", tool="book", now=NOW).token_id


# --- demo ---------------------------------------------------------------------------


def test_demo_shows_each_mode_accepted_and_refusals_with_reasons() -> None:
    out = io.StringIO()
    assert run_demo(out) == 0
    text = out.getvalue()
    assert text.count("accepted:") == len(rs.Mode)
    for reason in ("bad_signature", "expired", "wrong_binding"):
        assert reason in text
    for mode in rs.Mode:
        assert f"[{mode}]" in text


def test_demo_prints_the_ring_by_fingerprint_only() -> None:
    out = io.StringIO()
    run_demo(out)
    assert "KeyRing(keys=1" in out.getvalue()


def test_console_script_runs_the_demo() -> None:
    done = run("demo")
    assert done.returncode == 0, done.stderr
    assert "accepted:" in done.stdout


def test_dunder_main_exits_with_mains_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["requeststate", "demo"])
    with pytest.raises(SystemExit) as caught:
        runpy.run_module("requeststate", run_name="__main__")
    assert caught.value.code == 0


def test_main_runs_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    assert "accepted:" in capsys.readouterr().out


def test_demo_into_a_closed_pipe_exits_quietly() -> None:
    # The reader is gone before the demo writes, as with `requeststate demo | head -0`.
    assert SCRIPT is not None
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [SCRIPT, "demo"], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60, check=False
        )
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 141


# --- usage --------------------------------------------------------------------------


def test_bare_command_prints_the_help_on_stdout_and_exits_0() -> None:
    assert (run().returncode, run().stdout, run().stderr) == (0, run("--help").stdout, "")


def test_importing_the_command_line_does_not_load_mcp() -> None:
    # A fresh interpreter: the probe, the one command that needs the mcp extra, loads it when run.
    code = "import sys, requeststate.cli; print(sorted({'mcp', 'requeststate.probe'} & set(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "[]\n"


# --- keygen -------------------------------------------------------------------------


def test_keygen_prints_a_fresh_32_byte_base64url_secret() -> None:
    first, second = run("keygen").stdout.strip(), run("keygen").stdout.strip()
    assert len(b64decode(first) or b"") == 32
    assert first != second


def test_keygen_output_is_a_valid_key_ring() -> None:
    secret = run("keygen", "--bytes", "48").stdout.strip()
    assert len(rs.KeyRing.from_env("K", environ={"K": secret})) == 1


@pytest.mark.parametrize("size", ["16", "1025", "100000000000"])
def test_keygen_refuses_a_size_outside_32_to_1024_bytes(size: str) -> None:
    done = run("keygen", "--bytes", size)
    assert done.returncode == 2
    assert "a secret is 32 to 1024 bytes" in done.stderr
    assert done.stdout == ""


def test_keygen_prints_the_largest_allowed_secret() -> None:
    assert len(b64decode(run("keygen", "--bytes", "1024").stdout.strip()) or b"") == 1024


def test_keygen_of_a_non_number_is_a_usage_error_naming_no_internal_function() -> None:
    done = run("keygen", "--bytes", "abc")
    assert done.returncode == 2
    assert "argument --bytes: not a whole number of bytes: 'abc'" in done.stderr
    assert "_secret_bytes" not in done.stderr


def test_probe_timeout_of_a_non_number_is_a_usage_error_naming_no_internal_function() -> None:
    done = run("probe", "--timeout", "soon", "--url", "http://127.0.0.1:9/mcp")
    assert done.returncode == 2
    assert "argument --timeout: not a number of seconds: 'soon'" in done.stderr
    assert "_seconds" not in done.stderr


def test_probe_ttl_of_zero_or_less_is_a_usage_error_about_seconds_not_a_timeout() -> None:
    # It said "a timeout is a positive number of seconds" of --ttl, the state's lifetime.
    done = run("probe", "--ttl", "-3", "--url", "http://127.0.0.1:9/mcp")
    assert done.returncode == 2
    assert "argument --ttl: not a positive number of seconds: '-3'" in done.stderr
    assert "timeout" not in done.stderr


# --- inspect ------------------------------------------------------------------------


def test_inspect_signed_without_key_shows_the_payload_unverified() -> None:
    done = run("inspect", token("signed"))
    assert done.returncode == 0
    assert "UNVERIFIED" in done.stdout
    assert '"exp": 2000000300' in done.stdout
    assert "prefix:  v1.\n" in done.stdout
    assert "mode:    signed\n" in done.stdout


def test_inspect_signed_without_key_shows_expiry_id_and_time_left() -> None:
    minted = token("signed")
    done = run("inspect", minted, "--now", str(NOW + 100))
    assert (
        "expires: 2033-05-18T03:38:20Z (unix 2000000300), 200 s left\n"
        f'id:      "{token_id(minted, "signed")}"\n'
        "minted:  2033-05-18T03:33:20Z (unix 2000000000)\n"
    ) in done.stdout


def test_inspect_says_how_long_ago_a_token_expired() -> None:
    done = run("inspect", token("signed"), "--now", str(NOW + 400))
    assert "(unix 2000000300), expired 100 s ago" in done.stdout


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_inspect_with_key_shows_the_verified_expiry_and_id(mode: rs.Mode) -> None:
    minted = token(mode)
    args = ("inspect", minted, "--key-env", "TEST_KEYS", "--subject", "alice", "--tool", "book")
    done = run(*args, "--now", str(NOW + 1), "--leeway", "5", env=KEY_ENV)
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"prefix:  {mode.prefix}\n"
        f"length:  {len(minted)} characters\n"
        f"VALID under {rs.KeyRing(SECRET)!r} from TEST_KEYS\n"
        f"mode:    {mode.value}\n"
        "expires: 2033-05-18T03:38:20Z (unix 2000000300), 299 s left\n"
        f'id:      "{token_id(minted, mode)}"\n'
        "minted:  2033-05-18T03:33:20Z (unix 2000000000)\n"
        'state:   "{\\"step\\":1}"\n',
        "",
    )


def test_inspect_reads_requeststate_keys_when_it_is_set() -> None:
    args = ("inspect", token("encrypted"), "--subject", "alice", "--tool", "book", "--now", str(NOW))
    done = run(*args, env={"REQUESTSTATE_KEYS": b64(SECRET)})
    assert done.returncode == 0, done.stderr
    assert "from REQUESTSTATE_KEYS" in done.stdout
    assert '"{\\"step\\":1}"' in done.stdout


def test_inspect_with_requeststate_keys_empty_shows_the_token_unverified() -> None:
    done = run("inspect", token("signed"), env={"REQUESTSTATE_KEYS": ""})
    assert done.returncode == 0
    assert "UNVERIFIED" in done.stdout


def test_inspect_strips_a_trailing_newline_from_the_argument() -> None:
    args = ("inspect", token("signed") + "\n", "--key-env", "TEST_KEYS", "--subject", "alice")
    done = run(*args, "--tool", "book", "--now", str(NOW), env=KEY_ENV)
    assert done.returncode == 0, done.stdout
    assert "VALID" in done.stdout


@pytest.mark.parametrize("text", ["v1e.!!!!", "v1e.AAAA", "v1x." + "A" * 52])
def test_inspect_of_a_malformed_sealed_token_never_says_encrypted(text: str) -> None:
    done = run("inspect", text)
    assert done.returncode == 1
    assert "encrypted" not in done.stdout + done.stderr
    assert "sealed" not in done.stdout
    assert f"prefix:  {text[:4]}" in done.stdout
    assert f"not a well-formed {text[:4]} token" in done.stderr


def test_inspect_of_a_deeply_nested_payload_refuses_it_cleanly() -> None:
    nested = b"[" * 100_000 + b"]" * 100_000
    done = run("inspect", "-", stdin="v1." + b64(nested) + "." + b64(bytes(32)))
    assert done.returncode == 1
    assert done.stderr == "not a well-formed v1. token: its payload is JSON nested too deeply\n"


def test_inspect_with_a_leeway_out_of_range_is_a_usage_error() -> None:
    done = run("inspect", token("signed"), "--key-env", "TEST_KEYS", "--leeway", "-1", env=KEY_ENV)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "error: leeway must be an int from 0 to 86400, got -1\n",
    )


def test_inspect_with_a_hex_key_names_the_key_encoding_option() -> None:
    done = run("inspect", token("signed"), "--key-env", "HEX", env={"HEX": SECRET.hex()})
    assert done.returncode == 2
    assert "--key-encoding hex" in done.stderr


def test_inspect_reads_a_hex_key_with_key_encoding_hex() -> None:
    args = ("inspect", token("signed"), "--key-env", "HEX", "--key-encoding", "hex", "--subject", "alice")
    done = run(*args, "--tool", "book", "--now", str(NOW), env={"HEX": SECRET.hex()})
    assert done.returncode == 0, done.stderr
    assert "VALID" in done.stdout


def test_inspect_escapes_control_characters_in_the_unverified_payload() -> None:
    done = run("inspect", token("signed", "\x1b[31mred"))
    assert "\x1b" not in done.stdout
    assert "\\u001b" in done.stdout


@pytest.mark.parametrize("mode", ["encrypted", "xchacha"])
def test_inspect_encrypted_without_key_shows_only_mode_and_size(mode: rs.ModeName) -> None:
    done = run("inspect", token(mode, "top-secret"))
    assert done.returncode == 0
    assert f"mode:    {mode}\n" in done.stdout
    assert "length:" in done.stdout
    assert "top-secret" not in done.stdout


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_inspect_with_key_verifies_and_prints_the_state(mode: rs.Mode) -> None:
    args = ("inspect", token(mode), "--key-env", "TEST_KEYS", "--subject", "alice", "--tool", "book")
    done = run(*args, "--now", str(NOW), env=KEY_ENV)
    assert done.returncode == 0, done.stderr
    assert "VALID" in done.stdout
    assert '"{\\"step\\":1}"' in done.stdout


def test_inspect_with_key_prints_the_refusal_reason_and_exits_1() -> None:
    done = run("inspect", token("encrypted"), "--key-env", "TEST_KEYS", "--subject", "mallory", env=KEY_ENV)
    assert done.returncode == 1
    assert "REFUSED under TEST_KEYS: bad_signature" in done.stdout


def test_inspect_reads_the_token_from_stdin() -> None:
    args = (
        "inspect",
        "-",
        "--key-env",
        "TEST_KEYS",
        "--subject",
        "alice",
        "--tool",
        "book",
        "--now",
        str(NOW),
    )
    done = run(*args, stdin=token("signed") + "\n", env=KEY_ENV)
    assert done.returncode == 0
    assert "VALID" in done.stdout


def test_inspect_with_an_unset_key_variable_exits_2_naming_it() -> None:
    done = run("inspect", token("signed"), "--key-env", "UNSET_REQUESTSTATE_KEYS")
    assert done.returncode == 2
    assert "UNSET_REQUESTSTATE_KEYS is not set" in done.stderr


def test_inspect_with_a_bad_key_value_never_prints_it() -> None:
    done = run("inspect", token("signed"), "--key-env", "BAD", env={"BAD": "c2hvcnQ"})
    assert done.returncode == 2
    assert "c2hvcnQ" not in done.stderr + done.stdout


@pytest.mark.parametrize("text", ["hello", "v2.abc", ""])
def test_inspect_of_a_non_token_exits_1(text: str) -> None:
    done = run("inspect", text)
    assert done.returncode == 1
    assert "not a requeststate token" in done.stderr


def test_inspect_of_an_unreadable_signed_payload_exits_1() -> None:
    done = run("inspect", "v1.!!!.x")
    assert (done.returncode, done.stderr) == (
        1,
        "not a well-formed v1. token: the body is not a payload and a MAC in base64url\n",
    )


def test_inspect_of_a_signed_payload_that_is_not_json_exits_1() -> None:
    done = run("inspect", "v1." + b64(b"not json") + "." + b64(bytes(32)))
    assert (done.returncode, done.stderr) == (
        1,
        "not a well-formed v1. token: the payload is not readable JSON\n",
    )


@pytest.mark.parametrize("mode", ["encrypted", "xchacha"])
def test_inspect_of_an_encrypted_token_without_subject_and_tool_hints_at_them(mode: rs.ModeName) -> None:
    done = run("inspect", token(mode), "--key-env", "TEST_KEYS", "--now", str(NOW), env=KEY_ENV)
    assert done.returncode == 1
    assert "REFUSED under TEST_KEYS: bad_signature\nhint:    the tag of a v1" in done.stdout
    assert "pass --subject and --tool as at mint" in " ".join(done.stdout.split())


def test_inspect_hint_names_only_the_flag_not_given() -> None:
    args = ("inspect", token("encrypted"), "--key-env", "TEST_KEYS", "--subject", "alice", "--json")
    hint = json.loads(run(*args, env=KEY_ENV).stdout)["hint"]
    assert hint.endswith("; pass --tool as at mint")


def test_inspect_gives_no_hint_when_subject_and_tool_were_given() -> None:
    args = ("inspect", token("encrypted"), "--key-env", "OTHER", "--subject", "alice", "--tool", "book")
    done = run(*args, "--json", env={"OTHER": b64(OTHER_SECRET)})
    assert json.loads(done.stdout)["reason"] == "bad_signature"
    assert json.loads(done.stdout)["hint"] is None


def test_inspect_of_a_signed_token_without_subject_and_tool_hints_at_them() -> None:
    # Its wrong_binding came without the hint an encrypted token's bad_signature had.
    done = run("inspect", token("signed"), "--key-env", "TEST_KEYS", "--now", str(NOW), env=KEY_ENV)
    assert done.returncode == 1
    refused = "REFUSED under TEST_KEYS: wrong_binding\nhint:    a v1. token is bound to the subject"
    assert refused in done.stdout
    assert "minted for: pass --subject and --tool as at mint" in " ".join(done.stdout.split())


def test_inspect_of_an_expired_token_gives_no_binding_hint() -> None:
    args = ("inspect", token("signed"), "--key-env", "TEST_KEYS", "--now", str(NOW + 10**6), "--json")
    done = run(*args, "--subject", "alice", "--tool", "book", env=KEY_ENV)
    assert (json.loads(done.stdout)["reason"], json.loads(done.stdout)["hint"]) == ("expired", None)


def test_inspect_of_a_signed_token_under_a_wrong_key_gives_no_binding_hint() -> None:
    # A v1. MAC does not cover the identity: its bad_signature is a wrong key (or a forgery).
    done = run("inspect", token("signed"), "--key-env", "OTHER", "--json", env={"OTHER": b64(OTHER_SECRET)})
    assert json.loads(done.stdout)["reason"] == "bad_signature"
    assert json.loads(done.stdout)["hint"] is None


# --- inspect --json -------------------------------------------------------------------


def inspect_json(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, object]]:
    done = run("inspect", *args, "--json", env=env)
    assert done.stderr == ""
    found: dict[str, object] = json.loads(done.stdout)
    return done.returncode, found


NOTHING_FOUND: dict[str, object] = dict.fromkeys(
    (
        "prefix",
        "mode",
        "reason",
        "hint",
        "key_env",
        "fingerprint",
        "exp",
        "expires",
        "minted",
        "seconds_left",
        "id",
        "state",
    )
)


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_inspect_json_of_a_verified_token_holds_its_claims_and_the_rings_fingerprint(mode: rs.Mode) -> None:
    minted = token(mode)
    args = (minted, "--key-env", "TEST_KEYS", "--subject", "alice", "--tool", "book", "--leeway", "5")
    assert inspect_json(*args, "--now", str(NOW + 1), env=KEY_ENV) == (
        0,
        {
            **NOTHING_FOUND,
            "prefix": minted[: minted.index(".") + 1],
            "mode": mode.value,
            "length": len(minted),
            "verified": True,
            "key_env": "TEST_KEYS",
            "fingerprint": rs.KeyRing(SECRET).fingerprint,
            "exp": NOW + 300,
            "expires": "2033-05-18T03:38:20Z",
            "seconds_left": 299,
            "id": token_id(minted, mode),
            "minted": NOW,
            "state": '{"step":1}',
        },
    )


def test_inspect_json_of_a_refused_token_gives_the_reason_and_exits_1() -> None:
    minted = token("signed")
    args = (minted, "--key-env", "TEST_KEYS", "--subject", "mallory", "--tool", "book", "--now", str(NOW))
    assert inspect_json(*args, env=KEY_ENV) == (
        1,
        {
            **NOTHING_FOUND,
            "prefix": "v1.",
            "length": len(minted),
            "verified": False,
            "reason": "wrong_binding",
            "key_env": "TEST_KEYS",
        },
    )


def test_inspect_json_without_a_key_gives_a_signed_tokens_claims_unverified() -> None:
    minted = token("signed")
    assert inspect_json(minted, "--now", str(NOW + 400)) == (
        0,
        {
            **NOTHING_FOUND,
            "prefix": "v1.",
            "mode": "signed",
            "length": len(minted),
            "verified": False,
            "exp": NOW + 300,
            "expires": "2033-05-18T03:38:20Z",
            "seconds_left": -100,
            "id": token_id(minted, "signed"),
            "minted": NOW,
            "state": '{"step":1}',
        },
    )


@pytest.mark.parametrize("mode", ["encrypted", "xchacha"])
def test_inspect_json_of_a_sealed_token_without_a_key_gives_its_mode_only(mode: rs.ModeName) -> None:
    minted = token(mode, "top-secret")
    assert inspect_json(minted) == (
        0,
        {**NOTHING_FOUND, "prefix": minted[:4], "mode": mode, "length": len(minted), "verified": False},
    )


@pytest.mark.parametrize("text", ["hello", "v1e.!!!!", "v1." + b64(b"not json") + ".x"])
def test_inspect_json_of_what_is_no_readable_token_says_malformed_on_stdout(text: str) -> None:
    code, found = inspect_json(text)
    assert code == 1
    assert (found["verified"], found["reason"], found["mode"]) == (False, "malformed", None)


def test_inspect_json_escapes_the_unverified_content_it_shows() -> None:
    # ESC and the one-character CSI (U+009B), which some terminals obey too.
    payload = json.dumps({"s": "\x1b[31mred", "exp": NOW, "b": "0" * 64, "id": "\u009b2J"}).encode()
    done = run("inspect", "v1." + b64(payload) + "." + b64(bytes(32)), "--json")
    assert "\x1b" not in done.stdout
    assert "\u009b" not in done.stdout
    assert '"state": "\\u001b[31mred"' in done.stdout
    assert json.loads(done.stdout)["id"] == "\u009b2J"


def test_inspect_json_with_a_key_that_cannot_be_read_prints_no_json() -> None:
    done = run("inspect", token("signed"), "--json", "--key-env", "UNSET_REQUESTSTATE_KEYS")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "UNSET_REQUESTSTATE_KEYS is not set" in done.stderr


# --- mint ---------------------------------------------------------------------------


def mint(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> str:
    done = run("mint", *args, stdin=stdin, env=KEY_ENV if env is None else env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout.removesuffix("\n")


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_minted_token_decodes_with_requeststate_decode(mode: rs.Mode) -> None:
    args = (
        "--key-env",
        "TEST_KEYS",
        "--mode",
        mode,
        "--subject",
        "alice",
        "--tool",
        "book",
        "--now",
        str(NOW),
    )
    minted = mint('{"step":1}', *args)
    assert rs.decode(minted, SECRET, mode=mode, subject="alice", tool="book", now=NOW) == '{"step":1}'


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_minted_token_verifies_with_inspect(mode: rs.Mode) -> None:
    minted = mint("x", "--key-env", "TEST_KEYS", "--mode", mode, "--subject", "alice", "--now", str(NOW))
    code, found = inspect_json(
        minted, "--key-env", "TEST_KEYS", "--subject", "alice", "--now", str(NOW), env=KEY_ENV
    )
    assert (code, found["verified"], found["state"], found["exp"]) == (0, True, "x", NOW + 300)


def test_mint_lets_the_token_live_ttl_seconds() -> None:
    minted = mint("x", "--key-env", "TEST_KEYS", "--ttl", "60", "--now", str(NOW))
    assert rs.decode(minted, SECRET, mode="encrypted", now=NOW + 60) == "x"
    assert rs.decode(minted, SECRET, mode="encrypted", now=NOW + 61) is None


def test_mint_defaults_to_an_encrypted_token_under_requeststate_keys() -> None:
    minted = mint("x", env={"REQUESTSTATE_KEYS": b64(SECRET)})
    assert minted.startswith("v1e.")
    assert rs.decode(minted, SECRET, mode="encrypted") == "x"


def test_mint_reads_the_state_from_stdin_without_its_last_newline() -> None:
    minted = mint("-", "--key-env", "TEST_KEYS", stdin='{"a":1}\n\n')
    assert rs.decode(minted, SECRET, mode="encrypted") == '{"a":1}\n'


def test_mint_reads_a_hex_key_with_key_encoding_hex() -> None:
    minted = mint("x", "--key-env", "HEX", "--key-encoding", "hex", env={"HEX": SECRET.hex()})
    assert rs.decode(minted, SECRET, mode="encrypted") == "x"


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ((), {}, "error: REQUESTSTATE_KEYS is not set"),
        (("--key-env", "K"), {"K": "c2hvcnQ"}, "error: K: secret 0 "),
        (("--key-env", "K"), {"K": b64(b"ab" * 16)}, "error: K: secret 0 "),
        (("--key-env", "K"), {"K": SECRET.hex()}, "--key-encoding hex"),
        (("--key-env", "TEST_KEYS", "--mode", "plain"), KEY_ENV, "argument --mode: invalid choice: 'plain'"),
        (
            ("--key-env", "TEST_KEYS", "--ttl", "0"),
            KEY_ENV,
            "error: ttl must be an int from 1 to 86400, got 0",
        ),
        (("--key-env", "TEST_KEYS", "--ttl", "86401"), KEY_ENV, "error: ttl must be an int from 1 to 86400"),
        (("--key-env", "TEST_KEYS", "--ttl", "soon"), KEY_ENV, "argument --ttl: invalid int value: 'soon'"),
        (("--key-env", "TEST_KEYS", "--now", str(2**63)), KEY_ENV, "error: now must be an int from"),
        (
            ("--key-env", "TEST_KEYS", "--subject", '{"sub":"x"}'),
            KEY_ENV,
            "error: a subject bound without a tool must not start with '{'",
        ),
    ],
    ids=[
        "no-keys",
        "short-key",
        "low-entropy-key",
        "hex-key",
        "mode",
        "ttl-0",
        "ttl-day+1",
        "ttl-text",
        "now",
        "identity",
    ],
)
def test_mint_that_cannot_mint_exits_2_saying_why_without_a_traceback(
    args: tuple[str, ...], env: dict[str, str], message: str
) -> None:
    done = run("mint", "x", *args, env=env)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    for secret in env.values():
        assert secret not in done.stderr


def test_inspect_escapes_control_characters_in_an_unverified_id() -> None:
    # The id of an unverified v1. payload is anyone's to write; it once reached the terminal raw.
    payload = json.dumps({"s": "x", "exp": NOW, "b": "0" * 64, "id": "\x1b]0;PWNED\x07\x1b[2J"}).encode()
    done = run("inspect", "v1." + b64(payload) + "." + b64(bytes(32)), env={"REQUESTSTATE_KEYS": ""})
    assert "\x1b" not in done.stdout
    assert 'id:      "\\u001b]0;PWNED\\u0007\\u001b[2J"' in done.stdout


@pytest.mark.parametrize("mode", list(rs.Mode), ids=str)
def test_inspect_under_the_key_says_when_an_expired_token_expired(mode: rs.Mode) -> None:
    # Before: "REFUSED ...: expired" and "exp": null, though without the key a signed token showed it.
    args = ("inspect", token(mode), "--key-env", "TEST_KEYS", "--subject", "alice", "--tool", "book")
    done = run(*args, "--now", str(NOW + 400), env=KEY_ENV)
    as_json = json.loads(run(*args, "--now", str(NOW + 400), "--json", env=KEY_ENV).stdout)
    assert (
        "REFUSED under TEST_KEYS: expired\nexpires: 2033-05-18T03:38:20Z (unix 2000000300), expired 100 s ago"
        in (done.stdout)
    )
    assert (as_json["reason"], as_json["exp"], as_json["seconds_left"]) == ("expired", NOW + 300, -100)


def test_inspect_of_a_signed_token_expired_and_of_another_identity_says_wrong_binding() -> None:
    # Another identity's token, whenever it expired: its expiry is not this identity's to know.
    args = ("inspect", token("signed"), "--key-env", "TEST_KEYS", "--subject", "bob", "--tool", "book")
    as_json = json.loads(run(*args, "--now", str(NOW + 400), "--json", env=KEY_ENV).stdout)
    assert (as_json["reason"], as_json["exp"]) == ("wrong_binding", None)
