"""The store's named SQL blocks: how a file is read and a shared statement rendered for asyncpg."""

from __future__ import annotations

import pytest

from tocsin.store import sql


def test_a_block_is_its_text_without_its_description_or_what_follows() -> None:
    text = """-- header of the file

-- name: FIRST
-- what it does
SELECT 1
FROM t  -- a comment inside stays

-- a comment of the file, not of FIRST

-- name: SECOND
SELECT 2
"""
    assert sql.parse(text) == {
        "FIRST": "SELECT 1\nFROM t  -- a comment inside stays",
        "SECOND": "SELECT 2",
    }


def test_two_blocks_of_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="two blocks"):
        sql.parse("-- name: A\nSELECT 1\n-- name: A\nSELECT 2\n")


def test_names_become_numbered_in_order_of_first_appearance() -> None:
    statement = sql.positional(
        "UPDATE t SET a = :reason, b = :now, c = :now::text, d = 'x:y' || ':name'"
        " WHERE id = :id  -- not :this"
    )
    assert statement.sql == (
        "UPDATE t SET a = $1, b = $2, c = $2::text, d = 'x:y' || ':name'"
        " WHERE id = $3  -- not :this"
    )
    assert statement.names == ("reason", "now", "id")
    assert statement.bind(id=7, now=2, reason="r") == (statement.sql, "r", 2, 7)
    with pytest.raises(TypeError):
        statement.bind(id=7, now=2)
    with pytest.raises(KeyError):
        statement.bind(id=7, now=2, other=1)


def test_every_shared_statement_reaches_both_backends() -> None:
    for name, statement in sql.POSTGRES_SHARED.items():
        assert sql.POSTGRES[name] == statement.sql
        assert sql.SQLITE[name] == sql.SHARED[name]
        assert "?" not in sql.SHARED[name]
        assert "::" not in sql.SHARED[name]
