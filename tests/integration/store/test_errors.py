"""Driver errors leave the store wrapped: `StoreUnavailable` when unreachable, else `StoreError`."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from tests.integration.store.factories import NOW, reminder
from tocsin.domain import App
from tocsin.errors import StoreError, StoreUnavailable
from tocsin.store import Store, open_store


async def test_a_closed_port_is_unavailable() -> None:
    with pytest.raises(StoreUnavailable):
        await open_store("postgresql://postgres@127.0.0.1:1/tocsin")


@pytest.mark.postgres
async def test_a_missing_database_is_an_error(pg_url: str) -> None:
    with pytest.raises(StoreError):
        await open_store(pg_url + "_missing")


async def test_an_sqlite_file_that_cannot_be_opened_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable):
        await open_store(f"sqlite:///{tmp_path}/no/such/folder/tocsin.db")


@pytest.mark.parametrize("url", ["sqlite://", "sqlite://host/x.db", "sqlite:///x.db?synchronous=x"])
async def test_a_malformed_sqlite_url_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match=r"sqlite|synchronous"):
        await open_store(url)


async def test_a_constraint_violation_is_a_store_error(store: Store) -> None:
    app = App(name="phone", key_hash="h1", key_prefix="tcs_1", created_at=NOW)
    await store.add_app(app)

    with pytest.raises(StoreError) as raised:
        await store.add_app(App(name="phone", key_hash="h2", key_prefix="tcs_2", created_at=NOW))

    assert not isinstance(raised.value, StoreUnavailable)
    assert raised.value.__cause__ is not None


async def test_a_closed_store_refuses_work(db_url: str) -> None:
    store = await open_store(db_url)
    await store.close()

    with pytest.raises(StoreError):
        await store.get_reminder("0000000000000000")


@pytest.mark.postgres
async def test_lost_connections_are_unavailable_then_reconnect(pg_migrated_url: str) -> None:
    store = await open_store(pg_migrated_url)
    try:
        await store.add_reminders([reminder()])
        await _terminate_others(pg_migrated_url)

        outcomes: list[object] = []
        for _ in range(3):
            try:
                outcomes.append(await store.count_apps())
            except StoreUnavailable as error:
                outcomes.append(error)
        assert outcomes[-1] == 0  # the pool made new connections
        assert all(o == 0 or isinstance(o, StoreUnavailable) for o in outcomes)
    finally:
        await store.close()


async def _terminate_others(url: str) -> None:
    admin = await asyncpg.connect(url)
    try:
        await admin.execute(
            """
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
            """
        )
    finally:
        await admin.close()
