"""``requeststate bench`` (requeststate/bench): what it reports, never how fast anything is.

Every run here takes a tiny budget (``--seconds 0.3``): the numbers are noise, and
no test compares them with a threshold; the tests check what is measured (the
modes, the state, the ring, the guards), that the words agree with the numbers,
and that every option that cannot be used exits 2 with its reason.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import requeststate as rs
from requeststate import bench
from requeststate.bench import _run as bench_run_module
from requeststate.bench._measure import (
    MEMORY_GUARD,
    NO_GUARD,
    REDIS_GUARD,
    SUBJECT,
    TOOL,
    FreshDecodes,
    GuardResult,
    ModeResult,
    RenewedMemoryGuard,
    Results,
    measure_all,
)
from requeststate.bench._options import MIN_STATE_BYTES, ConfigError, Settings, generated_state
from requeststate.bench._redis import NEEDS_EXTRA, claim_keys, shown_url
from requeststate.bench._report import reading, text
from requeststate.bench._timing import MIN_ROUNDS, Batch, Timing, measure
from requeststate.redis import CLUSTER_BUCKETS, claim_location

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


def evalsha_calls(server: Server) -> int:
    stats: dict[str, dict[str, int]] = server.execute("INFO", "commandstats")
    return stats.get("cmdstat_evalsha", {}).get("calls", 0)


# --- the package ---------------------------------------------------------------------


def test_the_package_offers_the_command_line_add_arguments_and_run_only() -> None:
    # Catches: internals exported, or a function the CLI calls renamed.
    assert bench.__all__ == ["add_arguments", "run"]


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
    """The bench section's ``--json`` table: the fields, and the members of ``modes`` and ``guards``."""
    section = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").partition("## bench")[2]
    table = section.partition("### `--json`")[2]
    fields, members = [], {}
    for row in re.finditer(r"^\| `(\w+)` \| (.*) \|$", table, re.MULTILINE):
        fields.append(row[1])
        if row[1] in ("modes", "guards"):
            # The members are the backticked names before each comma, or before a parenthesis.
            members[row[1]] = re.findall(r"`(\w+)`(?= \(|,|$)", row[2].partition(": ")[2])
    return fields, members


def test_json_has_the_documented_fields_for_the_modes_and_the_state_size_asked() -> None:
    # Catches: a field missing or undocumented, modes measured other than asked (or reordered),
    # the size ignored, rounds/s computed from anything but the round.
    code, out = bench_run("--json", "--mode", "xchacha,signed", "--state-bytes", "300")
    assert code == 0
    assert out.isascii()
    assert out.count("\n") == 1
    document = json.loads(out)
    fields, members = _documented_json()
    assert list(document) == fields
    assert [mode["mode"] for mode in document["modes"]] == ["xchacha", "signed"]
    assert document["guard_mode"] == "xchacha"
    assert [guard["guard"] for guard in document["guards"]] == [NO_GUARD, MEMORY_GUARD]
    assert (document["state_bytes"], document["state_file"], document["keys"]) == (300, None, 1)
    assert (document["redis"], document["cluster"], document["seconds"]) == (None, False, 0.3)
    assert document["rounds"] >= MIN_ROUNDS
    for mode in document["modes"]:
        assert list(mode) == members["modes"]
        # round_us is printed to 0.001 µs: rounds/s agrees with it to 1 in 10,000.
        assert mode["rounds_per_second"] == pytest.approx(1e6 / mode["round_us"], rel=1e-4)
    for guard in document["guards"]:
        assert list(guard) == members["guards"]
        assert guard["refused"] == 0
    assert document["guards"][0]["added_us"] == 0


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
    real_codec = rs.Codec

    def recording_codec(keys: rs.KeyRing, /, **options: Any) -> rs.Codec:
        rings.append(len(keys))
        return real_codec(keys, **options)

    monkeypatch.setattr(rs, "Codec", recording_codec)
    document = bench_json("--keys", "3", "--mode", "encrypted")
    assert document["keys"] == 3
    assert len(rings) >= 2  # the mode's codec, and the MemoryGuard's
    assert rings == [3] * len(rings)


