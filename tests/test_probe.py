"""``requeststate probe`` against a gallery of broken servers, the project's secure ones (in process,
over stdio and streamable HTTP), a hostile server, and its pieces alone."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import importlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
import zlib
from collections.abc import Iterator
from functools import partial
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
    TextContent,
    Tool,
)

import requeststate as rs
from requeststate import probe
from requeststate.cli import main
from requeststate.probe import _decode as decode
from requeststate.probe import _edits as edits
from requeststate.probe import _guess as guess
from requeststate.probe import _mutations as mutations
from requeststate.probe import _placeholders as placeholders
from requeststate.probe import _readings as readings
from requeststate.probe import _spelling as spelling
from requeststate.probe import _tampering as tampering
from requeststate.probe._flaws import FLAWS
from tests.conftest import SECRET as CONFTEST_SECRET
from tests.support import probe_gallery as gallery
from tests.support import probe_schemes as schemes
from tests.support import probe_server, processes
from tests.support.memory_guard import memory_guard
from tests.support.probe_in_process import in_process

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = shutil.which("requeststate", path=str(Path(sys.executable).parent))
SECRET = base64.urlsafe_b64encode(CONFTEST_SECRET).rstrip(b"=").decode()
BOOKING = [sys.executable, str(ROOT / "examples" / "booking_server.py")]
INSECURE = [sys.executable, str(ROOT / "examples" / "insecure_server.py")]
HOSTILE = [sys.executable, "-m", "tests.support.probe_hostile"]
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
    """The results of a JSON report's rows on the first state it probed (the first round of the first
    tool, prompt or resource), by check id."""
    first = report["checks"][0]["scope"]
    return {check["id"]: check["result"] for check in report["checks"] if check["scope"] == first}


TAMPERING = [
    "bit_flip",
    "truncated",
    "extended",
    "tag_stripped",
    "tag_truncated",
    "prefix_swapped",
]
FORGERY = ["forged", "rehashed", "guessed_key", "alg_none"]


EVERY_ROUND = probe.ProbeOptions().max_rounds


def rows(report: probe.Report, scope: str | None = None) -> dict[str, probe.Check]:
    """The rows on one state probed, by check id: ``scope`` (``tool book_table, round 2``), by default
    the first (the first round of the first tool, prompt or resource)."""
    wanted = report.checks[0].scope if scope is None else scope
    return {check.id: check for check in report.checks if check.scope == wanted}


# --- the gallery: one broken server per failure mode, each caught on its own row ---------------------------

ACCEPTED = "accepted: the next round asks for party"
REFUSED = "refused: JSON-RPC -32602 Invalid or expired requestState"
EVERY_MEMBER_FORGED = (
    "3 of the 3 members edited went through: `restaurant`, `step`, `price` "
    "(e.g. `restaurant` changed ('x' appended), "
)
KEYLESS_WRAPPING = {
    "json": "JSON",
    "base64url(zlib(json))": "base64url(zlib(JSON))",
    "base64(json)": "base64url(JSON)",  # either alphabet spells this one state alike
    "base64url(gzip(json))": "base64url(gzip(JSON))",
    "hex(json)": "hex(JSON)",
    "hex(zlib(json))": "hex(zlib(JSON))",
}


@pytest.mark.parametrize("kind", sorted(schemes.KEYLESS))
def test_a_keyless_encoding_is_forged_and_every_member_named(kind: str) -> None:
    forged = rows(in_process(gallery.broken(kind)))["forged"]
    detail = f"{EVERY_MEMBER_FORGED}re-encoded as {KEYLESS_WRAPPING[kind]}: {ACCEPTED})"
    assert (forged.result, forged.detail) == ("FAIL", detail)


def test_a_compressed_state_is_neither_hidden_nor_safe_with_the_strict_options() -> None:
    # The issue's false PASS: base64url(zlib(json)) was "opaque" and nothing was "accepted".
    report = in_process(gallery.broken("base64url(zlib(json))"), single_use=True, require_confidential=True)
    confidential = rows(report)["confidential"]
    assert (report.exit_code, confidential.result, confidential.detail) == (
        1,
        "FAIL",
        "state readable by the client: base64url(zlib(JSON)), an object (keys: price, restaurant, step)",
    )


def test_an_unkeyed_hash_is_recomputed() -> None:
    found = rows(in_process(gallery.broken("unkeyed hash")))
    assert (found["rehashed"].result, found["rehashed"].detail) == (
        "FAIL",
        f"{EVERY_MEMBER_FORGED}re-encoded as base64url(JSON) + '.' + sha256 hex of the decoded bytes, "
        f"the hash recomputed: {ACCEPTED})",
    )


def test_an_edit_under_a_stale_unkeyed_hash_is_refused() -> None:
    # The hash row tells of the hash: an edit that leaves it stale is no forgery.
    forged = rows(in_process(gallery.broken("unkeyed hash")))["forged"]
    assert (forged.result, forged.detail) == (
        "PASS",
        f"{REFUSED} (every one of 3 edits, e.g. `restaurant` changed ('x' appended), re-encoded as "
        "part 1 of 2: base64url(JSON))",
    )


@pytest.mark.parametrize(
    ("kind", "hashed"),
    [
        (
            "v1. prefix over an unkeyed hash",
            "part 2 of 2: base64url(JSON) + '.' + sha256 base64 of the decoded bytes after the prefix",
        ),
        ("v1e. prefix over an unkeyed hash", "part 2 of 2: base64url(JSON + sha256 appended)"),
    ],
)
def test_an_unkeyed_hash_behind_our_prefix_is_recomputed(kind: str, hashed: str) -> None:
    # issue 22: a v1e.-looking token over a SHA-256 of readable JSON was exit 0 (rehashed SKIPped).
    rehashed = rows(in_process(gallery.broken(kind)))["rehashed"]
    assert (rehashed.result, rehashed.flaw, rehashed.detail) == (
        "FAIL",
        FLAWS["rehashed"],
        f"{EVERY_MEMBER_FORGED}re-encoded as {hashed}, the hash recomputed: {ACCEPTED})",
    )


@pytest.mark.parametrize(
    ("kind", "hashed"),
    [
        ("unkeyed hash before the state", "sha256 hex of the decoded bytes + '.' + base64url(JSON)"),
        (
            "v1e. prefix over an unkeyed hash before the state",
            "part 2 of 2: base64url(sha256 prepended + JSON)",
        ),
    ],
)
def test_an_unkeyed_hash_before_the_content_is_recomputed(kind: str, hashed: str) -> None:
    # issue 22 (audit): `hexdigest.body` and v1e.+base64(sha256 || JSON) were exit 0 (rehashed SKIPped).
    rehashed = rows(in_process(gallery.broken(kind)))["rehashed"]
    assert (rehashed.result, rehashed.detail) == (
        "FAIL",
        f"{EVERY_MEMBER_FORGED}re-encoded as {hashed}, the hash recomputed: {ACCEPTED})",
    )


def test_a_guessable_mac_key_is_found_and_proven_by_a_forgery() -> None:
    # issue 22: a correct HMAC under b"secret" FAILed only on repadded; the flaw itself was missed.
    guessed = rows(in_process(gallery.broken("guessable key")))["guessed_key"]
    assert (guessed.result, guessed.detail) == (
        "FAIL",
        "its HMAC-SHA256 of the text before the last '.' is made with the built-in list of common "
        "secrets, line 1: a state forged and signed with it (`restaurant` changed ('x' appended)) "
        f"was {ACCEPTED}",
    )


def test_a_correct_mac_under_a_guessable_key_refuses_tampering() -> None:
    found = rows(in_process(gallery.broken("guessable key")))
    assert {c: (found[c].result, found[c].detail) for c in ("bit_flip", "forged", "random")} == {
        "bit_flip": ("PASS", f"{REFUSED} (32 single-bit flips over its 79 bytes)"),
        "forged": (
            "PASS",
            f"{REFUSED} (every one of 3 edits, e.g. `restaurant` changed ('x' appended), re-encoded as "
            "part 1 of 2: base64url(JSON))",
        ),
        "random": ("PASS", REFUSED),
    }


def test_a_key_in_the_users_wordlist_is_found(tmp_path: Path) -> None:
    wordlist = tmp_path / "ours.txt"
    wordlist.write_bytes(b"not this one\r\nacme-staging-2024\n")
    server = gallery.under("acme", *schemes.guessable(b"acme-staging-2024"))
    guessed = rows(in_process(server, wordlists=(wordlist,)))["guessed_key"]
    # Where the secret is, never the secret.
    assert (guessed.result, guessed.detail) == (
        "FAIL",
        f"its HMAC-SHA256 of the text before the last '.' is made with --wordlist {wordlist}, line 2: "
        f"a state forged and signed with it (`restaurant` changed ('x' appended)) was {ACCEPTED}",
    )


def test_a_strong_key_is_not_guessed() -> None:
    found = rows(in_process(gallery.lenient()))
    assert found["guessed_key"].result == "PASS"
    assert re.fullmatch(r"no secret of \d+ tried makes its HMAC-SHA256 of .*", found["guessed_key"].detail)


def test_aes_ctr_without_a_mac_fails_bit_flips_with_the_region_accepted() -> None:
    # issue 22: 5 flipped base64 characters PASSed; a one-bit flip turned a fee of 25 into 15.
    # The nonce is random, the 32 bits flipped and the state are not: the same flips are accepted each time.
    found = rows(in_process(gallery.broken("aes-ctr without a mac")))
    assert (found["bit_flip"].result, found["bit_flip"].flaw, found["bit_flip"].detail) == (
        "FAIL",
        FLAWS["bit_flip"],
        f"13 of 32 single-bit flips were accepted, at bytes 18-60 of 63 (base64url) (the first: {ACCEPTED})",
    )


def test_a_state_under_aes_ctr_is_opaque_though_malleable() -> None:
    confidential = rows(in_process(gallery.broken("aes-ctr without a mac")))["confidential"]
    assert (confidential.result, confidential.detail) == (
        "PASS",
        "nothing readable in the token (opaque to the client)",
    )


def test_a_prefix_before_a_colon_is_read_past_for_bit_flips_and_confidentiality() -> None:
    # issue 22: `ctr:` made the token "plain text": bits flipped in its characters, a false confidential FAIL.
    report = in_process(gallery.broken("aes-ctr without a mac, behind ctr:"), require_confidential=True)
    found = rows(report)
    assert (
        report.state,
        found["bit_flip"].result,
        found["bit_flip"].detail,
        found["confidential"].result,
    ) == (
        "ctr: token, 2 parts, 88 characters",
        "FAIL",
        "13 of 32 single-bit flips were accepted, at bytes 18-60 of 63 (base64url) after 'ctr:' "
        f"(the first: {ACCEPTED})",
        "PASS",
    )


def test_a_mac_over_part_of_the_state_fails_naming_the_members_left_out() -> None:
    # issue 22: exit 0 when only the first string and the first number were edited, both covered.
    forged = rows(in_process(gallery.broken("mac over part of the state")))["forged"]
    assert (forged.result, forged.detail) == (
        "FAIL",
        "1 of the 4 members edited went through: `state.price` (e.g. `state.price` changed (number +1), "
        f"re-encoded as JSON: {ACCEPTED})",
    )


def test_the_one_member_left_out_of_a_mac_over_44_is_edited() -> None:
    # issue 22: 24 edits spread over 44 members left out the 43rd, the one uncovered: a PASS.
    forged = rows(in_process(gallery.broken("mac over part of a wide state")))["forged"]
    assert (forged.result, forged.detail) == (
        "FAIL",
        "1 of the 44 members edited went through: `state.price` (e.g. `state.price` changed (number +1), "
        f"re-encoded as JSON: {ACCEPTED})",
    )


def test_a_pass_over_a_sample_of_the_members_says_how_many_were_edited() -> None:
    seal, open_ = schemes.wide(100, price_covered=True)
    forged = rows(in_process(gallery.under("wide and covered", seal, open_)))["forged"]
    assert (forged.result, forged.detail) == (
        "PASS",
        f"{REFUSED} (every one of 64 edits, 64 of 104 members edited, e.g. `pad.m00` changed (number +1), "
        "re-encoded as JSON)",
    )


def test_a_sound_server_that_reads_base64_leniently_is_a_warn_saying_what_it_means() -> None:
    report = in_process(gallery.lenient())
    repadded = rows(report)["repadded"]
    # Before: only the first spelling that went through was named.
    assert (report.exit_code, repadded.result, repadded.detail) == (
        0,
        "WARN",
        "the token with '=' appended, with '==' appended, in the standard base64 alphabet (+/) and with an "
        f"unused bit of its last character set was {ACCEPTED}. The server decodes base64 leniently: its "
        "integrity is not at stake (the same bytes), but a replay guard or cache keyed on the token's text "
        "takes each such copy for a new token",
    )


def test_single_use_kept_by_the_tokens_text_fails_the_replay_row() -> None:
    server = gallery.under("single use by text", *schemes.single_use_by_text())
    found = rows(in_process(server, single_use=True))
    assert found["replay"].result == "FAIL"
    assert found["replay"].detail == (
        "the second redemption is refused, but a copy with '=' appended was accepted: the next round "
        "asks for party: the server keeps single use by the token's text, and decodes other spellings alike"
    )


def test_another_spelling_accepted_fails_when_the_state_has_no_integrity() -> None:
    repadded = rows(in_process(gallery.broken("guessable key")))["repadded"]
    # issue 22: it said "the state has no integrity at all" of a MAC under a guessable key.
    assert (repadded.result, repadded.detail) == (
        "FAIL",
        "the token with '=' appended, with '==' appended and with an unused bit of its last character set "
        f"was {ACCEPTED}, and the guessed_key row FAILed: guessable MAC key: anyone can sign a state with it",
    )


def test_every_fail_names_the_flaw_it_proves() -> None:
    for kind in ("json", "no argument binding", "jwt alg none", "mac optional, two parts"):
        for check in in_process(gallery.broken(kind)).checks:
            assert check.flaw == (FLAWS[check.id] if check.result == "FAIL" else ""), (kind, check)
            assert check.text().startswith(check.flaw)


def test_a_jwt_with_alg_none_is_forged() -> None:
    found = rows(in_process(gallery.broken("jwt alg none")))
    assert found["forged"].result == "FAIL"
    assert found["alg_none"].result == "FAIL"


def test_a_signed_jwt_that_accepts_alg_none_fails_only_the_alg_none_row() -> None:
    found = rows(in_process(gallery.broken("jwt accepting alg none")))
    assert {c: (found[c].result, found[c].detail) for c in ("alg_none", "forged", "guessed_key")} == {
        "alg_none": (
            "FAIL",
            f"{EVERY_MEMBER_FORGED}sent as JWT alg none, payload base64url(JSON) and no signature: "
            f"{ACCEPTED})",
        ),
        # The payload edited under the HS256 signature is refused.
        "forged": (
            "PASS",
            f"{REFUSED} (every one of 5 edits, e.g. `alg` changed ('x' appended), re-encoded as part 1 of 3: "
            "base64url(JSON))",
        ),
        # Its HS256 key is the gallery's random-looking one.
        "guessed_key": (
            "PASS",
            "no secret of 188 tried makes its HMAC-SHA256 of the text before the last '.'",
        ),
    }


@pytest.mark.parametrize("kind", ["mac optional, two parts", "mac optional, three parts"])
def test_a_mac_checked_as_a_prefix_fails_removed_and_truncated(kind: str) -> None:
    found = rows(in_process(gallery.broken(kind)))
    assert found["tag_stripped"].result == "FAIL"
    assert found["tag_truncated"].result == "FAIL"
    assert {found[c].result for c in ("bit_flip", "forged", "random")} == {"PASS"}


def test_a_state_not_bound_to_its_arguments_fails_the_arguments_row() -> None:
    found = rows(in_process(gallery.broken("no argument binding")))
    assert (found["arguments"].result, found["arguments"].detail) == (
        "FAIL",
        f"{ACCEPTED} (the state was minted for other arguments)",
    )
    assert {found[c].result for c in [*TAMPERING, "random", "repadded"]} == {"PASS"}


def test_a_state_not_bound_to_its_user_fails_the_other_user_row() -> None:
    second = probe.Target(server=gallery.broken("no user binding", user="mallory"))
    found = rows(in_process(gallery.broken("no user binding"), second=second))
    assert (found["other_user"].result, found["other_user"].detail, found["arguments"].result) == (
        "FAIL",
        f"a state minted for the first identity was {ACCEPTED} from the second",
        "PASS",
    )


def test_a_plaintext_state_is_forged_as_form_text() -> None:
    forged = rows(in_process(gallery.broken("plaintext echo")))["forged"]
    assert (forged.result, forged.detail) == (
        "FAIL",
        f"{EVERY_MEMBER_FORGED}re-encoded as form-encoded text: {ACCEPTED})",
    )


def test_a_plaintext_state_is_readable_and_an_info_without_require_confidential() -> None:
    confidential = rows(in_process(gallery.broken("plaintext echo")))["confidential"]
    assert (confidential.result, confidential.detail) == (
        "INFO",
        "state readable by the client: form-encoded text, an object (keys: price, restaurant, step) "
        "(--require-confidential makes this a FAIL)",
    )


# What a server whose SDK cannot send -32602 from a handler can do instead.
TOOL_ERROR = (
    "a tool error (isError), not -32602 (where the server's SDK makes every error a handler raises "
    "a tool error, as the TypeScript SDK's McpServer does, the handler can re-elicit instead, asking "
    "again as if no state came: that PASSes)"
)


def test_a_crash_on_a_bad_state_fails_the_random_row_and_passes_nothing() -> None:
    found = rows(in_process(gallery.crashing()))
    assert {
        c: (found[c].result, found[c].detail) for c in ("random", "bit_flip", "truncated", "repadded")
    } == {
        "random": (
            "FAIL",
            f"a random state reached the handler ({TOOL_ERROR}): a server that checks its state refuses it "
            "before any handler runs",
        ),
        "bit_flip": ("WARN", f"refused by {TOOL_ERROR} (16 single-bit flips over its 16 bytes)"),
        "truncated": ("WARN", f"refused by {TOOL_ERROR}"),
        "repadded": (
            "WARN",
            f"refused by {TOOL_ERROR} (re-padded, in the other base64 alphabet, with a newline, "
            "with unused bits set)",
        ),
    }
    assert "PASS" not in {found[c].result for c in [*TAMPERING, "random", "repadded"]}


def test_an_expiry_read_from_the_state_is_waited_out() -> None:
    expiry = rows(in_process(gallery.broken("expiry not checked")))["expiry"]
    # The seconds waited vary with the machine's speed.
    waited = rf"{re.escape(ACCEPTED)} \d+ s after minting, past the exp the state carries"
    assert (expiry.result, re.fullmatch(waited, expiry.detail) is not None) == ("FAIL", True), expiry.detail


@pytest.mark.parametrize("build", [gallery.prompt_only, gallery.resource_only])
def test_prompts_and_resources_are_discovered_and_probed(build: Any) -> None:
    report = in_process(build(secure=False))
    assert report.kind == ("prompt" if build is gallery.prompt_only else "resource")
    found = rows(report)
    assert found["forged"].result == "FAIL"
    assert found["random"].result == "FAIL"  # a crash there is JSON-RPC -32603, not isError
    secure = rows(in_process(build(secure=True)))
    assert {secure[c].result for c in [*TAMPERING, "random", "repadded"]} == {"PASS"}


# --- every tool, prompt and resource, every round ---------------------------------------------------------


def failed(report: probe.Report) -> set[tuple[str, str]]:
    """Each FAIL row: its check id and the state it attacked."""
    return {(check.id, check.scope) for check in report.checks if check.result == "FAIL"}


def test_a_server_that_protects_round_one_and_trusts_round_two_fails_naming_round_two() -> None:
    report = in_process(gallery.trusts_round_two(), max_rounds=EVERY_ROUND)
    round_2 = "tool book_table, round 2"
    assert failed(report) == {("bit_flip", round_2), ("forged", round_2), ("arguments", round_2)}
    assert [(scope.name, scope.baseline) for scope in report.scopes] == [
        ("tool book_table, round 1", f"the unmodified state is {ACCEPTED}"),
        (round_2, "the unmodified state is accepted: the tool completed"),
    ]


def test_one_bad_tool_among_good_ones_fails_on_that_tool_alone() -> None:
    report = in_process(gallery.one_bad_tool(), max_rounds=EVERY_ROUND)
    assert failed(report) == {
        (check, f"tool quote, round {number}")
        for check in ("bit_flip", "random", "forged", "arguments")
        for number in (1, 2)
    }


def test_every_tool_and_round_is_probed_and_the_report_shows_the_budget() -> None:
    report = in_process(gallery.one_bad_tool(), max_rounds=EVERY_ROUND)
    assert report.budget == (
        "6 states: tool book_table, rounds 1-2; tool order, rounds 1-2; tool quote, rounds 1-2 "
        "(budget: 16 tools, prompts or resources, 8 rounds each)"
    )
    assert "probed:    6 states: tool book_table, rounds 1-2; " in report.table()


def test_a_budget_of_targets_and_rounds_says_what_it_left_out() -> None:
    report = in_process(gallery.one_bad_tool(), max_targets=2, max_rounds=1)
    assert (report.budget, {check.scope for check in report.checks}) == (
        "2 states: tool book_table, round 1 (cut: --max-rounds); tool order, round 1 (cut: --max-rounds) "
        "(budget: 2 tools, prompts or resources, 1 rounds each; reached, others not tried: --max-targets)",
        {"tool book_table, round 1", "tool order, round 1"},
    )


@pytest.mark.parametrize("name", ["max_targets", "max_rounds"])
def test_a_budget_below_one_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name} must be a positive int, not 0$"):
        probe.ProbeOptions(**dict[str, Any]({name: 0}))


def test_tools_named_are_the_ones_probed_every_round() -> None:
    report = in_process(gallery.one_bad_tool(), tools=("quote", "order"), max_rounds=EVERY_ROUND)
    assert ([scope.name for scope in report.scopes], report.other_tool) == (
        ["tool quote, round 1", "tool quote, round 2", "tool order, round 1", "tool order, round 2"],
        "tool order",
    )


# --- the workers of one deployment, in process -----------------------------------------------------------

FLEET = ["worker 1", "worker 2"]


def fleet_rows(*workers: object, also: tuple[str, ...] = (), **options: Any) -> dict[str, tuple[str, str]]:
    """The fleet rows (and the replay row, and ``also``) of a probe of ``workers``, the first the target,
    on their first round: result and detail, by id."""
    targets = [probe.Target(server=worker) for worker in workers]
    report = in_process(targets[0].server, workers=tuple(targets[1:]), **options)
    assert report.workers == FLEET
    found = rows(report)
    ids = ("fleet_shared", "fleet_replay", "replay", *also)
    return {id_: (found[id_].result, found[id_].detail) for id_ in ids}


SHARED = (
    "PASS",
    f"a state minted by worker 1 was {ACCEPTED} by worker 2; every later check sends its states to "
    "another worker than the one that minted them",
)


def test_a_guard_per_worker_fails_a_state_redeemed_on_one_worker_then_another() -> None:
    guarded = [gallery.protected(guard=memory_guard()) for _ in range(2)]
    assert fleet_rows(*guarded, single_use=True) == {
        "fleet_shared": SHARED,
        "fleet_replay": (
            "FAIL",
            f"redeemed on worker 1, the state was {ACCEPTED} again on worker 2: each worker keeps its own "
            "record of redeemed states",
        ),
        # Minted on worker 1, redeemed twice on worker 2: its guard refuses the second.
        "replay": ("PASS", f"single-use: the second redemption is {REFUSED}"),
    }


def test_keys_per_worker_fail_a_state_sent_to_another_worker() -> None:
    own_keys = [gallery.protected(keys=rs.KeyRing(os.urandom(32))) for _ in range(2)]
    found = fleet_rows(*own_keys)
    assert (found["fleet_shared"], found["fleet_replay"]) == (
        ("FAIL", f"a state minted by worker 1 was refused by worker 2 ({REFUSED.removeprefix('refused: ')})"),
        (
            "SKIP",
            "the workers refuse each other's states (see that row): a replay across them proves nothing",
        ),
    )


def test_a_fleet_sharing_keys_and_guard_passes_every_fleet_row() -> None:
    guard = memory_guard()  # one guard object: what a Redis is to workers in processes of their own
    found = fleet_rows(gallery.protected(guard=guard), gallery.protected(guard=guard), single_use=True)
    assert found == {
        "fleet_shared": SHARED,
        "fleet_replay": ("PASS", f"redeemed on worker 1, then sent to worker 2: {REFUSED}"),
        "replay": ("PASS", f"single-use: the second redemption is {REFUSED}"),
    }


def test_once_workers_share_states_every_check_crosses_them() -> None:
    # The second worker fails open: a flipped bit sent to it goes through, never one sent to the first.
    alone = rows(in_process(gallery.sealed()))["bit_flip"].result
    found = fleet_rows(gallery.sealed(), gallery.sealed(fail_open=True), also=("bit_flip",))
    assert (alone, found["fleet_shared"][0], found["bit_flip"][0]) == ("PASS", "PASS", "FAIL")


# --- the secure servers pass every row that applies --------------------------------------------------------


def test_the_sdk_default_boundary_passes_every_row() -> None:
    report = in_process(gallery.wizard_server("sdk-default"))
    found = {id_: check.result for id_, check in rows(report).items()}
    assert {found[c] for c in [*TAMPERING, "random", "repadded", "arguments", "confidential"]} == {"PASS"}
    assert {found[c] for c in [*FORGERY, "cross_tool", "other_user", "expiry"]} == {"SKIP"}
    assert found["replay"] == "INFO"
    assert report.exit_code == 0
    assert report.to_json()["target"] == {"transport": "in-process"}


def test_the_sdk_boundary_with_a_shared_key_refuses_another_user() -> None:
    second = probe.Target(server=gallery.sdk_shared(user="mallory"))
    other_user = rows(in_process(gallery.sdk_shared(), second=second))["other_user"]
    assert (other_user.result, other_user.detail) == ("PASS", f"{REFUSED} (the second identity)")


def sealed_state_rows(refused: str) -> dict[str, tuple[str, str]]:
    """The rows of a server whose state is sealed and authenticated, each attempt answered ``refused``."""
    return {
        "truncated": ("PASS", refused),
        "extended": ("PASS", refused),
        "tag_stripped": ("PASS", refused),
        "tag_truncated": ("PASS", f"{refused} (to half its bytes, and characters)"),
        "prefix_swapped": ("PASS", refused),
        "random": ("PASS", refused),
        "forged": (
            "SKIP",
            "nothing readable to forge, but under an unkeyed hash (see the next row), if at all",
        ),
        "rehashed": ("SKIP", "no unkeyed hash (MD5, SHA-1, SHA-2) of the state found in it"),
        "guessed_key": (
            "SKIP",
            "no MAC over readable content (readable content and a 20, 32, 48 or 64-byte tag, or a JWT "
            "HS256/384/512)",
        ),
        "alg_none": ("SKIP", "the state is not a JWT"),
        "repadded": (
            "PASS",
            f"{refused} (re-padded, in the other base64 alphabet, with a newline, with unused bits set)",
        ),
        "arguments": ("PASS", refused),
    }


def test_protect_passes_every_row_that_applies() -> None:
    ring = rs.KeyRing(schemes.KEY)
    second = probe.Target(server=gallery.protected(user="mallory", keys=ring, ttl=1))
    report = in_process(gallery.protected(keys=ring, ttl=1), second=second, ttl=1, single_use=False)
    assert {id_: (check.result, check.detail) for id_, check in rows(report).items()} == {
        "bit_flip": ("PASS", f"{REFUSED} (32 single-bit flips over its 236 bytes)"),
        **sealed_state_rows(REFUSED),
        "cross_tool": ("SKIP", "only one tool, prompt or resource answers input-required"),
        "other_user": ("PASS", f"{REFUSED} (the second identity)"),
        "expiry": ("PASS", f"{REFUSED} after 3 s (a TTL of 1 s (--ttl))"),
        "replay": (
            "INFO",
            f"the second redemption is {ACCEPTED} (not single-use; --single-use makes this a FAIL)",
        ),
        "confidential": ("PASS", "nothing readable in the token (opaque to the client)"),
    }


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
        "single bits flipped",
        "truncated (-4 chars)",
        "extended (+AAAA)",
        "MAC/tag removed",
        "MAC/tag truncated",
        "base64 re-spelled (padding, alphabet)",
        "same state, other arguments",
    )
    for name in tampering:
        assert "PASS    refused: JSON-RPC -32602 Invalid or expired requestState" in lines[name]
    assert "  FAIL  " not in table
    assert done.returncode == 0
    assert done.stderr == ""  # the server's refusal log stays out, and no progress without a terminal


VERDICT_SCOPE = (
    "A PASS means the server refused that attempt (by a JSON-RPC error or a re-elicit), or that no "
    "secret tried makes its MAC: no more. It does not prove the state unforgeable: the probe has no "
    "key, knows common encodings and secrets, not every one, and edits a bounded sample of bytes and "
    "members. A FAIL names the flaw it proves. SKIP rows were not tested, WARN rows prove nothing."
)
VERDICT_SCOPE_WRAPPED = (
    "A PASS means the server refused that attempt (by a JSON-RPC error or a re-elicit), or that no secret\n"
    "tried makes its MAC: no more. It does not prove the state unforgeable: the probe has no key, knows\n"
    "common encodings and secrets, not every one, and edits a bounded sample of bytes and members. A FAIL\n"
    "names the flaw it proves. SKIP rows were not tested, WARN rows prove nothing."
)
# The head of the table of a report with nothing found yet.
EMPTY_HEAD = (
    "server:    (unnamed), protocol \n"
    "tool:       {}, asks for: (nothing: state only)\n"
    "state:     \n"
    "baseline:  "
)


@pytest.fixture(scope="module")
def insecure() -> probe.Report:
    """examples/insecure_server.py's server probed once in this process, strictly (--single-use,
    --require-confidential), on the first round of its first tool alone: a report of one state.

    In process, for the seconds of a server process; the example over stdio is examples/README.md's
    sample (tests/test_docs_examples.py)."""
    example = importlib.import_module("examples.insecure_server")
    options = probe.ProbeOptions(single_use=True, require_confidential=True, max_targets=1, max_rounds=1)
    return anyio.run(partial(probe.probe, probe.Target(server=example.server), options, timeout=60))


def test_insecure_server_fails(insecure: probe.Report) -> None:
    table = insecure.table()
    assert insecure.exit_code == 1
    assert "state:     JSON text" in table
    assert "the server accepted a state it should have refused" in table
    lines = {line.split("  ")[0]: line for line in table.splitlines()}
    assert "FAIL    malleable state: " in lines["single bits flipped"]
    assert "FAIL    no integrity over these members" in lines["every member forged"]
    assert "`restaurant`, `step`, `date`, `hold`" in lines["every member forged"]
    assert "tool book_table -> tool change_booking: accepted" in lines["state sent to another target"]
    assert "FAIL    a state can be redeemed more than once" in lines["same state redeemed twice"]
    assert "FAIL    the client can read the state" in lines["state hidden from the client"]


def test_insecure_server_json_report_says_what_was_probed(insecure: probe.Report) -> None:
    report = insecure.to_json()
    fields = ("target", "server", "protocol", "tool", "other_tool", "state", "baseline")
    assert {field: report[field] for field in fields} == {
        "target": {"transport": "in-process"},
        "server": "insecure-booking",
        "protocol": "2026-07-28",
        "tool": {
            "kind": "tool",
            "name": "book_table",
            "arguments": {"restaurant": "probe"},
            "asks": ["date"],
        },
        "other_tool": "tool change_booking",
        "state": "JSON text, 51 characters",
        "baseline": f"the unmodified state is {ACCEPTED}",
    }


def test_a_json_report_names_the_command_it_probed_over_stdio() -> None:
    report = probe.Report(probe.Target(command=tuple(INSECURE)))
    assert report.to_json()["target"] == {"transport": "stdio", "command": INSECURE}


def skipped(check_id: str, name: str, detail: str) -> dict[str, str]:
    return {"id": check_id, "name": name, "result": "SKIP", "flaw": "", "detail": detail}


def test_insecure_server_strict_json_report_fails_each_flaw_with_its_evidence(insecure: probe.Report) -> None:
    # The state is plain JSON read as is: every byte and member is the client's to change.
    crashed = {
        "result": "WARN",
        "flaw": "",
        "detail": f"refused by {TOOL_ERROR}",
    }
    no_tag = "no base64 token with room for a tag (JSON or text: see the forgery rows)"
    checks = insecure.to_json()["checks"]
    assert {check.pop("scope") for check in checks} == {"tool book_table, round 1"}
    bit_flip, *others = checks
    # The flips stop at a bound in time: how many are tried over stdio depends on the machine's load.
    flips = (
        r"\d+ of \d+ single-bit flips were accepted, at bytes? [\d-]+ of 51 \(text\) "
        rf"\(the first: {re.escape(ACCEPTED)}\)"
    )
    detail = bit_flip.pop("detail")
    assert re.fullmatch(flips, detail) is not None, detail
    assert bit_flip == {
        "id": "bit_flip",
        "name": "single bits flipped",
        "result": "FAIL",
        "flaw": FLAWS["bit_flip"],
    }
    assert others == [
        {"id": "truncated", "name": "truncated (-4 chars)", **crashed},
        {"id": "extended", "name": "extended (+AAAA)", **crashed},
        skipped("tag_stripped", "MAC/tag removed", no_tag),
        skipped("tag_truncated", "MAC/tag truncated", no_tag),
        skipped("prefix_swapped", "prefix swapped", "the token has no prefix (no short text before a '.')"),
        {
            "id": "random",
            "name": "random state (never minted)",
            "result": "FAIL",
            "flaw": FLAWS["random"],
            "detail": f"a random state reached the handler ({TOOL_ERROR}): "
            "a server that checks its state refuses it before any handler runs",
        },
        {
            "id": "forged",
            "name": "every member forged",
            "result": "FAIL",
            "flaw": FLAWS["forged"],
            "detail": "4 of the 4 members edited went through: `restaurant`, `step`, `date`, `hold` "
            f"(e.g. `restaurant` changed ('x' appended), re-encoded as JSON: {ACCEPTED})",
        },
        skipped(
            "rehashed",
            "unkeyed hash recomputed",
            "no unkeyed hash (MD5, SHA-1, SHA-2) of the state found in it",
        ),
        skipped(
            "guessed_key",
            "MAC key guessed (common secrets)",
            "no MAC over readable content (readable content and a 20, 32, 48 or 64-byte tag, or a JWT "
            "HS256/384/512)",
        ),
        skipped("alg_none", "JWT re-signed with alg none", "the state is not a JWT"),
        skipped(
            "repadded", "base64 re-spelled (padding, alphabet)", "not a base64 token, or one already padded"
        ),
        {
            "id": "arguments",
            "name": "same state, other arguments",
            "result": "FAIL",
            "flaw": FLAWS["arguments"],
            "detail": f"{ACCEPTED} (the state was minted for other arguments)",
        },
        {
            "id": "cross_tool",
            "name": "state sent to another target",
            "result": "FAIL",
            "flaw": FLAWS["cross_tool"],
            "detail": f"tool book_table -> tool change_booking: {ACCEPTED}",
        },
        skipped(
            "other_user",
            "state sent as another user",
            "needs a second identity: --header2 (with --url) or --env2 (with a command)",
        ),
        skipped(
            "expiry",
            "state used after expiry",
            "the state's lifetime is unknown: give --ttl SECONDS (a test instance, short TTL)",
        ),
        {
            "id": "replay",
            "name": "same state redeemed twice",
            "result": "FAIL",
            "flaw": FLAWS["replay"],
            "detail": f"the second redemption is {ACCEPTED}",
        },
        {
            "id": "race",
            "name": "same state redeemed 8 times at once",
            "result": "FAIL",
            "flaw": FLAWS["race"],
            "detail": "8 identical redemptions of one state sent at once over one connection: "
            "8 were accepted",
        },
        {
            "id": "confidential",
            "name": "state hidden from the client",
            "result": "FAIL",
            "flaw": FLAWS["confidential"],
            "detail": "state readable by the client: JSON, an object (keys: date, hold, restaurant, step)",
        },
    ]


def test_insecure_server_json_report_counts_the_results_and_exits_1(insecure: probe.Report) -> None:
    report = insecure.to_json()
    assert (report["summary"], report["exit_code"]) == (
        {"PASS": 0, "FAIL": 8, "WARN": 2, "INFO": 0, "SKIP": 9, "ERROR": 0},
        1,
    )


def test_a_json_report_states_what_its_verdicts_prove(insecure: probe.Report) -> None:
    assert insecure.to_json()["verdict_scope"] == VERDICT_SCOPE


@pytest.fixture(scope="module")
def guarded() -> dict[str, Any]:
    """tests/support/probe_server.py guarded (single use, re-elicits what it refuses), probed once as JSON."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REQUESTSTATE_KEYS", SECRET)
        patch.setenv("PYTHONPATH", str(ROOT))
        patch.chdir(ROOT)
        patch.setattr(sys, "stdout", out)
        command = [sys.executable, "-m", "tests.support.probe_server", "guarded"]
        arguments = '{"topic": "chosen"}'
        options = ["--single-use", "--tool", "wizard", "--arguments", arguments]
        assert main(["probe", "--json", "--timeout", TIMEOUT, *options, "--", *command]) == 0
    report: dict[str, Any] = json.loads(out.getvalue())
    return report


