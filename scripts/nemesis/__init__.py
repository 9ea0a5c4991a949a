"""A nemesis test of single use, in the manner of Jepsen: redeem tokens from a fleet while its store fails.

``python -m scripts.nemesis`` starts real redis-servers on loopback (scripts/redis_servers.py) in
three topologies (one server; a master and its replica, behind an address a failover moves; a
cluster of three masters, each with a replica), a fourth, one SQLite file on one host, a
fifth, a PostgreSQL primary (scripts/postgres_servers.py), and two more, a PostgreSQL primary
and its streaming standby behind an address a promotion moves (``postgres-standby``:
asynchronous replication; ``postgres-sync-standby``: the standby synchronous,
``synchronous_standby_names = '*'`` and ``synchronous_commit = on``), and, on each, for a
bounded time (``--seconds``, 40 by default):

- worker processes, each with its own guard (``RedisGuard``, ``SQLiteGuard``, ``PostgresGuard``)
  and its own clock offset (within
  ``clock_skew`` of each other), mint tokens on their clocks and redeem them: each token once
  as it is minted (or, for one token in five, 0.5 to 3 s later, as a client's next call carries
  it: the tokens in flight when a fault strikes), and again later (its own worker's replays, and
  other workers', shared);
- a nemesis, seeded, injects a fault at random every few seconds: ``kill -9`` and a restart
  with or without the snapshot taken earlier (an RDB restore), ``FLUSHALL``, an eviction burst
  (``allkeys-random`` under a small ``maxmemory``), ``SIGSTOP``/``SIGCONT`` of Redis, a
  failover, a failback (the master made a replica of a replica detached earlier, then
  promoted back), a ``SWAPDB`` with another deployment's set in db 1, a step of one worker's
  clock, a paused verifier (a worker stopped right after it read its clock, resumed after a
  ``FLUSHALL`` as the first to claim, with that stale clock), and a verifier whose settings
  differ from the namespace's (another leeway or clock_skew), every claim of which is refused
  while the namespace holds a live claim (an SQLite namespace with none takes its terms, as a
  loss: docs/sqlite-guard.md); on the SQLite file: the file deleted, replaced by a new one, or
  truncated under the running workers, and a process killed (``kill -9``) in the middle of its claims;
  on PostgreSQL: the primary killed (``immediate``, as a crash) and restarted, its claims table
  dropped, and the primary paused (``SIGSTOP`` of every process); on a primary and its standby,
  first each of their own faults once, then at random: the primary killed (``immediate``) and the
  standby promoted, the workers' address moved to it, and a new standby made of it; and a
  restore: a base backup taken, claims made after it, the primary and its standby stopped, and
  the backup restored with archive recovery to its end (point-in-time recovery: a new
  timeline). A backup started without archive recovery is the same memory rolled back, which
  the guard cannot see and which would accept its replays (docs/postgres-guard.md, "Not
  covered"): not injected;
- every redemption is recorded in a history, and a checker counts what single use forbids: a
  token accepted twice. It reports how long after each loss a flow started after it succeeds
  again, the share of first redemptions refused as collateral, and how many claims of the
  mismatched verifier were accepted; and per kind of fault: the resume times, the tokens in
  flight at it (minted before it struck, first redeemed after) and how many of them were
  refused, and the replays after it of tokens accepted before it.

Exit status 1 if any token was accepted twice. ``--json FILE`` writes the figures.

The package, one job a module: ``topologies`` (the stores it runs and the faults each takes),
``workers`` (a worker process: mint, redeem, record), ``history`` (what a redemption and a fault
record), ``run`` (one topology under the nemesis), ``checker`` (what the history shows, as
tables), ``cli`` (``python -m scripts.nemesis``). scripts/mcp_nemesis/ runs the same topologies
over real MCP flows (``--mcp``).
"""