def test_the_default_run_finishes_with_every_mode_and_the_memory_guard() -> None:
    # Catches: a default that measures less than documented, or a run that does not finish.
    code, out = bench_run()
    assert code == 0
    lines = out.splitlines()
    assert lines[0].endswith(": a 64-byte state (generated), a ring of 1 key")
    first_words = [line.partition(" ")[0] for line in lines]
    for row in ["signed", "encrypted", "xchacha", NO_GUARD, MEMORY_GUARD]:
        assert first_words.count(row) == 1, row
    assert lines[-1].startswith("reading: signed costs ")


def test_the_default_budget_is_5_seconds() -> None:
    # Catches: a default budget that would take the run past its promise (well under 30 s).
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    assert parser.parse_args([]).seconds == 5.0


# --- the reading ---------------------------------------------------------------------

_ROW = re.compile(
    r"^(?P<mode>signed|encrypted|xchacha) +[\d,]+ B +[\d.]+ µs +[\d.]+ µs +(?P<round>[\d.]+) µs "
)
_COMPARISON = re.compile(r"^reading: (?P<first>\w+) costs (?P<what>.+?) here(;|$)")


def test_the_reading_names_both_modes_and_agrees_with_the_table() -> None:
    # Catches: the difference's sign inverted, taken from another column, or written in advance.
    code, out = bench_run("--mode", "encrypted,signed")
    assert code == 0
    rounds = {row["mode"]: float(row["round"]) for line in out.splitlines() if (row := _ROW.match(line))}
    assert list(rounds) == ["encrypted", "signed"]
    comparison = _COMPARISON.match(out.splitlines()[-1])
    assert comparison is not None
    assert comparison["first"] == "encrypted"
    difference = rounds["encrypted"] - rounds["signed"]
    if difference == 0:
        assert comparison["what"] == "the same a round as signed"
    else:
        direction = "more" if difference > 0 else "less"
        share = f"{abs(difference) / rounds['signed']:.0%}"
        assert comparison["what"] == f"{abs(difference):.2f} µs ({share}) a round {direction} than signed"


def _timing(median_us: float) -> Timing:
    return Timing(median_us=median_us, best_us=median_us, calls=1, samples=MIN_ROUNDS)


def _settings(modes: tuple[rs.Mode, ...], redis_url: str | None = None) -> Settings:
    return Settings(
        state=generated_state(64),
        state_file=None,
        modes=modes,
        keys=1,
        redis_url=redis_url,
        cluster=redis_url is not None,
        seconds=1.0,
        as_json=False,
    )


def _results(
    rounds: dict[rs.Mode, float], memory_added_us: float, *, redis_url: str | None = None, refused: int = 0
) -> Results:
    modes = tuple(
        ModeResult(mode, 300, _timing(round_us / 2), _timing(round_us / 2), _timing(round_us))
        for mode, round_us in rounds.items()
    )
    guards = (
        GuardResult(NO_GUARD, _timing(4.0), 0.0, decodes=10, refused=0),
        GuardResult(
            MEMORY_GUARD, _timing(4.0 + memory_added_us), memory_added_us, decodes=10, refused=refused
        ),
    )
    return Results(_settings(tuple(rounds), redis_url), modes, guards, rounds=MIN_ROUNDS, seconds_taken=1.0)


@pytest.mark.parametrize(
    ("rounds", "memory_added_us", "expected"),
    [
        (
            {rs.Mode.ENCRYPTED: 8.0, rs.Mode.SIGNED: 7.6, rs.Mode.XCHACHA: 15.0},
            1.05,
            "encrypted costs 0.40 µs (5%) a round more than signed and 7.00 µs (47%) a round less than "
            "xchacha here; a MemoryGuard adds 1.05 µs a round",
        ),
        (
            {rs.Mode.SIGNED: 7.6, rs.Mode.ENCRYPTED: 8.0},
            0.5,
            "signed costs 0.40 µs (5%) a round less than encrypted here; a MemoryGuard adds 0.50 µs a round",
        ),
        (
            # Equal as printed (to 0.01 µs): the words say so, whatever the third decimal said.
            {rs.Mode.SIGNED: 7.604, rs.Mode.ENCRYPTED: 7.601},
            -0.02,
            "signed costs the same a round as encrypted here; a MemoryGuard adds nothing measurable",
        ),
        (
            {rs.Mode.SIGNED: 8.0},
            2.0,
            "one signed round costs 8.00 µs here, 125,000 rounds/s on one core; "
            "a MemoryGuard adds 2.00 µs a round",
        ),
    ],
)
def test_the_reading_says_more_less_or_the_same_as_the_medians_say(
    rounds: dict[rs.Mode, float], memory_added_us: float, expected: str
) -> None:
    # Catches: the sign inverted, the share taken of the wrong mode, noise reported as a
    # negative cost, a difference too small to print read as one.
    assert reading(_results(rounds, memory_added_us)) == expected


