"""The firing benchmarks (`burst`, `steady`): save reminders due at chosen instants, run the
engine as it is deployed — `tocsin worker` processes on PostgreSQL, one `tocsin serve` (API,
scheduler and delivery in one process) on SQLite — wait until every firing is final, and
report what happened.

The reminders are saved after the workers hold their parts and well before the first is due
(so the engine loads them ahead, as it would a 09:00 rush saved the day before). They are
one-offs with an absolute `at`, due at whole seconds.
"""

from __future__ import annotations

import asyncio
import random
import re
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from tocsin.channels.signing import new_secret
from tocsin.domain import Channel, Reminder
from tocsin.scheduler.loader import LoadTuning
from tocsin.store import Store
from tocsin.store.ports import ReminderStore
from tocsin.store.postgres import months
from tocsin_bench import costs, outcome, waldump
from tocsin_bench.databases import migrated_store, throwaway
from tocsin_bench.feed_clients import Pages, raise_open_files
from tocsin_bench.peers import CONTACT_CHANNELS, Peer, add_contacts, owner_name, start_peer
from tocsin_bench.population import Population, at_rate, spread_over
from tocsin_bench.processes import (
    Process,
    receiver_stats,
    start_receiver,
    start_server,
    start_workers,
)
from tocsin_bench.progress import Progress, note
from tocsin_bench.stats import rate

SAVE_BATCH = 5_000
# Rows a second VACUUM (ANALYZE) settles after a save among others (`_settle_table`), to plan
# when the first is due.
SETTLE_RATE_GUESS = 50_000.0
# Past rings `--history` writes a second, with the vacuum of them (1,619,128 took ~60 s).
HISTORY_RATE_GUESS = 25_000.0
LEAD_MARGIN = timedelta(seconds=20)  # the last save lands this long before the first due
LEASE_WAIT_SECONDS = 60.0
SETTLE_GRACE = timedelta(minutes=12)  # past the last due: freshness (10 min) and some
PARTS = 16  # PostgreSQL; SQLite runs with its own default (see `Settings.parts`)
POLL_WHILE_DUE = 5.0  # seconds between progress counts until the last ring is due
POLL_AFTER_DUE = 0.5  # and after, to see the end soon
# apns, email: the reminders go to this many owners in turn, each with one contact (as a
# busy minute rings many people, but a contact lookup per ring is what is measured).
CONTACT_OWNERS = 2_000
INAPP_OWNERS = 10_000  # inapp: one open page per owner
OWNED_CHANNELS = CONTACT_CHANNELS | {"inapp"}  # rings to the benchmark's named owners
# The workers read a minute `LoadTuning.lead` (10 s) before it starts; the wait before that
# is no ring's cost: two idle workers took 20 ms of CPU a second, which was 10 µs a ring of
# a 100,000 burst whose save ended 45 s before its first due instant.
WINDOW_LEAD = LoadTuning().lead + timedelta(seconds=2)


@dataclass(frozen=True, kw_only=True)
class FiringSpec:
    """One firing benchmark: how many reminders, due how, on what, with how many workers."""

    scenario: str  # "burst" or "steady"
    db: str  # "sqlite" or "postgres"
    reminders: int
    spread: int  # seconds the due instants cover
    # Reminders as people save them (due in 2-30 days), saved interleaved with the due ones:
    # the due rows then lie scattered over the table's pages, as in a table of long standing.
    among: int = 0
    # Rings each series of the table rang before, a week apart (`--history`): their firings
    # fill firings_pkey between the minute's entries, as a table of long standing's do.
    history: int = 0
    workers: int
    channel: str  # "null", "webhook", "apns", "email" or "inapp"
    owners: int | None = None  # apns, email, inapp: how many owners (else the default)
    api_workers: int = 1  # inapp on PostgreSQL: processes of the pages' `tocsin api`
    pg_url: str | None = None
    rate: int | None = None  # steady: reminders due per second
    save_rate_guess: float = 10_000.0  # reminders/s, to plan when the first is due
    due_in: float | None = None  # first due this long after the save, not at a minute start
    worker_settings: tuple[tuple[str, str], ...] = ()  # extra TOCSIN_* settings of workers
    # PostgreSQL settings of the throw-away database's sessions (ALTER DATABASE ... SET)
    database_settings: tuple[tuple[str, str], ...] = ()
    # Fills the migrated database (by URL) before the engine starts.
    prepare: Callable[[str], Coroutine[Any, Any, None]] | None = None
    # Runs beside the rings from the engine's start, until it returns (awaited before the
    # engine stops); what it returns is reported as `beside`.
    beside: Callable[[str], Coroutine[Any, Any, dict[str, Any]]] | None = None

    def params(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "db": self.db,
            "engine": "tocsin serve" if self.db == "sqlite" else "tocsin worker",
            "reminders": self.reminders,
            "spread_s": self.spread,
            "workers": self.workers,
            "channel": self.channel,
        }
        if self.among:
            shown["among"] = self.among
        if self.history:
            shown["history"] = self.history
        if self.rate is not None:
            shown["rate_per_s"] = self.rate
        if self.channel == "inapp" and self.db == "postgres":
            shown["api_processes"] = self.api_workers
        for name, value in self.worker_settings:
            shown[name] = value
        for name, value in self.database_settings:
            shown[f"pg:{name}"] = value
        return shown


