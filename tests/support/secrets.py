"""The secrets a database keeps, read and written with the drivers themselves, around the
store: to see what someone with read access to the database would see."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import asyncpg

from tests.support.raw import raw_pairs

# (table, key column, secret column) of every column that keeps a secret.
COLUMNS = (
    ("apps", "name", "webhook_secret"),
    ("contacts", "id", "secret"),
    ("secrets", "name", "value"),
)


async def raw_secrets(url: str) -> dict[str, str]:
    """Every stored secret as the database holds it, by `table/key`."""
    found: dict[str, str] = {}
    for table, key, column in COLUMNS:
        sql = f"SELECT {key}, {column} FROM {table} WHERE {column} IS NOT NULL"
        for row_key, value in await raw_pairs(url, sql):
            found[f"{table}/{row_key}"] = value
    return found


async def set_raw(url: str, table: str, key: str, value: str) -> None:
    """Write a stored secret behind the store's back (as an older version, or an attacker)."""
    key_column, column = next((k, c) for t, k, c in COLUMNS if t == table)
    if url.startswith("sqlite"):
        sql = f"UPDATE {table} SET {column} = ? WHERE {key_column} = ?"
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as connection, connection:
            connection.execute(sql, (value, key))
        return
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(
            f"UPDATE {table} SET {column} = $1 WHERE {key_column} = $2", value, key
        )
    finally:
        await connection.close()
