"""``requeststate bench`` (requeststate/bench): what it reports, never how fast anything is.

Every run here takes a tiny budget (``--seconds 0.3``): the numbers are noise, and
no test compares them with a threshold; the tests check what is measured (the
modes, the state, the ring, the guards), that the words agree with the numbers,
and that every option that cannot be used exits 2 with its reason.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import dataclasses
import functools
import io
import json
import re
import sqlite3
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import requeststate as rs
import requeststate.mcp
from requeststate import bench
from requeststate.bench import _guards as bench_guards_module
from requeststate.bench import _measure as bench_measure_module
from requeststate.bench._analysis import verdict
from requeststate.bench._claim_load import (
    CONCURRENCY,
    MAX_TOKENS,
    ClaimLevel,
    claims_async,
    claims_threads,
    stops_rising_at,
    tokens_for,
)
from requeststate.bench._guards import HIDDEN, NAMESPACE_PREFIX, guard_from_url, shown_url
from requeststate.bench._http import HTTP_CLIENTS, HTTP_SERVERS, SLICES, HttpResult, http_rounds
from requeststate.bench._mcp import FASTMCP_BOUNDARY, FASTMCP_PROTECT, MCPD, PROTECT, SDK_BOUNDARY, USE_CODEC
from requeststate.bench._measure import (
    ASYNC,
    HTTP_MISSING,
    MCP_MISSING,
    SUBJECT,
    SYNC,
    TOOL,
    BoundaryResult,
    GuardResult,
    ModeResult,
    Results,
    measure_guard,
)
from requeststate.bench._options import (
    GUARD_NOTE,
    MEMORY_URL,
    MIN_STATE_BYTES,
    ConfigError,
    Settings,
    generated_state,
    guard_urls_text,
)
from requeststate.bench._report import as_json, text
from requeststate.bench._timing import MIN_ROUNDS, Batch, Timing, measure

from .conftest import SECRET
from .support import redis_server
from .support.redis_server import Server

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "requeststate" / "bench"
TINY_BUDGET = "0.3"


def bench_run(*argv: str) -> tuple[int, str]:
    """Parse ``argv`` with the package's options and run it, as the command line does: (exit code, stdout)."""
    parser = argparse.ArgumentParser(prog="requeststate bench")
    bench.add_arguments(parser)
    out = io.StringIO()
    code = bench.run(parser.parse_args(["--seconds", TINY_BUDGET, *argv]), out)
    return code, out.getvalue()


def bench_json(*argv: str) -> dict[str, Any]:
    code, out = bench_run("--json", *argv)
    assert code == 0
    document: dict[str, Any] = json.loads(out)
    return document


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with redis_server.or_skip(redis_server.running_server()) as running:
        yield running


@pytest.fixture
def own_server() -> Iterator[Server]:
    """A server of the test's own, for one it configures (a password, an eviction policy)."""
    with redis_server.or_skip(redis_server.running_server()) as running:
        yield running


def canned_http(state: str, codec: rs.Codec, seconds: float) -> tuple[HttpResult, ...]:
    """Rounds over HTTP, not measured: for the tests that concern another layer (a real run costs seconds)."""
    return tuple(HttpResult(name, 40, 0.1, 90_000.0, 120_000.0) for name in HTTP_SERVERS)


@pytest.fixture(autouse=True)
def http_canned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_measure_module, "http_rounds", canned_http)


