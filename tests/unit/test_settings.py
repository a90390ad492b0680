"""Settings whose default depends on the database: the scheduler's part count."""

from __future__ import annotations

import argparse

import pytest

from tocsin.cli.startup import settings_from
from tocsin.settings import Settings


@pytest.fixture(autouse=True)
def _no_tocsin_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOCSIN_PARTS", raising=False)
    monkeypatch.delenv("TOCSIN_DATABASE_URL", raising=False)


def test_sqlite_runs_one_part_and_postgres_sixteen() -> None:
    assert Settings().parts == 1
    assert Settings(database_url="sqlite:////var/lib/tocsin.db").parts == 1
    assert Settings(database_url="postgresql://tocsin@db/tocsin").parts == 16
    assert Settings(database_url="postgres://tocsin@db/tocsin").parts == 16


def test_a_part_count_given_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings(parts=4).parts == 4
    monkeypatch.setenv("TOCSIN_PARTS", "8")
    assert Settings().parts == 8
    assert Settings(database_url="postgresql://tocsin@db/tocsin").parts == 8


def test_the_database_from_the_environment_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOCSIN_DATABASE_URL", "postgresql://tocsin@db/tocsin")
    assert Settings().parts == 16


def test_serve_decides_from_the_database_given_on_the_command_line() -> None:
    args = argparse.Namespace(db="postgresql://tocsin@db/tocsin")
    assert settings_from(args).parts == 16
    assert settings_from(argparse.Namespace(db="tocsin.db")).parts == 1