def test_the_report_names_the_redis_without_its_password_and_counts_refusals() -> None:
    # Catches: a password printed in the report, refused claims hidden inside a median.
    report = text(_results({rs.Mode.SIGNED: 8.0}, 1.0, redis_url="redis://:hunter2@cache:6379/0", refused=3))
    assert "hunter2" not in report
    assert "RedisGuard: a Redis Cluster at redis://cache:6379/0, " in report
    assert "MemoryGuard: 3 of 10 fresh tokens refused (claims that failed): its times include them" in report


# --- the guards ----------------------------------------------------------------------


class AcceptingGuard:
    """Accepts every claim, a replay too."""

    def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        return True


class DownGuard:
    """Never answers."""

    def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        raise rs.GuardUnavailable("down")


@pytest.mark.parametrize(
    ("guard", "message"),
    [
        (AcceptingGuard(), f"the {REDIS_GUARD} accepted a replay: it does not guard"),
        (DownGuard(), f"the {REDIS_GUARD} refused a fresh token (guard_unavailable)"),
    ],
)
def test_a_guard_that_does_not_guard_is_not_measured(guard: rs.Guard, message: str) -> None:
    # Catches: a guard's cost measured on accepted replays, or on refusals.
    with pytest.raises(ConfigError) as refused:
        measure_all(_settings((rs.Mode.SIGNED,)), guard)
    assert str(refused.value) == message


def test_a_memory_guard_is_renewed_before_a_batch_would_fill_it() -> None:
    # Catches: one guard for the whole run, full (and refusing every token) after its capacity.
    keys = rs.KeyRing(SECRET)
    minting = rs.Codec(keys, mode="signed")
    now = 2_000_000_000

    def mint() -> str:
        return minting.encode("{}", subject=SUBJECT, tool=TOOL, now=now)

    decodes = FreshDecodes(mint, RenewedMemoryGuard(keys, rs.Mode.SIGNED, capacity=10).codec_for, now)
    for _ in range(5):
        decodes(4)
    assert (decodes.decodes, decodes.refused) == (20, 0)


def test_redis_reports_what_its_guard_adds_and_leaves_no_key(server: Server) -> None:
    # Catches: the RedisGuard built but not given to the codec (no claim reaches Redis), and
    # the run's claims and markers left in the user's Redis.
    calls_before = evalsha_calls(server)
    document = bench_json("--mode", "signed", "--redis", server.url)
    assert [guard["guard"] for guard in document["guards"]] == [NO_GUARD, MEMORY_GUARD, "RedisGuard"]
    redis_row = document["guards"][2]
    assert redis_row["refused"] == 0
    assert isinstance(redis_row["added_us"], float)
    assert evalsha_calls(server) - calls_before >= redis_row["decodes"]
    assert (document["redis"], document["cluster"]) == (server.url, False)
    assert document["reading"].endswith("a RedisGuard adds nothing measurable") or re.search(
        r"; a RedisGuard adds [\d.]+ µs a round$", document["reading"]
    )
    assert server.execute("KEYS", "*") == []


def test_a_redis_password_is_used_and_never_printed(own_server: Server) -> None:
    # Catches: the URL printed as given, with its password.
    own_server.execute("CONFIG", "SET", "requirepass", "hunter2-secret")
    url = f"redis://:hunter2-secret@127.0.0.1:{own_server.port}/0"
    code, out = bench_run("--json", "--mode", "signed", "--redis", url)
    assert code == 0
    assert json.loads(out)["redis"] == own_server.url
    assert "hunter2" not in out


