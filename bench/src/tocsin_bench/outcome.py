"""What a firing benchmark left in the database, read with plain SQL after the run: every
firing's lateness, states, lost reminders and repeated sends; and cheap progress counts."""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg

from tocsin_bench.stats import rate, spread

# Progress counts read the occurrences waiting (those of the run's minutes in `due` whose key
# `rings` does not hold: a range scan of due_pkey per lane and priority, a probe each; a read
# without the lane read the whole of `due`, the reminders `--among` saved too: 6.5 s of the
# database's time in a 1-in-100 run) and the partial indexes firings_queued and
# firings_sending, so polling them once the rings are out costs the database little — with
# the planner kept on them (_POLL_SETTINGS): right after the save its statistics are stale,
# and it chose parallel sequential scans, 150 ms of the database's CPU per poll.
_PG_UNFINISHED = """
SELECT (SELECT sum((
            SELECT count(*) FROM due AS d
            WHERE d.lane = lanes.lane AND d.rank = ranks.rank AND d.bucket BETWEEN $1 AND $2
              AND NOT EXISTS (
                  SELECT 1 FROM rings AS g
                  WHERE (g.due_at, g.reminder_id, g.version)
                      = (d.due_at, d.reminder_id, d.version)
                  OFFSET 0
              )
        ))::bigint
        FROM generate_series(0, 15) AS lanes (lane), generate_series(0, 1) AS ranks (rank)),
       (SELECT count(*) FROM firings WHERE state = 'sending'),
       (SELECT count(*) FROM firings WHERE state = 'queued')
"""
_POLL_SETTINGS = {"enable_seqscan": "off", "max_parallel_workers_per_gather": "0"}
_SQLITE_UNFINISHED = """
SELECT (SELECT count(*) FROM due AS d WHERE bucket BETWEEN ? AND ? AND NOT EXISTS (
            SELECT 1 FROM rings AS g
            WHERE (g.due_at, g.reminder_id, g.version) = (d.due_at, d.reminder_id, d.version)
        )),
       (SELECT count(*) FROM firings WHERE state = 'sending'),
       (SELECT count(*) FROM firings WHERE state = 'queued')
"""

# The run's firings: those due from $1 on (the rings `--history` wrote before it are older),
# a range of the firings' key (due second, reminder).
_PG_FIRINGS = """
SELECT extract(epoch FROM due_at)::float8, extract(epoch FROM created_at)::float8,
       extract(epoch FROM sent_at)::float8, state
FROM firings
WHERE due_second >= floor(extract(epoch FROM $1::timestamptz))::bigint AND due_at >= $1
"""
_SQLITE_FIRINGS = "SELECT due_at / 1e6, created_at / 1e6, sent_at / 1e6, state FROM firings"

# Reminders that never got a firing, but those still pending after the run's last bucket ($1:
# the reminders `--among` saved beside the burst, due days later). PostgreSQL answers this
# with one hash anti-join.
# SQLite has no index on firings.reminder_id, so the same query would scan every firing per
# reminder (quadratic: 100,000 of each took longer than the run); a firing's id is its
# reminder's id, a dot and the due instant (`tocsin.ids.firing_id`), so a range of the
# primary key finds a reminder's firings instead ('/' is the byte after '.').
_PG_LOST = """
SELECT count(*) FROM reminders AS r
WHERE NOT EXISTS (SELECT 1 FROM firings AS f WHERE f.reminder_id = r.id)
  AND NOT (r.status = 'pending' AND r.bucket > $1)
"""
_SQLITE_LOST = """
SELECT count(*) FROM reminders AS r
WHERE NOT EXISTS (SELECT 1 FROM firings AS f WHERE f.id > r.id || '.' AND f.id < r.id || '/')
  AND NOT (r.status = 'pending' AND r.bucket > ?)
"""
_REPEATED_SENDS = """
SELECT count(*) - count(DISTINCT firing_id) FROM attempts WHERE outcome = 'sent'
"""

