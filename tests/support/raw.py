"""Reading a database with its driver itself, around the store: to see what it holds."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

import asyncpg


async def raw_pairs(url: str, sql: str) -> list[tuple[Any, Any]]:
    """The first two columns of each row `sql` (no parameters) answers, on either backend."""
    if url.startswith("sqlite"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as connection:
            return [(row[0], row[1]) for row in connection.execute(sql)]
    connection = await asyncpg.connect(url)
    try:
        return [(row[0], row[1]) for row in await connection.fetch(sql)]
    finally:
        await connection.close()


async def raw_execute(url: str, sql: str) -> None:
    """Run `sql` (no parameters) and commit, on either backend: to set up a state the store
    no longer makes (rows an earlier version wrote)."""
    if url.startswith("sqlite"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as connection:
            connection.execute(sql)
            connection.commit()
        return
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(sql)
    finally:
        await connection.close()
