"""The benchmark harness, with tiny counts: output structure only, never a timed assertion.

Tooling tests, not the library's: ``python -m nox -s benchmarks`` (make matrix) runs them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import requeststate as rs
from benchmarks import __main__ as cli
from benchmarks import exactly_once, guard_claims, guard_cost, guards, mcp_rounds
from benchmarks.cases import codec_cases, make_state
from benchmarks.chart import write_chart
from benchmarks.importtime import parse_importtime
from benchmarks.mcp_rounds import round_cases
from benchmarks.multicore import measure_scaling
from benchmarks.peers import Peer, build_peer
from benchmarks.report import render, to_json
from benchmarks.run import Results, Settings, run
from benchmarks.targets import judge
from requeststate.bench import ASYNC, SYNC, signed_in
from requeststate.bench._timing import MIN_ROUNDS

TINY = Settings(
    quick=True,
    group_seconds=0.001,
    sample_seconds=0.0001,
    memory_calls=50,
    multicore_seconds=0.05,
    multicore_repeats=1,
    sizes=(64, 1024),
    peers=False,
    multicore=False,
    guard_redis=False,
    guard_seconds=0.001,
    guard_memory_ids=50,
    import_runs=1,
)


@pytest.fixture(scope="module")
def results() -> Results:
    return run(TINY)


def test_every_mode_is_measured_with_its_floor_and_refusals(results: Results) -> None:
    assert results.modes == [mode.value for mode in rs.Mode]
    for mode in results.modes:
        for size in TINY.sizes:
            for op in (
                "encode",
                "decode",
                "decode tampered",
                "decode wrong subject",
                "decode expired",
                "round",
            ):
                timing = results.timing(mode, op, size)
                assert timing is not None, (mode, op, size)
                assert 0 < timing.best_us <= timing.median_us
        assert results.timing(mode, "decode oversized", 64) is not None
        assert results.timing(mode, "decode oversized", 1024) is None
    assert results.timing("signed", "encode floor", 64) is not None
    assert results.timing("encrypted", "decode floor", 1024) is not None


def test_report_and_json_have_every_section(results: Results) -> None:
    targets = judge(results)
    assert {target.status for target in targets} <= {"PASS", "FAIL", "SKIP"}
    skipped = {target.name for target in targets if target.status == "SKIP"}
    assert "multi-core scaling" in skipped
    assert any("ahead of every peer" in name for name in skipped)
    document = json.loads(json.dumps(to_json(results, targets)))
    assert set(document) == {
        "schema",
        "seconds",
        "settings",
        "machine",
        "versions",
        "modes",
        "peers",
        "definitions",
        "timings",
        "memory",
        "scaling",
        "guards",
        "import_time",
        "targets",
    }
    assert document["peers"] == []
    assert document["scaling"] is None
    assert {"codec", "op", "size", "best_us", "median_us", "ops_per_s"} <= set(document["timings"][0])
    assert {"mode", "op", "calls", "growth_bytes", "peak_bytes"} <= set(document["memory"][0])
    assert {"seconds", "redis", "rows", "memory"} <= set(document["guards"])
    assert {"mode", "path", "guard", "best_us", "added_best_us", "unavailable"} <= set(
        document["guards"]["rows"][0]
    )
    assert document["guards"]["memory"]["ids"] == TINY.guard_memory_ids
    text = render(results, targets)
    for heading in (
        "against the floor",
        "Refused tokens",
        "Per round",
        "Memory",
        "Replay guard cost",
        "import requeststate",
        "Targets",
        "Definitions",
    ):
        assert heading in text


def test_refusal_cases_are_refusals() -> None:
    ring = rs.KeyRing(os.urandom(32))
    for mode in rs.Mode:
        cases = codec_cases(make_state(64), ring, mode, oversized=True)
        refusals = [
            name
            for name in cases
            if name.startswith("decode ") and name not in ("decode function", "decode floor")
        ]
        assert refusals == ["decode tampered", "decode wrong subject", "decode expired", "decode oversized"]
        assert [cases[name]() for name in refusals] == [None] * 4


def test_a_missing_peer_is_not_installed_rather_than_a_crash() -> None:
    def unreachable(state: str) -> Callable[[], object]:
        raise AssertionError("a missing peer is never built")

    assert build_peer(Peer("nothing", "no-such-distribution-xyz", unreachable), "{}") is None


def test_scaling_runs_worker_processes() -> None:
    scaling = measure_scaling(0.05, processes=1)
    assert scaling.processes == 1
    assert scaling.single_rounds_per_s > 0
    assert scaling.all_rounds_per_s > 0


def test_cli_writes_the_results(results: Results, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "run", lambda settings, progress: results)
    monkeypatch.setattr(cli, "write_chart", lambda results, path: False)
    assert cli.main(["--quick", "--out", str(tmp_path)]) == 0
    document = json.loads((tmp_path / "quick.json").read_text(encoding="utf-8"))
    assert document["settings"]["quick"] is True
    assert "### Targets" in (tmp_path / "quick.md").read_text(encoding="utf-8")
    failed = any(target["status"] == "FAIL" for target in document["targets"])
    assert cli.main(["--quick", "--strict", "--out", str(tmp_path)]) == int(failed)


def test_chart(results: Results, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    assert write_chart(results, tmp_path / "chart.png")
    assert (tmp_path / "chart.png").read_bytes().startswith(b"\x89PNG")


def _check_local_guard_rows(measured: guards.GuardResults, modes: tuple[rs.ModeName, ...]) -> None:
    for mode in modes:
        for guard in (guard_cost.NONE, guard_cost.MEMORY):
            row = measured.row(mode, guard_cost.SYNC, guard)
            assert row is not None, (mode, guard)
            assert row.unavailable is None
            assert row.best_us is not None
            assert row.median_us is not None
            assert 0 < row.best_us <= row.median_us
            assert row.samples >= MIN_ROUNDS
            assert row.refused == 0
        baseline = measured.row(mode, guard_cost.SYNC, guard_cost.NONE)
        assert baseline is not None
        assert baseline.added_best_us == 0.0


def test_guards_memory_guard_only(results: Results) -> None:
    measured = results.guards
    assert measured is not None
    _check_local_guard_rows(measured, guards.GUARD_MODES)
    assert measured.redis == "not measured (turned off)"
    for mode in guards.GUARD_MODES:
        for path, guard in ((guard_cost.SYNC, guard_cost.REDIS), (guard_cost.ASYNC, guard_cost.ASYNC_REDIS)):
            row = measured.row(mode, path, guard)
            assert row is not None
            assert row.unavailable is not None
            assert row.best_us is None
    assert measured.memory is not None
    assert measured.memory.ids == TINY.guard_memory_ids
    assert measured.memory.bytes_per_id > 0
    assert "not available" in render(results, judge(results))


def test_guards_without_a_redis_server_report_it_not_available(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    measured = guards.measure_guards(
        seconds=0.001, sample_seconds=0.0001, memory_ids=10, modes=("encrypted",)
    )
    assert measured.redis.startswith("not available: redis-server is not on PATH")
    _check_local_guard_rows(measured, ("encrypted",))
    assert all(row.unavailable == measured.redis for row in measured.rows if "Redis" in row.guard)


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs a redis-server on PATH")
def test_guards_on_a_loopback_redis() -> None:
    measured = guards.measure_guards(seconds=0.001, sample_seconds=0.0001, memory_ids=10, modes=("signed",))
    assert measured.redis.startswith("redis-server "), measured.redis
    _check_local_guard_rows(measured, ("signed",))
    for path, guard in (
        (guard_cost.SYNC, guard_cost.REDIS),
        (guard_cost.ASYNC, guard_cost.NONE),
        (guard_cost.ASYNC, guard_cost.ASYNC_REDIS),
    ):
        row = measured.row("signed", path, guard)
        assert row is not None, (path, guard)
        assert row.unavailable is None, (path, guard)
        assert row.best_us is not None
        assert row.best_us > 0
        assert row.samples >= MIN_ROUNDS
        assert row.refused == 0


@pytest.mark.skipif(
    shutil.which("redis-server") is None or shutil.which("redis-cli") is None,
    reason="needs redis-server and redis-cli on PATH",
)
def test_claims_on_every_redis_setup_are_the_packages_levels() -> None:
    # Catches: a setup measured with another harness than requeststate bench's, or a level missing.
    rows = guard_claims.measure_claims(0.01)
    assert [(row.setup, row.path, row.concurrency) for row in rows] == [
        (setup, path, concurrency)
        for setup in guard_claims.CLAIM_SETUPS
        for path in (SYNC, ASYNC)
        for concurrency in guard_claims.CLAIM_CONCURRENCY
    ]
    for row in rows:
        assert row.unavailable is None, row
        assert row.claims > 0
        assert row.per_second is not None
        assert row.p50_us is not None
        assert row.p99_us is not None
        assert 0 < row.p50_us <= row.p99_us


def test_claim_rows_of_a_setup_that_did_not_start_say_why(results: Results) -> None:
    results = dataclasses.replace(
        results,
        guards=guards.GuardResults(
            seconds=0.001,
            redis="not measured",
            claims=[guard_claims.ClaimRow(guard_claims.CLUSTER, SYNC, unavailable="no redis-cli")],
        ),
    )
    report = render(results, judge(results))
    (line,) = [line for line in report.splitlines() if "not available: no redis-cli" in line]
    assert [cell.strip() for cell in line.strip("|").split("|")] == [
        "cluster, 3 masters",
        "sync",
        "-",
        "-",
        "-",
        "-",
        "-",
        "not available: no redis-cli",
    ]


def test_floor_targets_are_issue_21s_limits_with_their_floor_named(results: Results) -> None:
    names = [t.name for t in judge(results) if t.name.startswith("Codec.") and "floor" in t.name]
    assert names == [
        "Codec.encode 64 B signed <= 1.4x floor (hmac.digest + base64url)",
        "Codec.decode 64 B signed <= 1.4x floor (base64url decode + hmac.digest + compare_digest)",
        "Codec.encode 64 B encrypted <= 2.0x floor (os.urandom(12) + AESGCM.encrypt + base64url)",
        "Codec.decode 64 B encrypted <= 2.0x floor (base64url decode + AESGCM.decrypt)",
    ]


def test_the_codec_target_divides_the_codec_by_the_function(results: Results) -> None:
    codec = results.timing("encrypted", "decode", 64)
    assert codec is not None
    slower = dataclasses.replace(codec, op="decode function", best_us=2 * codec.best_us)
    timings = [t for t in results.timings if (t.codec, t.op, t.size) != ("encrypted", "decode function", 64)]
    targets = judge(dataclasses.replace(results, timings=[*timings, slower]))
    (target,) = (t for t in targets if t.name.startswith("Codec.decode encrypted as fast or faster"))
    assert (target.status, target.detail) == ("PASS", "0.50x the function")


def test_import_time_is_reported_against_its_target(results: Results) -> None:
    took = results.import_time
    assert took is not None
    assert took.runs == 1
    assert 0 < took.best_ms == took.median_ms
    assert set(took.unwanted) <= {"asyncio", "nacl", "opentelemetry"}
    assert took.dependencies_ms > 0
    name = "import requeststate <= 50 ms (-X importtime, best of 1)"
    (target,) = (t for t in judge(results) if t.name == name)
    own = took.best_ms - took.dependencies_ms
    assert target.detail == (
        f"{took.best_ms:.1f} ms; its imports alone {took.dependencies_ms:.1f} ms, "
        f"requeststate's own code {own:.1f} ms"
    )
    assert "import requeststate loads none of asyncio, nacl, opentelemetry" in [
        t.name for t in judge(results)
    ]


def test_import_time_counts_only_what_requeststate_loads() -> None:
    # The interpreter's own start-up imports (site and what it nests) come first.
    stderr = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       100 |        100 |   _io\n"
        "import time:       200 |        300 | site\n"
        "import time:        50 |         50 |   msgspec\n"
        "import time:        70 |        120 | requeststate\n"
    )
    assert parse_importtime(stderr) == (0.12, ["msgspec", "requeststate"])


def test_import_time_reads_the_named_top_level_import() -> None:
    stderr = (
        "import time:        10 |        10 | benchmarks\n"
        "import time:        30 |        30 |   msgspec\n"
        "import time:        10 |        40 | benchmarks.import_floor\n"
    )
    assert parse_importtime(stderr, "benchmarks.import_floor") == (
        0.04,
        ["msgspec", "benchmarks.import_floor"],
    )


def test_each_boundary_round_hands_the_handler_the_state() -> None:
    cases = round_cases(os.urandom(32))
    assert sorted(cases) == sorted(
        [
            "SDK boundary",
            "protect()",
            'protect(bind="mcpd")',
            "use_codec()",
            "FastMCP's boundary",
            "protect(FastMCP)",
        ]
    )
    with signed_in():
        assert {case() for case in cases.values()} == {make_state(64)}


def test_the_mcp_report_compares_every_boundary_to_the_sdks(capsys: pytest.CaptureFixture[str]) -> None:
    assert mcp_rounds.main(["--seconds", "0.01"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8
    assert lines[6].strip().startswith("protect(FastMCP) is ")
    assert lines[0].strip().startswith("SDK boundary")
    assert lines[0].endswith("1.00x SDK boundary")
    assert lines[-1].strip().startswith("added bindings")


def test_exactly_once_times_each_case_beside_decode_on_each_guard(tmp_path: Path) -> None:
    results = exactly_once.run([f"sqlite:///{tmp_path / 'claims.db'}"], 0.05)
    rows = exactly_once.report(results).splitlines()
    assert (list(results), [list(cases) for cases in results.values()]) == (
        ["memory", "sqlite"],
        [list(exactly_once.CASES)] * 2,
    )
    assert [row.split()[:2] for row in rows[1:]] == [
        [guard, case] for guard in ("memory", "sqlite") for case in exactly_once.CASES
    ]