def test_the_tool_and_arguments_named_are_the_ones_probed(guarded: dict[str, Any]) -> None:
    assert (guarded["tool"], guarded["other_tool"]) == (
        {"kind": "tool", "name": "wizard", "arguments": {"topic": "chosen"}, "asks": ["q1"]},
        "tool other",
    )


def test_guarded_reeliciting_server_passes_with_single_use(guarded: dict[str, Any]) -> None:
    # A re-elicit is a refusal told apart from acceptance without an error.
    reelicited = "refused: re-elicited (asked the first round's questions again)"
    first = guarded["checks"][0]["scope"]
    found = {c["id"]: (c["result"], c["detail"]) for c in guarded["checks"] if c["scope"] == first}
    # The flips stop at a bound in time: how many are tried over stdio depends on the machine's load.
    result, detail = found.pop("bit_flip")
    flips = (
        rf"{re.escape(reelicited)} \(\d+ single-bit flips over its 240 bytes(, stopped at the 8 s bound)?\)"
    )
    assert (result, re.fullmatch(flips, detail) is not None) == ("PASS", True), detail
    assert found == {
        **sealed_state_rows(reelicited),
        "cross_tool": ("PASS", f"tool wizard -> tool other: {reelicited}"),
        "other_user": ("SKIP", "needs a second identity: --header2 (with --url) or --env2 (with a command)"),
        "expiry": (
            "SKIP",
            "the state's lifetime is unknown: give --ttl SECONDS (a test instance, short TTL)",
        ),
        "replay": ("PASS", f"single-use: the second redemption is {reelicited}"),
        "race": (
            "PASS",
            "8 identical redemptions of one state sent at once over one connection: 1 accepted, the others "
            f"{reelicited}",
        ),
        "confidential": ("PASS", "nothing readable in the token (opaque to the client)"),
    }