@pytest.fixture
def real_http(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rounds over HTTP measured for real: real servers and clients on loopback."""
    monkeypatch.setattr(bench_measure_module, "http_rounds", http_rounds)


def evalsha_calls(server: Server) -> int:
    stats: dict[str, dict[str, int]] = server.execute("INFO", "commandstats")
    return stats.get("cmdstat_evalsha", {}).get("calls", 0)


# --- the package ---------------------------------------------------------------------


def test_the_package_offers_the_command_line_and_the_harness_only() -> None:
    # Catches: internals exported, or a function the CLI or the repository's benchmarks call renamed.
    assert bench.__all__ == [
        "ASYNC",
        "SYNC",
        "Batch",
        "ClaimLevel",
        "Timing",
        "add_arguments",
        "boundary_rounds",
        "measure",
        "measure_guard",
        "percentile_us",
        "repeated",
        "run",
        "signed_in",
    ]


def _imported_modules(source: Path) -> list[tuple[str, int]]:
    """Each import of ``source``: (the module named, its relative level)."""
    modules = []
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules += [(alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules.append((node.module or "", node.level))
    return modules


@pytest.mark.parametrize("source", sorted(PACKAGE.glob("*.py")), ids=lambda source: source.name)
def test_the_package_imports_only_public_requeststate_and_runs_no_repository_file(source: Path) -> None:
    # Catches: `from requeststate._codec import ...`, `from .._keys import ...`, or running
    # the checkout's benchmarks (runpy, importlib, benchmarks, scripts) from the package.
    for module, level in _imported_modules(source):
        assert level <= 1, f"{source.name} imports {'.' * level}{module}: outside requeststate.bench"
        parts = module.split(".")
        if parts[0] == "requeststate":
            assert not any(part.startswith("_") for part in parts), f"{source.name} imports {module}"
        assert parts[0] not in {"runpy", "importlib", "benchmarks", "scripts"}, (
            f"{source.name} imports {module}"
        )


# --- what is measured ----------------------------------------------------------------


def _documented_json() -> tuple[list[str], dict[str, list[str]]]:
    """The bench section's ``--json`` table: the fields, and the members of the fields holding objects."""
    section = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").partition("## bench")[2]
    table = section.partition("### `--json`")[2]
    fields, members = [], {}
    for row in re.finditer(r"^\| `(\w+)` \| (.*) \|$", table, re.MULTILINE):
        fields.append(row[1])
        if row[1] in ("modes", "mcp", "http", "guards", "levels", "round", "bounds"):
            # The members are the backticked names before each comma, or before a parenthesis.
            members[row[1]] = re.findall(r"`(\w+)`(?= \(|,|$)", row[2].partition(": ")[2])
    return [field for field in fields if field != "levels"], members


def test_json_has_the_documented_fields_for_the_modes_and_the_state_size_asked(real_http: None) -> None:
    # Catches: a field missing or undocumented, modes measured other than asked (or reordered),
    # the size ignored, rounds/s computed from anything but the round, a round over HTTP missing.
    code, out = bench_run("--json", "--mode", "xchacha,signed", "--state-bytes", "300")
    assert code == 0
    assert out.isascii()
    assert out.count("\n") == 1
    document = json.loads(out)
    fields, members = _documented_json()
    assert list(document) == fields
    assert [mode["mode"] for mode in document["modes"]] == ["xchacha", "signed"]
    assert document["guard_mode"] == "xchacha"
    assert [(guard["guard"], guard["path"]) for guard in document["guards"]] == [
        (MEMORY_URL, SYNC),
        (MEMORY_URL, ASYNC),
    ]
    assert (document["state_bytes"], document["state_file"], document["keys"]) == (300, None, 1)
    assert (document["seconds"], document["mcp_missing"]) == (0.3, None)
    assert document["rounds"] >= MIN_ROUNDS
    for mode in document["modes"]:
        assert list(mode) == members["modes"]
        # round_us is printed to 0.001 µs: rounds/s agrees with it to 1 in 10,000.
        assert mode["rounds_per_second"] == pytest.approx(1e6 / mode["round_us"], rel=1e-4)
    assert [boundary["boundary"] for boundary in document["mcp"]] == [
        SDK_BOUNDARY,
        PROTECT,
        MCPD,
        USE_CODEC,
        FASTMCP_BOUNDARY,
        FASTMCP_PROTECT,
    ]
    for boundary in document["mcp"]:
        assert list(boundary) == members["mcp"]
    for guard in document["guards"]:
        assert list(guard) == members["guards"]
        assert [level["concurrency"] for level in guard["levels"]] == list(CONCURRENCY)
        for level in guard["levels"]:
            assert list(level) == members["levels"]
            assert level["refused"] == 0
    assert [server["server"] for server in document["http"]] == [SDK_BOUNDARY, PROTECT]
    for server in document["http"]:
        assert list(server) == members["http"]
        assert server["clients"] == HTTP_CLIENTS
        assert server["rounds"] >= HTTP_CLIENTS * SLICES  # every client, at least once a slice
    assert document["http_missing"] is None
    assert document["transport"] == document["http"][1]["rounds_per_second"]
    assert list(document["round"]) == members["round"]
    assert document["round"]["layer"] == PROTECT
    assert [list(bound) for bound in document["bounds"]] == [members["bounds"]]


def test_the_mcp_rounds_are_protect_on_the_first_mode_beside_the_sdks_boundary() -> None:
    # Catches: protect() measured on a codec other than the run's (another mode), a ratio taken
    # against the wrong boundary, or protect(FastMCP) compared with the SDK's instead of FastMCP's.
    document = bench_json("--mode", "signed,encrypted", "--state-bytes", "200")
    rounds = {boundary["boundary"]: boundary for boundary in document["mcp"]}
    assert rounds[SDK_BOUNDARY]["versus"] is None
    assert rounds[PROTECT]["versus"] == SDK_BOUNDARY
    assert rounds[PROTECT]["ratio"] == pytest.approx(
        rounds[PROTECT]["round_us"] / rounds[SDK_BOUNDARY]["round_us"], abs=1e-3
    )
    assert rounds[FASTMCP_PROTECT]["versus"] == FASTMCP_BOUNDARY
    assert document["round"] == {
        "layer": PROTECT,
        "round_us": rounds[PROTECT]["round_us"],
        "rounds_per_second": rounds[PROTECT]["rounds_per_second"],
    }


def test_boundary_rounds_protect_the_codec_given_and_hand_the_handler_the_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Catches: our boundaries built on keys or a mode of their own (the run's codec ignored), or a
    # round that does not reach the handler (the state lost on the way).
    given: list[object] = []

    class RecordingBoundary(requeststate.mcp.Boundary):
        def __init__(self, keys: rs.Keys | rs.Codec, /, **options: Any) -> None:
            given.append(keys)
            super().__init__(keys, **options)

    monkeypatch.setattr(requeststate.mcp, "Boundary", RecordingBoundary)
    state = generated_state(100)
    codec = rs.Codec(rs.KeyRing(SECRET), mode="signed")
    with bench.signed_in():
        rounds = bench.boundary_rounds(state, codec)
        assert {name: round_trip() for name, round_trip in rounds.items()} == dict.fromkeys(rounds, state)
    assert given == [codec, codec]  # protect() and protect(bind="mcpd")


def test_without_the_mcp_extra_the_boundaries_are_named_not_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    # Catches: an ImportError's traceback, or a verdict that names protect() without measuring it.
    monkeypatch.setitem(sys.modules, "mcp.server.request_state", None)
    document = bench_json("--mode", "signed")
    assert (document["mcp"], document["mcp_missing"]) == ([], MCP_MISSING)
    assert (document["http"], document["http_missing"], document["transport"]) == ([], MCP_MISSING, None)
    assert document["round"]["layer"] == "the signed codec"
    assert f"protect() and the SDK's boundary {MCP_MISSING}" in document["verdict"]


def test_without_uvicorn_the_round_over_http_is_named_not_measured(
    real_http: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Catches: an ImportError's traceback, or a verdict that names the transport without measuring it.
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    document = bench_json("--mode", "signed")
    assert (document["http"], document["http_missing"], document["transport"]) == ([], HTTP_MISSING, None)
    assert document["bounds"][0]["bound_by"] in {"guard", "round"}  # which: the timing's, never "transport"
    assert f"a round over HTTP {HTTP_MISSING}" in document["verdict"]


@pytest.mark.parametrize("size", [MIN_STATE_BYTES, MIN_STATE_BYTES + 1, 64, 1001])
def test_a_generated_state_is_json_of_exactly_the_bytes_asked(size: int) -> None:
    # Catches: a filler one byte short or long (odd sizes: hex comes two characters a byte).
    state = generated_state(size)
    assert len(state.encode("utf-8")) == size
    assert set(json.loads(state)) == {"data"}


def test_a_state_file_is_measured_as_its_text_and_its_size_in_bytes(tmp_path: Path) -> None:
    # Catches: the file's size counted in characters, or a generated state of that size measured
    # instead of its text (quotes, escaped in the payload, make this one's token longer).
    text = '{"note":"' + '\\"é' * 40 + '"}\n'
    sample = tmp_path / "state.json"
    sample.write_text(text, encoding="utf-8")
    document = bench_json("--mode", "signed", "--state-file", str(sample))
    assert (document["state_bytes"], document["state_file"]) == (len(text.encode("utf-8")), str(sample))
    # A signed token's length depends on the state only: the keys, the subject and the tool
    # enter it as a MAC and a bind tag of fixed lengths.
    expected = rs.Codec(rs.KeyRing(SECRET), mode="signed").encode(text, subject=SUBJECT, tool=TOOL)
    assert document["modes"][0]["token_bytes"] == len(expected)


def test_keys_sets_the_length_of_every_codecs_ring_and_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    # Catches: --keys reported but a ring of one key measured.
    rings = []
    real_init = rs.Codec.__init__

    def recording_init(self: rs.Codec, keys: rs.KeyRing, /, **options: Any) -> None:
        rings.append(len(keys))
        real_init(self, keys, **options)

    monkeypatch.setattr(rs.Codec, "__init__", recording_init)
    document = bench_json("--keys", "3", "--mode", "encrypted")
    assert document["keys"] == 3
    assert len(rings) >= 3  # the mode's codec, and a guard's per path
    assert rings == [3] * len(rings)


def test_the_default_run_finishes_with_every_mode_the_boundaries_and_the_memory_guard() -> None:
    # Catches: a default that measures less than documented, or a run that does not finish.
    code, out = bench_run()
    assert code == 0
    lines = out.splitlines()
    assert lines[0].endswith(": a 64-byte state (generated), a ring of 1 key")
    http_rows = [
        line.partition(" server ")[0] for line in lines if " server " in line and line.endswith(" µs")
    ]
    first_words = [line.partition(" ")[0] for line in lines if line.partition(" server ")[0] not in http_rows]
    for row in ["signed", "encrypted", "xchacha", SDK_BOUNDARY.partition(" ")[0], PROTECT]:
        assert first_words.count(row) == 1, row
    assert first_words.count(MEMORY_URL) == 2  # a row for each path; its other levels leave the name out
    assert http_rows == list(HTTP_SERVERS)
    verdict_at = lines.index("verdict:")
    assert lines[verdict_at + 1].startswith("  a round in process: protect() ")
    assert lines[verdict_at + 2].startswith("  a round over HTTP (streamable HTTP on loopback, ")
    assert lines[verdict_at + 3].startswith("  memory (MemoryGuard): ")


def test_the_help_and_docs_list_the_same_guard_urls_and_say_the_same_of_them() -> None:
    # Issue 43: --help listed unix:/// and omitted sqlite:////, the reverse of docs/cli.md, and then
    # said less of the stores than the docs. Catches: a URL, or a word of what --guard does to a store,
    # in one and not the other (both come from _options.GUARD_URLS and GUARD_NOTE).
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    (action,) = (action for action in parser._actions if "--guard" in action.option_strings)
    assert action.help is not None
    assert guard_urls_text() in action.help
    section = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").partition("## bench")[2]
    (row,) = re.findall(r"^\| `--guard URL` \|.*$", section, re.MULTILINE)
    assert guard_urls_text("`") in row
    assert f"; {GUARD_NOTE}" in action.help
    assert f"; {GUARD_NOTE};" in row
    assert "unix://" not in row + action.help


def test_the_default_budget_is_5_seconds() -> None:
    # Catches: a default budget that would take the run past its promise (well under 30 s).
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    assert parser.parse_args([]).seconds == 5.0


# --- the verdict ---------------------------------------------------------------------


def _timing(median_us: float) -> Timing:
    return Timing(median_us=median_us, best_us=median_us, calls=1, samples=MIN_ROUNDS)


def _settings(modes: tuple[rs.Mode, ...], guard_urls: tuple[str, ...] = (MEMORY_URL,)) -> Settings:
    return Settings(
        state=generated_state(64),
        state_file=None,
        modes=modes,
        keys=1,
        guard_urls=guard_urls,
        seconds=1.0,
        as_json=False,
    )


def _levels(*claims_per_second: float) -> tuple[ClaimLevel, ...]:
    return tuple(
        ClaimLevel(concurrency, round(rate), 0, 1.0, 10.0, 20.0)
        for concurrency, rate in zip(CONCURRENCY, claims_per_second, strict=True)
    )


def _results(
    boundaries: dict[str, float],
    guards: dict[tuple[str, str], tuple[float, ...]],
    *,
    round_us: float = 8.0,
    http: dict[str, float] | None = None,
) -> Results:
    """Results of these figures: boundaries' µs, guards' claims/s, servers' rounds/s over HTTP."""
    urls = tuple(dict.fromkeys(url for url, _ in guards))
    return Results(
        _settings((rs.Mode.ENCRYPTED,), urls),
        (ModeResult(rs.Mode.ENCRYPTED, 300, _timing(4.0), _timing(4.0), _timing(round_us)),),
        tuple(BoundaryResult(name, _timing(us)) for name, us in boundaries.items()),
        None if boundaries else MCP_MISSING,
        tuple(
            HttpResult(name, round(rate * 10), 10.0, 20_000.0, 40_000.0)
            for name, rate in (http or {}).items()
        ),
        None if http else MCP_MISSING if not boundaries else HTTP_MISSING,
        tuple(
            GuardResult(url, "RedisGuard" if path == SYNC else "AsyncRedisGuard", path, _levels(*rates))
            for (url, path), rates in guards.items()
        ),
        level_seconds=0.1,
        rounds=MIN_ROUNDS,
        seconds_taken=1.0,
    )


def test_the_verdict_names_the_transport_when_a_round_over_http_is_slower_than_the_guard() -> None:
    # Issue 43: a fleet served 317 flows/s with a Redis guard and 315 with none, and the bench said
    # "the guard bounds a round" (3,366 claims/s against protect()'s 6,493 rounds/s in process).
    # Catches: the guard compared with the layers in process when a round over HTTP was measured.
    url = "redis://:hunter2@cache:6379/0"
    results = _results(
        {SDK_BOUNDARY: 246.86, PROTECT: 154.0},
        {(url, SYNC): (3_366, 3_085, 1_194), (url, ASYNC): (1_532, 1_946, 1_217)},
        http={SDK_BOUNDARY: 315.0, PROTECT: 317.0},
    )
    assert verdict(results) == [
        "a round in process: protect() 154.00 µs, 6,494 rounds/s on one core, 0.62x the SDK boundary's "
        "round; the encrypted codec's encode and decode 8.00 µs",
        f"a round over HTTP (streamable HTTP on loopback, {HTTP_CLIENTS} clients, server and clients in this "
        "process): protect() 317 rounds/s, the SDK's server as shipped 315 (1.01x); protect()'s own work "
        "(154.00 µs) is 4.9% of a round's time over HTTP",
        "redis://cache:6379/0 (RedisGuard): 3,366 claims/s, sync at 1 thread (stops rising past 1 thread), "
        "against 317 rounds/s over HTTP: the transport (HTTP and the MCP server and client), not the guard, "
        "bounds a round",
        "not measured here: your handlers, what your auth calls, a network past loopback; a server far below "
        "these rates spends its time there",
    ]
    (bound,) = json.loads(as_json(results))["bounds"]
    assert bound["bound_by"] == "transport"


def test_the_verdict_names_the_guard_when_it_claims_fewer_per_second_than_a_round_over_http_runs() -> None:
    # Catches: the comparison inverted, the best level taken from one path only, the round taken
    # from the codec when protect() was measured, the FastMCP ratio against the SDK's boundary.
    url = "redis://:hunter2@cache:6379/0"
    results = _results(
        {SDK_BOUNDARY: 100.0, PROTECT: 40.0, FASTMCP_BOUNDARY: 80.0, FASTMCP_PROTECT: 44.0},
        {(url, SYNC): (2_000, 6_000, 6_200), (url, ASYNC): (3_000, 9_000, 9_500)},
        http={SDK_BOUNDARY: 12_000.0, PROTECT: 10_000.0},
    )
    assert verdict(results)[0] == (
        "a round in process: protect() 40.00 µs, 25,000 rounds/s on one core, 0.40x the SDK boundary's "
        "round; the encrypted codec's encode and decode 8.00 µs; "
        "protect(FastMCP) 0.55x FastMCP's own boundary"
    )
    assert verdict(results)[2] == (
        "redis://cache:6379/0 (AsyncRedisGuard): 9,500 claims/s, async at 64 tasks (stops rising past "
        "8 tasks), against 10,000 rounds/s over HTTP: the guard bounds a round"
    )


def test_without_protect_the_verdict_compares_the_guard_with_the_codecs_round() -> None:
    # Catches: a verdict that needs protect(), or the guard named as the bound when it is faster.
    results = _results({}, {(MEMORY_URL, SYNC): (200_000, 150_000, 90_000), (MEMORY_URL, ASYNC): (1, 2, 3)})
    assert verdict(results) == [
        "a round in process: the encrypted codec 8.00 µs, 125,000 rounds/s on one core",
        "memory (RedisGuard): 200,000 claims/s, sync at 1 thread (stops rising past 1 thread), against "
        "125,000 rounds/s in process: the round (the encrypted codec), not the guard, bounds it",
        f"protect() and the SDK's boundary {MCP_MISSING}",
        "not measured here: your transport (HTTP, JSON-RPC framing) and your handlers; a server far below "
        "these rates spends its time there",
    ]


@pytest.mark.parametrize(
    ("rates", "expected"),
    [
        ((1_000, 5_000, 20_000), None),
        ((1_000, 5_000, 5_400), 8),
        ((1_000, 1_099, 20_000), 1),
        ((1_000, 800, 700), 1),
    ],
)
def test_throughput_stops_rising_where_the_next_level_adds_under_10_percent(
    rates: tuple[float, ...], expected: int | None
) -> None:
    # Catches: the knee placed at the level past it, a fall read as a rise, 9.9% counted as growth.
    assert stops_rising_at(_levels(*rates)) == expected


def test_the_report_shows_a_redis_without_its_password_and_counts_refusals() -> None:
    # Catches: a password printed in the report, refused claims hidden inside a rate.
    url = "redis://:hunter2@cache:6379/0"
    results = _results({}, {(url, SYNC): (1, 2, 3), (url, ASYNC): (1, 2, 3)})
    refused = GuardResult(url, "RedisGuard", SYNC, (ClaimLevel(8, 100, 3, 1.0, 10.0, 20.0),))
    report = text(dataclasses.replace(results, guards=(refused,)))
    assert "hunter2" not in report
    assert "redis://cache:6379/0 (RedisGuard)" in report
    assert (
        "redis://cache:6379/0 sync at 8 threads: 3 of 100 fresh tokens refused (claims that failed): "
        "its figures include them"
    ) in report


# --- the claims ----------------------------------------------------------------------


@pytest.mark.parametrize("concurrency", [1, 8])
def test_threads_decode_every_token_once_and_count_refusals(concurrency: int) -> None:
    # Catches: a token handed to two threads (a replay measured as a claim), tokens skipped, a
    # refusal not counted, the untimed first decode of each thread counted.
    tokens = [str(index) for index in range(500)]
    seen: list[str] = []
    lock = threading.Lock()

    def decode(token: str) -> object:
        with lock:
            seen.append(token)
        return None if int(token) % 10 == 0 else token

    level = claims_threads(decode, tokens, concurrency, seconds=60.0)
    assert sorted(seen, key=int) == tokens
    assert (level.concurrency, level.claims, level.refused) == (concurrency, 500 - concurrency, 50 - 1)
    assert 0 < level.p50_us <= level.p99_us


def test_tasks_decode_every_token_once_concurrently() -> None:
    # Catches: tasks run one after another (no concurrency: 8 tasks take 8 sleeps each), or a
    # token decoded twice.
    tokens = [str(index) for index in range(80)]
    seen: list[str] = []
    running = [0, 0]  # now, most at once

    async def adecode(token: str) -> object:
        seen.append(token)
        running[0] += 1
        running[1] = max(running)
        await asyncio.sleep(0.001)
        running[0] -= 1
        return token

    level = asyncio.run(claims_async(adecode, tokens, 8, seconds=60.0))
    assert sorted(seen, key=int) == tokens
    assert (level.claims, level.refused, running[1]) == (72, 0, 8)


def test_a_level_stops_at_its_deadline() -> None:
    # Catches: a level that runs through every token whatever the budget.
    def slow_decode(token: str) -> object:
        time.sleep(0.01)
        return token

    level = claims_threads(slow_decode, [str(index) for index in range(1000)], 1, seconds=0.05)
    assert level.claims < 100


@pytest.mark.parametrize(
    ("rate", "seconds", "concurrency", "expected"),
    [(1000.0, 0.5, 1, 651), (10.0, 0.1, 64, 64 * 20 + 64), (1e9, 1.0, 8, MAX_TOKENS + 8)],
)
def test_tokens_for_a_level_cover_its_rate_and_each_worker(
    rate: float, seconds: float, concurrency: int, expected: int
) -> None:
    # Catches: too few tokens for a level (it stops early, its rate measured over a shorter run),
    # or no cap (a fast guard minting millions of tokens before the clock starts).
    assert tokens_for(rate, seconds, concurrency) == expected


def test_three_levels_of_the_most_tokens_fit_one_memory_guard() -> None:
    # Catches: a MemoryGuard filled by the run itself, refusing every claim of the last level.
    minting = rs.Codec(rs.KeyRing(SECRET), mode="signed")
    measured = asyncio.run(measure_guard(MEMORY_URL, SYNC, "{}", minting, 0.001, rate_hint=1e9))
    assert [level.refused for level in measured.levels] == [0, 0, 0]
    assert rs.MemoryGuard().capacity >= len(CONCURRENCY) * (MAX_TOKENS + max(CONCURRENCY)) + 1


# --- the guards ----------------------------------------------------------------------


class AcceptingGuard:
    """Accepts every claim, a replay too."""

    def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        return True


class DownGuard:
    """Never answers."""

    def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        raise rs.GuardUnavailable("down")


@pytest.mark.parametrize(
    ("guard", "message"),
    [
        (AcceptingGuard(), "the AcceptingGuard accepted a replay: it does not guard"),
        (DownGuard(), "the DownGuard refused a fresh token (guard_unavailable)"),
    ],
)
@pytest.mark.parametrize("path", [SYNC, ASYNC])
def test_a_guard_that_does_not_guard_is_not_measured(
    guard: rs.Guard, message: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Catches: a guard's rate measured on accepted replays, or on refusals.
    monkeypatch.setattr(bench_guards_module, "guard_from_url", lambda url, *, asyncio, namespace: guard)
    minting = rs.Codec(rs.KeyRing(SECRET), mode="signed")
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):
        asyncio.run(measure_guard(MEMORY_URL, path, "{}", minting, 0.01, rate_hint=100.0))


def test_an_unknown_guard_exits_2_naming_the_guards(capsys: pytest.CaptureFixture[str]) -> None:
    # Catches: a typo in a scheme measured as something else, or a traceback.
    assert bench_run("--guard", "mongodb://:pw@db:27017") == (2, "")
    assert capsys.readouterr().err == (
        "error: --guard mongodb://db:27017: REQUESTSTATE_GUARD must be memory, redis://host:port/db, "
        "rediss://host:port/db, redis+cluster://host:port, rediss+cluster://host:port, "
        "sqlite:////absolute/path.db, or postgresql://user@host:port/dbname: its scheme is none of these\n"
    )


def test_a_guard_url_gives_a_sync_or_asyncio_guard_on_its_namespace(server: Server) -> None:
    # Catches: asyncio=True ignored, ?namespace= dropped (the guard would claim in the servers' own
    # namespace) or passed on to redis-py (which refuses it).
    sync_guard = guard_from_url(f"{server.url}?namespace=theirs", namespace="bench-test")
    async_guard = guard_from_url(server.url, asyncio=True, namespace="bench-test")
    assert (type(sync_guard).__name__, type(async_guard).__name__) == ("RedisGuard", "AsyncRedisGuard")
    assert repr(sync_guard) == "RedisGuard(namespace='bench-test')"
    assert type(guard_from_url(MEMORY_URL, asyncio=True)) is rs.MemoryGuard


# A claim's wait for Redis (?timeout=) in the tests that count refused claims: at 64 threads on a
# loaded machine a claim waits its turn for the interpreter past the default 0.25 s, and is refused
# for the load (issue 43). A claim a guard refuses for a bug is refused at once, at any timeout.
PATIENT = "?timeout=10"


def test_redis_is_measured_on_both_paths_and_leaves_no_key(server: Server) -> None:
    # Catches: the guard built but not given to the codec (no claim reaches Redis), an async
    # path that claims through the sync guard, and the run's claims and markers left in Redis.
    server.execute("SET", "the-users-own", "1")
    calls_before = evalsha_calls(server)
    document = bench_json("--mode", "signed", "--guard", server.url + PATIENT)
    rows = [(guard["guard"], guard["class"], guard["path"]) for guard in document["guards"]]
    assert rows == [(server.url, "RedisGuard", SYNC), (server.url, "AsyncRedisGuard", ASYNC)]
    claims = sum(level["claims"] for guard in document["guards"] for level in guard["levels"])
    assert all(level["refused"] == 0 for guard in document["guards"] for level in guard["levels"])
    assert evalsha_calls(server) - calls_before >= claims
    assert document["bounds"][0]["guard"] == server.url
    assert server.execute("KEYS", "*") == [b"the-users-own"]


def test_sqlite_is_measured_on_both_paths_in_a_namespace_of_its_own(tmp_path: Path) -> None:
    # Catches: the file's namespace used by the run (a server's own), or an async path that claims
    # through the sync guard.
    path = tmp_path / "claims.db"
    url = f"sqlite:///{path}"
    document = bench_json("--mode", "signed", "--guard", url)
    rows = [(guard["guard"], guard["class"], guard["path"]) for guard in document["guards"]]
    assert rows == [(url, "SQLiteGuard", SYNC), (url, "AsyncSQLiteGuard", ASYNC)]
    assert all(level["refused"] == 0 for guard in document["guards"] for level in guard["levels"])
    with contextlib.closing(sqlite3.connect(path)) as reading:
        namespaces = {row[0] for row in reading.execute("SELECT namespace FROM requeststate_markers")}
    assert [name.startswith(NAMESPACE_PREFIX) for name in namespaces] == [True, True]


def test_a_redis_password_is_used_and_never_printed(own_server: Server) -> None:
    # Catches: the URL printed as given, with its password.
    own_server.execute("CONFIG", "SET", "requirepass", "hunter2-secret")
    url = f"redis://:hunter2-secret@127.0.0.1:{own_server.port}/0"
    code, out = bench_run("--json", "--mode", "signed", "--guard", url)
    assert code == 0
    assert json.loads(out)["guards"][0]["guard"] == own_server.url
    assert "hunter2" not in out


def test_a_wrong_redis_password_exits_2_without_printing_it(
    own_server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    own_server.execute("CONFIG", "SET", "requirepass", "the-right-one")
    code, out = bench_run("--guard", f"redis://:hunter2-wrong@127.0.0.1:{own_server.port}/0")
    error = capsys.readouterr().err
    assert (code, out) == (2, "")
    assert error.startswith(f"error: --guard {own_server.url}: ")
    assert "hunter2" not in error


def test_a_redis_lost_before_its_keys_are_deleted_is_named_on_stderr(
    own_server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Catches: a finished measurement lost to a traceback because the clean-up failed, or keys
    # left in the user's Redis without a word.
    real_delete = bench_guards_module._delete
    deletes: list[bool] = []

    async def lose_redis_before_the_last_delete(guard: object, namespace: str, *, warn: bool) -> None:
        deletes.append(warn)
        if len(deletes) == 2:  # the async path's, after the sync path's went through
            own_server.kill()
        await real_delete(guard, namespace, warn=warn)

    monkeypatch.setattr(bench_guards_module, "_delete", lose_redis_before_the_last_delete)
    code, out = bench_run("--json", "--mode", "signed", "--guard", own_server.url)
    assert code == 0
    assert [guard["path"] for guard in json.loads(out)["guards"]] == [SYNC, ASYNC]
    assert re.fullmatch(
        r"warning: the bench's keys under requeststate-bench-[0-9a-f]{16}:\* were not deleted "
        r"\(ConnectionError\)\n",
        capsys.readouterr().err,
    )


def test_an_unreachable_redis_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    # Catches: a traceback, or a run that measures on without the Redis it was asked for.
    url = f"redis://127.0.0.1:{redis_server.free_loopback_port()}/0"
    code, out = bench_run("--guard", url)
    error = capsys.readouterr().err
    assert (code, out) == (2, "")
    assert error.startswith(f"error: --guard {url}: ")
    assert "ConnectionError" in error
    assert error.count("\n") == 1


def test_a_cluster_is_measured_and_every_bucket_deleted() -> None:
    # Catches: redis+cluster:// read as a plain client on one node, and the markers of the
    # 1,024 buckets left on the masters.
    with redis_server.or_skip(redis_server.running_cluster(masters=3)) as cluster:
        url = cluster.url.replace("redis://", "redis+cluster://")
        document = bench_json("--mode", "encrypted", "--guard", url + PATIENT)
        assert [guard["class"] for guard in document["guards"]] == ["RedisGuard", "AsyncRedisGuard"]
        assert all(level["refused"] == 0 for guard in document["guards"] for level in guard["levels"])
        assert [master.execute("DBSIZE") for master in cluster.masters] == [0] * len(cluster.masters)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://user:pass@cache.internal:6380/2", "redis://cache.internal:6380/2"),
        ("rediss://:pass@[::1]:6379/0?password=again", "rediss://[::1]:6379/0"),
        ("sqlite:////var/lib/app/claims.db?namespace=app", "sqlite:////var/lib/app/claims.db"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://:pa@ss@cache:6379/0", "redis://cache:6379/0"),
        ("redis://:pa/ss@cache:6379/0", f"redis://{HIDDEN}"),
        ("redis://:pa?ss@cache:6379/0", f"redis://{HIDDEN}"),
        ("redis://:pa#ss@cache:6379/0", f"redis://{HIDDEN}"),
        ("memory", "memory"),
        ("  MEMORY ", "MEMORY"),
    ],
)
def test_a_shown_url_has_no_user_password_or_query(url: str, shown: str) -> None:
    # Catches: a password in the query string (redis-py reads one there) printed, or the part of a
    # password past an unencoded '/', '?' or '#' printed as the URL's path, query or fragment.
    assert shown_url(url) == shown


# Passwords that end a URL's authority early when not percent-encoded, or that look like its parts.
HOSTILE_PASSWORDS = [
    "Hunter2/Secret9",
    "Hunter2?Secret9",
    "Hunter2#Secret9",
    "Hunter2@Secret9",
    "Hunter2:Secret9",
    "Hunter2%Secret9",
    "Hunter2 Secret9",
    "Hunter2/?#@: %Secret9",
]


def _password_pieces(password: str) -> list[str]:
    # The password, and each run of letters and digits in it: a leak of any piece is a leak.
    return [password, *re.findall(r"[A-Za-z0-9]{4,}", password)]


def no_mcp_rounds(state: str, codec: rs.Codec) -> dict[str, Any]:
    raise ImportError("not measured here: this test concerns what a guard URL prints")


@pytest.mark.parametrize("encoded", [False, True], ids=["as-typed", "percent-encoded"])
@pytest.mark.parametrize("password", HOSTILE_PASSWORDS)
def test_no_byte_of_a_password_is_printed_whatever_it_holds(
    password: str,
    encoded: bool,
    server: Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Issue 41 E: a password holding '/', '?' or '#' was printed, unencoded (6 of 32 URLs).
    # Catches: any piece of the password in the report, the JSON, an error, or a warning, whether
    # the server accepts the URL (the run measures) or not (it exits 2).
    user = f"bench-{uuid.uuid4().hex[:8]}"  # a user of its own: the module's server stays open
    server.execute("ACL", "SETUSER", user, "on", f">{password}", "~*", "&*", "+@all")
    # Seconds less: no MCP rounds, one level of claims (what is printed does not depend on them).
    monkeypatch.setattr(bench_measure_module, "boundary_rounds", no_mcp_rounds)
    one_level = functools.partial(measure_guard, concurrency=(1,))
    monkeypatch.setattr(bench_measure_module, "measure_guard", one_level)
    written = urllib.parse.quote(password, safe="") if encoded else password
    # A 2 s timeout: a loaded machine's slow claim is not what this test is about.
    url = f"redis://{user}:{written}@127.0.0.1:{server.port}/0?timeout=2"
    code, out = bench_run("--json", "--mode", "signed", "--guard", url)
    printed = out + capsys.readouterr().err
    for piece in _password_pieces(password):
        assert piece not in printed
        assert urllib.parse.quote(piece, safe="") not in printed
    if encoded or code == 0:  # unencoded, '@', ':', '%' and ' ' still read as a password
        assert code == 0
        assert json.loads(out)["guards"][0]["guard"] == server.url
    else:
        assert (code, out) == (2, "")


class CloseRaisingGuard:
    """A MemoryGuard but for its close, which raises as AsyncRedisGuard.aclose() did on a killed server."""

    def __init__(self) -> None:
        self._memory = rs.MemoryGuard()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)  # claim, begin, and what a Codec tells its guard

    def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        return self._memory.claim(claimed, expires_at, now)

    async def aclose(self) -> None:
        raise ConnectionError("Connection closed by server.")


def test_a_guard_whose_close_raises_loses_no_measurement(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 43: a finished measurement lost to a traceback when closing the guard raised.
    # Catches: close() unguarded, or its failure hidden without a word.
    monkeypatch.setattr(
        bench_guards_module, "guard_from_url", lambda url, *, asyncio, namespace: CloseRaisingGuard()
    )
    document = bench_json("--mode", "signed")
    assert [guard["path"] for guard in document["guards"]] == [SYNC, ASYNC]
    assert capsys.readouterr().err == "warning: the CloseRaisingGuard did not close (ConnectionError)\n" * 2


@pytest.mark.parametrize(
    ("url", "driver", "integration", "extra"),
    [
        ("redis://127.0.0.1:6379/0", "redis", "requeststate.redis", "pip install 'requeststate[redis]'"),
        (
            "postgresql://127.0.0.1/db",
            "psycopg",
            "requeststate.postgres",
            "pip install 'requeststate[postgres]'",
        ),
    ],
)
def test_a_store_without_its_extra_exits_2_naming_that_extra(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    url: str,
    driver: str,
    integration: str,
    extra: str,
) -> None:
    # Catches: an ImportError's traceback where the fix is one pip install, and a PostgreSQL guard
    # told to install the redis extra (one message once served every store).
    monkeypatch.setitem(sys.modules, driver, None)  # the driver is not installed
    monkeypatch.delitem(sys.modules, integration, raising=False)  # so it is imported afresh
    code, out = bench_run("--guard", url)
    assert (code, out) == (2, "")
    err = capsys.readouterr().err
    assert err.startswith(f"error: --guard {url}: {integration} needs the ")
    assert extra in err


# --- options that cannot be used -----------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--state-bytes", "10"], "--state-bytes must be from 11 to 131072, not 10"),
        (["--state-bytes", "140000"], "--state-bytes must be from 11 to 131072, not 140000"),
        (
            ["--mode", "signed", "--state-bytes", "120000"],
            "a 120000-byte state cannot be minted in signed: "
            "the token would be 160257 bytes, over max_token_bytes=131072",
        ),
        (["--keys", "0"], "--keys must be 1 or more, not 0"),
        (["--keys", "9"], "--keys 9: KeyRing holds at most 8 secrets, got 9"),
        (["--seconds", "0"], "--seconds must be more than 0 and at most 120, not 0"),
        (["--seconds", "121"], "--seconds must be more than 0 and at most 120, not 121"),
        (["--seconds", "nan"], "--seconds must be more than 0 and at most 120, not nan"),
        (
            ["--mode", "signed,rot13"],
            "--mode: unknown mode 'rot13'; the modes are signed, encrypted, xchacha",
        ),
    ],
)
def test_an_option_that_cannot_be_used_exits_2_with_the_reason(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Catches: a bad value measured anyway (or crashing), a message that does not name the option.
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    out = io.StringIO()
    code = bench.run(parser.parse_args(argv), out)
    error = capsys.readouterr().err
    assert (code, out.getvalue(), error) == (2, "", f"error: {message}\n")


def test_an_unreadable_state_file_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Catches: a traceback for a typo in a path, or a directory read as a state.
    missing = tmp_path / "missing.json"
    assert bench_run("--state-file", str(missing)) == (2, "")
    assert capsys.readouterr().err == f"error: --state-file {missing}: No such file or directory\n"
    assert bench_run("--state-file", str(tmp_path)) == (2, "")
    assert capsys.readouterr().err == f"error: --state-file {tmp_path}: Is a directory\n"


def test_a_state_file_that_is_not_utf8_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Catches: bytes decoded some other way, and measured as a state the server never sees.
    latin = tmp_path / "latin1.txt"
    latin.write_bytes('{"name":"José"}'.encode("latin-1"))
    assert bench_run("--state-file", str(latin)) == (2, "")
    assert (
        capsys.readouterr().err
        == f"error: --state-file {latin}: not UTF-8 text (invalid continuation byte at byte 12)\n"
    )


def test_a_state_size_and_a_state_file_together_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    # Catches: one of the two silently ignored.
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["--state-bytes", "64", "--state-file", "state.json"])
    assert exited.value.code == 2
    assert "argument --state-file: not allowed with argument --state-bytes" in capsys.readouterr().err


# --- the timing ----------------------------------------------------------------------


class FakeClock:
    """Nanoseconds that pass only when a fake batch says its calls took them."""

    def __init__(self) -> None:
        self.ns = 0

    def read(self) -> int:
        return self.ns

    def batch(self, ns_per_call: int) -> Batch:
        def run(calls: int) -> int:
            self.ns += calls * ns_per_call
            return calls * ns_per_call

        return run


def test_rounds_stop_before_the_budget_would_be_passed() -> None:
    # Catches: a budget ignored (rounds until some count), or one round too many past it.
    clock = FakeClock()
    timings = measure({"a": clock.batch(1_000), "b": clock.batch(3_000)}, seconds=1.0, clock=clock.read)
    rounds = timings["a"].samples
    assert timings["b"].samples == rounds
    assert rounds > MIN_ROUNDS
    last_round_ns = timings["a"].calls * 1_000 + timings["b"].calls * 3_000
    assert clock.ns <= 1_000_000_000 < clock.ns + last_round_ns
    assert (timings["a"].median_us, timings["b"].median_us) == (1.0, 3.0)


def test_a_budget_too_small_still_measures_the_minimum_rounds() -> None:
    # Catches: a median of one sample (or none) when the budget ran out in calibration.
    clock = FakeClock()
    timings = measure({"a": clock.batch(1_000)}, seconds=1e-6, clock=clock.read)
    assert timings["a"].samples == MIN_ROUNDS
