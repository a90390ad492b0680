"""`bench layout`: what a ring costs by where its writes land, on a table of long standing.

Two layouts ring the same kind of rows, side by side in one database, after a checkpoint:

- **Tocsin** (`in place` in the report) — the service's statements as they are
  (`queries.CLAIM`, `INSERT_FIRINGS`): the claim takes the occurrence from `due` and inserts
  its ring into `rings` (both keyed in due order) and leaves the reminder's row alone; the
  firing, written with the first try's outcome, is keyed by `<reminder id>.<due second>`;
- **in due order** — the layout of docs/architecture.md, "Rings in due order": the claim
  inserts the ring, keyed (due instant, reminder, version), which is also what decides
  between it and an edit (both insert that key; the first wins); the reminder's row is only
  read; a series' next occurrence is appended to `due`, keyed in due order; the first try's
  outcome updates the ring in place (HOT: the table keeps room on its pages, and no index
  covers what the outcome changes).

The reminders are saved as people save them, over months: the rows due in the measured
second lie 1 in `among` over the table's pages (each set of rows a pass rings is 1 in
`among`), and a CHECKPOINT before each pass makes every page one written before the minute,
as in a table of long standing. Each pass claims and records its rows in the engine's batch
(1,000 rows a statement, each a transaction, synchronous commit), one connection, and
reports a ring's WAL (`pg_stat_wal`), full-page images and the CPU of the session that ran
it (its backend's `/proc/<pid>/stat`) and of the whole server. One-offs and weekly series
are rung apart; a series ring's statements also append its next occurrence.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from tocsin.store import batches
from tocsin.store.base import FEED_WAITING
from tocsin.store.batches import json_rows
from tocsin.store.postgres.queries import CLAIM, INSERT_FIRINGS, RING_CONTENTS
from tocsin_bench import costs, waldump
from tocsin_bench.databases import migrated_store, throwaway
from tocsin_bench.limit import claim_batch, sent_firings
from tocsin_bench.progress import note
from tocsin_bench.stats import rate

SETS = ("once-in-place", "once-due-order", "weekly-in-place", "weekly-due-order")
BATCH = 1000
_SENDER = "layout"
_WEEK = timedelta(days=7)

# Every reminder of the table, saved in creation order (ids rise with it, as Tocsin's do):
# the rows of the measured second (set n of SETS: g % among = n) lie 1 in `among`; the
# others are due in 2-30 days, as people's reminders are. Owners and texts vary as people's
# do, so the row is as wide as a real one and reminders_owner is as scattered.
_FILL = """
WITH saved AS (
INSERT INTO reminders (
    due_at, created_at, updated_at, bucket, freshness, version, shard, id, owner, status,
    channel, text, zone, anchor, rule, at, repeat, source
)
SELECT due, $2, $2, (extract(epoch FROM due)::bigint / 60)::integer, 600, 1,
    (g % 1024)::smallint, 'r' || lpad(to_hex(g), 15, '0'),
    'owner-' || ((g::bigint * 2654435761) % 1000003), 'pending', 'webhook',
    left('Take the blood pressure pills, then water the plants on the balcony', 20 + g % 41),
    'Europe/Berlin', to_char(due AT TIME ZONE 'Europe/Berlin', 'YYYY-MM-DD"T"HH24:MI:SS'),
    CASE WHEN set IN (2, 3) OR g % 2 = 0 THEN 'FREQ=WEEKLY' END,
    CASE WHEN NOT (set IN (2, 3) OR g % 2 = 0) THEN 'once' END,
    CASE WHEN set IN (2, 3) OR g % 2 = 0 THEN 'every week' END,
    CASE WHEN set < 4 THEN 'set-' || set END
FROM generate_series(1, $3::integer) AS g,
LATERAL (SELECT CASE WHEN g % $4::integer < 4 THEN g % $4::integer ELSE 4 END AS set) AS s,
LATERAL (
    SELECT CASE WHEN set < 4 THEN $1::timestamptz
        ELSE $1::timestamptz
            + make_interval(days => (2 + (g::bigint * 7919) % 28)::integer, secs => g % 86400)
    END AS due
) AS d
RETURNING shard, bucket, due_at, id, version
)
INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard)
SELECT shard / 64, 0, bucket, due_at, id, version, shard FROM saved
"""

# The due-order layout's own tables: what is due (an occurrence a row, appended in due
# order) and what rang (a ring a row, keyed by its due instant first), and the batches
# claimed, by which recovery finds a ring whose sender never recorded it.
_TABLES = """
CREATE SCHEMA layout;
CREATE TABLE layout.due (
    bucket integer NOT NULL,
    due_at timestamptz NOT NULL,
    reminder_id text COLLATE "C" NOT NULL,
    version integer NOT NULL,
    shard smallint NOT NULL,
    priority smallint,
    prev_due timestamptz
);
CREATE INDEX due_order ON layout.due
    ((shard / 64), coalesce(priority::integer, 0), bucket, due_at, reminder_id, shard);
