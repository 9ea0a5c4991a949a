"""What the probe found: the target, one line per check, the verdict, and how they print."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

Result: TypeAlias = Literal["PASS", "FAIL", "WARN", "INFO", "SKIP", "ERROR"]
"""PASS: refused as it should be (a JSON-RPC error or a re-elicit), or, for the key guess, no
common secret makes the MAC. FAIL: accepted what it should have refused; the row names the flaw
that proves. WARN: worth a look, proves nothing: a refusal only by a tool error result
(``isError``) or an internal error (-32603), which is also what a handler crashing on the
mutated state answers; another spelling of the same token accepted; a guessable key whose
forgeries were refused. INFO: worth knowing, not a failure. SKIP: not applicable to this
server, or it needs an option. ERROR: the check could not complete."""

RESULTS: Final[tuple[Result, ...]] = ("PASS", "FAIL", "WARN", "INFO", "SKIP", "ERROR")
EXIT_OK: Final = 0
EXIT_FAIL: Final = 1
EXIT_SETUP: Final = 2

VERDICT_SCOPE: Final = (
    "A PASS means the server refused that attempt (by a JSON-RPC error or a re-elicit), or that no "
    "secret tried makes its MAC: no more. It does not prove the state unforgeable: the probe has no "
    "key, knows common encodings and secrets, not every one, and edits a bounded sample of bytes and "
    "members. A FAIL names the flaw it proves. SKIP rows were not tested, WARN rows prove nothing."
)


def escape(text: str) -> str:
    """``text`` safe for a terminal: control and other unprintable characters as escapes.

    Server-provided text (names, messages, logs) reaches the table through this, so a
    server cannot move the cursor, recolour or rewrite the report (terminal escape injection).
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


@dataclass(frozen=True)
class Target:
    """Where the server is: a command to spawn over stdio, a streamable HTTP URL, or an in-process server.

    ``headers`` go with every HTTP request (``--header``); ``env`` is added to the spawned
    command's environment (``--env2`` builds a second identity that way). ``server`` is an
    ``mcp`` ``Server`` or ``MCPServer`` object, or a ``fastmcp`` ``FastMCP`` (>= 4.1: the SDK
    ``Server`` it serves through, its lifespan included), connected in memory (the SDK's test
    transport): probe your own server from its test suite.
    """

    command: Sequence[str] = ()
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    server: object | None = None

    def describe(self) -> str:
        """One line naming the server, without header or environment values (they may hold credentials)."""
        if self.url is not None:
            return f"streamable HTTP {self.url}"
        if self.server is not None:
            return f"in-process {type(self.server).__name__}"
        return "stdio: " + " ".join(self.command)

    def to_json(self) -> dict[str, Any]:
        """The target for the JSON report, without header or environment values."""
        if self.url is not None:
            return {"transport": "streamable-http", "url": self.url}
        if self.server is not None:
            return {"transport": "in-process"}
        return {"transport": "stdio", "command": list(self.command)}


MAX_TARGETS: Final = 16
"""The most tools, prompts and resources probed by default (``ProbeOptions.max_targets``)."""
MAX_ROUNDS: Final = 8
"""The most rounds of one flow walked and probed by default (``ProbeOptions.max_rounds``)."""
RACERS: Final = 8
"""The identical redemptions of one state sent at once by default (``ProbeOptions.racers``)."""


@dataclass(frozen=True)
class ProbeOptions:
    """How to probe: what to call, what to demand, and what the server's state should withstand.

    ``tools`` names the tools to probe and ``arguments`` their arguments (default: every tool,
    prompt and resource that answers input-required, up to ``max_targets``, with placeholder
    arguments). Every round of each is probed: a flow is walked to its end with placeholder
    answers, up to ``max_rounds`` rounds, and each round's state attacked.
    ``single_use`` and ``require_confidential`` turn a replay and a readable state from INFO
    into FAIL. ``ttl`` is the server's state lifetime in seconds, for the expiry check (the
    probe waits it out). ``second`` is the same server as another identity (other headers,
    another environment, or another in-process server object sharing the keys), for the
    other-user check. ``wordlists`` are files of secrets, one a line, that the key guess tries
    after its built-in list of common secrets. ``workers`` are the other workers of the
    deployment the target belongs to (their URLs, commands or server objects): a state minted
    by one is sent to the others, and every check crosses workers. Under ``single_use``, ``racers``
    identical redemptions of one state are sent at once (spread over the workers, when several):
    at most one may be accepted. ``exactly_once`` names tools that answer an identical retry of a
    round with the first call's answer (``requeststate.mcp``'s exactly-once tools); each is probed
    as ``tools`` are, and its final round retried identically (the same answer, or "in progress"),
    with other answers (refused), and ``racers`` times at once (one answer).
    """

    tools: tuple[str, ...] = ()
    arguments: dict[str, Any] | None = None
    single_use: bool = False
    require_confidential: bool = False
    ttl: float | None = None
    second: Target | None = None
    wordlists: tuple[Path, ...] = ()
    workers: tuple[Target, ...] = ()
    max_targets: int = MAX_TARGETS
    max_rounds: int = MAX_ROUNDS
    exactly_once: tuple[str, ...] = ()
    racers: int = RACERS

    def __post_init__(self) -> None:
        for name in ("max_targets", "max_rounds", "racers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, not {value!r}")


