"""The scheduler's batches: each field travels at the place `store/batches.py` declares, and
every statement reads it there, by name, on both backends."""

from __future__ import annotations

import re

import orjson
import pytest

from tocsin.store import batches, sql
from tocsin.store.batches import Batch, Field
from tocsin.store.postgres import queries as pg
from tocsin.store.sqlite import queries as lite

# Each batch, the JSON array its PostgreSQL statements read it from, and those statements.
POSTGRES = [
    (batches.POSTGRES_CLAIMS, "c", ["CLAIM"]),
    (batches.POSTGRES_RESULTS, "r", ["RECORD_ATTEMPTS"]),
    (
        batches.POSTGRES_UNWRITTEN,
        "r",
        ["INSERT_FIRINGS", "INSERT_FIRINGS_AFTER_RECOVERY", "INSERT_FIRINGS_UNLESS_WRITTEN"],
    ),
    (
        batches.POSTGRES_EARLIER,
        "e",
        [
            "RECORD_ATTEMPTS",
            "INSERT_FIRINGS",
            "INSERT_FIRINGS_AFTER_RECOVERY",
            "INSERT_FIRINGS_UNLESS_WRITTEN",
        ],
    ),
]
# The same for SQLite, which reads a field where a statement uses it (`json_extract`).
SQLITE = [
    (batches.SQLITE_CLAIMS, "c.value", ["CLAIMABLE"]),
    (batches.SQLITE_RESULTS, "r.value", ["INSERT_ATTEMPTS"]),
    (batches.SQLITE_RESULTS, "a.value", ["FINISH_ATTEMPTS"]),
]
PG_TYPES = {"text", "integer", "bigint", "smallint", "timestamptz", "jsonb"}
# `(c->>1)::timestamptz AS due_at`, `c->>0 AS reminder_id` (text), `c->10 AS content` (jsonb).
_SELECTED = re.compile(r"(?:\((\w+)->>(\d+)\)::(\w+)|(\w+)->(>?)(\d+)) AS (\w+)")


def _where_built(batch: Batch) -> dict[str, int]:
    """Where `Batch.json` puts each field: its rows built with each field's name as its value."""
    (row,) = orjson.loads(batch.json({name: [name] for name in batch.names}))
    assert sorted(row) == sorted(batch.names)
    return {name: row.index(name) for name in batch.names}


def test_every_batch_is_read_by_the_statements_of_a_backend() -> None:
    declared = {id(value) for value in vars(batches).values() if isinstance(value, Batch)}
    tested = {id(batch) for batch, _, _ in POSTGRES + SQLITE}
    assert tested == declared


@pytest.mark.parametrize(("batch", "row", "names"), POSTGRES)
def test_postgres_reads_each_field_by_name_at_its_declared_place_as_its_type(
    batch: Batch, row: str, names: list[str]
) -> None:
    select = pg.select_list(batch, row)
    read = []
    for entry in select.split(", "):
        match = _SELECTED.fullmatch(entry)
        assert match is not None, entry
        array = match[1] or match[4]
        place = int(match[2] or match[6])
        read.append((array, place, match[3] or ("text" if match[5] else "jsonb"), match[7]))
    assert read == [(row, n, field.type, field.name) for n, field in enumerate(batch.fields)]
    assert {field.type for field in batch.fields} <= PG_TYPES
    built = _where_built(batch)
    assert [built[name] for _, _, _, name in read] == list(range(len(batch.fields)))
    for name in names:
        statement: str = getattr(pg, name)
        assert select in statement
        # No read of the array but those of the select list.
        assert len(re.findall(rf"\b{row}->>?", statement)) == len(batch.fields), name


@pytest.mark.parametrize(("batch", "row", "names"), SQLITE)
def test_sqlite_reads_each_field_by_name_at_its_declared_place(
    batch: Batch, row: str, names: list[str]
) -> None:
    # SQLite reads each field as its JSON value (instants are integer microseconds already):
    # its place is all there is to check.
    reads = lite.fields(batch, row)
    built = _where_built(batch)
    for n, field in enumerate(batch.fields):
        assert getattr(reads, field.name) == f"json_extract({row}, '$[{n}]')"
        assert built[field.name] == n
    declared = set(vars(reads).values())
    for name in names:
        statement: str = getattr(lite, name)
        used = re.findall(rf"json_extract\({re.escape(row)}, '\$\[\d+\]'\)", statement)
        assert used, name
        assert set(used) <= declared, name


def test_a_statement_cannot_read_a_field_its_batch_does_not_declare() -> None:
    with pytest.raises(AttributeError, match="reminder"):
        "r.id = {claim.reminder}".format(claim=lite.fields(batches.SQLITE_CLAIMS, "c.value"))
    with pytest.raises(KeyError, match="claim_fields"):  # nor be rendered without its fields
        sql.POSTGRES["CLAIM"].format()


def test_every_statement_is_rendered_whole() -> None:
    for queries in (pg, lite):
        for name, value in vars(queries).items():
            if name.isupper() and not name.startswith("_") and isinstance(value, str):
                assert not re.search(r"\{[\w.]+\}", value), name


def test_rows_cannot_be_built_with_a_field_missing() -> None:
    columns = {name: ["x"] for name in batches.POSTGRES_CLAIMS.names if name != "bucket"}
    with pytest.raises(TypeError, match="bucket"):
        batches.POSTGRES_CLAIMS.json(columns)
    with pytest.raises(TypeError, match="bucket"):
        batches.POSTGRES_CLAIMS.rows(columns)


def test_a_batch_names_each_field_once() -> None:
    with pytest.raises(ValueError, match="twice"):
        Batch(fields=(Field("state", "text"), Field("state", "text")))


def test_a_field_is_placed_by_the_batch_whatever_order_the_columns_come_in() -> None:
    batch = Batch(fields=(Field("a", "text"), Field("b", "integer")))
    assert batch.rows({"b": [1, 2], "a": ["x", "y"], "other": [None, None]}) == [
        ("x", 1),
        ("y", 2),
    ]