CREATE TABLE layout.rings (
    due_at timestamptz NOT NULL,
    reminder_id text COLLATE "C" NOT NULL,
    version integer NOT NULL,
    state text NOT NULL,
    channel text NOT NULL,
    deadline timestamptz NOT NULL,
    claimed_at timestamptz NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    sent_at timestamptz,
    sender text,
    provider_id text,
    last_error text,
    sent_to text,
    next_due timestamptz,
    prev_due timestamptz,
    snoozed_by text,
    priority smallint,
    CONSTRAINT rings_pkey PRIMARY KEY (due_at, reminder_id, version)
) WITH (fillfactor = 45);
CREATE TABLE layout.claims (
    hold_until timestamptz NOT NULL,
    sender text NOT NULL,
    due_ats timestamptz[] NOT NULL,
    reminder_ids text[] NOT NULL,
    versions integer[] NOT NULL
);
CREATE INDEX claims_hold ON layout.claims (hold_until);
INSERT INTO layout.due (bucket, due_at, reminder_id, version, shard, priority)
SELECT bucket, due_at, id, version, shard, priority FROM reminders ORDER BY created_at, id;
ANALYZE
"""

_LEASE = """
INSERT INTO leases (parts, part, holder, expires_at, epoch)
VALUES (1, 0, $1, now() + interval '1 hour', 1)
"""

# A set's occurrences as a part's loader reads them: in due order (the due-order layout's
# `due`; the in-place rows are read by id, which is how the engine sorts a claim batch).
_SET_IN_PLACE = "SELECT id FROM reminders WHERE source = $1 ORDER BY id"
_SET_DUE_ORDER = """
SELECT d.reminder_id FROM layout.due AS d JOIN reminders AS r ON r.id = d.reminder_id
WHERE r.source = $1 ORDER BY d.due_at, d.reminder_id
"""

# The claim of the due-order layout. `rung` inserts each ring while its reminder is still at
# the version loaded, under the part's lease (the fencing token); the key is the arbiter: an
# edit, snooze or cancel inserts the same key for the occurrence it supersedes, and of the
# two inserts the first wins (ON CONFLICT DO NOTHING: the other waits for it, then finds
# it). The reminder's row is read, never written. A series' next occurrence is appended to
# `due` (`following`), keyed in due order, with the instant it follows (the chain a reader
# walks back).
_CLAIM_DUE_ORDER = """
WITH claim AS (
    SELECT c->>0 AS reminder_id, (c->>1)::timestamptz AS due_at, (c->>2)::integer AS version,
        (c->>3)::timestamptz AS next_due, (c->>4)::integer AS next_bucket,
        (c->>5)::integer AS part, (c->>6)::bigint AS epoch
    FROM jsonb_array_elements($1::jsonb) AS c
), rung AS (
    INSERT INTO layout.rings AS g (
        due_at, reminder_id, version, state, channel, deadline, claimed_at, sender, next_due,
        priority
    )
    SELECT claim.due_at, r.id, claim.version, 'sending', r.channel,
        claim.due_at + make_interval(secs => r.freshness), $2, $3, claim.next_due, r.priority
    FROM claim JOIN reminders AS r ON r.id = claim.reminder_id
    WHERE r.status = 'pending' AND r.version = claim.version
      AND EXISTS (
          SELECT 1 FROM leases AS l
          WHERE l.parts = $5 AND l.part = claim.part AND l.holder = $3
            AND l.epoch = claim.epoch
      )
    ORDER BY claim.due_at, r.id
    ON CONFLICT DO NOTHING
    RETURNING g.due_at, g.reminder_id, g.version, g.next_due, g.deadline
), following AS (
    INSERT INTO layout.due (bucket, due_at, reminder_id, version, shard, priority, prev_due)
    SELECT claim.next_bucket, rung.next_due, rung.reminder_id, rung.version, r.shard,
        r.priority, rung.due_at
    FROM rung JOIN claim ON claim.reminder_id = rung.reminder_id
        JOIN reminders AS r ON r.id = rung.reminder_id
    WHERE rung.next_due IS NOT NULL
    ORDER BY rung.next_due, rung.reminder_id
), held AS (
    INSERT INTO layout.claims (hold_until, sender, due_ats, reminder_ids, versions)
    SELECT $4, $3, array_agg(due_at), array_agg(reminder_id), array_agg(version) FROM rung
    HAVING count(*) > 0
)
SELECT rung.due_at, rung.reminder_id, rung.version, rung.deadline, r.owner, r.shard, r.text,
    r.metadata, r.source, r.channel
