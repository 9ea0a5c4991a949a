"""SQLiteGuard and AsyncSQLiteGuard: single use across a host's processes, through each loss of a file."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import requeststate as rs
from requeststate import sqlite as sqlite_guards
from requeststate.sqlite import AsyncSQLiteGuard, SQLiteGuard

NOW = 2_000_000_000
EXPIRES = NOW + 300


def dated(at: int = NOW) -> rs.ClaimId:
    """A claim id as a codec makes it: minted at ``at``."""
    return rs.ClaimId(secrets.token_hex(16), at)


def guard_on(path: Path, **options: object) -> SQLiteGuard:
    """A guard on ``path`` whose file's memory began well before NOW (its clock reads 0)."""
    guard = SQLiteGuard(path, clock=lambda: 0, **options)  # type: ignore[arg-type]
    guard.begin(NOW - 60)
    return guard


def outcome(guard: SQLiteGuard, token_id: rs.ClaimId, now: int = NOW) -> bool | str:
    try:
        return guard.claim(token_id, EXPIRES, now)
    except rs.GuardUnavailable as refused:
        return f"unavailable: {refused}"
    except rs.InvalidToken as refused:
        return f"refused: {refused.reason}"


LOST = "refused: outside_memory"
"""A token the file's memory cannot be shown to postdate: a refusal, not an outage."""


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
    assert [
        SQLiteGuard(tmp_path / "claims.db", clock=lambda: 0).begin(NOW),
        SQLiteGuard(tmp_path / "other.db", clock=lambda: 0, clock_skew=5).begin(NOW),
    ] == [NOW + 1, NOW + 6]


def test_clock_skew_defaults_to_none_as_one_host_reads_one_clock(tmp_path: Path) -> None:
    assert SQLiteGuard(tmp_path / "claims.db").clock_skew == sqlite_guards.DEFAULT_CLOCK_SKEW == 0


