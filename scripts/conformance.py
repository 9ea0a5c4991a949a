"""The official MCP conformance suite, and the probe, on servers nobody here wrote (``nox -s conformance``).

1. ``@modelcontextprotocol/conformance`` (pinned in ``tests/conformance/package.json``), every
   server scenario at 2026-07-28 (``--suite all --spec-version 2026-07-28``), against the
   python-sdk's everything-server (an ``MCPServer``) and FastMCP's conformance server, each
   as shipped and then under ``protect()`` in every mode, with and without a ``MemoryGuard``,
   and once with ``on_invalid="reelicit"`` (``CONFIGS``). A check that fails must be listed
   with its reason in ``tests/conformance/expected.toml``; one listed that passes is stale;
   and ``protect()`` must pass every check the server as shipped passes.
2. ``requeststate probe`` against those two servers as shipped, protected, and broken on
   purpose (the state plain JSON), and against a TypeScript SDK v2 server with and without
   its ``createRequestStateCodec``: each exit code and set of FAIL rows must be the one
   ``expected.toml`` records.

Node 22, npm and the suite come from the npm registry into ``build/`` (``scripts/node_tools.py``).
Each server runs in a process of its own on a free loopback port (``tests/conformance/serve.py``).
A summary goes to stdout and ``build/conformance/results.json``; exit 1 on anything unexpected.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from scripts import node_tools
from scripts.redis_servers import free_loopback_port

ROOT: Final = node_tools.ROOT
OUT: Final = node_tools.BUILD / "conformance"
EXPECTED: Final = ROOT / "tests" / "conformance" / "expected.toml"
SPEC_VERSION: Final = "2026-07-28"
SERVERS: Final = ("sdk", "fastmcp")
AS_SHIPPED: Final = "as-shipped"
CONFIGS: Final = (
    AS_SHIPPED,
    *(f"{mode}{guard}" for mode in ("signed", "encrypted", "xchacha") for guard in ("", "+guard")),
    "encrypted+guard+reelicit",
)
# Two servers and two suites at a time: the machines this runs on have 2 cores.
WORKERS: Final = 2
FAILED: Final = frozenset({"FAILURE", "WARNING"})  # what the suite's own baseline check counts as failing


@dataclass
class Run:
    server: str
    config: str
    # ("scenario:check-id", status), one per check reported: an id can recur within a scenario.
    checks: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, *statuses: str) -> int:
        return sum(status in statuses for _, status in self.checks)

    @property
    def failed(self) -> set[str]:
        return {check for check, status in self.checks if status in FAILED}

    @property
    def passed(self) -> set[str]:
        """The checks that passed every time they were reported."""
        return {check for check, status in self.checks if status == "SUCCESS"} - self.failed


@contextmanager
def serving(server: str, config: str, log: Path) -> Iterator[str]:
    """A conformance server in ``config``, in a process of its own; yields its URL."""
    port = free_loopback_port()
    with log.open("wb") as sink:
        process = subprocess.Popen(  # noqa: S603 (our own server)
            [sys.executable, "-m", "tests.conformance.serve", server, config, str(port)],
            cwd=ROOT,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None:
                    raise SystemExit(f"conformance: {server} {config} exited at start; see {log}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit(
                            f"conformance: {server} {config} never listened; see {log}"
                        ) from None
                    time.sleep(0.1)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _scenario(directory: str) -> str:
    # The suite names each scenario's folder "server-<scenario>-<ISO time>".
    return re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", directory).removeprefix("server-")


def conform(server: str, config: str, node: Path, suite: Path) -> Run:
    """One run of the whole suite against ``server`` in ``config``: each check's status."""
    name = f"{server}-{config}"
    report = OUT / "suite" / name
    shutil.rmtree(report, ignore_errors=True)
    started = time.monotonic()
    with serving(server, config, OUT / "logs" / f"{name}.server.log") as url:
        command = [
            node,
            suite,
            "server",
            "--url",
            url,
            "--suite",
            "all",
            "--spec-version",
            SPEC_VERSION,
            "-o",
            report,
        ]
        with (OUT / "logs" / f"{name}.suite.log").open("wb") as sink:
            # Its exit code says only that some check failed: which ones is read from its report.
            argv = [str(part) for part in command]
            subprocess.run(argv, stdout=sink, stderr=subprocess.STDOUT, check=False)  # noqa: S603 (the suite)
    run = Run(server, config, seconds=time.monotonic() - started)
    for checks in sorted(report.glob("*/checks.json")):
        scenario = _scenario(checks.parent.name)
        for check in json.loads(checks.read_text()):
            run.checks.append((f"{scenario}:{check['id']}", check["status"]))
    if not run.checks:
        raise SystemExit(f"conformance: no checks reported for {name}; see {OUT / 'logs'}")
    return run


