"""The PostgreSQL backend's connection pool: a bounded wait for a connection, and connections
that follow the primary wherever it goes.

Every statement of the store goes through `Pool`, so both hold for every method: a read-only
refusal on any connection (a primary demoted, or fenced read-only, since the connection was
made) expires them all, and the next ones are made through the URL's hosts (`Hosts`) to the
one that takes writes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from asyncpg import Record

from tocsin.errors import DatabaseDown, DatabaseReadOnly, StoreUnavailable
from tocsin.store.postgres.failures import DRIVER_ERRORS, boundary, translate
from tocsin.store.postgres.hosts import Hosts

POOL_MIN = 2
POOL_MAX = 10
CONNECT_TIMEOUT = 10.0  # for each host of the URL
# Every session says it writes `due` itself: the triggers that keep `due` and the firings'
# ring before for the writes of a release from before migration 0021, while it still runs
# beside an upgrade, leave this release's writes alone (migrations 0033 and 0035). Set once a
# connection is made, not sent with its start: PgBouncer refuses a start with a setting it
# does not know.
WRITES_DUE = "SET tocsin.writes_due = on"


def _not_said_yet(record: logging.LogRecord) -> bool:
    """asyncpg logs each failed try to keep its floor of connections, every second or so of
    an outage, with a traceback; `Hosts` has said that the database is away already."""
    error = record.exc_info[1] if record.exc_info else None
    return not isinstance(error, DatabaseDown | DatabaseReadOnly)


class PoolBusy(StoreUnavailable):
    """No pooled connection came free within the acquire timeout: the database is slow to
    commit, or this process has more work in flight than its pool."""


async def _keep_session(connection: asyncpg.Connection) -> None:
    """A pooled connection's reset on release: nothing beyond asyncpg's own (rolling back a
    transaction left open). Its default also sends `SELECT pg_advisory_unlock_all(); CLOSE
    ALL; UNLISTEN *; RESET ALL`, a second round trip after every statement (a single save
    took 389 µs instead of 272 µs, docs/benchmarks.md), for session state no store method
    leaves behind: settings are `SET LOCAL` inside transactions, LISTEN has a connection of
    its own (`Wakeups`), and `migrate` releases its advisory lock itself. A method that sets
    session state must undo it; the one setting a session keeps is `WRITES_DUE`, set once
    when the connection is made."""


async def _writes_due(connection: asyncpg.Connection) -> None:
    await connection.execute(WRITES_DUE)


class Pool:
    """asyncpg's pool behind a wait for one of its `POOL_MAX` connections bounded by
    `acquire_timeout` (None: as long as it takes), and expired whole after a read-only
    refusal."""

    def __init__(self, pool: asyncpg.Pool, hosts: Hosts, *, acquire_timeout: float | None):
        self._pool = pool
        self.hosts = hosts
        self._acquire_timeout = acquire_timeout
        # Waiting here rather than in asyncpg's own acquire (whose timeout also covers making
        # the connection) bounds only the queue: a connection being made to a slow host is
        # not abandoned half-way, so the pool still reaches a primary that takes seconds.
        self._slots = asyncio.Semaphore(POOL_MAX)
        self._expiring: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, url: str, *, acquire_timeout: float | None) -> Pool:
        hosts = Hosts(url)
        asyncpg_log = logging.getLogger("asyncpg.pool")
        if _not_said_yet not in asyncpg_log.filters:
            asyncpg_log.addFilter(_not_said_yet)
        with boundary():
            pool = await asyncpg.create_pool(
                url,
                min_size=POOL_MIN,
                max_size=POOL_MAX,
                timeout=CONNECT_TIMEOUT,
                reset=_keep_session,
                connect=hosts.connect,
                init=_writes_due,
            )
        return cls(pool, hosts, acquire_timeout=acquire_timeout)

    @asynccontextmanager
    async def acquire(self) -> AsyncIterator[Any]:
        """A connection for the body (an `asyncpg.Connection`); `PoolBusy` when none came free
        in time."""
        try:
            async with asyncio.timeout(self._acquire_timeout):
                await self._slots.acquire()
        except TimeoutError:
            raise PoolBusy(
                f"no database connection came free within {self._acquire_timeout:g} s "
                f"(all {POOL_MAX} of this process's are in use)"
            ) from None
        try:
            async with self._pool.acquire() as connection:
                yield connection
        except DRIVER_ERRORS as error:
            failure = translate(error)
            if isinstance(failure, DatabaseReadOnly):
                self._expire_soon()
            elif type(failure) is StoreUnavailable:  # the connection was lost mid-call
                self.hosts.outage.lost(failure)
                raise DatabaseDown(str(failure)) from error
            raise
        except DatabaseReadOnly:  # no host of the URL takes writes
            self._expire_soon()
            raise
        finally:
            self._slots.release()

    async def fetch(self, sql: str, *args: Any) -> list[Record]:
        async with self.acquire() as connection:
            rows: list[Record] = await connection.fetch(sql, *args)
            return rows

    async def fetchrow(self, sql: str, *args: Any) -> Record | None:
        async with self.acquire() as connection:
            row: Record | None = await connection.fetchrow(sql, *args)
            return row

    async def fetchval(self, sql: str, *args: Any) -> Any:
        async with self.acquire() as connection:
            return await connection.fetchval(sql, *args)

    async def execute(self, sql: str, *args: Any) -> str:
        async with self.acquire() as connection:
            status: str = await connection.execute(sql, *args)
            return status

    async def close(self) -> None:
        await self._pool.close()

    def _expire_soon(self) -> None:
        """Every pooled connection made again as each is next acquired (through the URL's
        hosts, to the one that takes writes). A connection is judged writable when it is
        made: one made to a primary that has since become a standby (a switchover that
        demoted it without a restart, a URL naming a single host) or that pg_auto_failover
        fenced read-only keeps answering, read-only."""
        if self._expiring is None or self._expiring.done():
            self._expiring = asyncio.get_running_loop().create_task(
                self._pool.expire_connections(), name="tocsin-pool-expire"
            )