async def run_firing(spec: FiringSpec) -> dict[str, Any]:
    """Run one firing benchmark on a throw-away database; its report."""
    if spec.db == "sqlite" and spec.workers != 1:
        raise ValueError("SQLite runs one process: use --workers 1")
    async with throwaway(spec.db, pg_url=spec.pg_url) as url:
        store = await migrated_store(costs.tagged(url) if spec.db == "postgres" else url)
        if spec.database_settings:
            await _set_database(url, spec)
        if spec.db == "postgres":
            await _make_months(url)
        if spec.prepare is not None:
            await spec.prepare(url)
        logs = Path(tempfile.mkdtemp(prefix="tocsin-bench-logs-"))
        processes: list[Process] = []
        try:
            return await _run(spec, url, store, logs, processes)
        finally:
            for process in processes:
                process.stop()
            await store.close()


async def _run(
    spec: FiringSpec, url: str, store: Store, logs: Path, processes: list[Process]
) -> dict[str, Any]:
    settings: dict[str, str] = {**_parts(spec), **dict(spec.worker_settings)}
    receiver_url, peer = _start_peer(spec, logs, processes, settings)
    if spec.channel == "inapp":
        raise_open_files(_owners(spec))  # before the API process starts: it inherits it
    workers = _start_engine(spec, url, logs, settings)
    processes.extend(workers)
    beside: asyncio.Task[dict[str, Any]] | None = None
    if spec.beside is not None:
        beside = asyncio.create_task(spec.beside(url))
    api_url = _start_feed_api(spec, url, logs, settings, workers, processes)
    note(f"{spec.scenario}: {_engine_name(spec)} starting; logs in {logs}")
    await _wait_for_leases(url, workers)
    if peer is not None:
        await add_contacts(store, peer, _owners(spec))
    pages = None
    if api_url is not None:
        pages = Pages(api_url)
        note(f"{spec.scenario}: opening {_owners(spec):,} feed connections")
        await pages.open([owner_name(n) for n in range(_owners(spec))])
    start = _first_due(spec)
    save = await _save(spec, store, start)
    save |= await _write_history(url, spec, start)
    window = await _open_window(spec, url, store, workers, start)
    last_due = start + timedelta(seconds=max(spec.spread - 1, 0))
    note(f"{spec.scenario}: first due {start:%H:%M:%S}, last {last_due:%H:%M:%S} UTC")
    finished = await _settle(spec, url, workers, (start, last_due))
    if window is not None:
        await window.end()
    beside_report = None if beside is None else await beside
    rss = [worker.sample() for worker in workers]
    stats = receiver_stats(receiver_url) if receiver_url else None
    if pages is not None:
        stats = pages.tally.stats()
        pages.close()
    for process in processes:
        process.stop()
    if peer is not None:
        stats = peer.stats()
    report = await _report(
        spec,
        url,
        finished=finished,
        save=save,
        rss=rss,
        stats=stats,
        window=window,
        last_bucket=int(last_due.timestamp()) // 60,
        since=start,
    )
    if beside_report is not None:
        report["beside"] = beside_report
    report["logs"] = str(logs)
    return {"scenario": spec.scenario, "params": spec.params(), "metrics": report}


