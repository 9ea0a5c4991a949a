"""A probed server's log: kept back while the probe runs, the SDK's and FastMCP's loggers quiet
meanwhile, and its last lines to explain a probe that could not finish.

The command line (``requeststate probe``) and the pytest fixture both run the probe this way.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final, TextIO

from ._report import escape

SERVER_LOG_LINES: Final = 20
"""The last lines of a server's log shown with an error: what it said before it failed."""
# The loggers of the servers the probe may run in process: each handler the probe crashes would log
# a traceback there (FastMCP's with a handler of its own, past pytest's capture).
_SERVER_LOGGERS: Final = ("mcp", "fastmcp")


@contextmanager
def kept_back() -> Iterator[TextIO]:
    """A temporary file for the server's log, with the SDK's and FastMCP's loggers silenced meanwhile:
    the probe reports what went wrong itself, without a server's tracebacks in its output."""
    loggers = [logging.getLogger(name) for name in _SERVER_LOGGERS]
    saved = [logger.level for logger in loggers]
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
        for logger in loggers:
            logger.setLevel(logging.CRITICAL + 1)  # their modules' loggers inherit the level
        try:
            yield log
        finally:
            for logger, level in zip(loggers, saved, strict=True):
                logger.setLevel(level)


def last_lines(log: TextIO) -> str:
    """``log``'s last lines under a heading, each escaped for a terminal; empty for an empty log."""
    log.seek(0)
    lines = log.read().splitlines()[-SERVER_LOG_LINES:]
    if not lines:
        return ""
    return "\nthe server's log (last lines):\n" + "\n".join(f"  | {escape(line)}" for line in lines)


@contextmanager
def logs_to(server_log: TextIO, *, in_process: bool) -> Iterator[None]:
    """For a server in this process, the ``requeststate`` logger's lines go to ``server_log`` alone."""
    if not in_process:
        yield
        return
    logger = logging.getLogger("requeststate")
    handler = logging.StreamHandler(server_log)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    saved = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.propagate = saved
        logger.removeHandler(handler)
