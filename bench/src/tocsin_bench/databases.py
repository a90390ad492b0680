"""Throw-away databases for one benchmark run: a fresh PostgreSQL database on a given server
(dropped afterwards), or an SQLite file in a temporary folder."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from tocsin.store import Store, open_store
from tocsin.store.postgres.queries import ring_content

DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
# The occurrence of every pending reminder a bench inserted with plain SQL, waiting in `due`
# as a save through the store leaves it (the same statement on both backends).
FILL_DUE = """
INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard)
SELECT shard / 64, coalesce(priority, 0), bucket, due_at, id, version, shard FROM reminders
WHERE status = 'pending' AND due_at IS NOT NULL
ON CONFLICT DO NOTHING
"""
# PostgreSQL's: each occurrence with what its ring says (`due.ring`), as the API writes it.
FILL_DUE_SAID = """
INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard, ring)
SELECT shard / 64, coalesce(priority, 0), bucket, due_at, id, version, shard, {ring}
FROM reminders
WHERE status = 'pending' AND due_at IS NOT NULL
ON CONFLICT DO NOTHING
""".format(ring=ring_content("reminders"))
DROP_ATTEMPTS = 30


def server_url(given: str | None) -> str:
    """The PostgreSQL server to make databases on: the flag, TOCSIN_DATABASE_URL when it is
    a PostgreSQL URL, else the local default."""
    if given:
        return given
    env = os.environ.get("TOCSIN_DATABASE_URL", "")
    if env.startswith(("postgresql://", "postgres://")):
        return env
    return DEFAULT_PG_URL


def with_database(url: str, database: str) -> str:
    """`url` pointing at another database on the same server (query string kept)."""
    base, _, rest = url.rpartition("/")
    _, question, query = rest.partition("?")
    return f"{base}/{database}{question}{query}"


@asynccontextmanager
async def throwaway(db: str, *, pg_url: str | None = None) -> AsyncIterator[str]:
    """A fresh database URL of kind `db` ("sqlite" or "postgres"), removed on exit."""
    if db == "sqlite":
        folder = tempfile.mkdtemp(prefix="tocsin-bench-")
        try:
            yield f"sqlite:///{folder}/bench.db"
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    if db != "postgres":
        raise ValueError(f"unknown database kind {db!r}: sqlite or postgres")
    admin = server_url(pg_url)
    name = f"tocsin_bench_{uuid.uuid4().hex[:10]}"
    await _admin(admin, f'CREATE DATABASE "{name}"')
    try:
        yield with_database(admin, name)
    finally:
        await _drop(admin, name)


async def _drop(admin: str, name: str) -> None:
    """Drop the database, waiting out a server restart (up to a minute) rather than leaving
    it behind."""
    for _ in range(DROP_ATTEMPTS - 1):
        try:
            await _admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            await asyncio.sleep(2.0)
        else:
            return
    await _admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def _admin(url: str, sql: str) -> None:
    connection = await asyncpg.connect(url, timeout=10)
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


async def migrated_store(url: str) -> Store:
    """An open store on `url` with every migration applied."""
    store = await open_store(url)
    try:
        await store.migrate()
    except BaseException:
        await store.close()
        raise
    return store