async def _report(
    spec: FiringSpec,
    url: str,
    *,
    finished: bool,
    save: dict[str, Any],
    rss: list[int],
    stats: dict[str, Any] | None,
    window: costs.Window | None,
    last_bucket: int,
    since: datetime,
) -> dict[str, Any]:
    """What the database says of the run, with what the engine and the peer reported, and
    on PostgreSQL what a ring cost."""
    if window is not None:
        await window.close()  # before the outcome's reads, which prune pages (WAL)
    history = save.get("history_firings", 0)
    report = await outcome.read_outcome(url, last_bucket, since=since, history=history)
    if window is not None:
        writes = report["row_writes"]["per_ring"]
        cost = report["cost_per_ring"] = window.per_ring(report["firings"], writes)
        if "wal_range" in cost:
            report["wal_by_relation"] = await _wal_by_relation(
                url, cost["wal_range"], report["firings"]
            )
    report["finished"] = finished
    if not finished:
        # Cut off by the time limit: rows without a firing were not lost (yet), only not
        # reached; they stay pending and would ring (or be recorded expired) later.
        report["not_fired_by_end"] = report.pop("lost")
        report["lost"] = None
    report["save"] = save
    report["peak_rss_mb"] = [round(value / 2**20, 1) for value in rss]
    report["max_peak_rss_mb"] = max(report["peak_rss_mb"], default=0.0)
    report["duplicates"] = _duplicates(stats, report)
    if stats is not None:
        report[_counted_by(spec)] = stats
    return report


async def _wal_by_relation(url: str, wal_range: str, rings: int) -> dict[str, Any]:
    """The window's WAL by relation, a ring (`waldump.by_relation`), named in the run's
    database."""
    connection = await asyncpg.connect(url)
    try:
        return await waldump.by_relation(connection, wal_range, rings)
    finally:
        await connection.close()


async def _open_window(
    spec: FiringSpec, url: str, store: Store, workers: list[Process], start: datetime
) -> costs.Window | None:
    """PostgreSQL: the window whose costs are the rings' (`costs.Window`), opened once the
    save's sessions have ended (so that all their counts are reported before it opens), and
    no earlier than WINDOW_LEAD before the first due instant."""
    if spec.db != "postgres":
        return None
    await store.close()  # run_firing closes it again: closing twice is harmless
    await _settle_table(spec, url)
    if start - datetime.now(UTC) < WINDOW_LEAD:
        note("warning: settling the table ended after the window should have opened")
    await asyncio.sleep(max(0.0, (start - WINDOW_LEAD - datetime.now(UTC)).total_seconds()))
    window = costs.Window(url, workers)
    await window.open()
    return window


async def _make_months(url: str) -> None:
    """Make every month of `due` retention makes ahead, as a database of long standing has
    them: made one a retention pass instead, a month made during the run moved the default
    partition's rows of it in (its WAL counted in the rings' window)."""
    connection = await asyncpg.connect(url)
    try:
        while await months.make_months(connection, datetime.now(UTC)):
            pass
    finally:
        await connection.close()


_STOP_AUTOVACUUM = """
SELECT pg_cancel_backend(pid) FROM pg_stat_activity
WHERE backend_type = 'autovacuum worker' AND datname = current_database()
"""


async def _settle_table(spec: FiringSpec, url: str) -> None:
    """Leave the saved table as one of long standing is before its busy minute: among others
    (`--among`), vacuumed (its rows' hint bits set, its pages all-visible) and analyzed; and
    in any run, checkpointed, so that every page a ring changes was written before the
    minute, and the first change to each after it is a full-page image, which the window
    counts. Not for a quick run (`--due-in`): its first ring is due seconds after the save,
    before a checkpoint on a busy machine ends."""
    if spec.due_in is not None:
        return
    connection = await asyncpg.connect(url)
    try:
        if spec.among or spec.history:
            tables = "reminders, due, firings" if spec.history else "reminders, due"
            note(f"{spec.scenario}: VACUUM (ANALYZE) of {tables}")
            # An autovacuum of the fresh rows, throttled, would hold the tables' vacuum lock
            # for minutes: it is stopped (it comes back later, finding them vacuumed).
            await connection.execute(_STOP_AUTOVACUUM)
            await connection.execute(f"VACUUM (ANALYZE) {tables}", timeout=None)
        await connection.execute("CHECKPOINT", timeout=None)
    finally:
        await connection.close()