def test_first_rounds_that_vary_are_compared_by_their_keys() -> None:
    # In process: comparing first rounds is the probe's work, whatever carries them.
    report = in_process(probe_server.varying())
    assert (report.exit_code, report.baseline) == (0, "the unmodified state is accepted: the tool completed")
    found = {id_: check.result for id_, check in rows(report).items()}
    assert {found[c] for c in TAMPERING} == {"PASS"}
    assert found["replay"] == "INFO"
    assert found["cross_tool"] == "SKIP"  # only ask answers input-required (wipe, if called, raises)
    assert report.other_tool is None


def test_discovery_never_calls_a_tool_annotated_destructive() -> None:
    # Catches: discovery calling every tool it lists, a destructive one too. The call raises, an
    # error result and not a target, so no row of the report shows it: the tool counts its calls.
    calls: list[str] = []
    report = in_process(probe_server.varying(destructive_calls=calls))
    assert (report.exit_code, calls) == (0, [])


def test_a_server_that_dies_mid_probe_gives_errors_not_passes(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = probe_json(capsys, "--", sys.executable, "-m", "tests.support.probe_server", "crashing")
    assert code == 2
    assert report["exit_code"] == 2
    assert results(report)["bit_flip"] == "ERROR"
    assert "Connection closed" in report["checks"][0]["detail"]
    # Whether the state is readable needs no server: the one row that may PASS.
    assert (
        "PASS"
        not in {id_: result for id_, result in results(report).items() if id_ != "confidential"}.values()
    )


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
    code = main(["probe", "--timeout", TIMEOUT, "--url", http_401])
    assert (code, capsys.readouterr().err) == (
        2,
        "error: the server answered HTTP 401: it wants credentials; pass them with --header "
        "'Authorization: Bearer ...' (repeatable, never printed)\n",
    )


class _Oversized(http.server.BaseHTTPRequestHandler):
    """Discovery answered, then a 5 MiB JSON body for anything else."""

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "id" not in message:  # a notification
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if message["method"] == "server/discover":
            result: dict[str, Any] = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
        else:
            result = {"tools": [], "padding": "x" * (5 << 20)}
        body = json.dumps(
            {"jsonrpc": "2.0", "id": message["id"], "result": {"resultType": "complete", **result}}
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_an_oversized_http_answer_is_a_setup_error_without_the_sdks_traceback(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Oversized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        code = main(
            ["probe", "--timeout", TIMEOUT, "--url", f"http://127.0.0.1:{server.server_address[1]}/mcp"]
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(
        "error: setting up the probe failed: JSON-RPC -32700 Failed to parse JSON response: "
    )
    assert "the server sent a message over 4 MiB" in err
    # The SDK logs the parse error with its traceback (to stderr, with no logging set up): the probe
    # keeps the SDK's loggers quiet.
    assert [record.name for record in caplog.records if record.name.startswith("mcp")] == []


# --- setup and usage errors ---------------------------------------------------------------------------------


NAME_THE_SERVER = "error: name the server either as a command after -- or with --url\n"


def test_no_server_named_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert (main(["probe"]), capsys.readouterr().err) == (2, NAME_THE_SERVER)


def test_both_command_and_url_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", "--url", "http://127.0.0.1:9/mcp", "--", "true"])
    assert (code, capsys.readouterr().err) == (2, NAME_THE_SERVER)


@pytest.mark.parametrize("option", ["--header", "--header2"])
def test_header_without_url_is_a_usage_error(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", option, "A: b", "--", "true"])
    assert (code, capsys.readouterr().err) == (2, "error: --header and --header2 apply to --url only\n")


def test_env2_with_url_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", "--env2", "A=b", "--url", "http://127.0.0.1:9/mcp"])
    assert (code, capsys.readouterr().err) == (
        2,
        "error: --env2 applies to a command only (use --header2 with --url)\n",
    )


def test_workers_with_url_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", "--workers", "2", "--url", "http://127.0.0.1:9/mcp"])
    assert (code, capsys.readouterr().err) == (
        2,
        "error: --workers applies to a command only (give --url once per worker)\n",
    )


@pytest.mark.parametrize(
    ("option", "error"),
    [
        (
            ["--arguments", "{not json"],
            "--arguments: not JSON: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)",
        ),
        (["--arguments", "[1]"], "--arguments: tool arguments must be a JSON object"),
        (["--timeout", "0"], "--timeout: not a positive number of seconds: '0'"),
        (["--ttl", "-1"], "--ttl: not a positive number of seconds: '-1'"),
        (["--header", "nocolon"], "--header: a header is NAME: VALUE"),
        (["--env2", "noequals"], "--env2: an environment variable is NAME=VALUE"),
        (["--workers", "0"], "--workers: not a positive number: '0'"),
        (["--max-rounds", "two"], "--max-rounds: not a whole number: 'two'"),
    ],
)
def test_bad_option_values_are_usage_errors(
    option: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["probe", *option, "--", "true"])
    # The usage lines above it are argparse's.
    last = capsys.readouterr().err.splitlines()[-1]
    assert (exited.value.code, last) == (2, f"requeststate probe: error: argument {error}")


def test_server_that_exits_at_once_is_a_setup_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["probe", "--", sys.executable, "-c", "import sys; print('boom', file=sys.stderr)"])
    err = capsys.readouterr().err
    assert code == 2
    # It said "MCPError: Connection closed", which does not say that the server went away.
    assert "could not connect to the server: it closed its stdout before answering initialize" in err
    assert "  | boom" in err  # the server's stderr, shown because the probe could not run


def test_command_not_found_is_a_setup_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--", str(ROOT / "no-such-server")]) == 2
    assert "could not connect to the server" in capsys.readouterr().err


def test_server_that_never_answers_times_out(capsys: pytest.CaptureFixture[str]) -> None:
    # It reads its stdin to the end: it exits when the probe hangs up, without the 2 s a server that
    # ignores its stdin is given before a SIGTERM (the stderr flood's test has one of those).
    code = main(["probe", "--timeout", "1", "--", sys.executable, "-c", "import sys; sys.stdin.read()"])
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
        in_process(probe_server.plain(), tools=("nope",))


def test_server_refusing_its_own_state_is_a_setup_error() -> None:
    # Were it not caught, every mutation would "pass" against a server that refuses everything.
    with pytest.raises(probe.ProbeError, match=r"the unmodified state is not accepted \(JSON-RPC -32602"):
        in_process(probe_server.refusing(), tools=("ask",))


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
        "error: requeststate.probe needs the mcp extra: pip install 'requeststate[mcp]' (cannot import mcp)"
    )


def test_a_command_that_is_not_an_mcp_server_is_a_setup_error_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # issue 22: the SDK's logger printed a pydantic traceback before the probe's own error.
    code = main(["probe", "--", sys.executable, "-c", "print('Listening on port 8000')"])
    captured = capsys.readouterr()
    assert (code, captured.out, captured.err) == (2, "", NOT_JSON_RPC)


def test_an_unreadable_wordlist_is_a_setup_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.txt"
    assert main(["probe", "--wordlist", str(missing), "--", sys.executable, "-c", "pass"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: cannot read the wordlist {missing}: No such file or directory"
    )


# --- a hostile server: it cannot break the probe (exit 2, never 1, never a traceback) -----------------------

NOT_JSON_RPC = (
    "error: the server wrote a line to stdout that is not a JSON-RPC message, or nests too deep "
    "(stdout carries the protocol: is this an MCP server over stdio? a server logs to stderr)\n"
)
BROKEN_PROTOCOL = {
    "deep_message": NOT_JSON_RPC,
    "endless_line": "error: the server sent a message over 4 MiB\n",
    "many_values": "error: the server sent a message of over 50,000 JSON values\n",
    "garbage": NOT_JSON_RPC,
    "malformed_result": "error: setting up the probe failed: the server's answer is not a valid MCP result "
    "(the SDK refused its shape)\n",
}


@pytest.mark.parametrize("kind", sorted(BROKEN_PROTOCOL))
def test_a_server_breaking_the_protocol_is_a_probe_error(
    kind: str, server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["probe", "--timeout", TIMEOUT, "--", *HOSTILE, kind])
    captured = capsys.readouterr()
    assert (code, captured.out, captured.err) == (2, "", BROKEN_PROTOCOL[kind])


def test_a_state_nested_deeper_than_any_parser_allows_is_probed(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 22: a state nested 50,000 deep raised RecursionError, and the probe exited 1.
    code, report = probe_json(capsys, "--", *HOSTILE, "deep_state")
    assert code == 0
    assert set(results(report).values()) == {"PASS", "SKIP", "INFO"}


def test_an_endless_listing_is_read_only_so_far(server_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    # issue 22: an endless nextCursor grew the probe to 816 MB before its timeout.
    code, report = probe_json(capsys, "--", *HOSTILE, "endless_pages")
    assert code == 0
    assert report["tool"]["name"] == "ask"


def test_a_result_its_own_output_schema_refuses_is_still_a_completion(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = probe_json(capsys, "--", *HOSTILE, "unstructured")
    assert code == 0
    assert report["baseline"] == "the unmodified state is accepted: the tool completed"


def test_the_probe_declares_the_input_its_rounds_answer(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: no client capabilities were declared, and a server that (as the TypeScript SDK's)
    # asks only a client that declared elicitation could not be probed (exit 2).
    code, report = probe_json(capsys, "--", *HOSTILE, "needs_elicitation")
    assert (code, report["baseline"]) == (0, "the unmodified state is accepted: the tool completed")


def test_a_json_rpc_error_on_the_way_to_a_first_round_is_named(
    server_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: the error was dropped, and the message's advice (--tool, --arguments) did not help.
    code = main(["probe", "--timeout", TIMEOUT, "--", *HOSTILE, "refuses_all"])
    assert (code, capsys.readouterr().err) == (
        2,
        "error: no listed tool, prompt or resource answered input-required with a requestState to "
        "placeholder arguments; name a tool with --tool and pass --arguments JSON (the server answered "
        "tool 'ask': JSON-RPC -32050 'Tool unavailable')\n",
    )


def test_a_servers_own_parse_error_is_a_refusal(server_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    # Only the SDK's own -32700 (an HTTP answer it could not read) is no answer; the server's is a refusal.
    code, report = probe_json(capsys, "--", *HOSTILE, "parse_error")
    assert code == 0
    random = next(check for check in report["checks"] if check["id"] == "random")
    assert (random["result"], random["detail"]) == ("PASS", "refused: JSON-RPC -32700 Parse error")


def in_a_process_of_its_own(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a Python of its own (for a peak memory that is the probe's alone), from the root.

    Without coverage's tracer (``make test`` measures subprocesses too, started by coverage's
    ``COVERAGE_*`` or pytest-cov's ``COV_CORE_*`` variables): its data is not the probe's.
    """
    env = {
        name: value for name, value in os.environ.items() if not name.startswith(("COVERAGE_", "COV_CORE_"))
    }
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
        cwd=ROOT,
    )


# The most a probe of a hostile server may hold (ru_maxrss is in KiB on Linux). Alone, every kind in
# one process peaks at 184 MiB here (2026-11-28); inside the full suite, with the other worker's
# tests on the second core, 266 MiB: what the hostile server writes waits for a probe that waits
# for a core. The faults these bound took 872 MB and 13 GB.
PEAK_KIB = 320 * 1024


def test_the_probes_memory_stays_bounded_against_a_hostile_server() -> None:
    # A process of its own, for a peak that is the probe's alone.
    script = textwrap.dedent(
        """
        import resource, sys
        from requeststate.cli import main
        for kind in sys.argv[1:]:
            print(main(["probe", "--json", "--", sys.executable, "-m", "tests.support.probe_hostile", kind]))
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        """
    )
    kinds = ["endless_pages", "endless_line", "many_values", "deep_state", "inflating_parts", "many_parts"]
    *_, peak_kib = in_a_process_of_its_own(script, *kinds).stdout.split()
    assert int(peak_kib) <= PEAK_KIB


# The flood's length: the probe's timeout on a server that floods stderr and never answers. With the
# tail's bound taken out (_transport.py keeping the whole stderr), 1 s of it (and the 2 s the server
# gets to exit) peaked at 1.5 GiB here (2026-11-29), over four times PEAK_KIB; 0.5 s at 514 MiB, too near.
FLOOD_SECONDS = 1


def test_a_server_flooding_stderr_costs_the_probe_neither_memory_nor_disk_nor_time() -> None:
    # Before: the whole stderr went to a temporary file, read back whole on the timeout: 13 GB of
    # memory, 6.5 GB of disk and 63 s under --timeout 10.
    script = textwrap.dedent(
        """
        import resource, shutil, sys, tempfile, time
        from requeststate.cli import main
        started = time.monotonic()
        flood = [sys.executable, "-m", "tests.support.probe_hostile", "stderr_flood"]
        code = main(["probe", "--timeout", sys.argv[1], "--", *flood])
        print(code, round(time.monotonic() - started, 1), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        """
    )
    done = in_a_process_of_its_own(script, str(FLOOD_SECONDS))
    code, seconds, peak_kib = done.stdout.split()
    # The timeout, and up to 6 s for the server's shutdown (docs/cli.md).
    assert (int(code), float(seconds) <= FLOOD_SECONDS + 6 + 2, int(peak_kib) <= PEAK_KIB) == (2, True, True)
    assert f"error: the probe timed out after {FLOOD_SECONDS} s" in done.stderr
    assert "  | the server is busy the server is busy" in done.stderr
    assert len(done.stderr) < 80 * 1024  # the last lines only


# --- progress on a terminal -------------------------------------------------------------------------------


def test_progress_shows_a_line_per_check_with_its_time() -> None:
    progress = io.StringIO()

    async def run() -> probe.Report:
        target = probe.Target(server=gallery.lenient())
        return await probe.probe(target, server_log=io.StringIO(), progress=progress, timeout=60)

    report = anyio.run(run)
    setup, *lines = progress.getvalue().splitlines()
    assert re.fullmatch(r"probing 2 states of 1 tools, prompts or resources \(\d+\.\d s to set up\)", setup)
    assert len(lines) == len(report.checks)
    for number, (line, check) in enumerate(zip(lines, report.checks, strict=True), start=1):
        where = re.escape(f" ({check.scope})")
        assert re.fullmatch(
            rf"\[ ?{number}/{len(lines)}\] {re.escape(check.name)} *{where}  {check.result} \(\d+\.\d s\)",
            line,
        )


def test_the_command_line_shows_progress_on_a_terminal(
    server_env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["probe", "--", *HOSTILE, "sound"]) == 0
    assert re.search(r"^\[ 1/\d+\] single bits flipped +PASS \(\d+\.\d s\)$", capsys.readouterr().err, re.M)


def test_a_json_report_shows_no_progress_even_on_a_terminal(
    server_env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["probe", "--json", "--", *HOSTILE, "sound"]) == 0
    assert capsys.readouterr().err == ""


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


@pytest.mark.parametrize("token", [SIGNED, SEALED, "abcde"], ids=["signed", "sealed", "five-characters"])
def test_truncation_drops_the_last_four_characters(token: str) -> None:
    assert mutations.truncated(token) == token[:-4]


@pytest.mark.parametrize("token", ["abcd", "abc"])
def test_a_token_of_four_characters_or_fewer_is_not_truncated(token: str) -> None:
    assert mutations.truncated(token) is None


@pytest.mark.parametrize("token", [SIGNED, SEALED, '{"a":1}'], ids=["signed", "sealed", "json"])
def test_extension_appends_three_zero_bytes_of_base64url(token: str) -> None:
    assert mutations.extended(token) == token + "AAAA"


def test_the_prefix_is_swapped_for_another_of_ours_or_marked() -> None:
    assert mutations.prefix_swapped(SIGNED) == "v1e." + SIGNED[3:]
    assert mutations.prefix_swapped(SEALED) == "v1." + SEALED[4:]
    assert mutations.prefix_swapped("v1x.abc") == "v1e.abc"
    assert mutations.prefix_swapped("tok.abc") == "tokx.abc"
    assert mutations.prefix_swapped('{"a":1.5}') is None


def test_the_mac_of_a_three_part_token_is_removed_whole() -> None:
    head, _, mac = SIGNED.rpartition(".")
    assert mutations.tag_removed(SIGNED) == head
    assert mutations.tag_emptied(SIGNED) == head + "."
    assert mutations.tag_halved(SIGNED) == f"{head}.{_b64u(decode.b64decode(mac)[:16])}"  # type: ignore[index]
    assert mutations.tag_text_halved(SIGNED) == f"{head}.{mac[: len(mac) // 2]}"


def test_the_tag_of_a_two_part_token_is_its_last_16_bytes() -> None:
    blob = decode.b64decode(SEALED[4:])
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


def test_flips_cut_short_still_spread_over_the_whole_token() -> None:
    # Over a loaded machine the 8 s bound stopped a probe after 7 flips, all in the first 12 of 51
    # bytes, and the region a server accepted (bytes 15-19) was never reached.
    order = tampering.coarse_first(list(range(16)))
    assert (order[:4], sorted(order)) == ([0, 8, 4, 12], list(range(16)))


def test_a_flipped_bit_is_one_bit_of_the_decoded_bytes_spelled_as_the_server_spells_them() -> None:
    shape = spelling.spelling(SEALED)
    blob = decode.b64decode(SEALED[4:])
    assert shape.prefix == "v1e."
    assert shape.size == len(blob or b"")
    for position in (0, 7, shape.size - 1):  # the nonce, and the tag's last byte
        flipped = shape.flipped(position)
        assert flipped is not None
        assert flipped.startswith("v1e.")
        assert "=" not in flipped
        raw = decode.b64decode(flipped[4:])
        assert raw is not None
        assert [i for i, (a, b) in enumerate(zip(raw, blob or b"", strict=True)) if a != b] == [position]
        assert raw[position] ^ (blob or b"")[position] == 1


@pytest.mark.parametrize(
    ("token", "encodings"),
    [
        ("6869" * 5 + ".AQID", ["hex", "base64url"]),
        ("v1.aGk+Pz8=.AQID", ["base64, padded", "base64url"]),
        ('{"a":"b.c"}', ["text"]),
    ],
)
def test_each_part_is_read_in_its_own_spelling(token: str, encodings: list[str]) -> None:
    shape = spelling.spelling(token)
    assert [part.encoding for part in shape.parts] == encodings
    assert shape.prefix == ("v1." if token.startswith("v1.") else "")
    assert all(shape.flipped(position) != token for position in range(shape.size))


def test_a_flip_in_plain_text_stays_text_and_skips_what_it_cannot_spell() -> None:
    shape = spelling.spelling('{"n":"é1"}')
    assert shape.flipped(8) == '{"n":"é0"}'
    assert shape.flipped(6) is None  # a byte of é: no longer UTF-8


def test_the_region_names_the_part_and_its_bytes() -> None:
    shape = spelling.spelling(f"v1.{_b64u(bytes(range(10)))}.{_b64u(bytes(range(32)))}")
    assert shape.region([2, 9]) == "bytes 2-9 of 10 of part 1 of 2 (base64url) after 'v1.'"
    assert shape.region([12]) == "byte 2 of 32 of part 2 of 2 (base64url) after 'v1.'"


def test_respellings_repad_swap_the_alphabet_add_a_newline_and_set_unused_bits_after_the_prefix() -> None:
    token = "v1e.ab-_cd.QQ"  # "QQ" spells 12 bits for 8: 4 unused, 0 in the canonical spelling
    assert spelling.respellings(token) == [
        ("v1e.ab-_cd.QQ=", "with '=' appended"),
        ("v1e.ab-_cd.QQ==", "with '==' appended"),
        ("v1e.ab+/cd.QQ", "in the standard base64 alphabet (+/)"),
        ("v1e.ab-_cd.Q\nQ", "with a newline before its last character"),
        ("v1e.ab-_cd.QR", "with an unused bit of its last character set"),
    ]
    assert base64.urlsafe_b64decode("QR==") == base64.urlsafe_b64decode("QQ==")
    assert [what for _, what in spelling.respellings("abcd")] == [
        "with '=' appended",
        "with '==' appended",
        "with a newline before its last character",
    ]
    assert spelling.respellings('{"a":1}') == []
    assert spelling.respellings("YWI=") == []  # padded already: another padding is no longer base64


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
    reading = next(r for r in readings.readings(token) if r.wrapping == wrapping)
    assert reading.rebuild(reading.value) == token


def test_an_unkeyed_hash_is_recognised_and_recomputed() -> None:
    token = f"{_b64u(STATE.encode())}.{hashlib.sha256(STATE.encode()).hexdigest()}"
    reading = next(r for r in readings.readings(token) if r.hashed is not None)
    assert reading.hashed == "sha256 hex of the decoded bytes"
    edit = edits.edits(reading.value, 1)[0]
    body, _, digest = reading.rebuild(edit.value).partition(".")
    changed = decode.b64decode(body)
    assert changed is not None
    assert json.loads(changed)["restaurant"] == "probex"
    assert digest == hashlib.sha256(changed).hexdigest()


def test_an_unkeyed_hash_after_a_prefix_is_recognised_and_recomputed() -> None:
    token = f"v1e.{_b64u(STATE.encode())}.{_b64u(hashlib.sha256(STATE.encode()).digest())}"
    reading = next(r for r in readings.readings(token) if r.hashed is not None)
    assert reading.hashed == "sha256 base64 of the decoded bytes after the prefix"
    prefix, body, digest = reading.rebuild({"step": 9}).split(".")
    assert (prefix, decode.b64decode(body)) == ("v1e", b'{"step":9}')
    assert decode.b64decode(digest) == hashlib.sha256(b'{"step":9}').digest()


def test_an_unkeyed_hash_appended_inside_the_decoded_bytes_is_recognised_and_recomputed() -> None:
    token = "v1e." + _b64u(STATE.encode() + hashlib.sha256(STATE.encode()).digest())
    reading = next(r for r in readings.readings(token) if r.hashed is not None)
    assert reading.hashed == "sha256 appended"
    raw = decode.b64decode(reading.rebuild({"step": 9}).removeprefix("v1e."))
    assert raw == b'{"step":9}' + hashlib.sha256(b'{"step":9}').digest()


def test_a_compression_bomb_is_not_inflated() -> None:
    bomb = _b64u(zlib.compress(b'{"a":"' + b"x" * (2 << 20) + b'"}'))
    assert readings.readings(bomb) == []


def _parts_read(token: str) -> set[str]:
    return {reading.wrapping.partition(":")[0] for reading in readings.readings(token)}


def test_one_budget_of_bytes_bounds_the_reading_of_every_part_together() -> None:
    # issue 22: 16 parts each inflating to 1 MiB were each read in full (445 MiB at the peak).
    inflating = _b64u(zlib.compress(json.dumps({"a": "x" * 1_000_000}).encode()))
    found = _parts_read(".".join([inflating] * 16))
    # Each part read spends 2 MB at least: its inflated bytes, then the same as text.
    assert "part 1 of 16" in found
    assert len(found) <= readings.MAX_DECODED // 2_000_000


def test_one_budget_of_json_values_bounds_the_reading_of_every_part_together() -> None:
    many = _b64u(zlib.compress(json.dumps([0] * 40_000).encode()))
    found = _parts_read(".".join([many] * 16))
    assert "part 1 of 16" in found
    assert len(found) <= readings.MAX_VALUES_READ // 40_000


def test_json_of_more_values_than_a_message_holds_is_not_read() -> None:
    most = [0] * (decode.MAX_JSON_VALUES - 1)  # and the array itself
    assert decode.parse_json(json.dumps(most)) == most
    assert decode.parse_json(json.dumps([*most, 0])) is None


def test_json_nested_past_the_bound_is_not_read() -> None:
    # issue 22: parse_json raised RecursionError on a state 50,000 deep.
    deep = '{"a":' * 50_000 + "1" + "}" * 50_000
    assert decode.parse_json(deep) is None
    assert readings.readings(_b64u(deep.encode())) == []
    assert decode.parse_json("[" + "1," * (1 << 20) + "1]") is None  # past the size bound


DEPTH_CASES = {
    "nested to the bound": ("[" * 128 + "]" * 128, False),
    "nested past the bound": ("[" * 129 + "]" * 129, True),
    "brackets in a string": ('["' + "[" * 200 + '"]', False),
    "brackets after an escaped quote, in the string": ('["\\"' + "[" * 200 + '"]', False),
    "brackets after an escaped backslash, out of the string": ('["\\\\"' + "[" * 200 + "]" * 201, True),
    "brackets in a string that never ends": ("[" * 100 + '"' + "[" * 200, False),
    # issue 22: from every quote of this the core's pattern rescanned to the end (80 KB: 13 s).
    "a deep prefix, then quotes and backslashes": ("[" * 129 + '"\\' * 100_000, True),
    "quotes and backslashes, then brackets": ('"\\' * 100_000 + "[" * 200, False),
}


@pytest.mark.parametrize("case", sorted(DEPTH_CASES))
def test_the_depth_of_json_is_judged_outside_its_strings(case: str) -> None:
    text, deep = DEPTH_CASES[case]
    assert decode.too_deep(text) is deep


def test_a_keyed_mac_is_not_taken_for_an_unkeyed_hash() -> None:
    assert [r for r in readings.readings(SIGNED) if r.hashed is not None] == []


def test_a_jwt_is_re_signed_with_alg_none() -> None:
    header = _b64u(b'{"alg":"HS256","typ":"JWT"}')
    token = f"{header}.{_b64u(STATE.encode())}.{_b64u(bytes(32))}"
    reading = readings.alg_none(token)[0]
    forged_header, payload, signature = reading.rebuild(reading.value).split(".")
    assert json.loads(decode.b64decode(forged_header) or b"") == {"alg": "none", "typ": "JWT"}
    assert decode.b64decode(payload) == STATE.encode()
    assert signature == ""
    assert readings.alg_none(SIGNED) == []  # a v1. token's first part is no JWT header


def test_edits_change_every_member_once_and_name_it() -> None:
    found = edits.edits(
        {"a": "x", "n": 1, "f": 1.5, "flag": True, "none": None, "d": "41", "l": [{"b": 2}]}, 99
    )
    assert [(e.field, e.change, e.kind) for e in found] == [
        ("a", "'x' appended", "string"),
        ("n", "number +1", "number"),
        ("f", "number +1", "number"),
        ("flag", "boolean flipped", "boolean"),
        ("none", "null set to 'x'", "null"),
        ("d", "number +1", "number"),
        ("l[0].b", "number +1", "number"),
    ]
    assert found[4].value == {
        "a": "x",
        "n": 1,
        "f": 1.5,
        "flag": True,
        "none": "x",
        "d": "41",
        "l": [{"b": 2}],
    }
    assert found[6].value == {
        "a": "x",
        "n": 1,
        "f": 1.5,
        "flag": True,
        "none": None,
        "d": "41",
        "l": [{"b": 3}],
    }
    assert edits.edits({"a": []}, 99) == []


def test_a_string_of_digits_python_cannot_read_as_a_number_gets_an_x() -> None:
    # issue 22: "²" (a digit to isdigit, not to int) and 5,000 digits (past int's limit) crashed the probe.
    found = edits.edits({"squared": "²", "long": "9" * 5000}, 99)
    assert [(e.field, e.change, e.kind) for e in found] == [
        ("squared", "'x' appended", "string"),
        ("long", "'x' appended", "string"),
    ]
    assert found[0].value == {"squared": "²x", "long": "9" * 5000}


def test_edits_go_inside_a_state_nested_as_json_text() -> None:
    edit = edits.edits({"s": '{"step":1,"who":"al"}', "exp": 5}, 99)[1]
    assert edit.field == "s.who"
    assert edit.value == {"s": '{"step":1,"who":"alx"}', "exp": 5}


def test_edits_past_the_limit_are_spread_over_the_state() -> None:
    found = edits.edits({f"k{i}": i for i in range(100)}, 5)
    assert [edit.field for edit in found] == ["k0", "k25", "k50", "k74", "k99"]


def test_an_encoding_behind_a_prefix_is_opaque_and_text_after_one_is_plain_text() -> None:
    ciphertext = _b64u(hashlib.sha512(b"ciphertext").digest())
    for separator in ":|$~":
        assert edits.readable(f"enc{separator}{ciphertext}") is None
    assert edits.readable("user:alice") == "the state is plain text, not an encoding"


def test_readable_sees_json_compressed_and_signed_payloads() -> None:
    assert edits.readable(SEALED) is None
    assert edits.readable(SIGNED) == "part 2 of 3: base64url(JSON), an object (keys: b, exp, iat, id, s)"
    assert edits.readable('{"step":1}') == "JSON, an object (keys: step)"
    assert edits.readable(LAYERED["base64url(zlib(JSON))"]) == (
        "base64url(zlib(JSON)), an object (keys: price, restaurant, step)"
    )
    assert edits.readable("step 1; user alice") == "the state is plain text, not an encoding"
    text = base64.urlsafe_b64encode(b"this is a long readable sentence").decode()
    assert edits.readable(text) == "part 1 base64-decodes to readable text"
    assert edits.readable(base64.urlsafe_b64encode(os.urandom(64)).decode().rstrip("=")) is None


JWT_HEADER = _b64u(b'{"alg":"HS256","typ":"JWT"}')


def _jwt(key: bytes, payload: str) -> str:
    signing = f"{JWT_HEADER}.{_b64u(payload.encode())}"
    return f"{signing}.{_b64u(hmac.digest(key, signing.encode(), 'sha256'))}"


def _hit(token: str) -> tuple[guess.Mac, guess.Secret] | None:
    return guess.first_hit(guess.macs(token), list(guess.secrets([])))


def test_a_jwt_signed_with_a_sample_key_of_the_docs_is_guessed_and_forged() -> None:
    token = _jwt(b"your-256-bit-secret", STATE)  # jwt.io's sample key
    hit = _hit(token)
    assert hit is not None
    mac, secret = hit
    assert mac.what == "HMAC-SHA256 of the text before the last '.'"
    assert secret.source == "the built-in list of common secrets, line 108"
    forged, what = mac.forge(secret.key)[0]
    assert what == "`restaurant` changed ('x' appended)"
    assert forged.startswith(JWT_HEADER + ".")
    assert forged == _jwt(
        b"your-256-bit-secret",
        json.dumps({"restaurant": "probex", "step": 1, "price": 20}, separators=(",", ":")),
    )


@pytest.mark.parametrize(
    ("size", "algorithm"), [(20, "sha1"), (32, "sha256"), (48, "sha384"), (64, "sha512")]
)
def test_a_mac_appended_in_the_blob_is_guessed_whatever_its_size(size: int, algorithm: str) -> None:
    token = "v1." + _b64u(STATE.encode() + hmac.digest(b"changeme", STATE.encode(), algorithm))
    hit = _hit(token)
    assert hit is not None
    assert hit[0].what == f"HMAC-{algorithm.upper()} appended to the decoded content"
    assert hit[1].key == b"changeme"


def test_the_empty_secret_is_tried_first() -> None:
    hit = _hit(f"{_b64u(STATE.encode())}.{hmac.digest(b'', STATE.encode(), 'sha256').hex()}")
    assert hit is not None
    assert hit[1].source == "the empty secret"
    assert hit[0].what == "HMAC-SHA256 of the text before the last '.' of the decoded bytes"


def test_no_mac_is_found_in_an_opaque_or_unsigned_token() -> None:
    assert guess.macs(SEALED) == []  # nothing readable to sign
    assert guess.macs(STATE) == []
    assert _hit(SIGNED) is None  # our own v1.: a MAC over readable content, under a key no list holds


def test_the_built_in_list_holds_the_common_secrets() -> None:
    keys = [secret.key for secret in guess.secrets([])]
    assert len(keys) >= 100
    for common in (b"", b"secret", b"changeme", b"password", b"key", b"your-256-bit-secret", b"keyboard cat"):
        assert common in keys


def test_a_wordlist_is_read_line_by_line_and_an_overlong_line_skipped(tmp_path: Path) -> None:
    wordlist = tmp_path / "words.txt"
    wordlist.write_bytes(b"alpha\r\n" + b"x" * 5000 + b"\n\nomega")
    extra = [s for s in guess.secrets([wordlist]) if s.source.startswith("--wordlist")]
    assert [(s.key, s.source) for s in extra] == [
        (b"alpha", f"--wordlist {wordlist}, line 1"),
        (b"", f"--wordlist {wordlist}, line 3"),
        (b"omega", f"--wordlist {wordlist}, line 4"),
    ]


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
    assert replies["sample"] == CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="probe"), model="requeststate-probe"
    )
    assert replies["roots"] == ListRootsResult(roots=[])
    assert placeholders.answers(None) == {}


def test_a_hostile_schema_gets_bounded_placeholders() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(100):
        deep = {"type": "object", "properties": {"a": deep}, "required": ["a"]}
    schema = {
        "type": "object",
        "properties": {
            "many": {"type": "array", "items": {"type": "integer"}, "minItems": 10**9},
            "long": {"type": "string", "minLength": 10**9},
            "deep": deep,
        },
        "required": ["many", "long", "deep", {"not": "a name"}],
    }
    arguments = placeholders.placeholder_arguments(Tool(name="t", input_schema=schema))
    assert arguments["many"] == [1] * 64
    assert arguments["long"] == "probe".ljust(1024, "x")
    assert len(json.dumps(arguments["deep"])) < 200


def _values(value: object, limit: int = 10_000) -> int:
    """How many JSON values ``value`` holds, itself included, counted up to ``limit`` (then ``limit``):
    a list repeating one item holds each copy, and 64**6 of them would take hours to count."""
    count, pending = 0, [value]
    while pending and count < limit:
        item = pending.pop()
        count += 1
        pending.extend(item if isinstance(item, list) else item.values() if isinstance(item, dict) else ())
    return count


def test_nested_min_items_are_honoured_only_within_one_bound_for_the_whole_value() -> None:
    # issue 22: six nested arrays of minItems 64 asked for 64**6 values: a panic, then a hang.
    nested: dict[str, Any] = {"type": "integer"}
    for _ in range(6):
        nested = {"type": "array", "items": nested, "minItems": 64}
    schema = {"type": "object", "properties": {"x": nested}, "required": ["x"]}
    value = placeholders.placeholder_arguments(Tool(name="t", input_schema=schema))["x"]
    assert _values(value) < 2 * placeholders.MAX_VALUES  # at least one item per array past the bound
    innermost = value[0][0][0][0][0]
    assert innermost == [1] * 64  # the first arrays filled get all they ask for
    assert len(value) == 1  # the outer ones, past the bound, one item each


def test_an_answer_to_a_form_is_bounded_alike() -> None:
    many = {"type": "array", "items": {"type": "string"}, "minItems": 64}
    schema = {"type": "object", "properties": {f"p{i}": many for i in range(40)}}
    form = ElicitRequestFormParams(message="?", requested_schema=schema)
    reply = placeholders.answers({"form": ElicitRequest(params=form)})["form"]
    assert isinstance(reply, ElicitResult)
    assert reply.content is not None
    assert _values(reply.content) < 2 * placeholders.MAX_VALUES
    assert reply.content["p0"] == ["probe"] * 64
    assert reply.content["p39"] == ["probe"]


def test_a_form_asking_for_nested_values_is_answered_in_the_fields_a_form_can_hold() -> None:
    # Before: the nested answer failed the SDK's own model, and the probe called it a bug of its own.
    schema = {
        "type": "object",
        "properties": {
            "grid": {"type": "array", "minItems": 1, "items": {"type": "array", "items": {"type": "string"}}},
            "place": {"type": "object", "properties": {"city": {"type": "string"}}},
            "tags": {"type": "array", "minItems": 1, "items": {"type": "string"}},
            "party": {"type": "integer"},
        },
    }
    form = ElicitRequestFormParams(message="?", requested_schema=schema)
    reply = placeholders.answers({"form": ElicitRequest(params=form)})["form"]
    assert isinstance(reply, ElicitResult)
    assert reply.content == {"tags": ["probe"], "party": 1}


def test_report_exit_codes_and_summary() -> None:
    target = probe.Target(
        url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer s3cret"}, env={"TOKEN": "s3cret"}
    )
    report = probe.Report(target)
    report.checks = [probe.Check("a", "a", "PASS", ""), probe.Check("w", "w", "WARN", "")]
    assert (report.exit_code, report.ok) == (0, True)
    assert report.summary() == (
        "1 PASS, 0 FAIL, 1 WARN, 0 INFO, 0 SKIP: no attempt was accepted, "
        "but WARN rows prove nothing: read them\n"
        "WARN (proves nothing, read the row): w"
    )
    report.checks.append(probe.Check("b", "b", "ERROR", "lost"))
    assert (report.exit_code, report.ok, report.summary()) == (
        2,
        False,
        "1 PASS, 0 FAIL, 1 WARN, 0 INFO, 0 SKIP, 1 ERROR: some checks could not complete\n"
        "ERROR  b: lost\n"
        "WARN (proves nothing, read the row): w",
    )
    report.checks.append(probe.Check("c", "c", "FAIL", "accepted", "the flaw"))
    assert (report.exit_code, report.ok, report.headline()) == (
        1,
        False,
        "1 PASS, 1 FAIL, 1 WARN, 0 INFO, 0 SKIP, 1 ERROR: the server accepted a state it should have refused",
    )


def test_the_summary_names_each_fail_with_its_evidence_and_what_was_skipped() -> None:
    # What a test's assertion message shows (the pytest fixture): which rows, and why, not counts alone.
    report = probe.Report(probe.Target(command=("srv",)))
    report.checks = [
        probe.Check("bit_flip", "single bits flipped", "FAIL", "3 of 32 accepted\x1b[2J", "malleable"),
        probe.Check("alg_none", "JWT re-signed, alg none", "SKIP", "not a JWT"),
        probe.Check("expiry", "state used after expiry", "SKIP", "no --ttl"),
        probe.Check("random", "random state", "PASS", "refused"),
    ]
    assert (report.ok, report.summary()) == (
        False,
        "1 PASS, 1 FAIL, 0 INFO, 2 SKIP: the server accepted a state it should have refused\n"
        "FAIL   single bits flipped: malleable. Evidence: 3 of 32 accepted\\x1b[2J\n"
        "SKIP (not tested): JWT re-signed, alg none; state used after expiry",
    )


def test_a_report_shows_neither_the_headers_nor_the_environment_of_its_target() -> None:
    target = probe.Target(
        url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer s3cret"}, env={"TOKEN": "s3cret"}
    )
    report = probe.Report(target)
    assert (report.table(), report.to_json()["target"]) == (
        "requeststate probe: streamable HTTP http://127.0.0.1:1/mcp\n"
        f"{EMPTY_HEAD}\n\nCHECK  RESULT  DETAIL\n\n0 PASS, 0 FAIL, 0 INFO, 0 SKIP: no attempt was accepted\n"
        f"{VERDICT_SCOPE_WRAPPED}",
        {"transport": "streamable-http", "url": "http://127.0.0.1:1/mcp"},
    )


def test_the_table_says_what_a_pass_proves_and_what_not() -> None:
    assert probe.Report(probe.Target(command=("srv",))).table() == (
        f"requeststate probe: stdio: srv\n{EMPTY_HEAD}\n\nCHECK  RESULT  DETAIL\n\n"
        f"0 PASS, 0 FAIL, 0 INFO, 0 SKIP: no attempt was accepted\n{VERDICT_SCOPE_WRAPPED}"
    )


def test_a_fail_shows_its_flaw_before_its_evidence() -> None:
    report = probe.Report(probe.Target(command=("srv",)))
    report.checks = [
        probe.Check("expiry", "state used after expiry", "FAIL", "accepted 3 s after", "the flaw")
    ]
    assert (
        report.table().splitlines()[7]
        == "state used after expiry  FAIL    the flaw. Evidence: accepted 3 s after"
    )
    assert report.to_json()["checks"][0]["flaw"] == "the flaw"


def test_server_text_is_escaped_in_the_table() -> None:
    report = probe.Report(probe.Target(command=("srv",)), server="evil\x1b[2J", tool="t\x07")
    report.checks = [probe.Check("a", "a", "PASS", "refused: JSON-RPC -32602 \x1b]0;owned\x07")]
    assert report.table() == (
        "requeststate probe: stdio: srv\n"
        "server:    evil\\x1b[2J, protocol \n"
        "tool:      t\\x07 {}, asks for: (nothing: state only)\n"
        "state:     \n"
        "baseline:  \n\n"
        "CHECK  RESULT  DETAIL\n"
        "a      PASS    refused: JSON-RPC -32602 \\x1b]0;owned\\x07\n\n"
        f"1 PASS, 0 FAIL, 0 INFO, 0 SKIP: no attempt was accepted\n{VERDICT_SCOPE_WRAPPED}"
    )


def test_a_server_name_with_escapes_reaches_the_terminal_escaped() -> None:
    server = gallery.wizard_server("evil\x1b[31m")
    table = in_process(server).table()
    assert "server:    evil\\x1b[31m, protocol" in table
    assert "\x1b" not in table


def test_a_report_whose_only_fail_is_a_readable_state_says_nothing_was_accepted() -> None:
    # Before: "the server accepted a state it should have refused", though nothing was accepted.
    report = probe.Report(probe.Target(url="http://127.0.0.1:1/mcp"))
    report.checks = [probe.Check("tampered", "t", "PASS", ""), probe.Check("confidential", "c", "FAIL", "")]
    readable_only = (report.exit_code, report.headline())
    report.checks.append(probe.Check("replayed", "r", "FAIL", ""))
    assert readable_only == (
        1,
        "1 PASS, 1 FAIL, 0 INFO, 0 SKIP: no attempt was accepted, but the client can read the state",
    )
    assert (
        report.headline()
        == "1 PASS, 2 FAIL, 0 INFO, 0 SKIP: the server accepted a state it should have refused"
    )


def test_a_report_whose_only_fail_is_a_worker_refusing_anothers_state_says_it_was_refused() -> None:
    # Issue 43: a fleet with a key per worker read "the server accepted a state it should have
    # refused", where the one FAIL was a state refused by the other worker.
    report = probe.Report(probe.Target(url="http://127.0.0.1:1/mcp"))
    report.checks = [probe.Check("bit_flip", "b", "PASS", ""), probe.Check("fleet_shared", "s", "FAIL", "")]
    keys_per_worker = report.summary()
    report.checks.append(probe.Check("confidential", "c", "FAIL", ""))
    assert (keys_per_worker, report.headline()) == (
        "1 PASS, 1 FAIL, 0 INFO, 0 SKIP: no attempt was accepted, but a worker refused a state another "
        "worker minted\nFAIL   s: ",
        "1 PASS, 2 FAIL, 0 INFO, 0 SKIP: no attempt was accepted, but the client can read the state and "
        "a worker refused a state another worker minted",
    )


def test_what_one_address_covers_is_in_the_table_the_summary_and_the_json() -> None:
    # Issue 41 G: behind one address the replay row PASSed as if it spoke for the fleet; the report
    # says which workers its checks reached, wherever it is read.
    report = probe.Report(probe.Target(url="http://127.0.0.1:1/mcp"), coverage="one address\x1b[2J")
    report.checks = [probe.Check("replay", "r", "PASS", "")]
    assert (report.table().splitlines()[1], report.summary(), report.to_json()["coverage"]) == (
        "coverage:  one address\\x1b[2J",
        "1 PASS, 0 FAIL, 0 INFO, 0 SKIP: no attempt was accepted\ncoverage: one address\\x1b[2J",
        "one address\x1b[2J",
    )


def test_one_server_object_given_as_two_workers_is_refused_before_connecting() -> None:
    # A state redeemed on it, then "on another worker", itself, would be refused: fleet_replay PASSed.
    server = gallery.protected()
    with pytest.raises(
        probe.ProbeError, match=r"^the same MCPServer object is given twice: name each worker"
    ):
        in_process(server, workers=(probe.Target(server=server),))


def test_a_worker_that_does_not_start_is_named_not_reported_as_a_bug_in_the_probe() -> None:
    # Issue 41 G: a worker after the first that failed to connect ended in "a bug in the probe",
    # its ProbeError wrapped in the first connection's exception group, and no worker named.
    exits = probe.Target(command=(sys.executable, "-c", "pass"))
    with pytest.raises(
        probe.ProbeError, match=r"^could not connect to worker 2: it closed its stdout before"
    ):
        in_process(gallery.protected(), workers=(exits,))


def test_an_in_process_servers_refusal_lines_go_to_the_server_log_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Before: about 100 "requestState refused" lines of the server's logger reached stderr.
    log = io.StringIO()

    async def run() -> probe.Report:
        target = probe.Target(server=gallery.protected())
        return await probe.probe(target, server_log=log, timeout=60)

    anyio.run(run)
    refused = [line for line in log.getvalue().splitlines() if "requestState refused" in line]
    assert (len(refused) > 10, "requestState refused" in capsys.readouterr().err) == (True, False)
    assert logging.getLogger("requeststate").propagate is True
