"""The months of `due` (migration 0024): the table is partitioned by the month of its
occurrences' minute, so that what is decided goes by whole partitions, never row by row.

Retention (`PostgresStore.prune`) keeps them: it makes this month's and the next 12 months'
tables ahead of time (`due_2026_12`: the UTC month's first minute to the next's), taking from
the default partition `due_outside` any of its rows that fall in a month it makes; and it
drops a month once every part's watermark is a day past it and nothing in it is undecided
(no row of `rings` has its key: a claim rang it, or an API write took it back). A dropped
month writes no row again: tidying it costs a few WAL records, whatever it held. What falls
outside the months made (further ahead, or before them) waits in `due_outside`, whose decided
rows are deleted one by one (`TIDY_DUE`); few occurrences are ever there.

Each change takes its locks with a short `lock_timeout`: a month that cannot be made or
dropped now (a long statement holds the table) is tried again at the next pass.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime

import asyncpg

from tocsin.store.postgres import queries as q

logger = logging.getLogger(__name__)

MONTHS_AHEAD = 12  # beyond this month, made ahead of time
DEFAULT = "due_outside"
_MONTH = re.compile(r"^due_(\d{4})_(\d{2})$")


def month_of(instant: datetime) -> tuple[int, int]:
    utc = instant.astimezone(UTC)
    return utc.year, utc.month


def later(month: tuple[int, int], months: int = 1) -> tuple[int, int]:
    year, number = month
    index = year * 12 + number - 1 + months
    return index // 12, index % 12 + 1


def name_of(month: tuple[int, int]) -> str:
    return f"due_{month[0]:04d}_{month[1]:02d}"


def bounds(month: tuple[int, int]) -> tuple[int, int]:
    """The month's buckets: its first minute, and the next month's (UTC epoch minutes)."""

    def first_minute(one: tuple[int, int]) -> int:
        return int(datetime(one[0], one[1], 1, tzinfo=UTC).timestamp()) // 60

    return first_minute(month), first_minute(later(month))


async def months_made(connection: asyncpg.Connection) -> list[tuple[int, int]]:
    """The months of `due` that have a table, oldest first."""
    names = await connection.fetch(q.DUE_PARTITIONS)
    found = (_MONTH.match(row["name"]) for row in names)
    return sorted((int(match[1]), int(match[2])) for match in found if match)


async def make_months(connection: asyncpg.Connection, now: datetime) -> int:
    """Make the first missing of this month's table and the next `MONTHS_AHEAD` months', in a
    transaction of its own with the default partition's rows of that month; how many (0 or
    1). One a pass: each holds the default partition for a moment (ATTACH scans it), and a
    fresh database's thirteen at once held its loads and API writes for seconds; until its
    month is made, an occurrence waits in the default partition, tidied row by row."""
    made = set(await months_made(connection))
    this = month_of(now)
    count = 0
    for ahead in range(MONTHS_AHEAD + 1):
        month = later(this, ahead)
        if month in made:
            continue
        first, after = bounds(month)
        name = name_of(month)
        try:
            async with connection.transaction():
                await connection.execute(q.MONTH_LOCKS)
                await connection.execute(q.make_month(name, first, after))
        except (asyncpg.LockNotAvailableError, asyncpg.DuplicateTableError) as error:
            logger.info("the month %s of due waits for the next pass: %s", name, error)
            continue
        count += 1
        break
    return count


async def drop_months(connection: asyncpg.Connection) -> int:
    """Drop the months every part's watermark is a day past, when nothing in them is
    undecided; how many occurrences went with them."""
    settled = await connection.fetchval(q.SETTLED_BUCKET)
    if settled is None:
        return 0
    dropped = 0
    for month in await months_made(connection):
        _, after = bounds(month)
        if after > settled:
            break
        name = name_of(month)
        try:
            async with connection.transaction():
                await connection.execute(q.MONTH_LOCKS)
                # Locked first: no write lands in the month between the count and the drop.
                await connection.execute(f"LOCK TABLE {name} IN ACCESS EXCLUSIVE MODE")
                held = await connection.fetchrow(q.month_undecided(name))
                assert held is not None
                if held["undecided"]:
                    logger.warning(
                        "the month %s of due keeps %d undecided occurrences: not dropped",
                        name,
                        held["undecided"],
                    )
                    continue
                await connection.execute(f"DROP TABLE {name}")
        except asyncpg.LockNotAvailableError as error:
            logger.info("the month %s of due waits for the next pass: %s", name, error)
            continue
        dropped += held["occurrences"]
    return dropped