# The rings each series saved rang before the run (`--history`): sent firings, a week apart
# back from the run's minute, with no attempt row (a first try accepted writes none),
# inserted in the order they rang, as the heap of a table of long standing holds them.
_HISTORY = """
INSERT INTO firings (
    due_second, reminder_id, owner, shard, due_at, deadline, channel, text, metadata, source,
    state, attempts, sent_at, created_at, priority
)
SELECT floor(extract(epoch FROM rang.due_at))::bigint, r.id, r.owner, r.shard,
    rang.due_at, rang.due_at + make_interval(secs => r.freshness), r.channel, r.text,
    r.metadata, r.source, 'sent', 1, rang.due_at + interval '0.2 s', rang.due_at,
    r.priority
FROM reminders AS r
CROSS JOIN LATERAL (
    SELECT $1::timestamptz - make_interval(days => 7 * ago) AS due_at
    FROM generate_series(1, $2::integer) AS ago
) AS rang
WHERE r.rule IS NOT NULL
ORDER BY rang.due_at, r.id
"""


async def _write_history(url: str, spec: FiringSpec, start: datetime) -> dict[str, int]:
    """Write `spec.history` past rings of each series in the table (`_HISTORY`); how many,
    as `history_firings` (nothing without `--history`)."""
    if not spec.history:
        return {}
    if spec.db != "postgres":
        raise ValueError("--history is for PostgreSQL")
    connection = await asyncpg.connect(url)
    try:
        note(f"{spec.scenario}: writing {spec.history} past rings of each series")
        status = await connection.execute(_HISTORY, start, spec.history, timeout=None)
        return {"history_firings": int(status.split()[-1])}
    finally:
        await connection.close()


def _start_peer(
    spec: FiringSpec, logs: Path, processes: list[Process], settings: dict[str, str]
) -> tuple[str | None, Peer | None]:
    """The process the channel's rings go to, if any (added to `processes`), with the
    engine's settings for it (added to `settings`): the webhook receiver's URL, or the
    provider peer (apns, email)."""
    if spec.channel in CONTACT_CHANNELS:
        peer = start_peer(Channel(spec.channel), logs)
        processes.append(peer.process)
        settings |= peer.settings
        return None, peer
    if spec.channel == "webhook":
        secret = new_secret()
        receiver, receiver_url = start_receiver(secret, logs)
        processes.append(receiver)
        settings |= {
            "webhook_url": f"{receiver_url}/hook",
            "webhook_secret": secret,
            "allow_private_urls": "true",  # the local receiver
        }
        return receiver_url, None
    return None, None


def _counted_by(spec: FiringSpec) -> str:
    """Who counted the deliveries: the webhook receiver, a provider peer, the feed's pages."""
    return {"webhook": "receiver", "inapp": "pages"}.get(spec.channel, "peer")


def _parts(spec: FiringSpec) -> dict[str, str]:
    """The part count the engine is given: PARTS on PostgreSQL (workers share them); none on
    SQLite, so that `tocsin serve` runs with its default, as deployed."""
    return {"parts": str(PARTS)} if spec.db == "postgres" else {}


def _start_engine(
    spec: FiringSpec, url: str, logs: Path, settings: dict[str, str]
) -> list[Process]:
    """The processes that ring: `tocsin worker`s on PostgreSQL, `tocsin serve` on SQLite."""
    null = spec.channel == "null"
    if spec.db == "sqlite":
        null_channels = ["--null-channels"] if null else []
        server, base = start_server("serve", url, logs, args=null_channels, **settings)
        server.extra["base_url"] = base  # inapp: it holds the feed connections too
        return [server]
    return start_workers(spec.workers, url, logs, null=null, **settings)