# The checks whose FAIL accepts nothing, and what the headline says of it.
_NOTHING_ACCEPTED: Final = {
    "confidential": "the client can read the state",
    "fleet_shared": "a worker refused a state another worker minted",
}
# The checks whose FAIL is of retries answered otherwise (run again, or refused), not of a state accepted.
_RETRIES: Final = frozenset({"exactly_once", "exactly_once_race"})


@dataclass(frozen=True)
class Check:
    """One line of the report: ``flaw`` is what a FAIL proves (empty otherwise), ``detail`` the evidence."""

    id: str
    name: str
    result: Result
    detail: str
    flaw: str = ""
    scope: str = ""  # the state attacked: ``tool book_table, round 2``
    seconds: float = 0.0  # how long the check took

    def text(self) -> str:
        """The detail as the table shows it: a FAIL's flaw first, then its evidence."""
        return f"{self.flaw}. Evidence: {self.detail}" if self.flaw else self.detail


@dataclass(frozen=True)
class Scope:
    """One state the probe found: a round of a tool, prompt or resource, or why it was left out."""

    name: str  # ``tool book_table, round 2``
    state: str  # what it looks like: ``v1e. token, 2 parts, 332 characters``
    baseline: str  # ``the unmodified state is accepted: ...``, or why its rows were not run
    probed: bool = True


