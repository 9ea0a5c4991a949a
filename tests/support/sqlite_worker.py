"""A worker process with an SQLiteGuard on a file, driven one line at a time: a host's worker, for the tests.

``python -m tests.support.sqlite_worker PATH`` (with a lock timeout of 2 s: each commit waits for
the disk, several times, and four workers claiming at once queue on the file's lock), then, on
stdin, one command a line:
``claim ID MINTED EXPIRES_AT NOW`` answers ``True``, ``False`` or ``unavailable``; ``begin NOW``
answers the first second accepted. Each answer is one line on stdout.
"""

from __future__ import annotations

import sys

from requeststate import ClaimId, GuardUnavailable, InvalidToken
from requeststate.sqlite import SQLiteGuard


def main() -> None:
    guard = SQLiteGuard(sys.argv[1], clock=lambda: 0, timeout=2.0)
    for line in sys.stdin:
        command, *words = line.split()
        try:
            if command == "claim":
                token_id, minted, expires_at, now = words
                answer = str(guard.claim(ClaimId(token_id, int(minted)), int(expires_at), int(now)))
            else:
                answer = str(guard.begin(int(words[0])))
        except GuardUnavailable:
            answer = "unavailable"
        except InvalidToken as refused:
            answer = str(refused.reason)
        print(answer, flush=True)


if __name__ == "__main__":
    main()
