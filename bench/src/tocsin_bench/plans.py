"""`bench plans`: how PostgreSQL plans the scheduler's writes (CLAIM, RECORD_ATTEMPTS) and
what a batch costs, right after a bulk import and again after ANALYZE.

The rows are written by SQL in bulk. First `finished` fired reminders and as many sent
firings, analysed: the statistics then say that nothing is pending or being sent, and the
partial indexes are empty, as they say right after an import into a new database (and, for
`sending`, during any burst). Then the import: `reminders` reminders, `busy` of them pending
in one minute, the rest alternately pending over the next week and fired; `firings` firings,
`sending` of them being sent, a twentieth queued, the rest sent. Autovacuum is off on both
tables, so the statistics stay as they are until the ANALYZE the run makes half way.

Each batch is the statement the store runs, with its arguments (`batch` claims of the busy
minute as a part loads them, sorted by id as the store sends them; `batch` results of
`sending` firings, accepted at their first try), executed once under EXPLAIN (ANALYZE,
BUFFERS) and rolled back: as a prepared statement with a plan made for its arguments, and
with the generic plan PostgreSQL may switch a prepared statement to after five executions.
Each execution has rows of its own (given `busy` and `sending` of 20 batches or more).
Reported for each: milliseconds and buffers (medians),
and how the table was read.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import orjson

from tocsin.ids import LANE_WIDTH
from tocsin.store import batches
from tocsin.store.base import FEED_WAITING
from tocsin.store.batches import json_rows
from tocsin.store.postgres.queries import CLAIM, RECORD_ATTEMPTS, RING_CONTENTS
from tocsin_bench.databases import FILL_DUE_SAID, migrated_store, throwaway
from tocsin_bench.progress import note

_FINISHED = """
INSERT INTO reminders (due_at, created_at, updated_at, bucket, freshness, version, shard, id,
    owner, status, channel, text, zone, anchor)
SELECT NULL, $1::timestamptz - interval '40 days', $1, NULL, 600, 2,
    (hashint4(n) & 1023)::smallint, 'a' || lpad(to_hex(n), 19, '0'), 'early-' || n, 'fired',
    'webhook', 'early', 'UTC', '2025-01-01T09:00'
FROM generate_series(1, $2::integer) AS n
"""

_SENT = """
INSERT INTO firings (due_at, deadline, created_at, sent_at, attempts, shard, due_second,
    reminder_id, owner, state, channel, text, sent_to)
SELECT due, due + interval '10 minutes', due, due, 1, (hashint4(n) & 1023)::smallint,
    floor(extract(epoch FROM due))::bigint,
    'a' || lpad(to_hex(n), 19, '0'), 'early-' || n, 'sent', 'webhook', 'early', 'app:x'
FROM generate_series(1, $2::integer) AS n,
    LATERAL (SELECT $1::timestamptz - interval '40 days' + n * interval '1 second' AS due) AS d
"""

# $1 the busy minute, $2 rows, $3 how many pending in the busy minute; ids in save order, so
# the busy minute's rows lie scattered over the table and its primary key.
_REMINDERS = """
INSERT INTO reminders (due_at, created_at, updated_at, bucket, freshness, version, shard, id,
    owner, status, channel, text, zone, anchor, rule, at, repeat)
SELECT due, $1::timestamptz - interval '30 days' + n * interval '1 second', $1,
    floor(extract(epoch FROM due) / 60)::integer, 600, 1 + n % 3,
    (hashint4(n) & 1023)::smallint,
    'r' || lpad(to_hex(n), 11, '0') || substr(md5(n::text), 1, 8), 'owner-' || n % 300000,
    CASE WHEN due IS NULL THEN 'fired' ELSE 'pending' END, 'webhook',
    'Take blood pressure medication', 'America/New_York', '2026-01-01T09:00',
    CASE WHEN n % 2 = 0 THEN 'FREQ=DAILY;BYHOUR=9;BYMINUTE=0' END, '2026-01-01T09:00',
    CASE WHEN n % 2 = 0 THEN 'daily 09:00' END
FROM generate_series(1, $2::integer) AS n,
    LATERAL (
        SELECT CASE
            WHEN n % ($2 / $3) = 0 THEN $1::timestamptz + (n % 60) * interval '1 second'
            WHEN n % 2 = 0 THEN $1::timestamptz + ((n * 31) % 10080 + 1) * interval '1 minute'
        END AS due
    ) AS d
"""

# $1 the busy minute, $2 rows, $3 how many `sending`.
_FIRINGS = """
INSERT INTO firings (due_at, deadline, created_at, next_attempt_at, lease_until, sent_at,
    attempts, shard, due_second, reminder_id, owner, state, channel, text, sender, sent_to)
SELECT due, due + interval '10 minutes', due,
    CASE WHEN state = 'queued' THEN due + interval '1 minute' END,
    CASE WHEN state = 'sending'
        THEN $1::timestamptz + interval '1 hour' + n * interval '7 milliseconds' END,
    CASE WHEN state = 'sent' THEN due + interval '1 second' END,
    CASE WHEN state = 'sending' THEN 0 ELSE 1 END, (hashint4(n) & 1023)::smallint,
    floor(extract(epoch FROM due))::bigint, rid, 'owner-' || n % 300000, state,
    'webhook', 'Take blood pressure medication', CASE WHEN state = 'sending' THEN 'bench' END,
    CASE WHEN state = 'sent' THEN 'app:x' END