@dataclass
class Report:
    """What the probe found; ``exit_code`` is 1 on any FAIL, 2 on an ERROR without a FAIL, else 0
    (``ok``)."""

    target: Target
    protocol: str = ""
    server: str = ""
    kind: str = "tool"
    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    asks: list[str] = field(default_factory=list)
    other_tool: str | None = None
    state: str = ""
    baseline: str = ""
    checks: list[Check] = field(default_factory=list)
    scopes: list[Scope] = field(default_factory=list)
    budget: str = ""
    workers: list[str] = field(default_factory=list)  # a deployment's workers, the target first
    coverage: str = ""  # behind one address: the checks reached only some workers, which and how many unknown

    def counts(self) -> dict[Result, int]:
        """How many checks ended in each result."""
        return {result: sum(check.result == result for check in self.checks) for result in RESULTS}

    @property
    def exit_code(self) -> int:
        """1 if any check FAILed, else 2 if any check could not complete, else 0."""
        counts = self.counts()
        if counts["FAIL"]:
            return EXIT_FAIL
        return EXIT_SETUP if counts["ERROR"] else EXIT_OK

    @property
    def ok(self) -> bool:
        """Whether nothing FAILed and every check completed (``exit_code`` 0): what a test asserts.

        WARN, INFO and SKIP rows do not make a report not ok: a WARN proves nothing and a SKIP was
        not tested. ``summary()`` names them, so ``assert report.ok, report.summary()`` says, when
        it fails, which rows FAILed and why, and what was left untested.
        """
        return self.exit_code == EXIT_OK

    def headline(self) -> str:
        """``8 PASS, 0 FAIL, 1 INFO, 1 SKIP``, then the verdict: the table's last word."""
        counts = self.counts()
        shown = [f"{counts[r]} {r}" for r in RESULTS if r not in ("WARN", "ERROR") or counts[r]]
        verdict = {
            EXIT_OK: "no attempt was accepted",
            EXIT_FAIL: "the server accepted a state it should have refused",
            EXIT_SETUP: "some checks could not complete",
        }[self.exit_code]
        failed = {check.id for check in self.checks if check.result == "FAIL"}
        if failed and failed <= _NOTHING_ACCEPTED.keys():
            said = [said for id_, said in _NOTHING_ACCEPTED.items() if id_ in failed]
            verdict = "no attempt was accepted, but " + " and ".join(said)
        if failed and failed <= _RETRIES:
            verdict = "identical retries of an exactly-once tool did not all get its first answer"
        if self.exit_code == EXIT_OK and counts["WARN"]:
            verdict += ", but WARN rows prove nothing: read them"
        return f"{', '.join(shown)}: {verdict}"

    def summary(self) -> str:
        """The headline, then a line per check that FAILed (its flaw and evidence) or ERRORed, and the
        rows WARNed and SKIPped by name: an assertion message that says what went wrong and what was
        not tested. A check that FAILed on several states is one line, naming each state, with the
        evidence from the first.

        Server-provided text is escaped, as in the table.
        """
        lines = [self.headline()]
        if self.coverage:
            lines.append(f"coverage: {escape(self.coverage)}")
        several = len(self.scopes) > 1
        found: dict[tuple[Result, str], list[Check]] = {}
        for check in self.checks:
            if check.result in ("FAIL", "ERROR"):
                found.setdefault((check.result, check.id), []).append(check)
        for (result, _), checks in found.items():
            scopes = f" ({'; '.join(check.scope for check in checks)})" if several else ""
            lines.append(f"{result:5}  {checks[0].name}{escape(scopes)}: {escape(checks[0].text())}")
        where: dict[str, list[str]] = {}
        for check in self.checks:
            if check.result == "WARN":
                where.setdefault(check.name, []).append(check.scope)
        warned = [f"{name} ({'; '.join(scopes)})" if several else name for name, scopes in where.items()]
        skipped = dict.fromkeys(check.name for check in self.checks if check.result == "SKIP")
        for result, label, names in (
            ("WARN", "proves nothing, read the row", warned),
            ("SKIP", "not tested", list(skipped)),
        ):
            if names:
                lines.append(f"{result} ({label}): {escape('; '.join(names))}")
        return "\n".join(lines)

    def table(self) -> str:
        """The human-readable report; every server-provided string is escaped."""
        arguments = json.dumps(self.arguments, ensure_ascii=True)
        asks = escape(", ".join(self.asks)) or "(nothing: state only)"
        lines = [f"requeststate probe: {escape(self.target.describe())}"]
        if self.workers:
            lines.append(f"workers:   {escape(', '.join(self.workers))}")
        if self.coverage:
            lines.append(f"coverage:  {escape(self.coverage)}")
        lines += [
            f"server:    {escape(self.server) or '(unnamed)'}, protocol {escape(self.protocol)}",
            f"{self.kind + ':':10} {escape(self.tool)} {arguments}, asks for: {asks}",
            f"state:     {escape(self.state)}",
            f"baseline:  {escape(self.baseline)}",
        ]
        if self.budget:
            lines.append(f"probed:    {escape(self.budget)}")
        width = max([len("CHECK"), *(len(check.name) for check in self.checks)])
        lines += ["", f"{'CHECK':{width}}  RESULT  DETAIL"]
        several = len(self.scopes) > 1
        for scope in self.scopes if several else [None]:
            if scope is not None:
                lines.append(f"-- {escape(scope.name)}: {escape(scope.state)}; {escape(scope.baseline)}")
            lines += [
                f"{check.name:{width}}  {check.result:6}  {escape(check.text())}"
                for check in self.checks
                if scope is None or check.scope == scope.name
            ]
        lines += ["", self.headline(), *textwrap.wrap(VERDICT_SCOPE, width=100)]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready document, for CI."""
        return {
            "target": self.target.to_json(),
            "server": self.server,
            "protocol": self.protocol,
            "tool": {"kind": self.kind, "name": self.tool, "arguments": self.arguments, "asks": self.asks},
            "other_tool": self.other_tool,
            "state": self.state,
            "baseline": self.baseline,
            "workers": self.workers,
            "coverage": self.coverage,
            "budget": self.budget,
            "scopes": [
                {"scope": s.name, "state": s.state, "baseline": s.baseline, "probed": s.probed}
                for s in self.scopes
            ],
            "checks": [
                {
                    "id": c.id,
                    "name": c.name,
                    "scope": c.scope,
                    "result": c.result,
                    "flaw": c.flaw,
                    "detail": c.detail,
                }
                for c in self.checks
            ],
            "summary": dict(self.counts()),
            "verdict_scope": VERDICT_SCOPE,
            "exit_code": self.exit_code,
        }
