"""A codec's options: one declaration, checked once by name, type and range, with one int check."""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import requeststate as rs
import requeststate._options
from tests.conftest import NOW, SECRET
from tests.support.reference import b64

RING = rs.KeyRing(SECRET)
OPTION_NAMES = "clock, guard, lease, leeway, max_token_bytes, metrics, mode, ttl"


def codec_with(**options: Any) -> rs.Codec:
    return rs.Codec(RING, mode="signed", **options)


# --- names ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: rs.Codec(RING, mode="signed", tll=60),  # type: ignore[call-arg]
        lambda: rs.encode("x", RING, mode="signed", tll=60),  # type: ignore[call-arg]
        lambda: rs.verify("x", RING, mode="signed", tll=60),  # type: ignore[call-arg]
        lambda: rs.decode("x", RING, mode="signed", tll=60),  # type: ignore[call-arg]
        lambda: rs.Codec.from_env(environ={"REQUESTSTATE_KEYS": b64(SECRET)}, tll=60),  # type: ignore[call-arg]
    ],
    ids=["Codec", "encode", "verify", "decode", "Codec.from_env"],
)
def test_a_misspelt_option_is_refused_listing_the_options(build: Callable[[], object]) -> None:
    # The type checker catches it; at run time **options would swallow it, and
    # the codec would run on the default.
    with pytest.raises(TypeError, match=rf"^unexpected option\(s\) tll; the options are {OPTION_NAMES}$"):
        build()


def test_every_unknown_option_is_named_in_order() -> None:
    with pytest.raises(TypeError, match=r"^unexpected option\(s\) gaurd, tll; the options are "):
        codec_with(tll=60, gaurd=None)


# --- the one int check: bool is no int anywhere ---------------------------------------------------

INT_OPTIONS: list[tuple[str, Callable[[object], object]]] = [
    ("ttl", lambda value: codec_with(ttl=value)),
    ("leeway", lambda value: codec_with(leeway=value)),
    ("max_token_bytes", lambda value: codec_with(max_token_bytes=value)),
    ("now", lambda value: codec_with().encode("x", now=value)),  # type: ignore[arg-type]
    ("now", lambda value: codec_with().verify("x", now=value)),  # type: ignore[arg-type]
    ("now", lambda value: codec_with().decode("x", now=value)),  # type: ignore[arg-type]
    ("aesgcm_limit", lambda value: rs.KeyRing(SECRET, aesgcm_limit=value)),  # type: ignore[arg-type]
    ("capacity", lambda value: rs.MemoryGuard(value)),  # type: ignore[arg-type]
]
INT_OPTION_IDS = ["ttl", "leeway", "max_token_bytes", "encode now", "verify now", "decode now"]
INT_OPTION_IDS += ["aesgcm_limit", "capacity"]


@pytest.mark.parametrize(("name", "build"), INT_OPTIONS, ids=INT_OPTION_IDS)
@pytest.mark.parametrize("value", [True, False], ids=str)
def test_a_bool_is_refused_wherever_an_int_is_asked_for(
    name: str, build: Callable[[object], object], value: bool
) -> None:
    # True == 1: accepted, a ttl=True would mint one-second tokens.
    with pytest.raises(TypeError, match=rf"^{name} must be an int, not bool$"):
        build(value)


@pytest.mark.parametrize(("name", "build"), INT_OPTIONS, ids=INT_OPTION_IDS)
@pytest.mark.parametrize(("value", "type_name"), [(1.0, "float"), ("1", "str"), ([1], "list")])
def test_a_value_of_another_type_is_refused_naming_it(
    name: str, build: Callable[[object], object], value: object, type_name: str
) -> None:
    with pytest.raises(TypeError, match=rf"^{name} must be an int, not {type_name}$"):
        build(value)


