"""Schema dumps for the snapshot test, and the command that regenerates the snapshots.

`.venv/bin/python -m tests.integration.store.schema` migrates a fresh SQLite file and a fresh
PostgreSQL database and writes their dumps to `src/tocsin/store/migrations/<backend>/schema.sql`.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from pathlib import Path

import asyncpg
import pytest

from tocsin.store import open_store
from tocsin.store.migrations import Migration

SNAPSHOTS = Path(__file__).parents[3] / "src" / "tocsin" / "store" / "migrations"

_HEADER = (
    "-- The schema every migration together makes: a snapshot, compared with a freshly\n"
    "-- migrated database by tests/integration/store/test_migrations.py. Regenerate with\n"
    "-- `.venv/bin/python -m tests.integration.store.schema`; never edit by hand.\n\n"
)

_PG_COLUMNS = """
SELECT c.relname AS table_name, a.attname AS name,
    format_type(a.atttypid, a.atttypmod) AS type,
    CASE WHEN a.attcollation <> t.typcollation THEN coll.collname END AS collation,
    a.attnotnull AS not_null, pg_get_expr(d.adbin, d.adrelid) AS default_value,
    a.attgenerated = 's' AS generated
FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type AS t ON t.oid = a.atttypid
LEFT JOIN pg_collation AS coll ON coll.oid = a.attcollation
LEFT JOIN pg_attrdef AS d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY c.relname, a.attnum
"""

# A partitioned table's key, and each partition with its bounds.
_PG_PARTITIONS = """
SELECT c.relname AS name, pg_get_partkeydef(c.oid) AS key, NULL AS parent, NULL AS bound
FROM pg_class AS c
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'p'
UNION ALL
SELECT c.relname, NULL, p.relname, pg_get_expr(c.relpartbound, c.oid)
FROM pg_inherits AS i
JOIN pg_class AS c ON c.oid = i.inhrelid
JOIN pg_class AS p ON p.oid = i.inhparent
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
ORDER BY 1
"""

_PG_CONSTRAINTS = """
SELECT conrelid::regclass::text AS table_name, conname AS name,
    pg_get_constraintdef(oid) AS definition
FROM pg_constraint
WHERE connamespace = 'public'::regnamespace AND conparentid = 0
ORDER BY conrelid::regclass::text, conname
"""

_PG_INDEXES = """
SELECT indexdef FROM pg_indexes
WHERE schemaname = 'public'
  AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE contype IN ('p', 'u'))
  AND tablename NOT IN (SELECT inhrelid::regclass::text FROM pg_inherits)
ORDER BY indexname
"""

_PG_FUNCTIONS = """
SELECT pg_get_functiondef(p.oid) AS definition FROM pg_proc AS p
WHERE p.pronamespace = 'public'::regnamespace
ORDER BY p.proname
"""


def dump_sqlite(path: str) -> str:
    """The DDL of every table and index in the SQLite file, sorted by kind and name."""
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
            " ORDER BY type DESC, name"
        ).fetchall()
    finally:
        connection.close()
    return _HEADER + "".join(f"{sql};\n\n" for (sql,) in rows).rstrip() + "\n"


async def dump_postgres(url: str) -> str:
    """Every table (columns in physical order), constraint and index, as DDL-like text."""
    connection = await asyncpg.connect(url)
    try:
        columns = await connection.fetch(_PG_COLUMNS)
        constraints = await connection.fetch(_PG_CONSTRAINTS)
        indexes = await connection.fetch(_PG_INDEXES)
        partitions = await connection.fetch(_PG_PARTITIONS)
        functions = await connection.fetch(_PG_FUNCTIONS)
    finally:
        await connection.close()
    tables: dict[str, list[str]] = {}
    for column in columns:
        line = f"{column['name']} {column['type']}"
        if column["collation"]:
            line += f' COLLATE "{column["collation"]}"'
        if column["not_null"]:
            line += " NOT NULL"
        if column["generated"]:
            line += f" GENERATED ALWAYS AS ({column['default_value']}) STORED"
        elif column["default_value"] is not None:
            line += f" DEFAULT {column['default_value']}"
        tables.setdefault(column["table_name"], []).append(line)
    for constraint in constraints:
        if constraint["table_name"] in tables:
            tables[constraint["table_name"]].append(
                f"CONSTRAINT {constraint['name']} {constraint['definition']}"
            )
    keys = {row["name"]: f" PARTITION BY {row['key']}" for row in partitions if row["key"]}
    text = "".join(
        f"CREATE TABLE {name} (\n    " + ",\n    ".join(lines) + f"\n){keys.get(name, '')};\n\n"
        for name, lines in tables.items()
    )
    text += "".join(
        f"CREATE TABLE {row['name']} PARTITION OF {row['parent']} {row['bound']};\n\n"
        for row in partitions
        if row["parent"]
    )
    text += "".join(f"{index['indexdef']};\n" for index in indexes)
    text += "".join(f"\n{row['definition'].strip()};\n" for row in functions)
    return _HEADER + text


def knowing(monkeypatch: pytest.MonkeyPatch, backend: str, migrations: list[Migration]) -> None:
    """Make `backend`'s store and migration runner know `migrations` (and no others), until
    `monkeypatch.undo()`: a database of an earlier release, or with a migration added."""
    modules = ["tocsin.store.sqlite.store"]
    if backend != "sqlite":
        modules = ["tocsin.store.postgres.store", "tocsin.store.postgres.migrating"]
    for module in modules:
        monkeypatch.setattr(f"{module}.migrations_for", lambda name: migrations)


async def migrate_database(url: str) -> None:
    """Apply every migration to the database at `url`."""
    store = await open_store(url)
    try:
        await store.migrate()
    finally:
        await store.close()


def main() -> None:
    from tests.support.postgres import postgres_server

    dumps: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/schema.db"
        asyncio.run(migrate_database(f"sqlite:///{path}"))
        dumps["sqlite"] = dump_sqlite(path)
    with postgres_server() as server:
        if isinstance(server, str):
            raise SystemExit(f"no PostgreSQL: {server}")
        url = server.create_database()
        try:
            asyncio.run(migrate_database(url))
            dumps["postgres"] = asyncio.run(dump_postgres(url))
        finally:
            server.drop_database(url)
    for backend, text in dumps.items():
        target = SNAPSHOTS / backend / "schema.sql"
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target}")


if __name__ == "__main__":
    main()
