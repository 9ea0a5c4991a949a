"""Probing a server object in this process (the SDK's memory transport): no subprocess, no port."""

from __future__ import annotations

import io
import logging
from typing import Any

import anyio

from requeststate import probe


def in_process(server: object, **options: Any) -> probe.Report:
    """Probe ``server`` in memory with ``ProbeOptions(**options)``.

    The first round of each tool alone, unless ``max_rounds`` is given: most tests read the rows of
    the first state, and a later round's would only cost time.

    The server's logs are off meanwhile: the gallery's crashing handlers would render a traceback
    each (slowly), and the probe's report is what the tests read.
    """

    async def run() -> probe.Report:
        target = probe.Target(server=server)
        chosen = probe.ProbeOptions(**{"max_rounds": 1, **options})
        return await probe.probe(target, chosen, server_log=io.StringIO(), timeout=60)

    logger = logging.getLogger("mcp")
    saved = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        return anyio.run(run)
    finally:
        logger.setLevel(saved)
