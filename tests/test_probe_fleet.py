"""``requeststate probe`` against the workers of one deployment, each a process of its own serving
streamable HTTP (tests/support/probe_fleet.py): their URLs given once each, and one address in front
of them (tests/support/balancer.py); and a command started once per worker (``--workers``)."""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from requeststate.cli import main
from tests.support import probe_fleet, redis_server
from tests.support.balancer import balancing, port_of
from tests.support.processes import free_port

ROOT = Path(__file__).resolve().parent.parent
REFUSED = "JSON-RPC -32602 Invalid or expired requestState"
ACCEPTED = "accepted: the next round asks for q2"
ONE_ADDRESS = (
    "one address: the checks reached only the workers behind it that the probe's connections landed on, "
    "and the probe cannot tell which or how many (a balancer with client-IP affinity, such as nginx "
    "ip_hash or a Kubernetes Service with sessionAffinity: ClientIP, sends them all to one); to check "
    "every worker, give each worker's URL (--url once per worker) or start the server once per worker "
    "(--workers N)"
)
AT_ONCE_OVER_TWO = "8 identical redemptions of one state sent at once over 2 workers"
OVER_ONE_ADDRESS = (
    ", and so over 7 new connections to this one address: single use on the workers they reached, "
    "not proof for a fleet (see coverage)"
)


@pytest.fixture(scope="module")
def memory_fleet() -> Iterator[list[str]]:
    """Two workers sharing their keys, each with a MemoryGuard of its own."""
    with probe_fleet.fleet("memory", ROOT) as urls:
        yield urls


@pytest.fixture(scope="module")
def redis_fleet() -> Iterator[list[str]]:
    """The correct fleet: two workers sharing their keys and a Redis guard."""
    with redis_server.or_skip(redis_server.running_server()) as redis:
        env = {probe_fleet.REDIS_URL: redis.url, probe_fleet.NAMESPACE: f"fleet-{secrets.token_hex(4)}"}
        with probe_fleet.fleet("redis", ROOT, env) as urls:
            yield urls


def probe_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    """``requeststate probe --json`` of the first round alone, in this process: the exit code and report."""
    code = main(["probe", "--json", "--timeout", "60", "--max-rounds", "1", *args])
    return code, json.loads(capsys.readouterr().out)


def found(report: dict[str, Any], *ids: str) -> dict[str, tuple[str, str]]:
    """The result and detail of the rows ``ids``."""
    return {
        check["id"]: (check["result"], check["detail"]) for check in report["checks"] if check["id"] in ids
    }