def test_begin_on_a_file_in_use_returns_when_its_memory_began(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    SQLiteGuard(path, clock=lambda: 0).begin(NOW - 100)
    assert SQLiteGuard(path, clock=lambda: 0).begin(NOW) == NOW - 100 + 1


def test_a_token_minted_before_a_new_file_began_is_refused(tmp_path: Path) -> None:
    guard = SQLiteGuard(tmp_path / "claims.db", clock=lambda: 0)
    assert outcome(guard, dated(NOW - 1)) == LOST


def test_a_new_memory_is_dated_by_the_clock_read_inside_the_claim(tmp_path: Path) -> None:
    # A verifier paused after reading its clock (now = NOW - 100) is the first to claim on a new
    # file: the memory began at NOW (the clock inside), not at its stale now, so a token minted at
    # NOW - 50 (redeemed, maybe, into the memory that was lost) is refused.
    path = tmp_path / "claims.db"
    paused = SQLiteGuard(path, clock=lambda: NOW)
    assert outcome(paused, dated(NOW - 100), now=NOW - 100) == LOST
    assert outcome(SQLiteGuard(path, clock=lambda: NOW), dated(NOW - 50), now=NOW + 1) == LOST


def test_a_marker_that_names_a_boot_is_a_loss_once(tmp_path: Path) -> None:
    # requeststate 0.4.0 named the host's boot in the marker: its last commits (synchronous=NORMAL)
    # may have been undone by a crash of the host, so a token minted before is refused, once.
    path = tmp_path / "claims.db"
    guard = guard_on(path)
    assert guard.claim(dated(), EXPIRES, NOW) is True
    with contextlib.closing(sqlite3.connect(path)) as writing, writing:
        writing.execute("UPDATE requeststate_markers SET memory = 'a-boot-id'")
    assert outcome(guard, dated(), now=NOW + 1) == LOST
    assert guard.claim(dated(NOW + 10), EXPIRES, NOW + 10) is True


def test_a_verifier_with_another_clock_skew_is_refused_naming_both(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    guard_on(path).claim(dated(), EXPIRES, NOW)  # a live claim keeps the namespace's terms
    other = SQLiteGuard(path, clock_skew=5)
    expected = (
        "the namespace's verifiers use clock_skew=0;leeway=0, this one clock_skew=5;leeway=0: every verifier "
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
        "unavailable: the namespace's verifiers use clock_skew=0;leeway=0, this one clock_skew=0;leeway=60"
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
    later = NOW + 10 + guard.clock_skew + 1
    # Pruned by the earlier of the verifier's clock and the host's: both read `later` here.
    SQLiteGuard(path, clock=lambda: later).claim(dated(later), later + 300, later)
    with contextlib.closing(sqlite3.connect(path)) as reading:
        assert reading.execute("SELECT expires FROM requeststate_claims").fetchall() == [(later + 300,)]


def test_an_answer_kept_is_deleted_with_its_claim_once_its_token_expired(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    guard = guard_on(path)
    token_id = dated()
    guard.redeem(token_id, NOW + 10, NOW, "book", NOW + 5)
    guard.keep(token_id, "book", "sealed-answer")
    later = NOW + 10 + guard.clock_skew + 1
    with contextlib.closing(sqlite3.connect(path)) as reading:
        kept = reading.execute("SELECT kept FROM requeststate_answers").fetchall()
        SQLiteGuard(path, clock=lambda: later).claim(dated(later), later + 300, later)
        assert (kept, reading.execute("SELECT kept FROM requeststate_answers").fetchall()) == (
            [("sealed-answer",)],
            [],
        )


def test_a_file_whose_tables_predate_exactly_once_gains_the_answers_table_and_keeps_its_claims(
    tmp_path: Path,
) -> None:
    # A file of requeststate 0.4.0 holds the markers and the claims, and no answers table.
    path = tmp_path / "claims.db"
    claimed = dated()
    guard_on(path).claim(claimed, EXPIRES, NOW)
    with contextlib.closing(sqlite3.connect(path)) as writing, writing:
        writing.execute("DROP TABLE requeststate_answers")
    upgraded = SQLiteGuard(path, clock=lambda: 0)  # a worker of this version, started on the file
    redeemed = dated()
    assert [
        upgraded.claim(claimed, EXPIRES, NOW),
        upgraded.redeem(redeemed, EXPIRES, NOW, "book", NOW + 60),
    ] == [
        False,
        None,
    ]
    upgraded.keep(redeemed, "book", "sealed-answer")
    assert upgraded.redeem(redeemed, EXPIRES, NOW, "book", NOW + 60) == "sealed-answer"


def test_a_claim_is_held_through_clock_skew_past_its_expiry(tmp_path: Path) -> None:
    guard = guard_on(tmp_path / "claims.db")
    token_id = dated()
    guard.claim(token_id, NOW + 10, NOW)
    guard.claim(dated(), NOW + 400, NOW + 10 + guard.clock_skew)  # prunes what expired before
    assert guard.claim(token_id, NOW + 10, NOW + 10) is False


def test_a_verifier_whose_clock_runs_ahead_of_the_hosts_prunes_by_the_hosts(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    guard = guard_on(path)
    token_id = dated()
    guard.claim(token_id, NOW + 10, NOW)
    ahead = NOW + 86_400  # its clock a day ahead; the host's reads NOW
    SQLiteGuard(path, clock=lambda: NOW).claim(dated(ahead), ahead + 300, ahead)
    assert SQLiteGuard(path, clock=lambda: NOW).claim(token_id, NOW + 10, NOW) is False


def test_a_relative_path_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^path must be absolute, not 'claims\.db': the workers"):
        SQLiteGuard("claims.db")


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"namespace": ""}, ValueError, "^namespace must not be empty$"),
        ({"namespace": 1}, TypeError, "^namespace must be a str, not int$"),
        ({"clock_skew": -1}, ValueError, "^clock_skew must be an int from 0 to 86400, got -1$"),
        (
            {"timeout": 0},
            ValueError,
            "^timeout must be a positive, finite number of seconds up to 60, got 0$",
        ),
        (
            {"timeout": 1e300},
            ValueError,
            "^timeout must be a positive, finite number of seconds up to 60, got 1e",
        ),
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

    def claim(self, claimed: rs.ClaimId, now: int = NOW) -> str:
        return self.ask(f"claim {claimed.token_id} {claimed.minted} {EXPIRES} {now}")

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


def redeemed_by(group: list[Worker], count: int) -> list[rs.ClaimId]:
    """``count`` tokens, each redeemed once through one of the workers in turn."""
    token_ids = [dated() for _ in range(count)]
    assert [group[index % len(group)].claim(token_id) for index, token_id in enumerate(token_ids)] == [
        "True"
    ] * count
    return token_ids


def replays(group: list[Worker], token_ids: list[rs.ClaimId], now: int = NOW + 1) -> set[str]:
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


# Issue 41, A: one file, one set of claims, whatever names it is opened under.


def test_a_file_with_a_second_name_refuses_every_claim_through_either(tmp_path: Path) -> None:
    # SQLite names its journal after the path: workers opening one file under two names (a hard
    # link) each kept their own write-ahead log and locks, and accepted every replay once each.
    path, other = tmp_path / "claims.db", tmp_path / "other.db"
    guard = guard_on(path)
    token_ids = [dated() for _ in range(10)]
    assert [guard.claim(token_id, EXPIRES, NOW) for token_id in token_ids] == [True] * 10
    os.link(path, other)
    through_other = SQLiteGuard(other, clock=lambda: 0)
    fresh_guard = SQLiteGuard(path, clock=lambda: 0)
    answers = {
        outcome(each, token_id, NOW + 1) for each in (fresh_guard, through_other) for token_id in token_ids
    }
    # The guard that claimed them refuses their replays from its own memory of the answers; a fresh
    # id through it reaches the file.
    answers.add(outcome(guard, dated(), NOW + 1))
    assert answers == {
        "unavailable: the SQLite file has 2 links (hard links): SQLite names its journal after the path, so "
        "workers opening it under two names could split; remove the other links"
    }
    other.unlink()
    assert {guard.claim(token_id, EXPIRES, NOW + 2) for token_id in token_ids} == {False}


def test_side_files_deleted_under_running_workers_split_nothing(tmp_path: Path) -> None:
    # In write-ahead-log mode, deleting -wal and -shm under running workers split them: the marker
    # was in the main file, the claims in the deleted log (40 of 120 replays accepted; 19 of 120
    # with -shm alone). Every claim is in the main file now: deleting its journal loses nothing.
    path = tmp_path / "claims.db"
    guard_on(path).close()  # a worker that stopped cleanly: the marker is in the main file
    with workers(path, 2) as group:
        token_ids = redeemed_by(group, 12)
        for side in tmp_path.glob("claims.db-*"):
            side.unlink()
        with workers(path, 1) as late:
            fresh = [dated(NOW + 10) for _ in range(12)]
            firsts = [
                [*late, group[0]][index % 2].claim(token_id, NOW + 10) for index, token_id in enumerate(fresh)
            ]
            assert firsts == ["True"] * 12
            assert replays(group + late, token_ids + fresh, now=NOW + 11) == {"False"}


def test_a_file_mounted_under_a_second_name_is_refused(tmp_path: Path) -> None:
    # A container given the file itself (`-v host/claims.db:/data/claims.db`) opens it under a name
    # whose journal the host's workers never see. Run in a mount namespace of its own.
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a bind mount needs root and unshare")
    path, mounted = tmp_path / "claims.db", tmp_path / "mounted.db"
    guard_on(path).close()
    mounted.touch()
    program = (
        "import sys\nfrom requeststate import GuardUnavailable\nfrom requeststate.sqlite import SQLiteGuard\n"
        "try:\n    SQLiteGuard(sys.argv[1]).begin()\n"
        "except GuardUnavailable as refused:\n    print(refused)\n"
    )
    script = 'mount --bind "$1" "$2" && exec "$3" -c "$4" "$2"'
    command = [
        "unshare",
        "--mount",
        "sh",
        "-c",
        script,
        "sh",
        str(path),
        str(mounted),
        sys.executable,
        program,
    ]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    if ran.returncode != 0 and "mount" in ran.stderr:
        pytest.skip(f"no bind mount here: {ran.stderr.strip()}")
    assert ran.stdout.strip() == (
        "the SQLite file is a mount point of its own (a file bind-mounted, as `-v host/claims.db:"
        "/data/claims.db` does): a worker that opens it under another name would miss the journal a crash "
        "left; mount the directory that holds it instead"
    )


def test_a_file_another_program_switched_to_a_write_ahead_log_is_refused_while_it_holds_it(
    tmp_path: Path,
) -> None:
    # A worker of requeststate 0.4.0 switches the file to a write-ahead log (whose side files can
    # split the workers) and keeps it open: claims are refused until it closes, then the file gets
    # its rollback journal back.
    path = tmp_path / "claims.db"
    guard = guard_on(path, timeout=0.25)
    assert guard.claim(dated(), EXPIRES, NOW) is True
    with contextlib.closing(sqlite3.connect(path)) as old_worker:
        assert old_worker.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
        assert old_worker.execute("SELECT count(*) FROM requeststate_claims").fetchone() == (1,)
        assert outcome(guard, dated()) == (
            "unavailable: the SQLite file is in write-ahead-log mode and another process keeps it open, "
            "as a worker of requeststate 0.4.0 does: stop it; a write-ahead log's side files can split "
            "the workers"
        )
    assert guard.claim(dated(), EXPIRES, NOW) is True
    with contextlib.closing(sqlite3.connect(path)) as reading:
        # A rollback journal again (a new connection reads "delete": "truncate" is each connection's own).
        assert reading.execute("PRAGMA journal_mode").fetchone() == ("delete",)


# Issue 41, B: only this process's user may write the file.


def test_a_new_file_and_its_journal_are_readable_by_their_owner_alone(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    previous = os.umask(0)  # SQLite alone would create it 0666 here (0644 under the usual umask)
    try:
        guard_on(path).close()
    finally:
        os.umask(previous)
    assert {side.name: side.stat().st_mode & 0o777 for side in tmp_path.iterdir()} == {
        "claims.db": 0o600,
        "claims.db-journal": 0o600,
    }


def test_a_link_to_no_file_is_refused_and_nothing_is_created_through_it(tmp_path: Path) -> None:
    path, target = tmp_path / "claims.db", tmp_path / "elsewhere.db"
    path.symlink_to(target)
    with pytest.raises(rs.GuardUnavailable, match=r"^the SQLite file's path is a symbolic link to no file: "):
        SQLiteGuard(path).begin(NOW)
    assert not target.exists()


def test_a_file_of_another_user_is_refused_at_begin_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whoever owns the file (another user who created it first, in a shared directory) can delete
    # claims. The guard runs here as another user than the file's owner.
    path = tmp_path / "claims.db"
    guard_on(path).close()
    owner = path.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)
    with pytest.raises(rs.GuardUnavailable) as refused:
        SQLiteGuard(path).begin(NOW)
    assert str(refused.value) == (
        f"the SQLite file is owned by uid {owner}, not by this process's user (uid {owner + 1}), and its "
        "owner could delete claims: chown it to this user, or delete it and let the guard create it"
    )


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666], ids=["0620", "0602", "0666"])
def test_a_file_writable_by_group_or_others_is_refused_until_it_is_chmod_600(
    tmp_path: Path, mode: int
) -> None:
    path = tmp_path / "claims.db"
    guard = guard_on(path)
    path.chmod(mode)
    assert outcome(guard, dated()) == (
        f"unavailable: the SQLite file is writable by group or others (mode {mode:o}), who could delete "
        "claims: chmod 600 it"
    )
    path.chmod(0o600)
    assert guard.claim(dated(), EXPIRES, NOW) is True


def test_a_read_lock_held_by_another_process_is_an_outage_within_the_timeout(tmp_path: Path) -> None:
    # Another process reading the file in a transaction that never ends: each claim gives up at
    # its timeout, as GuardUnavailable, and the claim is not recorded.
    path = tmp_path / "claims.db"
    guard = guard_on(path, timeout=0.5)
    holder = (
        "import sqlite3, sys\nreading = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "reading.execute('BEGIN')\nreading.execute('SELECT count(*) FROM requeststate_claims').fetchone()\n"
        "print('held', flush=True)\nsys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", holder, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as locking:
        assert locking.stdout is not None
        assert locking.stdin is not None
        assert locking.stdout.readline() == "held\n"
        token_id = dated()
        started = time.monotonic()
        answer = outcome(guard, token_id)
        waited = time.monotonic() - started
        locking.stdin.close()
        locking.wait(10)
    assert answer == (
        "unavailable: the SQLite file stayed locked by another connection past the timeout (0.5 s): a claim "
        "waits no longer"
    )
    assert 0.5 <= waited < 2.0
    assert guard.claim(token_id, EXPIRES, NOW) is True  # the refused claim was not recorded


# Issue 41, H: a verifier that began with the wrong terms no longer locks the right ones out.


def test_the_terms_of_a_namespace_with_no_live_claim_give_way_as_a_loss(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    SQLiteGuard(path, clock_skew=5, clock=lambda: 0).begin(NOW - 60)  # misconfigured, first
    right = SQLiteGuard(path, clock=lambda: NOW)
    assert right.begin(NOW) == NOW + 1  # a new memory: since is now
    assert outcome(right, dated(NOW), now=NOW + 1) == LOST
    fresh = dated(NOW + 10)
    assert [right.claim(fresh, EXPIRES, NOW + 10), right.claim(fresh, EXPIRES, NOW + 11)] == [True, False]
    # Now the namespace holds a live claim under the right terms: the misconfigured verifier is refused.
    misconfigured = SQLiteGuard(path, clock_skew=5, clock=lambda: NOW + 12)
    assert str(outcome(misconfigured, dated(NOW + 12), now=NOW + 12)).startswith(
        "unavailable: the namespace's verifiers use clock_skew=0;leeway=0, this one clock_skew=5;leeway=0"
    )


def test_a_live_claim_keeps_its_terms_until_it_expires(tmp_path: Path) -> None:
    path = tmp_path / "claims.db"
    host = [NOW - 60]  # the host's clock, which dates a memory and bounds pruning (what is live)
    wrong = SQLiteGuard(path, clock_skew=5, clock=lambda: host[0])
    wrong.begin(NOW - 60)
    host[0] = NOW
    assert wrong.claim(dated(), NOW + 100, NOW) is True
    right = SQLiteGuard(path, clock=lambda: host[0])
    with pytest.raises(rs.GuardUnavailable, match=r"^the namespace's verifiers use clock_skew=5;leeway=0, "):
        right.begin(NOW + 1)
    host[0] = NOW + 100
    with pytest.raises(rs.GuardUnavailable, match=r"^the namespace's verifiers use clock_skew=5;leeway=0, "):
        right.begin(NOW + 100)  # the claim is live through its expiry
    later = host[0] = NOW + 101
    assert right.begin(later) == later + 1