FROM rung JOIN reminders AS r ON r.id = rung.reminder_id
"""

# The first try's outcome, on the ring's own row, while its sender still holds it (in the
# state it was handed out in). Joined by the key alone and compared with the batch's values,
# never a constant, as RECORD_ATTEMPTS is: a constant condition on the table let the planner
# hash a new partition whole for every batch.
_RECORD_DUE_ORDER = """
WITH outcome AS (
    SELECT (o->>0)::timestamptz AS due_at, o->>1 AS reminder_id, (o->>2)::integer AS version,
        (o->>3)::timestamptz AS sent_at, o->>4 AS sent_to, o->>5 AS sender,
        o->>6 AS held_state
    FROM jsonb_array_elements($1::jsonb) AS o
)
UPDATE layout.rings AS g
SET state = 'sent', attempts = 1, sent_at = outcome.sent_at, sender = NULL,
    sent_to = outcome.sent_to
FROM outcome
WHERE g.ctid = (
        SELECT ring.ctid FROM layout.rings AS ring
        WHERE (ring.due_at, ring.reminder_id, ring.version)
            = (outcome.due_at, outcome.reminder_id, outcome.version)
    )
  AND (g.state, g.sender) = (outcome.held_state, outcome.sender)
"""

_NO_EARLIER = batches.POSTGRES_EARLIER.json(
    {name: [] for name in batches.POSTGRES_EARLIER.names}
)  # no attempts at other destinations


@dataclass(frozen=True, kw_only=True)
class LayoutSpec:
    rows: int = 20_000  # rings a pass
    among: int = 10  # the measured rows lie 1 in `among` over the table
    pg_url: str | None = None

    def params(self) -> dict[str, Any]:
        return {"rows": self.rows, "among": self.among}


async def run_layout(spec: LayoutSpec) -> dict[str, Any]:
    if spec.among < len(SETS):
        raise ValueError(f"--among must be at least {len(SETS)}: each set is 1 in among")
    async with throwaway("postgres", pg_url=spec.pg_url) as url:
        store = await migrated_store(url)
        await store.close()
        due = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=1)
        total = spec.rows * spec.among
        connection = await asyncpg.connect(url, server_settings={"synchronous_commit": "on"})
        try:
            note(f"layout: saving {total:,} reminders, each set 1 in {spec.among}")
            await connection.execute(_FILL, due, due - timedelta(days=90), total, spec.among)
            await connection.execute(_LEASE, _SENDER)
            await connection.execute(_TABLES)
            await connection.execute("VACUUM ANALYZE reminders")
            passes = {}
            for name in SETS:
                note(f"layout: ringing {name}")
                passes[name] = await _pass(connection, name, due)
        finally:
            await connection.close()
    return {"scenario": "layout", "params": spec.params(), "metrics": passes}


async def _pass(connection: asyncpg.Connection, name: str, due: datetime) -> dict[str, Any]:
    """Ring one set after a checkpoint: rings, seconds, and WAL and CPU a ring."""
    weekly, due_order = name.startswith("weekly"), name.endswith("due-order")
    query = _SET_DUE_ORDER if due_order else _SET_IN_PLACE
    rows = [tuple(row) for row in await connection.fetch(query, f"set-{SETS.index(name)}")]
    if not due_order:  # with what each load reads for its claim
        ids = [row[0] for row in rows]
        rows = [tuple(row) for row in await connection.fetch(RING_CONTENTS, ids)]
    batches = [rows[start : start + BATCH] for start in range(0, len(rows), BATCH)]
    ring = _ring_due_order if due_order else _ring_in_place
    await connection.execute("CHECKPOINT")
    await costs.report_counts(connection)
    before = await costs.wal_counters(connection)
    session, server = await _cpu(connection)
    began = time.perf_counter()
    rings = 0
    for batch in batches:
        rings += await ring(connection, batch, due, weekly=weekly)
    seconds = time.perf_counter() - began
    await costs.report_counts(connection)
    after = await costs.wal_counters(connection)
    session_after, server_after = await _cpu(connection)
    wal = costs.wal_per_ring(before, after, rings)
    return {
        "rings": rings,
        "rings_per_s": round(rate(rings, seconds), 1),
        **wal,
        "wal_by_relation": (
            await waldump.by_relation(connection, wal["wal_range"], rings)
            if "wal_range" in wal
            else None
        ),
        "session_cpu_us": _per_ring(session, session_after, rings),
        "db_cpu_us": _per_ring(server, server_after, rings),
    }


async def _ring_in_place(
    connection: asyncpg.Connection, batch: list[tuple[str, ...]], due: datetime, *, weekly: bool
) -> int:
    """Tocsin's CLAIM and INSERT_FIRINGS, their batches built by name from the order
    `batches` declares, as the store builds them (`batch`: each reminder's id and what its
    load read for the claim)."""
    now = datetime.now(UTC)
    claims = claim_batch([(row[0], row[1]) for row in batch], due, *_next_of(due, weekly=weekly))
    hold = now + timedelta(seconds=20)
    claimed = await connection.fetch(CLAIM, claims, now, _SENDER, hold, 1, FEED_WAITING)
    if not claimed:
        return 0
    sent = datetime.now(UTC)
    firings = sent_firings(claimed, claimed_at=now, sent_at=sent, destination="app:layout")
    written: int = await connection.fetchval(INSERT_FIRINGS, firings, _NO_EARLIER, [])
    return written


def _next_of(due: datetime, *, weekly: bool) -> tuple[datetime | None, int | None]:
    """A ring's next due instant and its bucket: a week on for a weekly series, none for a
    one-off."""
    if not weekly:
        return None, None
    following = due + _WEEK
    return following, int(following.timestamp()) // 60


async def _ring_due_order(
    connection: asyncpg.Connection, batch: list[tuple[str, ...]], due: datetime, *, weekly: bool
) -> int:
    ids = [row[0] for row in batch]
    size, now = len(ids), datetime.now(UTC)
    next_due, next_bucket = _next_of(due, weekly=weekly)
    claims = json_rows(
        [
            ids,
            [due] * size,
            [1] * size,
            [next_due] * size,
            [next_bucket] * size,
            [0] * size,
            [1] * size,
        ]
    )
    hold = now + timedelta(seconds=20)
    rung = await connection.fetch(_CLAIM_DUE_ORDER, claims, now, _SENDER, hold, 1)
    if not rung:
        return 0
    sent = datetime.now(UTC)
    outcomes = json_rows(
        [
            [row[0] for row in rung],
            [row[1] for row in rung],
            [row[2] for row in rung],
            [sent] * len(rung),
            ["app:layout"] * len(rung),
            [_SENDER] * len(rung),
            ["sending"] * len(rung),
        ]
    )
    status = await connection.execute(_RECORD_DUE_ORDER, outcomes)
    return int(status.rpartition(" ")[2])


async def _cpu(connection: asyncpg.Connection) -> tuple[int | None, int | None]:
    """CPU ticks so far of this connection's server process, and of the whole server."""
    backend, started = await connection.fetchrow(
        "SELECT pg_backend_pid(), extract(epoch FROM pg_postmaster_start_time())::float8"
    )
    postmaster, _ = costs.locate_server(backend, started)
    session = costs.process_ticks(backend)
    return session, None if postmaster is None else costs.server_ticks(postmaster)


def _per_ring(before: int | None, after: int | None, rings: int) -> float | None:
    if before is None or after is None or not rings:
        return None
    return round((after - before) * 1e6 / costs.TICKS_PER_S / rings, 1)