@pytest.mark.parametrize(
    ("name", "build", "value", "expected_range"),
    [
        ("ttl", INT_OPTIONS[0][1], 0, "1 to 86400"),
        ("ttl", INT_OPTIONS[0][1], rs.MAX_TTL + 1, "1 to 86400"),
        ("leeway", INT_OPTIONS[1][1], -1, "0 to 86400"),
        ("leeway", INT_OPTIONS[1][1], rs.MAX_TTL + 1, "0 to 86400"),
        ("max_token_bytes", INT_OPTIONS[2][1], 0, "1 to 2\\*\\*63-1"),
        ("now", INT_OPTIONS[3][1], 2**63, "-2\\*\\*63 to 2\\*\\*63-1"),
        ("now", INT_OPTIONS[5][1], -(2**63) - 1, "-2\\*\\*63 to 2\\*\\*63-1"),
        ("aesgcm_limit", INT_OPTIONS[6][1], 0, "1 to 4294967296"),
        ("aesgcm_limit", INT_OPTIONS[6][1], 2**32 + 1, "1 to 4294967296"),
        ("capacity", INT_OPTIONS[7][1], 0, "1 to 2\\*\\*63-1"),
    ],
    ids=[
        "ttl 0",
        "ttl past MAX_TTL",
        "negative leeway",
        "leeway past MAX_TTL",
        "max_token_bytes 0",
        "now past int64",
        "now before int64",
        "aesgcm_limit 0",
        "aesgcm_limit past the NIST limit",
        "capacity 0",
    ],
)
def test_an_int_out_of_range_is_refused_stating_the_range(
    name: str, build: Callable[[object], object], value: int, expected_range: str
) -> None:
    with pytest.raises(ValueError, match=rf"^{name} must be an int from {expected_range}, got {value}$"):
        build(value)


# --- the other options ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"guard": rs.MemoryGuard},
            r"^guard must be an instance, such as MemoryGuard\(\), not the class itself$",
        ),
        (
            {"guard": object()},
            r"^guard must have a claim\(claimed, expires_at, now\) method; a object has none$",
        ),
        (
            {"guard": type("NoClaim", (), {"claim": 5})()},
            r"^guard must have a claim\(.*; a NoClaim has none$",
        ),
        ({"clock": 5}, r"^clock must be a callable returning unix seconds, not int$"),
    ],
    ids=["guard class", "guard without claim", "guard claim not callable", "clock"],
)
def test_a_guard_or_clock_that_cannot_serve_is_refused_at_construction(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        codec_with(**options)


class LearningGuard:
    """A guard that learns its codecs' leeway and refuses another, as every guard here does."""

    def __init__(self) -> None:
        self.learned: list[int] = []

    def claim(self, claimed: rs.ClaimId, expires_at: int, now: int, /) -> bool:
        return True

    def learn_leeway(self, leeway: int) -> None:
        if self.learned and leeway != self.learned[0]:
            raise ValueError(f"this guard serves codecs with leeway={self.learned[0]}, not {leeway}")
        self.learned.append(leeway)


def test_a_codec_tells_its_guard_its_leeway() -> None:
    guard = LearningGuard()
    codec_with(ttl=331, leeway=30, guard=guard)
    assert guard.learned == [30]


def test_a_guard_that_cannot_serve_the_codecs_leeway_refuses_it_at_construction() -> None:
    # Before: the mismatch showed only at the first claim, as guard_unavailable on every token.
    guard = LearningGuard()
    codec_with(leeway=30, guard=guard)
    with pytest.raises(ValueError, match=r"^this guard serves codecs with leeway=30, not 60$"):
        codec_with(leeway=60, guard=guard)


def test_options_are_read_back_as_given() -> None:
    guard = rs.MemoryGuard()
    codec = codec_with(ttl=60, leeway=5, max_token_bytes=100, guard=guard)
    assert (codec.ttl, codec.leeway, codec.max_token_bytes, codec.guard) == (60, 5, 100, guard)


def test_a_token_lives_five_minutes_by_default() -> None:
    codec = codec_with()
    token = codec.encode("x", now=NOW)
    assert codec.decode(token, now=NOW + 300) == "x"
    with pytest.raises(rs.InvalidToken, match=r"^expired$"):
        codec.verify(token, now=NOW + 301)


def test_a_token_may_live_a_day() -> None:
    codec = codec_with(ttl=rs.MAX_TTL)
    token = codec.encode("x", now=NOW)
    assert codec.decode(token, now=NOW + 86_400) == "x"
    with pytest.raises(rs.InvalidToken, match=r"^expired$"):
        codec.verify(token, now=NOW + 86_401)


def test_no_leeway_by_default() -> None:
    codec = codec_with(ttl=10)
    with pytest.raises(rs.InvalidToken, match=r"^expired$"):
        codec.verify(codec.encode("x", now=NOW), now=NOW + 11)


def test_the_default_size_limit_is_128_kib() -> None:
    # Refused as too large only past 131,072 characters; below, for what it is.
    codec = codec_with()
    with pytest.raises(rs.InvalidToken, match=r"^malformed$"):
        codec.verify("v1." + "A" * (128 * 1024 - 3))
    with pytest.raises(rs.InvalidToken, match=r"^too_large$"):
        codec.verify("v1." + "A" * (128 * 1024 - 2))


def test_a_clock_reading_is_taken_in_whole_seconds() -> None:
    # A float clock: 0.9 s past the last valid second is still that second.
    codec = codec_with(ttl=10, clock=lambda: NOW + 10.9)
    token = codec.encode("x", now=NOW)
    assert codec.decode(token) == "x"


# --- the documented defaults are the declared ones ------------------------------------------------


def option_docstrings() -> dict[str, str]:
    """Each option of CodecOptions and its docstring, read from the one declaration's source."""
    tree = ast.parse(Path(requeststate._options.__file__).read_text(encoding="utf-8"))
    declaration = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "CodecOptions")
    found: dict[str, str] = {}
    for annotation, text in itertools.pairwise(declaration.body):
        if isinstance(annotation, ast.AnnAssign) and isinstance(annotation.target, ast.Name):
            assert isinstance(text, ast.Expr)
            assert isinstance(text.value, ast.Constant)
            found[annotation.target.id] = " ".join(str(text.value.value).split())
    return found