# The row writes the rings made, from PostgreSQL's counts for the throw-away database: the
# updates of reminders (none by a claim since the occurrences moved to `due`), the
# occurrences the claims took from `due` and the rings they inserted, the firings and
# attempts written (the rows the tables hold: nothing but `due` is deleted during a run),
# the results' updates of firings (how many of the updates
# were HOT: no index entry written), and the inserts rolled back. `n_tup_ins` counts the rows
# a statement inserted before it failed too: an INSERT_FIRINGS batch that meets a ring
# recovery wrote meanwhile (its hold ran out) fails whole and is written again, so its rows
# before that ring count twice there; they cost WAL and dead rows, but are not a ring's
# writes (docs/benchmarks.md, "Row writes rolled back"). The save's inserts of reminders are
# not counted. A backend reports its counts when it goes idle or exits, so they are read
# once the workers have stopped, until two reads agree.
_PG_WRITES = """
SELECT coalesce(sum(n_tup_upd) FILTER (WHERE relname = 'reminders'), 0),
       coalesce(sum(n_tup_hot_upd) FILTER (WHERE relname = 'reminders'), 0),
       coalesce(sum(n_tup_del) FILTER (WHERE relname = 'due'), 0),
       coalesce(sum(n_tup_ins) FILTER (WHERE relname = 'rings'), 0),
       (SELECT count(*) FROM firings),
       coalesce(sum(n_tup_upd) FILTER (WHERE relname = 'firings'), 0),
       coalesce(sum(n_tup_hot_upd) FILTER (WHERE relname = 'firings'), 0),
       (SELECT count(*) FROM attempts),
       coalesce(sum(n_tup_ins) FILTER (WHERE relname = 'firings'), 0)
           - (SELECT count(*) FROM firings),
       coalesce(sum(n_tup_ins) FILTER (WHERE relname = 'attempts'), 0)
           - (SELECT count(*) FROM attempts)
FROM pg_stat_user_tables WHERE relname IN ('reminders', 'due', 'rings', 'firings', 'attempts')
"""
_WRITE_NAMES = (
    "reminders_updated",
    "reminders_hot",
    "due_deleted",
    "rings_inserted",
    "firings_inserted",
    "firings_updated",
    "firings_hot",
    "attempts_inserted",
    "firings_rolled_back",
    "attempts_rolled_back",
)


@dataclass(frozen=True)
class Unfinished:
    pending: int  # due reminders not claimed yet
    sending: int
    queued: int

    @property
    def total(self) -> int:
        return self.pending + self.sending + self.queued


# While rings are due, the progress bar goes by the firings written as the statistics count
# them (inserts reported by each session at most once a second): a count of what is left
# reads every entry of the partial indexes, dead ones too — the claimed rows' until vacuum —
# and in a million rings over a minute took 2.5 s of the server's time a poll, taken from
# the engine being measured (docs/benchmarks.md, "The packed minute, bisected").
_PG_WRITTEN = """
SELECT coalesce(sum(n_tup_ins), 0) FROM pg_stat_user_tables WHERE relname = 'firings'
"""


async def firings_written(url: str) -> int | None:
    """About how many firings were written so far (PostgreSQL's statistics); None on SQLite,
    whose exact count costs little."""
    if url.startswith("sqlite:"):
        return None
    connection = await asyncpg.connect(url)
    try:
        written: int = await connection.fetchval(_PG_WRITTEN)
    finally:
        await connection.close()
    return written


async def unfinished(url: str, buckets: tuple[int, int]) -> Unfinished:
    """What is still to do among the reminders due in the run's `buckets` (its first and last
    UTC epoch minute)."""
    if url.startswith("sqlite:"):
        with sqlite3.connect(_sqlite_path(url), timeout=30) as connection:
            row = connection.execute(_SQLITE_UNFINISHED, buckets).fetchone()
        return Unfinished(*row)
    connection = await asyncpg.connect(url, server_settings=_POLL_SETTINGS)
    try:
        record = await connection.fetchrow(_PG_UNFINISHED, *buckets)
    finally:
        await connection.close()
    assert record is not None
    return Unfinished(record[0], record[1], record[2])