def _start_feed_api(
    spec: FiringSpec,
    url: str,
    logs: Path,
    settings: dict[str, str],
    engine: list[Process],
    processes: list[Process],
) -> str | None:
    """inapp: the base URL of the API that holds the feed connections — `tocsin serve`
    itself on SQLite, else one `tocsin api` beside the workers (added to `processes`)."""
    if spec.channel != "inapp":
        return None
    if spec.db == "sqlite":
        return str(engine[0].extra["base_url"])
    workers = ["--workers", str(spec.api_workers)] if spec.api_workers > 1 else []
    api, base = start_server("api", url, logs, args=workers, **settings)
    processes.append(api)
    return base


def _engine_name(spec: FiringSpec) -> str:
    return "tocsin serve" if spec.db == "sqlite" else f"{spec.workers} worker(s)"


def _owners(spec: FiringSpec) -> int:
    """How many owners the reminders go to in turn (apns, email: each with one contact;
    inapp: each with one open page)."""
    if spec.owners is not None:
        return spec.owners
    return min(spec.reminders, INAPP_OWNERS if spec.channel == "inapp" else CONTACT_OWNERS)


def _duplicates(stats: dict[str, Any] | None, report: dict[str, Any]) -> int:
    """Identities delivered more than once: seen by the receiver or the peer (webhook, apns,
    email), or sends recorded twice for one firing (null channel: nothing outside the worker
    sees them)."""
    if stats is not None:
        return int(stats["duplicates"])
    return int(report["repeated_sends"])


_SETTING_NAME = re.compile(r"[a-z_][a-z0-9_.]*")


def _first_due(spec: FiringSpec) -> datetime:
    """The start of the first minute far enough ahead for the save to end before the
    workers read the minute ahead."""
    now = datetime.now(UTC)
    saving = timedelta(seconds=(spec.reminders + spec.among) / spec.save_rate_guess)
    if spec.db == "postgres" and spec.among:
        saving += timedelta(seconds=(spec.reminders + spec.among) / SETTLE_RATE_GUESS)
        saving += timedelta(seconds=spec.among * spec.history / 2 / HISTORY_RATE_GUESS)
    if spec.due_in is not None:
        # Mid-minute, in a bucket read already: the sweep, not the read-ahead, finds these.
        return (now + saving + timedelta(seconds=spec.due_in + 1)).replace(microsecond=0)
    # A long save strays further from its guess (10,000,000 rows ended 40 s after it): the
    # margin grows with it.
    earliest = now + saving + LEAD_MARGIN + saving / 10
    minute = earliest.replace(second=0, microsecond=0)
    return minute if minute >= earliest else minute + timedelta(minutes=1)


def _due_instants(spec: FiringSpec, start: datetime) -> Iterator[datetime]:
    if spec.rate is not None:
        return at_rate(start, spec.rate)
    return spread_over(start, spec.spread, spec.reminders, random.Random(11))


async def _save(spec: FiringSpec, store: ReminderStore, start: datetime) -> dict[str, Any]:
    """Save the reminders in batches (`add_reminders`), timing the store calls alone."""
    population = Population(seed=3)
    named = spec.channel in OWNED_CHANNELS
    made = population.due_one_offs(
        spec.reminders,
        _due_instants(spec, start),
        channel=Channel(spec.channel) if named else Channel.WEBHOOK,
        owners=[owner_name(n) for n in range(_owners(spec))] if named else (),
    )
    if spec.among:
        made = _interleaved(made, population.mixed(spec.among), spec.among / spec.reminders)
    total = spec.reminders + spec.among
    in_store = 0.0
    began = time.perf_counter()
    with Progress(f"{spec.scenario}: saving", total=total, unit="reminders") as bar:
        left = total
        while left > 0:
            batch = [next(made) for _ in range(min(SAVE_BATCH, left))]
            tick = time.perf_counter()
            await store.add_reminders(batch)
            in_store += time.perf_counter() - tick
            left -= len(batch)
            bar.advance(len(batch))
    overall = time.perf_counter() - began
    margin = (start - datetime.now(UTC)).total_seconds()
    if margin < 12:
        note(f"warning: the save ended only {margin:.1f} s before the first due instant")
    return {
        "seconds": round(in_store, 3),
        "per_s": round(rate(total, in_store), 1),
        "with_generation_per_s": round(rate(total, overall), 1),
        "margin_before_due_s": round(margin, 1),
    }