def judge(runs: Sequence[Run], expected: dict[tuple[str, str], dict[str, str]]) -> list[str]:
    """Every way the runs differ from ``expected``, one line each; ``[]`` when they agree."""
    problems = []
    shipped = {run.server: run for run in runs if run.config == AS_SHIPPED}
    for run in runs:
        allowed = expected.get((run.server, run.config), {})
        where = f"{run.server} {run.config}"
        problems += [
            f"{where}: {check} failed, not expected" for check in sorted(run.failed - allowed.keys())
        ]
        problems += [
            f"{where}: {check} passed, listed as expected to fail (stale)"
            for check in sorted(allowed.keys() - run.failed)
        ]
        lost = shipped[run.server].passed - run.passed - run.failed - allowed.keys()
        problems += [f"{where}: {check} passes as shipped, not reported here" for check in sorted(lost)]
    return problems


def _expected_failures(table: dict[str, Any]) -> dict[tuple[str, str], dict[str, str]]:
    expected: dict[tuple[str, str], dict[str, str]] = {}
    for entry in table["expected_failure"]:
        expected.setdefault((entry["server"], entry["config"]), {})[entry["check"]] = entry["reason"]
    return expected


@dataclass
class Verdict:
    name: str
    exit_code: int
    fails: list[str]
    expected_exit: int
    expected_fails: list[str]
    finding: str
    seconds: float

    @property
    def as_expected(self) -> bool:
        return self.exit_code == self.expected_exit and self.fails == self.expected_fails


def probe(case: dict[str, Any], node: Path, project: Path) -> Verdict:
    """``requeststate probe --json`` against one server in one configuration."""
    command = [sys.executable, "-m", "requeststate", "probe", "--json", *case.get("flags", [])]
    started = time.monotonic()
    if case["server"] == "ts":
        command += ["--", str(node), str(project / "ts_server.mjs"), case["config"]]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)  # noqa: S603
    else:
        log = OUT / "logs" / f"probe-{case['server']}-{case['config']}.server.log"
        with serving(case["server"], case["config"], log) as url:
            command += ["--url", url]
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)  # noqa: S603
    seconds = time.monotonic() - started
    try:
        # Each check id once, whichever rounds and tools it FAILed on.
        fails = sorted(
            {check["id"] for check in json.loads(done.stdout)["checks"] if check["result"] == "FAIL"}
        )
    except (ValueError, KeyError):
        fails = [f"(no report: {done.stderr.strip()[-300:]})"]
    name = f"{case['server']} {case['config']}"
    return Verdict(name, done.returncode, fails, case["exit"], sorted(case["fail"]), case["finding"], seconds)


def main() -> int:
    started = time.monotonic()
    (OUT / "logs").mkdir(parents=True, exist_ok=True)
    project = node_tools.npm_project()
    node = node_tools.node()
    suite = project / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    table = tomllib.loads(EXPECTED.read_text())
    expected = _expected_failures(table)
    jobs = [(server, config) for server in SERVERS for config in CONFIGS]
    with ThreadPoolExecutor(WORKERS) as pool:
        runs = list(pool.map(lambda job: conform(job[0], job[1], node, suite), jobs))
        verdicts = list(pool.map(lambda case: probe(case, node, project), table["probe"]))
    problems = judge(runs, expected)
    problems += [
        f"probe {v.name}: exit {v.exit_code}, FAIL {v.fails}; "
        f"expected exit {v.expected_exit}, FAIL {v.expected_fails}"
        for v in verdicts
        if not v.as_expected
    ]

    print(f"\nconformance {SPEC_VERSION}, --suite all: checks passed / failed (expected failures)")
    print("| server | configuration | passed | failed | expected failures |")
    print("|---|---|---|---|---|")
    for run in runs:
        allowed = expected.get((run.server, run.config), {})
        reasons = "; ".join(f"`{check}`: {reason}" for check, reason in allowed.items()) or "none"
        counts = f"{run.count('SUCCESS')} | {run.count(*FAILED)}"
        print(f"| {run.server} | {run.config} | {counts} | {reasons} |")
    print("\nprobe: exit code, FAIL rows")
    for v in verdicts:
        fails = ", ".join(v.fails) or "none"
        print(f"- {v.name}: exit {v.exit_code}, FAIL {fails} ({v.seconds:.1f} s): {v.finding}")
    seconds = time.monotonic() - started
    print(f"\nconformance: {len(runs)} suite runs, {len(verdicts)} probes in {seconds:.0f} s")
    results = {
        "spec_version": SPEC_VERSION,
        "runs": [
            {"server": r.server, "config": r.config, "seconds": round(r.seconds, 1), "checks": r.checks}
            for r in runs
        ],
        "probes": [v.__dict__ for v in verdicts],
        "problems": problems,
        "seconds": round(seconds, 1),
    }
    (OUT / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    for problem in problems:
        print(f"conformance: UNEXPECTED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