async def read_outcome(
    url: str, last_bucket: int, *, since: datetime | None = None, history: int = 0
) -> dict[str, Any]:
    """Lateness (due→claimed, due→sent; seconds), rates, states, lost and repeated sends, of
    the reminders due by `last_bucket` (UTC epoch minute); on PostgreSQL, of the firings due
    from `since` on, the `history` firings written before the run (all due before it) apart."""
    if url.startswith("sqlite:"):
        with sqlite3.connect(_sqlite_path(url), timeout=30) as connection:
            rows = connection.execute(_SQLITE_FIRINGS).fetchall()
            lost = connection.execute(_SQLITE_LOST, (last_bucket,)).fetchone()[0]
            repeated = connection.execute(_REPEATED_SENDS).fetchone()[0]
    else:
        connection_pg = await asyncpg.connect(url)
        try:
            earliest = since or datetime.min.replace(tzinfo=UTC)
            rows = [tuple(r) for r in await connection_pg.fetch(_PG_FIRINGS, earliest)]
            lost = await connection_pg.fetchval(_PG_LOST, last_bucket)
            repeated = await connection_pg.fetchval(_REPEATED_SENDS)
            writes = await _row_writes(connection_pg)
            writes["firings_inserted"] -= history
        finally:
            await connection_pg.close()
        report = summarise(rows, lost=int(lost), repeated_sends=int(repeated))
        report["row_writes"] = _per_ring(writes, len(rows))
        return report
    return summarise(rows, lost=int(lost), repeated_sends=int(repeated))


async def _row_writes(connection: asyncpg.Connection) -> dict[str, int]:
    """The rings' row writes by kind, once the counts stopped moving (at most ~5 s)."""
    last: dict[str, int] = {}
    for _ in range(10):
        row = await connection.fetchrow(_PG_WRITES)
        assert row is not None
        counts = {name: int(value) for name, value in zip(_WRITE_NAMES, row, strict=True)}
        if counts == last:
            break
        last = counts
        await asyncio.sleep(0.5)
    return last


def _per_ring(writes: dict[str, int], firings: int) -> dict[str, Any]:
    """The counts, with their sum per firing (HOT updates are among the updates; inserts
    rolled back are not a ring's writes, and are reported beside it)."""
    total = (
        writes["reminders_updated"]
        + writes["due_deleted"]
        + writes["rings_inserted"]
        + writes["firings_inserted"]
        + writes["firings_updated"]
        + writes["attempts_inserted"]
    )
    return {**writes, "per_ring": round(total / firings, 3) if firings else None}


def summarise(rows: list[tuple[Any, ...]], *, lost: int, repeated_sends: int) -> dict[str, Any]:
    """The report of a run from (due, claimed, sent, state) epoch-second rows."""
    states: dict[str, int] = {}
    claimed: list[float] = []
    sent: list[float] = []
    for due, created, sent_at, state in rows:
        states[state] = states.get(state, 0) + 1
        claimed.append(created - due)
        if sent_at is not None:
            sent.append(sent_at - due)
    first_due = min((row[0] for row in rows), default=0.0)
    last_claim = max((row[1] for row in rows), default=0.0)
    first_claim = min((row[1] for row in rows), default=0.0)
    last_sent = max((row[2] for row in rows if row[2] is not None), default=0.0)
    return {
        "firings": len(rows),
        "states": states,
        "lost": lost,
        "repeated_sends": repeated_sends,
        "due_to_claimed_s": spread(claimed),
        "due_to_sent_s": spread(sent),
        # Firings per second from the first due instant to the last claim / send: for a
        # burst in one second this is the engine's throughput.
        "claimed_per_s": rate(len(rows), last_claim - first_due),
        "claim_window_per_s": rate(len(rows), last_claim - first_claim),
        "sent_per_s": rate(len(sent), last_sent - first_due),
    }


def _sqlite_path(url: str) -> str:
    return url.removeprefix("sqlite:///")
