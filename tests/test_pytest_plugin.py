"""The ``requeststate_probe`` fixture (requeststate.pytest_plugin) in a user's test suite.

Each test writes the test a user would write, runs it with ``pytester``, and reads its outcome:
every broken server of the probe's gallery (tests/support/probe_gallery.py) must fail the
user's test, with the summary naming the rows that FAILed; a protected server must pass it,
whether an ``MCPServer``, a low-level ``Server``, a ``FastMCP``, a command or a URL.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

# Imported here, they outlive each run: pytester drops what a run imported, which the next re-imports.
import fastmcp  # noqa: F401

import requeststate.probe
import requeststate.pytest_plugin  # noqa: F401
from tests.conftest import SECRET
from tests.support import (  # noqa: F401
    mcp_servers,
    probe_fleet,
    probe_gallery,
    probe_retries,
    probe_server,
    processes,
)
from tests.support.reference import b64

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
BOOKING = [sys.executable, str(ROOT / "examples" / "booking_server.py")]
# The plugin by its module, with its entry point blocked: once requeststate is installed with the
# entry point, both would register the one module, which pluggy refuses.
PLUGIN = ("-p", "no:requeststate", "-p", "requeststate.pytest_plugin")
QUIET = ("-p", "no:cacheprovider", "-p", "no:inline_snapshot", "-p", "no:xdist")

HEADER = """\
import sys

import pytest

import requeststate as rs
from requeststate.mcp import protect
from tests.support import probe_gallery as gallery
from tests.support import probe_retries
from tests.support import probe_schemes as schemes
"""
# The test, with the server and options of each case.
USER_TEST = """
def test_request_state_is_safe(requeststate_probe):
    report = requeststate_probe({call})
    assert report.ok, report.summary()
