"""A worker process with an SQLiteGuard on a file, driven one line at a time: a host's worker, for the tests.

``python -m tests.support.sqlite_worker PATH [TIMEOUT]``: TIMEOUT is the guard's lock timeout in
seconds, 0.25 by default (a test waits less on a file that every worker is reopening at once:
a file truncated under four workers took 173 s at 5 s). A race of workers passes a longer one:
on a loaded machine a worker holding the lock can be descheduled past 0.25 s, and the others'
claims then fail closed as unavailable, which is no answer about single use. Then, on stdin,
one command a line: ``claim ID EXPIRES_AT NOW`` answers ``True``, ``False`` or ``unavailable``;
``begin NOW`` answers the first second accepted. Each answer is one line on stdout.
"""

from __future__ import annotations

import sys

from requeststate import GuardUnavailable
from requeststate.sqlite import SQLiteGuard

LOCK_TIMEOUT = 0.25


def main() -> None:
    timeout = float(sys.argv[2]) if len(sys.argv) > 2 else LOCK_TIMEOUT
    guard = SQLiteGuard(sys.argv[1], clock=lambda: 0, timeout=timeout)
    for line in sys.stdin:
        command, *words = line.split()
        try:
            if command == "claim":
                answer = str(guard.claim(words[0], int(words[1]), int(words[2])))
            else:
                answer = str(guard.begin(int(words[0])))
        except GuardUnavailable:
            answer = "unavailable"
        print(answer, flush=True)


if __name__ == "__main__":
    main()