DECLARED = {
    "mode": f'``"{rs.DEFAULT_MODE.value}"`` (the default',
    "ttl": f"default {rs.DEFAULT_TTL}",
    "leeway": f"default {rs.DEFAULT_LEEWAY}",
    "max_token_bytes": f"default {rs.DEFAULT_MAX_TOKEN_BYTES} ({rs.DEFAULT_MAX_TOKEN_BYTES // 1024} KiB)",
    "guard": "Default ``None``",
    "clock": "when ``None``, the default",
    "lease": f"default {rs.DEFAULT_LEASE}",
    "metrics": "by default the meter ``requeststate`` of the global provider",
}


@pytest.mark.parametrize("option", sorted(DECLARED))
def test_each_options_docstring_states_the_declared_default(option: str) -> None:
    assert DECLARED[option] in option_docstrings()[option]


def test_every_option_has_its_default_documented() -> None:
    assert set(option_docstrings()) == set(DECLARED)


KIB = str(rs.DEFAULT_MAX_TOKEN_BYTES // 1024)
DOCUMENTED = [
    ("docs/quickstart.md", r"`mode` \(default `(\w+)`\)", rs.DEFAULT_MODE.value),
    ("docs/quickstart.md", r"`ttl` \(default (\d+) s", str(rs.DEFAULT_TTL)),
    (
        "docs/quickstart.md",
        r"`leeway` \(clock skew tolerated after expiry, default (\d+)",
        str(rs.DEFAULT_LEEWAY),
    ),
    (
        "docs/quickstart.md",
        r"`max_token_bytes` \(default (\d+) KiB\)",
        str(rs.DEFAULT_MAX_TOKEN_BYTES // 1024),
    ),
    (
        "docs/wire-format.md",
        r"`max_token_bytes` \((\d+) KiB by default\)",
        str(rs.DEFAULT_MAX_TOKEN_BYTES // 1024),
    ),
    ("docs/wire-format.md", r"leeway defaults to (\d+)", str(rs.DEFAULT_LEEWAY)),
    ("docs/security.md", r"the default TTL is (\d+) s", str(rs.DEFAULT_TTL)),
    ("docs/cli.md", r"`--ttl` is 1 to \d+ seconds \(default (\d+)\)", str(rs.DEFAULT_TTL)),
    ("docs/cli.md", r"`--mode` is `signed`, `(\w+)` \(the default\)", rs.DEFAULT_MODE.value),
    ("docs/deployment.md", r"`mode=` of the call, else `(\w+)`", rs.DEFAULT_MODE.value),
    ("docs/mcp.md", r"\| `mode` \| `\"(\w+)\"` \|", rs.DEFAULT_MODE.value),
    ("docs/mcp.md", r"\| `ttl` \| `(\d+)` \|", str(rs.DEFAULT_TTL)),
    ("docs/mcp.md", r"\| `leeway` \| `(\d+)` \|", str(rs.DEFAULT_LEEWAY)),
    ("docs/mcp.md", r"\| `max_token_bytes` \| (\d+) KiB \|", KIB),
]


@pytest.mark.parametrize(("page", "pattern", "declared"), DOCUMENTED, ids=lambda value: str(value)[:40])
def test_the_docs_state_the_declared_defaults(page: str, pattern: str, declared: str) -> None:
    text = " ".join((Path(__file__).parent.parent / page).read_text(encoding="utf-8").split())
    assert re.findall(pattern, text) == [declared]