"""


def run_user_test(pytester: pytest.Pytester, call: str, setup: str = "") -> pytest.RunResult:
    """Write the user's test probing ``call`` (the fixture's arguments) and run it."""
    pytester.makepyfile(test_user=HEADER + textwrap.dedent(setup) + USER_TEST.format(call=call))
    return pytester.runpytest(*PLUGIN, *QUIET)


def failed_rows(result: pytest.RunResult) -> dict[str, str]:
    """The rows the assertion message (the report's summary) names as FAILed, each with the states it
    FAILed on (``tool book_table, round 1; tool book_table, round 2``), or ``""`` for a report of one."""
    rows = {}
    for line in result.outlines:
        text = line[1:].strip() if line.startswith("E ") else ""
        if text.startswith("FAIL   "):
            named = text.removeprefix("FAIL   ").partition(": ")[0]
            found = re.fullmatch(r"(.*?)(?: \(((?:tool|prompt|resource) [^()]*)\))?", named)
            assert found is not None
            rows[found[1]] = found[2] or ""
    return rows


# The gallery's wizard has two rounds: every row that attacks a state FAILs on both.
ROUND_1, ROUND_2 = "tool book_table, round 1", "tool book_table, round 2"
BOTH = f"{ROUND_1}; {ROUND_2}"
# The rows run on the first state only: the server's decoder, its targets, users and expiry.
ONCE = {
    "base64 re-spelled (padding, alphabet)",
    "state sent to another target",
    "state sent as another user",
    "state used after expiry",
}


def on_both_rounds(rows: set[str]) -> dict[str, str]:
    """``rows`` as a wizard of the gallery FAILs them: on both rounds, but those run once."""
    return {row: ROUND_1 if row in ONCE else BOTH for row in rows}


def headline(result: pytest.RunResult) -> str:
    """The summary's first line, as the failed assertion shows it."""
    lines = [line for line in result.outlines if line.startswith("E       AssertionError: ")]
    assert len(lines) == 1, result.outlines
    return lines[0].removeprefix("E       AssertionError: ")


ARGUMENTS = "same state, other arguments"
RACE = "same state redeemed 8 times at once"
FAILED = "the server accepted a state it should have refused"

# Every flaw the gallery holds, each at least once: (the fixture's arguments, the rows that FAIL).
GALLERY = {
    "plain JSON": (
        'gallery.broken("json"), require_confidential=True',
        {
            "single bits flipped",
            "random state (never minted)",
            "every member forged",
            ARGUMENTS,
            "state hidden from the client",
        },
    ),
    "an optional MAC": (
        'gallery.broken("mac optional, two parts")',
        {"truncated (-4 chars)", "MAC/tag removed", "MAC/tag truncated", ARGUMENTS},
    ),
    "compressed JSON": (
        'gallery.broken("base64url(zlib(json))")',
        {"extended (+AAAA)", "every member forged", "base64 re-spelled (padding, alphabet)", ARGUMENTS},
    ),
    "a JWT with alg none": (
        'gallery.broken("jwt alg none")',
        {"single bits flipped", "every member forged", "JWT re-signed with alg none", ARGUMENTS},
    ),
    "an unkeyed hash": ('gallery.broken("unkeyed hash")', {"unkeyed hash recomputed", ARGUMENTS}),
    "a guessable MAC key": (
        'gallery.broken("guessable key")',
        {"MAC key guessed (common secrets)", "base64 re-spelled (padding, alphabet)", ARGUMENTS},
    ),
    "AES-CTR without a MAC": (
        'gallery.broken("aes-ctr without a mac")',
        {"single bits flipped", "base64 re-spelled (padding, alphabet)", ARGUMENTS},
    ),
    "no argument binding": ('gallery.broken("no argument binding")', {ARGUMENTS}),
    "no user binding": (
        'gallery.broken("no user binding"), second=gallery.broken("no user binding", user="mallory")',
        {"state sent as another user"},
    ),
    "expiry not checked": ('gallery.broken("expiry not checked")', {"state used after expiry", ARGUMENTS}),
    "a crash on a bad state": ("gallery.crashing()", {"random state (never minted)", ARGUMENTS}),
    "single use by the token's text": (
        'gallery.under("by text", *schemes.single_use_by_text()), single_use=True',
        {"same state redeemed twice"},
    ),
}


@pytest.mark.parametrize("case", sorted(GALLERY))
def test_each_broken_server_fails_the_users_test_naming_its_flaws(
    pytester: pytest.Pytester, case: str
) -> None:
    call, rows = GALLERY[case]
    result = run_user_test(pytester, call)
    result.assert_outcomes(failed=1)
    counted = re.fullmatch(rf"\d+ PASS, (\d+) FAIL, .*: {FAILED}", headline(result))
    expected = on_both_rounds(rows)
    fails = sum(len(scopes.split("; ")) for scopes in expected.values())
    assert (failed_rows(result), counted is not None and int(counted[1])) == (expected, fails)


def test_the_failure_names_each_flaw_with_its_evidence_and_what_was_not_tested(
    pytester: pytest.Pytester,
) -> None:
    result = run_user_test(pytester, 'gallery.broken("no argument binding")')
    result.assert_outcomes(failed=1)
    message = [line.removeprefix("E").strip() for line in result.outlines if line.startswith("E ")]
    assert message[message.index(f"AssertionError: 17 PASS, 2 FAIL, 2 INFO, 11 SKIP: {FAILED}") :][:3] == [
        f"AssertionError: 17 PASS, 2 FAIL, 2 INFO, 11 SKIP: {FAILED}",
        f"FAIL   same state, other arguments ({BOTH}): the state is not bound to the call's arguments. "
        "Evidence: accepted: the next round asks for party (the state was minted for other arguments)",
        "SKIP (not tested): every member forged; unkeyed hash recomputed; MAC key guessed (common "
        "secrets); JWT re-signed with alg none; state sent to another target; state sent as another user; "
        "state used after expiry",
    ]


def test_the_insecure_example_fails_every_flaw_including_another_target(pytester: pytest.Pytester) -> None:
    # The one flaw no gallery server has: a state sent to another tool is accepted. Its server in
    # process: a command is test_a_command_passes's, the example over stdio examples/README.md's sample.
    setup = """
    import importlib

    app = importlib.import_module("examples.insecure_server").server
    """
    result = run_user_test(pytester, "app, single_use=True, require_confidential=True", setup)
    result.assert_outcomes(failed=1)
    # Two tools of two rounds each: every row that attacks a state FAILs on each of the four.
    every = f"{BOTH}; tool change_booking, round 1; tool change_booking, round 2"
    assert failed_rows(result) == {
        "single bits flipped": every,
        "random state (never minted)": every,
        "every member forged": every,
        ARGUMENTS: every,
        "state sent to another target": ROUND_1,
        "same state redeemed twice": every,
        RACE: ROUND_1,
        "state hidden from the client": every,
    }


# --- protected servers pass, in every form the fixture takes ---------------------------------------------


def test_a_protected_mcpserver_with_a_guard_passes_single_use(pytester: pytest.Pytester) -> None:
    result = run_user_test(pytester, "gallery.protected(guard=rs.MemoryGuard()), single_use=True")
    result.assert_outcomes(passed=1)


def test_a_protected_server_without_a_guard_fails_single_use(pytester: pytest.Pytester) -> None:
    # The same server, without the guard the option demands: the user's test must catch that too.
    result = run_user_test(pytester, "gallery.protected(), single_use=True")
    result.assert_outcomes(failed=1)
    assert failed_rows(result) == {"same state redeemed twice": BOTH, RACE: ROUND_1}


def test_a_tool_that_runs_again_on_a_retry_fails_exactly_once(pytester: pytest.Pytester) -> None:
    result = run_user_test(pytester, 'probe_retries.server("runs-again"), exactly_once="book", racers=4')
    result.assert_outcomes(failed=1)
    assert failed_rows(result) == {
        "identical retry of an exactly-once tool": "",
        "identical retries 4 at once": "",
    }


def test_a_warn_does_not_fail_the_users_test(pytester: pytest.Pytester) -> None:
    # A sound server that reads base64 leniently: a WARN row, which proves nothing.
    result = run_user_test(pytester, "gallery.lenient()")
    result.assert_outcomes(passed=1)


def test_a_protected_low_level_server_passes(pytester: pytest.Pytester) -> None:
    setup = """
    from tests.support.mcp_servers import build

    app = build("lowlevel", "boundary", rs.KeyRing(schemes.KEY), "encrypted").server
    assert type(app).__name__ == "Server"
    """
    result = run_user_test(pytester, "app", setup)
    result.assert_outcomes(passed=1)


FASTMCP_APP = """
from tests.support.fastmcp_booking import booking

app, _ = booking()
"""


def test_a_protected_fastmcp_passes(pytester: pytest.Pytester) -> None:
    setup = FASTMCP_APP + "protect(app, rs.Codec(schemes.KEY, guard=rs.MemoryGuard()))\n"
    result = run_user_test(pytester, "app, single_use=True", setup)
    result.assert_outcomes(passed=1)


def test_a_fastmcp_serving_its_state_as_plain_json_fails(pytester: pytest.Pytester) -> None:
    # FastMCP's boundary taken out: its handler's plain state goes out and comes back trusted.
    setup = FASTMCP_APP + (
        "chain = app._mcp_server.middleware\n"
        'chain[:] = [entry for entry in chain if type(entry).__name__ != "RequestStateBoundary"]\n'
    )
    result = run_user_test(pytester, "app", setup)
    result.assert_outcomes(failed=1)
    # Its tool has one round: a report of one state, its rows named alone.
    assert failed_rows(result) == {
        "single bits flipped": "",
        "truncated (-4 chars)": "",
        "extended (+AAAA)": "",
        "prefix swapped": "",
        "random state (never minted)": "",
        "base64 re-spelled (padding, alphabet)": "",
        ARGUMENTS: "",
    }


@pytest.fixture
def keys_for_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a spawned example server inherits: a key, and this checkout on its import path."""
    monkeypatch.setenv("REQUESTSTATE_KEYS", b64(SECRET))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def test_a_command_passes(pytester: pytest.Pytester, keys_for_servers: None) -> None:
    result = run_user_test(pytester, repr(BOOKING))
    result.assert_outcomes(passed=1)


@pytest.fixture(scope="module")
def booking_url() -> Iterator[str]:
    """examples/booking_server.py over streamable HTTP on a free loopback port: its URL. One server for
    the module's tests of a URL: each probe mints states of its own, and none is a start's subject."""
    port = processes.free_port()
    env = {**os.environ, "REQUESTSTATE_KEYS": b64(SECRET), "PYTHONPATH": str(ROOT)}
    with processes.serving([*BOOKING, "--http", "--port", str(port)], port, env, ROOT) as url:
        yield url


def test_a_url_passes(pytester: pytest.Pytester, booking_url: str) -> None:
    result = run_user_test(pytester, repr(booking_url))
    result.assert_outcomes(passed=1)


def test_a_url_with_a_second_user_fails_another_user(pytester: pytest.Pytester, booking_url: str) -> None:
    # Without auth= the example binds no user: another identity (headers) redeems the state.
    second = f"requeststate.probe.Target(url={booking_url!r}, headers={{'X-User': 'mallory'}})"
    setup = "import requeststate.probe\n"
    result = run_user_test(
        pytester, f"{booking_url!r}, headers={{'X-User': 'alice'}}, second={second}", setup
    )
    result.assert_outcomes(failed=1)
    assert failed_rows(result) == {"state sent as another user": ROUND_1}


# --- the workers of one deployment: a list of servers --------------------------------------------------


@pytest.fixture
def memory_fleet() -> Iterator[list[str]]:
    """Two worker processes over streamable HTTP sharing their keys, each with its own MemoryGuard."""
    with probe_fleet.fleet("memory", ROOT) as urls:
        yield urls


def test_a_list_of_urls_is_a_fleet_and_a_guard_per_worker_fails_the_users_test(
    pytester: pytest.Pytester, memory_fleet: list[str]
) -> None:
    result = run_user_test(pytester, f"{memory_fleet!r}, single_use=True")
    result.assert_outcomes(failed=1)
    assert failed_rows(result) == {
        "state redeemed on one worker, then another": "tool flow0, round 1",
        RACE: "tool flow0, round 1",
    }


def test_a_list_of_server_objects_is_a_fleet(pytester: pytest.Pytester) -> None:
    call = "[gallery.protected(keys=rs.KeyRing.ephemeral()), gallery.protected(keys=rs.KeyRing.ephemeral())]"
    result = run_user_test(pytester, call)
    result.assert_outcomes(failed=1)
    assert failed_rows(result) == {"state sent to another worker": ROUND_1}


def test_tools_named_are_probed_alone(pytester: pytest.Pytester) -> None:
    # One bad tool among good ones: named without it, the user's test passes.
    result = run_user_test(pytester, 'gallery.one_bad_tool(), tool=["book_table", "order"]')
    result.assert_outcomes(passed=1)


# --- what a server logs stays out of the user's output ----------------------------------------------------

CRASHING_FASTMCP = """
import json
import logging

from tests.support.fastmcp_booking import booking

app, _ = booking()
chain = app._mcp_server.middleware
chain[:] = [entry for entry in chain if type(entry).__name__ != "RequestStateBoundary"]


@app.tool
async def crash(ctx, restaurant: str = "x") -> str:
    if ctx.request_state is None:
        raise ValueError("no state")  # FastMCP logs each error a tool raises, with its traceback
    return "done"
"""


def test_no_traceback_from_fastmcps_logger_reaches_the_users_output(pytester: pytest.Pytester) -> None:
    # Every state is the server's own plain text, trusted: the user's test fails, as designed, and
    # its output holds the report, not the tracebacks FastMCP logs for each call the probe crashes.
    result = run_user_test(pytester, "app", CRASHING_FASTMCP)
    result.assert_outcomes(failed=1)
    output = result.stdout.str() + result.stderr.str()
    assert (output.count("Traceback"), output.count("no running event loop")) == (0, 0)


SELF_LOGGING = """
import json
import logging

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import InputRequiredResult

log = logging.getLogger("users.server")
app = MCPServer("logs its own errors")
chain = app.middleware
chain[:] = [entry for entry in chain if type(entry).__name__ != "RequestStateBoundary"]


@app.tool()
async def book(ctx: Context) -> str | InputRequiredResult:
    if ctx.request_state is None:
        return InputRequiredResult(request_state=json.dumps({"step": 1}))
    try:
        return str(json.loads(ctx.request_state)["step"])
    except (ValueError, KeyError, TypeError):
        log.exception("a state it cannot read")
        raise
"""


def test_what_a_server_logs_is_not_chained_to_the_plugins_own_errors(pytester: pytest.Pytester) -> None:
    # The server's own logger is the user's, left as it is: its tracebacks show in the failed test's
    # log, each its own, none chained to "RuntimeError: no running event loop" from the plugin.
    result = run_user_test(pytester, "app", SELF_LOGGING)
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert ("a state it cannot read" in output, output.count("no running event loop")) == (True, 0)


# --- async tests, setup errors, and the extra missing ---------------------------------------------------


def test_the_fixture_works_in_an_async_test_called_or_awaited(pytester: pytest.Pytester) -> None:
    setup = """
    @pytest.fixture
    def anyio_backend():
        return "asyncio"


    @pytest.mark.anyio
    async def test_awaited(requeststate_probe):
        report = await requeststate_probe.run(gallery.broken("no argument binding"))
        assert report.ok, report.summary()


    @pytest.mark.anyio
    async def test_called(requeststate_probe):
        report = requeststate_probe(gallery.broken("no argument binding"))
        assert report.ok, report.summary()
    """
    result = run_user_test(pytester, "gallery.protected()", setup)
    result.assert_outcomes(passed=1, failed=2)
    assert failed_rows(result) == {ARGUMENTS: BOTH}
    assert sum(line.startswith("E       AssertionError: ") for line in result.outlines) == 2


def test_a_server_the_probe_cannot_judge_is_an_error_saying_why(pytester: pytest.Pytester) -> None:
    setup = "from tests.support.probe_server import plain\n"
    result = run_user_test(pytester, "plain()", setup)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E * requeststate.probe._session.ProbeError: no listed tool, prompt or resource answered *"]
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("'python server.py'", "a str is a URL (http:// or https://), not 'python server.py': *"),
        ("['python', 'server.py'], headers={'A': 'b'}", "headers= go with a URL (streamable HTTP)"),
        ("object()", "*server must be an mcp MCPServer or Server, or a fastmcp FastMCP, not object"),
    ],
)
def test_a_target_the_fixture_cannot_probe_is_refused_before_probing(
    pytester: pytest.Pytester, call: str, message: str
) -> None:
    result = run_user_test(pytester, call)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"E *{message}"])


@pytest.mark.usefixtures("measured_subprocesses")  # a fresh pytest without the extra
def test_without_the_mcp_extra_the_plugin_loads_and_the_fixture_names_the_install(
    pytester: pytest.Pytester,
) -> None:
    # pytest loads every installed plugin: with mcp absent, loading it must not fail, and the fixture
    # must say what to install. sys.modules["mcp"] = None makes `import mcp` fail as if not installed.
    pytester.makepyfile(
        test_user="""
        def test_request_state_is_safe(requeststate_probe):
            raise AssertionError("never reached: the fixture fails first")

        def test_another_test_runs():
            pass
        """
    )
    pytester.makeini("[pytest]\n")
    code = (
        "import sys; sys.modules['mcp'] = None; import pytest; "
        f"sys.exit(pytest.main([*{[*PLUGIN, *QUIET]!r}, 'test_user.py']))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=pytester.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "the requeststate_probe fixture cannot run: requeststate.probe needs the mcp extra: "
        "pip install 'requeststate[mcp]' (cannot import mcp)" in done.stdout
    )
    assert re.fullmatch(r"=+ 1 passed, 1 error in [\d.]+s =+", done.stdout.splitlines()[-1]), done.stdout
