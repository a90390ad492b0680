"""PostgreSQL's migration runner: each migration the database lacks, step by step
(`tocsin.store.migrations.Step`), each step recorded as it ends so that a run stopped half way
goes on where it stopped, and each migration recorded in `schema_migrations` with its last
step. The caller holds the migrations' advisory lock, so one run applies at a time."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import asyncpg

from tocsin.store.migrations import (
    BATCH_PAGES,
    ONE_TRANSACTION,
    Migration,
    MigrationState,
    Step,
    migrations_for,
    refuse_newer,
)
from tocsin.store.postgres import queries as q

logger = logging.getLogger(__name__)

TURN_PAUSE = 0.2  # seconds between tries of the turn another run holds
LOCK_TRIES = 60  # a step whose lock timed out (it sets its own lock_timeout) is tried again…
LOCK_PAUSE = 1.0  # …this many seconds later


async def take_turn(connection: asyncpg.Connection) -> None:
    """Wait for the migrations' advisory lock (`LOCK_MIGRATIONS` says why by trying)."""
    while True:
        if await connection.fetchval(q.LOCK_MIGRATIONS, q.MIGRATION_LOCK_KEY):
            return
        await asyncio.sleep(TURN_PAUSE)


async def applied_versions(connection: asyncpg.Connection) -> set[int]:
    if not await connection.fetchval(q.HAS_SCHEMA_MIGRATIONS):
        return set()
    return {row["version"] for row in await connection.fetch(q.APPLIED_VERSIONS)}


async def migrate(
    connection: asyncpg.Connection,
    *,
    before_upgrade: bool,
    batch_pages: int = BATCH_PAGES,
    through: int | None = None,
) -> list[int]:
    """Apply the migrations the database lacks, in order, and return those applied. With
    `before_upgrade`, leave those that apply after the upgrade, unless the database had none
    applied (no process of an earlier release can run on it). A step in batches changes
    `batch_pages` pages of its table a transaction. `through`: none after that version (a
    database as an earlier release left it, for a benchmark)."""
    await connection.execute(q.CREATE_SCHEMA_MIGRATIONS)
    await connection.execute(q.CREATE_MIGRATION_STEPS)
    done = await applied_versions(connection)
    known = migrations_for("postgres")
    refuse_newer(known, done)
    applied: list[int] = []
    for migration in known:
        if migration.version in done or (through is not None and migration.version > through):
            continue
        if before_upgrade and migration.after_upgrade and done:
            logger.info("left migration %04d for after the upgrade", migration.version)
            continue
        await _apply(connection, migration, batch_pages)
        applied.append(migration.version)
    return applied


async def states(connection: asyncpg.Connection) -> list[MigrationState]:
    """Each known migration, applied or not, and how far the one under way has gone."""
    done = await applied_versions(connection)
    under_way = {}
    if await connection.fetchval(q.HAS_MIGRATION_STEPS):
        under_way = {
            (r["version"], r["step"]): r for r in await connection.fetch(q.STEPS_UNDER_WAY)
        }
    found: list[MigrationState] = []
    for migration in migrations_for("postgres"):
        if migration.version in done:
            found.append(MigrationState(migration=migration, applied=True))
            continue
        steps = migration.steps()
        ended = sum(
            1
            for number in range(1, len(steps) + 1)
            if (row := under_way.get((migration.version, number))) and row["done_at"]
        )
        batches = under_way.get((migration.version, ended + 1))
        rows_left = None
        if batches is not None and ended < len(steps) and steps[ended].table:
            rows_left = await connection.fetchval(
                q.ROWS_IN_PAGES, steps[ended].table, batches["pages"] - batches["next_page"]
            )
        found.append(
            MigrationState(
                migration=migration,
                applied=False,
                steps_ended=ended,
                next_page=batches["next_page"] if batches else None,
                pages=batches["pages"] if batches else None,
                rows_left=rows_left,
            )
        )
    return found


async def _apply(connection: asyncpg.Connection, migration: Migration, batch_pages: int) -> None:
    steps = migration.steps()
    ended = {
        row["step"]
        for row in await connection.fetch(q.STEPS_UNDER_WAY)
        if row["version"] == migration.version and row["done_at"]
    }
    for number, step in enumerate(steps, 1):
        if number in ended:
            continue
        last = number == len(steps)
        if step.how == ONE_TRANSACTION:
            await _in_one_transaction(connection, migration, number, step, last=last)
            continue
        if step.table:
            await _in_batches(connection, migration.version, number, step, batch_pages)
        else:
            for statement in step.statements():
                await connection.execute(statement)
        async with connection.transaction():
            await _step_ended(connection, migration, number, last=last)


async def _in_one_transaction(
    connection: asyncpg.Connection, migration: Migration, number: int, step: Step, *, last: bool
) -> None:
    async def run() -> None:
        await connection.execute(step.sql)
        await _step_ended(connection, migration, number, last=last)

    await _tried(connection, migration.version, run)


async def _in_batches(
    connection: asyncpg.Connection, version: int, number: int, step: Step, batch_pages: int
) -> None:
    row = await connection.fetchrow(q.STEP_PAGES, version, number)
    if row is None:
        pages = await connection.fetchval(q.TABLE_PAGES, step.table)
        await connection.execute(q.START_BATCHES, version, number, pages)
        next_page = 0
    else:
        next_page, pages = row["next_page"], row["pages"]
    statements = step.statements()
    if step.most_pages is not None:
        batch_pages = min(batch_pages, step.most_pages)
    while next_page < pages:
        end = min(next_page + batch_pages, pages)

        async def run(first: int = next_page, after: int = end) -> None:
            for statement in statements:
                if "$1" in statement:
                    await connection.execute(statement, first, after)
                else:
                    await connection.execute(statement)
            await connection.execute(q.BATCH_ENDED, version, number, after)

        await _tried(connection, version, run)
        next_page = end


async def _tried(
    connection: asyncpg.Connection, version: int, run: Callable[[], Awaitable[None]]
) -> None:
    """`run` in a transaction, again while it waited too long for a lock (its statements set
    their own `lock_timeout`) or lost a deadlock to a process of the running release, up to
    `LOCK_TRIES` times."""
    for attempt in range(1, LOCK_TRIES + 1):
        try:
            async with connection.transaction():
                await run()
            return
        except (asyncpg.LockNotAvailableError, asyncpg.DeadlockDetectedError) as error:
            if attempt == LOCK_TRIES:
                raise
            logger.warning(
                "migration %04d %s (try %d of %d); trying again",
                version,
                "lost a deadlock"
                if isinstance(error, asyncpg.DeadlockDetectedError)
                else "waited too long for a lock",
                attempt,
                LOCK_TRIES,
            )
            await asyncio.sleep(LOCK_PAUSE)


async def _step_ended(
    connection: asyncpg.Connection, migration: Migration, number: int, *, last: bool
) -> None:
    """Record a step's end, inside its own transaction when it has one; the migration's with
    its last (and then its steps are forgotten)."""
    if last:
        await connection.execute(q.RECORD_MIGRATION, migration.version, migration.name)
        await connection.execute(q.FORGET_STEPS, migration.version)
    else:
        await connection.execute(q.STEP_ENDED, migration.version, number)