async def _set_database(url: str, spec: FiringSpec) -> None:
    """Give the throw-away database `spec.database_settings`, before any worker connects."""
    if spec.db != "postgres":
        raise ValueError("--pg-set is for PostgreSQL")
    connection = await asyncpg.connect(url)
    try:
        database = await connection.fetchval("SELECT current_database()")
        for name, value in spec.database_settings:
            if not _SETTING_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not a PostgreSQL setting's name")
            quoted = "'" + value.replace("'", "''") + "'"
            await connection.execute(f'ALTER DATABASE "{database}" SET {name} = {quoted}')
    finally:
        await connection.close()


def _interleaved(
    due: Iterator[Reminder], others: Iterator[Reminder], ratio: float
) -> Iterator[Reminder]:
    """The due reminders, each followed by its share (`ratio`) of the others, then the rest."""
    owed = 0.0
    for reminder in due:
        yield reminder
        owed += ratio
        while owed >= 1:
            yield next(others)
            owed -= 1
    yield from others


async def _wait_for_leases(url: str, workers: list[Process]) -> None:
    """Wait until the workers hold every part and share them fairly (the database is new:
    its only lease rows are those of the part count the workers use)."""
    give_up = time.monotonic() + LEASE_WAIT_SECONDS
    while time.monotonic() < give_up:
        for worker in workers:
            if not worker.alive():
                raise RuntimeError(f"{worker.name} exited: see its log")
        parts, held = await _held(url)
        share = parts // len(workers)
        if parts and len(held) == len(workers) and all(n == share for n in held.values()):
            return
        await asyncio.sleep(0.5)
    raise RuntimeError(f"the workers did not share the parts within {LEASE_WAIT_SECONDS} s")


async def _held(url: str) -> tuple[int, dict[str, int]]:
    """The lease rows (parts) in the database, and how many each holder holds."""
    count = "SELECT count(*) FROM leases"
    held = "SELECT holder, count(*) FROM leases WHERE holder IS NOT NULL GROUP BY holder"
    if url.startswith("sqlite:"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30) as connection:
            parts = connection.execute(count).fetchone()[0]
            return parts, dict(connection.execute(held).fetchall())
    connection_pg = await asyncpg.connect(url)
    try:
        parts = await connection_pg.fetchval(count)
        return parts, {row[0]: row[1] for row in await connection_pg.fetch(held)}
    finally:
        await connection_pg.close()


async def _settle(
    spec: FiringSpec, url: str, workers: list[Process], due: tuple[datetime, datetime]
) -> bool:
    """Wait until every reminder due (the run's first and last due instants) is claimed and
    every firing final; False on time-out."""
    first_due, last_due = due
    buckets = (int(first_due.timestamp()) // 60, int(last_due.timestamp()) // 60)
    give_up = last_due + SETTLE_GRACE
    total = spec.reminders
    with Progress(f"{spec.scenario}: firing", total=total, unit="final") as bar:
        while datetime.now(UTC) < give_up:
            for worker in workers:
                worker.sample()
            before_due = datetime.now(UTC) < last_due
            # Counting takes the database's time from the engine being measured (2.5 s a
            # count in a million rings over a minute; a count of 100,000 rings among
            # 2,900,000 took ~0.5 s, and three of them were ~15 µs of the database's CPU a
            # ring): until the statistics say every firing is written
            # (outcome.firings_written), the progress bar gets theirs, and the exact count
            # runs only to confirm the end.
            await asyncio.sleep(POLL_WHILE_DUE if before_due else POLL_AFTER_DUE)
            written = await _written(url)
            if written is not None and (before_due or written < total):
                bar.update(min(written, total))
                continue
            left = await _unfinished(url, buckets)
            if left is None:
                continue
            bar.update(total - left.total)
            if not before_due and left.total == 0:
                return True
    return False


async def _written(url: str) -> int | None:
    """Firings written so far by the statistics, or None (SQLite; the database away)."""
    try:
        return await outcome.firings_written(url)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
        return None


async def _unfinished(url: str, buckets: tuple[int, int]) -> outcome.Unfinished | None:
    """The progress counts, or None while the database is away (a restart: the workers
    ride it out, and so does the benchmark)."""
    try:
        return await outcome.unfinished(url, buckets)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
        note(f"progress: the database is away ({type(error).__name__}); waiting")
        await asyncio.sleep(1.0)
        return None
