"""``python -m scripts.nemesis --mcp``: the nemesis over real MCP flows, a fleet whose store and workers fail.

On each topology of scripts/nemesis/topologies.py (its context managers and store faults), a
fleet of protected workers (scripts/mcp_nemesis/fleet.py) behind one balancer address
(scripts/mcp_nemesis/relay.py) reaches the store through a relay the nemesis controls (not on a
cluster, whose client dials the nodes the cluster names, nor on an SQLite file); concurrent SDK
clients (scripts/mcp_nemesis/clients.py) run flows while a seeded nemesis injects, every few
seconds, one of: the store faults of scripts/nemesis/topologies.py; ``kill -9`` of a worker and its restart;
``SIGSTOP``/``SIGCONT`` of a worker; a rolling restart of every worker; a worker's clock stepped
(within the guard's ``clock_skew`` of the others); the store's link slowed, or cut then healed.
The checker (scripts/mcp_nemesis/checker.py) reads the history. Exit status 1 if it finds a double
redemption, cross-talk, a wrong code, or a fault after which no flow completed.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from requeststate import DEFAULT_CLOCK_SKEW
from scripts.mcp_nemesis import history as h
from scripts.mcp_nemesis.checker import Check
from scripts.mcp_nemesis.clients import RETRY_FOR, clients_process
from scripts.mcp_nemesis.fleet import START_SECONDS, Worker, running_fleet
from scripts.mcp_nemesis.relay import Relay, relays
from scripts.nemesis.topologies import FAULTS, SETUPS, Target
from scripts.nemesis.workers import OFFSET

CLIENTS = 8
FLEET_FAULTS = ("worker-kill", "worker-pause", "rolling-restart", "worker-clock")
LINK_FAULTS = ("link-delay", "link-drop")
STORE_TIMEOUT = 2.0
"""Seconds the fleet's Redis and PostgreSQL guards wait for their store (the defaults: 0.25 and 1). The
run saturates the machine itself (four workers, eight clients and the store on two cores): a claim
held back past the default by a starved worker answers -32603, rightly, yet after no fault the nemesis
injected, and the checker would count it wrong. Its faults last longer than this wait."""
QUIET_END = 10.0
"""Seconds without faults before the clients stop: each fault's resume is measured."""


def _through(relay: Relay, url: str) -> str:
    """``url`` with its host and port the relay's (its user, path and query kept)."""
    parts = urlsplit(url)
    user = parts.netloc.rpartition("@")[0]
    netloc = f"{user}@127.0.0.1:{relay.port}" if user else f"127.0.0.1:{relay.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def _guard_url(topology: str, target: Target, opened: Any) -> tuple[str, Relay | None]:
    """The fleet's ``REQUESTSTATE_GUARD``, through a relay where the store is one address."""
    if topology == "sqlite":
        # The terms of the nemesis's own claimer (kill-claimer), which claims on the same file.
        return f"{target.url}?clock_skew={DEFAULT_CLOCK_SKEW}", None
    if topology == "cluster":
        return _waiting(target.url), None
    relay = opened.start([urlsplit(target.url).port])
    return _waiting(_through(relay, target.url)), relay


def _waiting(url: str) -> str:
    """``url`` with the guard's timeout ``STORE_TIMEOUT``."""
    return f"{url}{'&' if '?' in url else '?'}timeout={STORE_TIMEOUT:g}"


def _fleet_fault(kind: str, workers: list[Worker], link: Relay | None, chance: random.Random) -> None:
    if kind == "worker-kill":
        victim = chance.choice(workers)
        victim.kill()
        time.sleep(chance.uniform(0.2, 1.0))
        victim.start()
        victim.wait_serving()
    elif kind == "worker-pause":
        victim = chance.choice(workers)
        victim.signal(signal.SIGSTOP)
        time.sleep(chance.uniform(0.5, 2.0))
        victim.signal(signal.SIGCONT)
    elif kind == "rolling-restart":
        for worker in workers:
            worker.stop()
            worker.start()
            worker.wait_serving()
    elif kind == "worker-clock":
        chance.choice(workers).step_clock(chance.uniform(-OFFSET, OFFSET))
    elif kind == "link-delay":
        assert link is not None
        link.delay = chance.uniform(0.05, 0.5)
        time.sleep(chance.uniform(1.0, 3.0))
        link.delay = 0.0
    elif kind == "link-drop":
        assert link is not None
        link.cut()
        time.sleep(chance.uniform(0.5, 2.0))
        link.heal()


def _hits(kind: str) -> str:
    if kind in LINK_FAULTS:
        return "link"
    return "worker" if kind in FLEET_FAULTS else "store"


def run(
    topology: str, seconds: float, workers: int, seed: int, say: Callable[[str], None]
) -> tuple[Check, float]:
    """One topology under the nemesis for ``seconds`` of clients; the checker on its history, and its end."""
    chance = random.Random(f"{seed}:mcp:{topology}")
    context = multiprocessing.get_context("spawn")
    with (
        SETUPS[topology]() as target,
        relays() as opened,
        tempfile.TemporaryDirectory(prefix="mcp-nemesis-") as directory,
    ):
        guard, link = _guard_url(topology, target, opened)
        with running_fleet(workers, guard, Path(directory)) as fleet:
            balancer = opened.start([worker.port for worker in fleet])
            out: Any = context.Queue()
            ready = context.Event()
            client_process = context.Process(
                target=clients_process,
                args=(
                    f"http://127.0.0.1:{balancer.port}/mcp",
                    [w.url for w in fleet],
                    CLIENTS,
                    seconds,
                    seed,
                    ready,
                    out,
                ),
                daemon=True,
            )
            client_process.start()
            # Faults only once flows run: a loss before the first claim would be noticed at it.
            if not ready.wait(START_SECONDS):
                raise RuntimeError(f"the clients did not start within {START_SECONDS} s")
            began = time.time()
            deadline = began + seconds
            kinds = FAULTS[topology] + FLEET_FAULTS + (LINK_FAULTS if link is not None else ())
            faults: list[h.FaultWindow] = []
            time.sleep(min(5.0, seconds / 4))  # the first flows run
            while time.time() + QUIET_END < deadline:
                kind = chance.choice(kinds)
                fault = h.FaultWindow(kind, _hits(kind), time.time(), 0.0)
                if fault.hits == "store":
                    fault.lost = target.inject[kind](chance)
                else:
                    _fleet_fault(kind, fleet, link, chance)
                fault.ended = time.time()
                faults.append(fault)
                took = fault.ended - fault.began
                say(f"  mcp {topology}: {kind} at +{fault.began - began:.1f} s ({took:.1f} s)")
                time.sleep(chance.uniform(2.0, 3.0 * DEFAULT_CLOCK_SKEW))
            attempts, flows = out.get(timeout=seconds + RETRY_FOR + 120)
            client_process.join(timeout=10)
    return Check(attempts, flows, faults), deadline


def main(topologies: list[str], seconds: float, workers: int, seed: int, json_path: str | None) -> int:
    """Run each topology; print the figures (and write them as JSON); 1 if any run broke a promise."""
    figures = []
    failed = False
    for topology in topologies:
        say(f"mcp nemesis: {topology}, {seconds:g} s, {workers} workers, {CLIENTS} clients, seed {seed}")
        check, until = run(topology, seconds, workers, seed, say)
        figures.append({"topology": topology, "seconds": seconds, **check.summary(until)})
        failed |= check.failed(until)
        print(json.dumps(figures[-1], indent=2), flush=True)
    if json_path:
        with open(json_path, "w") as out:
            json.dump(figures, out, indent=2)
    return 1 if failed else 0


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
