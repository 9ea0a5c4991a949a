"""SQLiteGuard and AsyncSQLiteGuard: single use across a host's processes, through each loss of a file."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import requeststate as rs
from requeststate.sqlite import AsyncSQLiteGuard, SQLiteGuard

NOW = 2_000_000_000
EXPIRES = NOW + 300


def dated(at: int = NOW) -> str:
    """A claim id as a codec makes it: minted at ``at``."""
    return f"{at}-{secrets.token_hex(16)}"


def guard_on(path: Path, **options: object) -> SQLiteGuard:
    """A guard on ``path`` whose file's memory began well before NOW (its clock reads 0)."""
    guard = SQLiteGuard(path, clock=lambda: 0, **options)  # type: ignore[arg-type]
    guard.begin(NOW - 60)
    return guard


def outcome(guard: SQLiteGuard, token_id: str, now: int = NOW) -> bool | str:
    try:
        return guard.claim(token_id, EXPIRES, now)
    except rs.GuardUnavailable as refused:
        return f"unavailable: {refused}"


LOST = re.compile(
    r"unavailable: the token was minted at \d+, before the SQLite file's memory of the claims began"
)


def test_first_claim_wins_and_the_second_is_a_replay(tmp_path: Path) -> None:
    guard = guard_on(tmp_path / "claims.db")
    token_id = dated()
    assert [guard.claim(token_id, EXPIRES, NOW), guard.claim(token_id, EXPIRES, NOW + 1)] == [True, False]


def test_claims_survive_a_new_guard_on_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    token_id = dated()
    assert guard_on(path).claim(token_id, EXPIRES, NOW) is True
    assert SQLiteGuard(path).claim(token_id, EXPIRES, NOW) is False


def test_begin_on_a_new_file_returns_the_second_after_clock_skew(tmp_path: Path) -> None:
    assert SQLiteGuard(tmp_path / "claims.db", clock=lambda: 0).begin(NOW) == NOW + rs.DEFAULT_CLOCK_SKEW + 1


