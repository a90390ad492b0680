"""Fixtures every suite shares: databases (real SQLite, real PostgreSQL) and stores."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.postgres import PostgresServer, postgres_server
from tocsin.store import Store, open_store

_unavailable: list[str] = []


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server (skipped, loudly, when none can be had outside CI)."""
    with postgres_server() as server:
        if isinstance(server, str):
            if os.environ.get("CI") == "true":
                pytest.fail(f"PostgreSQL is required under CI: {server}")
            _unavailable.append(server)
            pytest.skip(f"PostgreSQL tests skipped: {server}")
        yield server


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    url = pg_server.create_database()
    try:
        yield url
    finally:
        pg_server.drop_database(url)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A fresh SQLite database file for one test."""
    return f"sqlite:///{tmp_path / 'tocsin.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each test that takes this runs once per backend, against a fresh database."""
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    url: str = request.getfixturevalue(name)
    return url


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    """A migrated store on a fresh database, once per backend."""
    opened = await open_store(db_url)
    await opened.migrate()
    try:
        yield opened
    finally:
        await opened.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for reason in _unavailable:
        terminalreporter.write_sep("!", f"POSTGRESQL TESTS WERE SKIPPED: {reason}", red=True)