def test_a_guard_per_worker_fails_a_state_redeemed_on_one_then_another_naming_their_urls(
    memory_fleet: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = memory_fleet
    code, report = probe_json(capsys, "--single-use", "--url", first, "--url", second)
    assert (code, report["workers"], found(report, "fleet_shared", "fleet_replay")) == (
        1,
        [first, second],
        {
            "fleet_shared": (
                "PASS",
                f"a state minted by {first} was {ACCEPTED} by {second}; every later check sends its "
                "states to another worker than the one that minted them",
            ),
            "fleet_replay": (
                "FAIL",
                f"redeemed on {first}, the state was {ACCEPTED} again on {second}: each worker keeps its "
                "own record of redeemed states",
            ),
        },
    )


def test_a_guard_per_worker_fails_redemptions_at_once_spread_over_their_urls(
    memory_fleet: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = memory_fleet
    code, report = probe_json(capsys, "--single-use", "--url", first, "--url", second)
    assert (code, found(report, "race")) == (1, {"race": ("FAIL", f"{AT_ONCE_OVER_TWO}: 2 were accepted")})


def test_keys_per_worker_fail_a_state_sent_to_another_worker(
    memory_fleet: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # A worker of the module's fleet, on the shared key, and one more that draws a key of its own.
    first, _ = memory_fleet
    with probe_fleet.fleet("own-keys", ROOT, workers=1) as (second,):
        code, report = probe_json(capsys, "--url", first, "--url", second)
    assert (code, found(report, "fleet_shared")) == (
        1,
        {"fleet_shared": ("FAIL", f"a state minted by {first} was refused by {second} ({REFUSED})")},
    )


def test_a_guard_per_worker_behind_one_address_fails_the_replay_over_a_new_connection(
    memory_fleet: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with balancing(memory_fleet) as balancer:
        code, report = probe_json(capsys, "--single-use", "--url", balancer.url)
    assert (code, found(report, "replay")) == (
        1,
        {
            "replay": (
                "FAIL",
                "the second redemption is refused on the connection that redeemed it, but over new "
                f"connection 1 of 7 the state was {ACCEPTED}: behind this address, each worker keeps its "
                "own record of redeemed states",
            )
        },
    )


def test_the_correct_fleet_passes_across_its_urls(
    redis_fleet: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = redis_fleet
    code, report = probe_json(capsys, "--single-use", "--url", first, "--url", second)
    assert (code, found(report, "fleet_shared", "fleet_replay", "replay", "race")) == (
        0,
        {
            "fleet_shared": (
                "PASS",
                f"a state minted by {first} was {ACCEPTED} by {second}; every later check sends its "
                "states to another worker than the one that minted them",
            ),
            "fleet_replay": ("PASS", f"redeemed on {first}, then sent to {second}: refused: {REFUSED}"),
            "replay": ("PASS", f"single-use: the second redemption is refused: {REFUSED}"),
            "race": ("PASS", f"{AT_ONCE_OVER_TWO}: 1 accepted, the others refused: {REFUSED}"),
        },
    )


def test_the_correct_fleet_passes_behind_one_address(
    redis_fleet: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with balancing(redis_fleet) as balancer:
        code, report = probe_json(capsys, "--single-use", "--url", balancer.url)
    assert (code, found(report, "replay"), report["coverage"]) == (
        0,
        {"replay": ("PASS", f"single-use: the second redemption is refused: {REFUSED}{OVER_ONE_ADDRESS}")},
        ONE_ADDRESS,
    )


def test_a_command_started_once_per_worker_finds_keys_per_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each process of this server draws its own key: the second worker refuses the first's states.
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.chdir(ROOT)
    command = [sys.executable, "-m", "tests.support.probe_server", "varying"]
    code, report = probe_json(capsys, "--workers", "2", "--", *command)
    assert (code, report["workers"], found(report, "fleet_shared")) == (
        1,
        ["worker 1", "worker 2"],
        {
            "fleet_shared": (
                "FAIL",
                "a state minted by worker 1 was refused by worker 2 (re-elicited (asked the first round's "
                "questions again))",
            )
        },
    )


def test_behind_client_ip_affinity_one_address_says_the_fleet_was_not_covered_and_its_urls_catch_the_replay(
    memory_fleet: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 41 G: behind nginx ip_hash every connection reached the worker that redeemed the state,
    # the replay row PASSed and nothing said the other worker was never asked. It still PASSes (that
    # is what was measured), but the report says what one address covers and how to cover the fleet.
    with balancing(memory_fleet, "client-ip") as balancer:
        code, report = probe_json(capsys, "--single-use", "--url", balancer.url)
    assert (code, found(report, "replay"), report["coverage"], len(balancer.placed)) == (
        0,
        {"replay": ("PASS", f"single-use: the second redemption is refused: {REFUSED}{OVER_ONE_ADDRESS}")},
        ONE_ADDRESS,
        1,  # every connection on one worker: the affinity the probe cannot see
    )
    first, second = memory_fleet
    code, report = probe_json(capsys, "--single-use", "--url", first, "--url", second)
    assert (code, found(report, "fleet_replay")["fleet_replay"][0], report["coverage"]) == (1, "FAIL", "")


ONCE_EACH = "(--url once per worker)"


def test_the_same_worker_named_twice_is_a_usage_error(
    memory_fleet: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: a state redeemed on a worker and "again on another", itself, was refused: fleet_replay
    # PASSed. A URL spelled otherwise (its scheme in capitals) names the same worker.
    first, _ = memory_fleet
    port = port_of(first)
    for again in (first, f"HTTP://127.0.0.1:{port}/mcp"):
        code = main(["probe", "--single-use", "--url", first, "--url", again])
        assert (code, capsys.readouterr()) == (
            2,
            ("", f"error: {again} is given twice: name each worker of the deployment once {ONCE_EACH}\n"),
        )


def test_a_worker_that_cannot_be_reached_is_named_with_the_error(
    memory_fleet: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: "error: the probe failed (ProbeError: could not connect to the server: ...): a bug in the
    # probe, please report it" when any worker but the first was down, and no worker named.
    first, _ = memory_fleet
    down = f"http://127.0.0.1:{free_port()}/mcp"
    for urls in ((first, down), (down, first)):
        code = main(["probe", "--url", urls[0], "--url", urls[1]])
        assert (code, capsys.readouterr()) == (
            2,
            (
                "",
                f"error: could not connect to worker {down}: ConnectError: All connection attempts failed\n",
            ),
        )