def test_begin_on_a_file_in_use_returns_when_its_memory_began(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    SQLiteGuard(path, clock=lambda: 0).begin(NOW - 100)
    assert SQLiteGuard(path, clock=lambda: 0).begin(NOW) == NOW - 100 + rs.DEFAULT_CLOCK_SKEW + 1


def test_a_token_minted_before_a_new_file_began_is_refused(tmp_path: Path) -> None:
    guard = SQLiteGuard(tmp_path / "claims.db", clock=lambda: 0)
    assert re.match(LOST, str(outcome(guard, dated(NOW - 1))))


def test_a_new_memory_is_dated_by_the_clock_read_inside_the_claim(tmp_path: Path) -> None:
    # A verifier paused after reading its clock (now = NOW - 100) is the first to claim on a new
    # file: the memory began at NOW (the clock inside), not at its stale now, so a token minted at
    # NOW - 50 (redeemed, maybe, into the memory that was lost) is refused.
    path = tmp_path / "claims.db"
    paused = SQLiteGuard(path, clock=lambda: NOW)
    assert re.match(LOST, str(outcome(paused, dated(NOW - 100), now=NOW - 100)))
    assert re.match(LOST, str(outcome(SQLiteGuard(path, clock=lambda: NOW), dated(NOW - 50), now=NOW + 1)))


def test_an_undated_id_is_refused(tmp_path: Path) -> None:
    assert outcome(guard_on(tmp_path / "claims.db"), secrets.token_hex(16)) == (
        "unavailable: the token id does not tell when it was minted (no iat): it cannot be shown to "
        "postdate the store's memory"
    )


def test_a_marker_that_names_a_boot_is_a_loss_once(tmp_path: Path) -> None:
    # requeststate 0.4.0 named the host's boot in the marker: its last commits (synchronous=NORMAL)
    # may have been undone by a crash of the host, so a token minted before is refused, once.
    path = tmp_path / "claims.db"
    guard = guard_on(path)
    assert guard.claim(dated(), EXPIRES, NOW) is True
    with contextlib.closing(sqlite3.connect(path)) as writing, writing:
        writing.execute("UPDATE requeststate_markers SET memory = 'a-boot-id'")
    assert re.match(LOST, str(outcome(guard, dated(), now=NOW + 1)))
    assert guard.claim(dated(NOW + 10), EXPIRES, NOW + 10) is True


def test_a_verifier_with_another_clock_skew_is_refused_naming_both(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    guard_on(path).claim(dated(), EXPIRES, NOW)  # a live claim keeps the namespace's terms
    other = SQLiteGuard(path, clock_skew=0)
    expected = (
        "the namespace's verifiers use clock_skew=5;leeway=0, this one clock_skew=0;leeway=0: every verifier "
        "of a namespace must use the same clock_skew and leeway (or another namespace), or a claim one "
        "prunes another would accept again"
    )
    assert outcome(other, dated()) == f"unavailable: {expected}"
    with pytest.raises(rs.GuardUnavailable, match=re.escape(expected)):
        other.begin(NOW)


def test_a_verifier_with_another_leeway_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    guard_on(path).claim(dated(), EXPIRES, NOW)
    other = SQLiteGuard(path)
    rs.Codec(secrets.token_bytes(32), guard=other, leeway=60)
    assert str(outcome(other, dated())).startswith(
        "unavailable: the namespace's verifiers use clock_skew=5;leeway=0, this one clock_skew=5;leeway=60"
    )


def test_namespaces_in_one_file_are_independent(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    token_id = dated()
    assert guard_on(path, namespace="a").claim(token_id, EXPIRES, NOW) is True
    assert guard_on(path, namespace="b").claim(token_id, EXPIRES, NOW) is True


def test_expired_claims_are_pruned(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    guard = guard_on(path)
    guard.claim(dated(), NOW + 10, NOW)
    later = NOW + 10 + rs.DEFAULT_CLOCK_SKEW + 1
    guard.claim(dated(later), later + 300, later)
    with contextlib.closing(sqlite3.connect(path)) as reading:
        assert reading.execute("SELECT expires FROM requeststate_claims").fetchall() == [(later + 300,)]


def test_a_claim_is_held_through_clock_skew_past_its_expiry(tmp_path: Path) -> None:
    guard = guard_on(tmp_path / "claims.db")
    token_id = dated()
    guard.claim(token_id, NOW + 10, NOW)
    guard.claim(dated(), NOW + 400, NOW + 10 + rs.DEFAULT_CLOCK_SKEW)  # prunes what expired before
    assert guard.claim(token_id, NOW + 10, NOW + 10) is False


def test_a_relative_path_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^path must be absolute, not 'claims\.db': the workers"):
        SQLiteGuard("claims.db")


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"namespace": ""}, ValueError, "^namespace must not be empty$"),
        ({"namespace": 1}, TypeError, "^namespace must be a str, not int$"),
        ({"clock_skew": -1}, ValueError, "^clock_skew must be an int from 0 to 86400, got -1$"),
        ({"timeout": 0}, ValueError, "^timeout must be a positive, finite number of seconds, got 0$"),
        ({"timeout": True}, TypeError, "^timeout must be a number of seconds, not bool$"),
        ({"clock": 3}, TypeError, "^clock must be a callable returning unix seconds$"),
    ],
)
def test_a_bad_option_is_refused_at_construction(
    tmp_path: Path, options: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        SQLiteGuard(tmp_path / "claims.db", **options)  # type: ignore[arg-type]


def test_repr_names_the_file_and_namespace(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    assert repr(SQLiteGuard(path, namespace="app")) == f"SQLiteGuard({str(path)!r}, namespace='app')"


def test_a_codec_with_the_guard_accepts_a_token_once(tmp_path: Path) -> None:
    codec = rs.Codec(secrets.token_bytes(32), guard=guard_on(tmp_path / "claims.db"))
    token = codec.encode("step 1", now=NOW)
    assert codec.verify(token, now=NOW + 1) == "step 1"
    with pytest.raises(rs.InvalidToken, match=r"^replayed$"):
        codec.verify(token, now=NOW + 2)


def test_racing_threads_claim_an_id_once(tmp_path: Path) -> None:
    guards = [guard_on(tmp_path / "claims.db") for _ in range(8)]
    token_id, results = dated(), []
    start = threading.Barrier(len(guards))

    def redeem(guard: SQLiteGuard) -> None:
        start.wait()
        results.append(guard.claim(token_id, EXPIRES, NOW))

    threads = [threading.Thread(target=redeem, args=(guard,)) for guard in guards]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * 7 + [True]


def test_async_guard_claims_once_off_the_loop(tmp_path: Path) -> None:
    async def run() -> list[bool]:
        guard = AsyncSQLiteGuard(tmp_path / "claims.db", clock=lambda: 0)
        await guard.begin(NOW - 60)
        token_id = dated()
        answers = await asyncio.gather(*(guard.claim(token_id, EXPIRES, NOW) for _ in range(5)))
        await guard.aclose()
        return sorted(answers)

    assert asyncio.run(run()) == [False] * 4 + [True]


class Worker:
    """A process with its own SQLiteGuard on the file (tests/support/sqlite_worker.py)."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.sqlite_worker", str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, line: str) -> str:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def claim(self, token_id: str, now: int = NOW) -> str:
        return self.ask(f"claim {token_id} {EXPIRES} {now}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


@contextmanager
def workers(path: Path, count: int) -> Iterator[list[Worker]]:
    started = [Worker(path) for _ in range(count)]
    try:
        started[0].ask(f"begin {NOW - 60}")  # on a used file, a marker already there: nothing
        yield started
    finally:
        for worker in started:
            worker.stop()


def redeemed_by(group: list[Worker], count: int) -> list[str]:
    """``count`` tokens, each redeemed once through one of the workers in turn."""
    token_ids = [dated() for _ in range(count)]
    assert [group[index % len(group)].claim(token_id) for index, token_id in enumerate(token_ids)] == [
        "True"
    ] * count
    return token_ids


def replays(group: list[Worker], token_ids: list[str], now: int = NOW + 1) -> set[str]:
    """What every worker answers to a replay of each token."""
    return {worker.claim(token_id, now) for worker in group for token_id in token_ids}


def test_processes_racing_claim_each_id_once(tmp_path: Path) -> None:
    with workers(tmp_path / "claims.db", 4) as group:
        token_ids = [dated() for _ in range(25)]
        answers: list[list[str]] = [[] for _ in group]

        def redeem_all(index: int) -> None:
            answers[index] = [group[index].claim(token_id) for token_id in token_ids]

        threads = [threading.Thread(target=redeem_all, args=(index,)) for index in range(len(group))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        per_token = [sorted(answer[index] for answer in answers) for index in range(len(token_ids))]
        assert per_token == [["False", "False", "False", "True"]] * len(token_ids)


def test_a_restart_of_every_worker_keeps_what_was_redeemed(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    with workers(path, 2) as group:
        token_ids = redeemed_by(group, 10)
    with workers(path, 2) as restarted:
        assert replays(restarted, token_ids) == {"False"}


def test_a_worker_killed_mid_claim_loses_no_claim(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    with workers(path, 2) as group:
        token_ids = redeemed_by(group, 20)
        group[0].process.send_signal(signal.SIGKILL)
        group[0].process.wait(10)
        assert replays(group[1:], token_ids) == {"False"}


@pytest.mark.parametrize("loss", ["deleted", "replaced", "truncated"])
def test_a_file_lost_under_four_running_workers_is_a_loss_each_worker_sees(tmp_path: Path, loss: str) -> None:
    path = tmp_path / "claims.db"
    with workers(path, 4) as group:
        token_ids = redeemed_by(group, 12)
        if loss == "deleted":
            path.unlink()
        elif loss == "replaced":
            new_file = tmp_path / "new.db"
            sqlite3.connect(new_file).close()
            os.replace(new_file, path)
        else:
            with contextlib.closing(sqlite3.connect(path)) as checkpointing:
                checkpointing.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            with path.open("r+b") as file:
                file.truncate(0)
        assert "True" not in replays(group, token_ids)
        # A worker started after the loss redeems a token minted after it: no worker accepts it again.
        with workers(path, 1) as (late,):
            fresh = dated(NOW + 100)
            assert late.claim(fresh, NOW + 100) == "True"
            assert replays(group, [fresh], now=NOW + 101) == {"False"}