FROM generate_series(1, $2::integer) AS n,
    LATERAL (
        SELECT 'f' || lpad(to_hex(n), 11, '0') || substr(md5(n::text), 1, 8) AS rid,
            $1::timestamptz - interval '1 day' + n * interval '50 milliseconds' AS due,
            CASE WHEN n % ($2 / $3) = 0 THEN 'sending' WHEN n % 20 = 1 THEN 'queued'
                ELSE 'sent' END AS state
    ) AS f
"""

_LEASES = """
INSERT INTO leases (parts, part, holder, expires_at, epoch)
SELECT 16, part, 'bench', $1::timestamptz + interval '1 day', 1
FROM generate_series(0, 15) AS part
"""

_AUTOVACUUM_OFF = """
ALTER TABLE reminders SET (autovacuum_enabled = off);
ALTER TABLE firings SET (autovacuum_enabled = off)
"""

_CLAIMABLE = """
SELECT id, due_at, version, shard, rule IS NOT NULL AS series FROM reminders
WHERE status = 'pending' AND bucket = $1 ORDER BY shard / 64, due_at, id
"""

_SENDING = (
    "SELECT reminder_id || '.' || due_second AS id FROM firings WHERE state = 'sending'"
    " ORDER BY hashtext(reminder_id)"
)

_STATEMENTS = {"claim": CLAIM, "record": RECORD_ATTEMPTS}
_TABLES = {"claim": "rings", "record": "firings"}  # the table each looks its rows up in
_PLANS = ("custom", "generic")


@dataclass(frozen=True, kw_only=True)
class PlansSpec:
    reminders: int = 1_000_000
    busy: int = 200_000  # pending in one minute
    firings: int = 1_000_000
    sending: int = 200_000
    finished: int = 20_000  # all the tables hold when first analysed
    batch: int = 1_000  # the engine's claim batch
    executions: int = 5  # of each statement, each plan, each state of the statistics
    pg_url: str | None = None

    def params(self) -> dict[str, Any]:
        return {
            "reminders": self.reminders,
            "busy": self.busy,
            "firings": self.firings,
            "sending": self.sending,
            "batch": self.batch,
        }


async def run_plans(spec: PlansSpec) -> dict[str, Any]:
    busy = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(minutes=10)
    async with throwaway("postgres", pg_url=spec.pg_url) as url:
        store = await migrated_store(url)
        await store.close()
        connection = await asyncpg.connect(url)
        try:
            note(f"plans: importing {spec.reminders:,} reminders, {spec.firings:,} firings")
            await _import(connection, spec, busy)
            batches = await _Batches.read(connection, spec, busy)
            metrics = {"stale": await _measure(connection, spec, batches)}
            await connection.execute("ANALYZE reminders; ANALYZE firings")
            metrics["analysed"] = await _measure(connection, spec, batches)
        finally:
            await connection.close()
    return {"scenario": "plans", "params": spec.params(), "metrics": metrics}


async def _import(connection: asyncpg.Connection, spec: PlansSpec, busy: datetime) -> None:
    await connection.execute(_AUTOVACUUM_OFF)
    await connection.execute(_FINISHED, busy, spec.finished)
    await connection.execute(_SENT, busy, spec.finished)
    await connection.execute("ANALYZE reminders; ANALYZE firings")
    await connection.execute(_REMINDERS, busy, spec.reminders, spec.busy)
    await connection.execute(FILL_DUE_SAID)
    await connection.execute(_FIRINGS, busy, spec.firings, spec.sending)
    await connection.execute(_LEASES, busy)
    # Hint bits now, not during the first batch measured.
    await connection.execute("SELECT count(*) FROM reminders; SELECT count(*) FROM firings")


@dataclass(kw_only=True)
class _Batches:
    """The arguments of every batch."""

    claims: list[tuple[Any, ...]]
    results: list[tuple[Any, ...]]

    @classmethod
    async def read(
        cls, connection: asyncpg.Connection, spec: PlansSpec, busy: datetime
    ) -> _Batches:
        bucket = int(busy.timestamp()) // 60
        due = await connection.fetch(_CLAIMABLE, bucket)
        ids = [row["id"] for row in due]
        contents = {row[0]: row[1] for row in await connection.fetch(RING_CONTENTS, ids)}
        sending = [row["id"] for row in await connection.fetch(_SENDING)]
        size = spec.batch
        claims = [
            _claim_args(sorted(due[n : n + size], key=lambda row: row["id"]), contents, busy)
            for n in range(0, len(due) - size + 1, size)
        ]
        results = [
            _result_args(sending[n : n + size], busy)
            for n in range(0, len(sending) - size + 1, size)
        ]
        return cls(claims=claims, results=results)

    def take(self, name: str) -> tuple[Any, ...]:
        """The next batch of `name`, in turn (a small run uses a batch again: each rolled
        back)."""
        batches = self.claims if name == "claim" else self.results
        batches.append(batches.pop(0))
        return batches[-1]


def _claim_args(
    rows: list[asyncpg.Record], contents: dict[str, str], busy: datetime
) -> tuple[Any, ...]:
    """CLAIM's arguments, as `PostgresStore.claim` makes them (a lease of 16 parts), with what
    each reminder's load reads for its claim (`contents`, by id)."""
    nexts = [row["due_at"] + timedelta(days=1) if row["series"] else None for row in rows]
    size = len(rows)
    claims = batches.POSTGRES_CLAIMS.json(
        {
            "reminder_id": [row["id"] for row in rows],
            "due_at": [row["due_at"] for row in rows],
            "bucket": [int(row["due_at"].timestamp()) // 60 for row in rows],
            "version": [row["version"] for row in rows],
            "next_due_at": nexts,
            "next_bucket": [int(n.timestamp()) // 60 if n else None for n in nexts],
            "state": ["sending"] * size,
            "part": [row["shard"] // LANE_WIDTH for row in rows],
            "epoch": [1] * size,
            "error": [None] * size,
            "content": [orjson.Fragment(contents[row["id"]]) for row in rows],
            "prev_due": [None] * size,  # the first ring of each: none before it
        }
    )
    return (claims, busy, "bench", busy + timedelta(seconds=30), 16, FEED_WAITING)


def _result_args(ids: list[str], busy: datetime) -> tuple[Any, ...]:
    """RECORD_ATTEMPTS' arguments for first tries accepted (`PostgresStore.record_attempts`)."""
    size = len(ids)
    results = json_rows(
        [
            ids,
            ["bench"] * size,
            ["sent"] * size,
            [None] * size,
            [1] * size,
            [busy] * size,
            ["webhook"] * size,
            ["sent"] * size,
            [None] * size,
            [None] * size,
            ["app:x"] * size,
            [None] * size,
            ["app:x"] * size,
            ["sending"] * size,
        ]
    )
    return (results, json_rows([[]] * 8))


async def _measure(
    connection: asyncpg.Connection, spec: PlansSpec, batches: _Batches
) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, sql in _STATEMENTS.items():
        await connection.execute(f"PREPARE {name} AS {sql}")
        for plan in _PLANS:
            runs = [
                await _explained(connection, name, plan, batches.take(name))
                for _ in range(spec.executions)
            ]
            found[f"{name}.{plan}"] = {
                "ms": statistics.median(run["ms"] for run in runs),
                "buffers": statistics.median(run["buffers"] for run in runs),
                "reads": runs[-1]["reads"],
            }
        await connection.execute(f"DEALLOCATE {name}")
    return found


async def _explained(
    connection: asyncpg.Connection, name: str, plan: str, args: tuple[Any, ...]
) -> dict[str, Any]:
    """One execution of prepared statement `name` under plan_cache_mode force_`plan`_plan,
    rolled back: its time, buffers and the reads of its table."""
    values = ", ".join(_literal(arg) for arg in args)
    await connection.execute("BEGIN")
    try:
        await connection.execute(f"SET LOCAL plan_cache_mode = force_{plan}_plan")
        explained = await connection.fetchval(
            f"EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) EXECUTE {name} ({values})"
        )
    finally:
        await connection.execute("ROLLBACK")  # the rows stay as they were
    top = json.loads(explained)[0]
    root = top["Plan"]
    return {
        "ms": round(top["Execution Time"], 1),
        "buffers": root.get("Shared Hit Blocks", 0) + root.get("Shared Read Blocks", 0),
        "reads": _reads(root, _TABLES[name]),
    }


def _reads(node: dict[str, Any], table: str) -> str:
    """How the plan read `table`: each scan, its index and condition, and how many times."""
    scans = []
    if node.get("Relation Name") == table and node["Node Type"] != "ModifyTable":
        index = f" {node['Index Name']}" if "Index Name" in node else ""
        condition = f" on {_shortened(node['Index Cond'])}" if "Index Cond" in node else ""
        scans.append(f"{node['Node Type']}{index}{condition} x{node['Actual Loops']}")
    for child in node.get("Plans", []):
        found = _reads(child, table)
        if found:
            scans.append(found)
    return "; ".join(scans)


def _shortened(condition: str) -> str:
    """An index condition without the thousand values of an array it may hold."""
    return condition if len(condition) <= 60 else condition[:57] + "..."


def _literal(value: Any) -> str:
    """`value` as an SQL literal (EXECUTE takes its parameters as expressions)."""
    if value is None:
        return "NULL"
    if isinstance(value, list):
        text = "{" + ",".join(_element(item) for item in value) + "}"
        return "'" + text.replace("'", "''") + "'"
    if isinstance(value, datetime):
        return f"'{value.isoformat()}'"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def _element(item: Any) -> str:
    if item is None:
        return "NULL"
    if isinstance(item, int):
        return str(item)
    text = item.isoformat() if isinstance(item, datetime) else str(item)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
