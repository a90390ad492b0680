"""Fixtures every suite shares: databases (real SQLite, real PostgreSQL) and stores."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.keys import TEST_KEYRING, TEST_SECRET_KEY
from tests.support.loud import (  # the hooks: a red note at the end of a run that skipped
    pytest_sessionfinish,  # noqa: F401 - tests for want of PostgreSQL or a browser
    pytest_terminal_summary,  # noqa: F401
    pytest_testnodedown,  # noqa: F401
    unavailable,
)
from tests.support.postgres import Databases, PostgresServer, migrated_template, postgres_server
from tocsin.store import Store, open_store

# The `browser` fixture (headless Chromium), for the tests of the pages; and under xdist, the
# long files handed out first.
pytest_plugins = ["tests.support.browser", "tests.support.order"]

# Every `Settings()` of a test, and every process a test starts with this environment, has
# the tests' key (a developer's own is not used: stores the tests open seal with this one).
# The missing-key path is tested explicitly (tests/integration/api/test_secret_key.py).
os.environ["TOCSIN_SECRET_KEY"] = TEST_SECRET_KEY


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server (skipped, loudly, when none can be had outside CI)."""
    with postgres_server() as server:
        if isinstance(server, str):
            unavailable("PostgreSQL", server)
        yield server


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    url = pg_server.create_database()
    try:
        yield url
    finally:
        pg_server.drop_database(url)


@pytest.fixture(scope="session")
def pg_template(pg_server: PostgresServer) -> Iterator[str]:
    """The name of a database migrated once per session, copied for each test that needs a
    migrated database (CREATE DATABASE … TEMPLATE is much faster than migrating)."""
    with migrated_template(pg_server) as name:
        yield name


@pytest.fixture(scope="session")
def pg_databases(pg_server: PostgresServer, pg_template: str) -> Iterator[Databases]:
    """Migrated databases for tests, recycled from one test to the next."""
    databases = Databases(pg_server, pg_template)
    try:
        yield databases
    finally:
        databases.close()


@pytest.fixture
def pg_migrated_url(pg_databases: Databases) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database for one test, dropped afterwards."""
    url = pg_databases.take()
    try:
        yield url
    finally:
        pg_databases.give_back(url)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A fresh SQLite database file for one test."""
    return f"sqlite:///{tmp_path / 'tocsin.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    """Each test that takes this (or `db_url`, `migrated_db_url`, `store`) runs once per
    backend: "sqlite" and "postgres"."""
    name: str = request.param
    return name


@pytest.fixture
def db_url(backend: str, request: pytest.FixtureRequest) -> str:
    """A fresh, empty database, once per backend."""
    url: str = request.getfixturevalue("sqlite_url" if backend == "sqlite" else "pg_url")
    return url


@pytest.fixture
def migrated_db_url(backend: str, request: pytest.FixtureRequest) -> str:
    """A fresh, migrated database, once per backend."""
    if backend == "sqlite":
        url: str = request.getfixturevalue("sqlite_url")
    else:
        url = request.getfixturevalue("pg_migrated_url")
    return url


@pytest.fixture
async def store(migrated_db_url: str) -> AsyncIterator[Store]:
    """A migrated store on a fresh database, once per backend."""
    opened = await open_store(migrated_db_url, keyring=TEST_KEYRING)
    await opened.migrate()
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def pg_store(pg_migrated_url: str) -> AsyncIterator[Store]:
    """A store on a fresh migrated PostgreSQL database, for the tests of PostgreSQL alone."""
    opened = await open_store(pg_migrated_url)
    try:
        yield opened
    finally:
        await opened.close()