def test_a_wrong_redis_password_exits_2_without_printing_it(
    own_server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    own_server.execute("CONFIG", "SET", "requirepass", "the-right-one")
    code, out = bench_run("--redis", f"redis://:hunter2-wrong@127.0.0.1:{own_server.port}/0")
    error = capsys.readouterr().err
    assert (code, out) == (2, "")
    assert error.startswith(f"error: --redis {own_server.url}: ")
    assert "hunter2" not in error


def test_a_redis_that_may_evict_claims_exits_2_saying_so(
    own_server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    # Catches: a guard measured on a Redis that a server could not use.
    own_server.execute("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    code, out = bench_run("--redis", own_server.url)
    assert (code, out) == (2, "")
    assert "evict" in capsys.readouterr().err


def test_a_redis_lost_before_its_keys_are_deleted_is_named_on_stderr(
    own_server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Catches: a finished measurement lost to a traceback because the clean-up failed, or keys
    # left in the user's Redis without a word.
    def measure_then_lose_redis(settings: Settings, guard: rs.Guard | None, first_second: int) -> Results:
        results = measure_all(settings, guard, first_second)
        own_server.kill()
        return results

    monkeypatch.setattr(bench_run_module, "measure_all", measure_then_lose_redis)
    code, out = bench_run("--json", "--mode", "signed", "--redis", own_server.url)
    assert code == 0
    assert [guard["guard"] for guard in json.loads(out)["guards"]][-1] == REDIS_GUARD
    assert re.fullmatch(
        r"warning: the bench's keys under requeststate-bench-[0-9a-f]{16}:\* were not deleted "
        r"\(ConnectionError\)\n",
        capsys.readouterr().err,
    )


def test_an_unreachable_redis_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    # Catches: a traceback, or a run that measures on without the Redis it was asked for.
    url = f"redis://127.0.0.1:{redis_server.free_loopback_port()}/0"
    code, out = bench_run("--redis", url)
    error = capsys.readouterr().err
    assert (code, out) == (2, "")
    assert error.startswith(f"error: --redis {url}: ")
    assert "ConnectionError" in error
    assert error.count("\n") == 1


def test_a_cluster_is_measured_and_every_bucket_deleted() -> None:
    # Catches: --cluster ignored (a plain client on a cluster node), and the markers of the
    # 1,024 buckets left on the masters.
    with redis_server.or_skip(redis_server.running_cluster(masters=3)) as cluster:
        document = bench_json("--mode", "encrypted", "--redis", cluster.url, "--cluster")
        assert document["cluster"] is True
        assert document["guards"][2]["guard"] == "RedisGuard"
        assert document["guards"][2]["refused"] == 0
        assert [master.execute("DBSIZE") for master in cluster.masters] == [0] * len(cluster.masters)


@pytest.mark.parametrize("buckets", [1, CLUSTER_BUCKETS])
def test_claim_keys_are_every_bucket_a_claim_can_land_in(buckets: int) -> None:
    # Catches: the enumeration stopping before the last bucket (its claims never deleted).
    namespace = f"test-{uuid.uuid4().hex}"
    keys = claim_keys(namespace, buckets)
    assert len(keys) == buckets
    assert all(claim_location(namespace, uuid.uuid4().hex, buckets).key in keys for _ in range(2000))


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://user:pass@cache.internal:6380/2", "redis://cache.internal:6380/2"),
        ("rediss://:pass@[::1]:6379/0?password=again", "rediss://[::1]:6379/0"),
        ("unix:///run/redis.sock?password=pass&db=1", "unix:///run/redis.sock"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
    ],
)
def test_a_shown_url_has_no_user_password_or_query(url: str, shown: str) -> None:
    # Catches: a password in the query string (redis-py reads one there) printed.
    assert shown_url(url) == shown


def test_redis_without_the_extra_exits_2_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Catches: an ImportError's traceback where the fix is one pip install.
    monkeypatch.setitem(sys.modules, "requeststate.redis", None)
    code, out = bench_run("--redis", "redis://127.0.0.1:6379/0")
    assert (code, out) == (2, "")
    assert capsys.readouterr().err == f"error: {NEEDS_EXTRA}\n"


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
        (["--cluster"], "--cluster needs --redis URL, the address of a node of the cluster"),
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
