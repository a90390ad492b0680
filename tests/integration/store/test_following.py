"""Following the primary on real PostgreSQL: every write, and the LISTEN connection, leave a
server that takes no writes; a connection that fails names each host and what it answered;
two renewals at once count each other."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import asyncpg
import pytest

from tests.integration.store.factories import reminder
from tests.support.postgres import PostgresServer
from tests.support.postgres import execute as _admin
from tocsin.errors import DatabaseReadOnly, StoreUnavailable
from tocsin.store import Store, codec, open_store
from tocsin.store.postgres import queries as q
from tocsin.store.postgres import wakeups
from tocsin.store.postgres.hosts import Hosts
from tocsin.store.postgres.wakeups import Wakeups

pytestmark = pytest.mark.postgres

TTL = timedelta(seconds=10)


@asynccontextmanager
async def _read_only(server: PostgresServer, url: str) -> AsyncIterator[None]:
    """New sessions of the database take no writes (as pg_auto_failover fences a primary)
    until the block ends."""
    name = url.rpartition("/")[2]
    await _admin(
        server.admin_url, f'ALTER DATABASE "{name}" SET default_transaction_read_only = on'
    )
    try:
        yield
    finally:
        await _admin(
            server.admin_url, f'ALTER DATABASE "{name}" RESET default_transaction_read_only'
        )


async def _eventually_saved(store: Store) -> int:
    """Save a reminder until it is saved; the refusals met before."""
    refusals = 0
    while True:
        try:
            await store.add_reminders([reminder()])
        except DatabaseReadOnly:
            refusals += 1
            assert refusals < 20, "the pool never left the read-only server"
            await asyncio.sleep(0.1)
        else:
            return refusals


async def test_a_write_refused_read_only_sends_every_write_to_a_writable_server(
    pg_migrated_url: str, pg_server: PostgresServer
) -> None:
    # Its pooled connections are made while the server takes no writes, as a process's are
    # when its primary is fenced or demoted under it; then the server takes writes again
    # (the primary is back where the URL leads).
    async with _read_only(pg_server, pg_migrated_url):
        store = await open_store(pg_migrated_url)
    try:
        # Saves alone, as an API process that mostly creates makes: the refusal expires the
        # pool, and the next save is made on a connection that can write.
        assert await _eventually_saved(store) >= 1
        assert await _eventually_saved(store) == 0
        assert await store.revoke_app("nobody", reminder().created_at) is False
    finally:
        await store.close()


async def test_a_failed_connection_names_each_host_and_what_it_answered(
    pg_migrated_url: str, pg_server: PostgresServer
) -> None:
    scheme, _, rest = pg_migrated_url.partition("://")
    credentials, _, path = rest.partition("/")
    user, _, live = credentials.rpartition("@")
    # A port nothing listens on (the kernel's ephemeral ports are not handed to listeners
    # here), then the real server, which takes no writes.
    url = f"{scheme}://{user}@127.0.0.1:1,{live}/{path}?target_session_attrs=read-write"
    async with _read_only(pg_server, pg_migrated_url):
        with pytest.raises(DatabaseReadOnly) as refused:
            await open_store(url)
    said = str(refused.value)
    assert "127.0.0.1:1: ConnectionRefusedError" in said, said
    assert f"{live}: read-only" in said, said

    dead = f"{scheme}://{user}@127.0.0.1:1,127.0.0.1:2/{path}"
    with pytest.raises(StoreUnavailable) as unreachable:
        await open_store(dead)
    assert "127.0.0.1:1: " in str(unreachable.value)
    assert "127.0.0.1:2: " in str(unreachable.value)


async def test_the_host_that_took_writes_last_is_tried_first(pg_migrated_url: str) -> None:
    scheme, _, rest = pg_migrated_url.partition("://")
    credentials, _, path = rest.partition("/")
    user, _, live = credentials.rpartition("@")
    hosts = Hosts(f"{scheme}://{user}@127.0.0.1:1,{live}/{path}?target_session_attrs=read-write")
    tried: list[str] = []
    real = asyncpg.connect

    async def noting(url: str, **options: object) -> asyncpg.Connection:
        tried.append(url.partition("@")[2].partition("/")[0])
        return await real(url, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(asyncpg, "connect", noting)
        for _ in range(2):
            connection = await hosts.connect()
            await connection.close()
    assert tried == ["127.0.0.1:1", live, live]


async def test_the_listen_connection_leaves_a_server_that_takes_no_writes(
    pg_migrated_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fenced primary still answers `SELECT 1`, but NOTIFY is sent on the new primary: the
    ping asks whether the server takes writes, and the connection is made again."""
    monkeypatch.setattr(wakeups, "_PING_SECONDS", 0.2)
    listening = Wakeups(lambda: asyncpg.connect(pg_migrated_url))
    notifier = await asyncpg.connect(pg_migrated_url)
    try:
        heard: list[None] = []
        await listening.add_leases(lambda: heard.append(None))
        first = listening._connection
        assert first is not None
        async with listening._using:  # its server fenced: the session takes no writes
            await first.execute("SET default_transaction_read_only = on")
        with caplog.at_level(logging.WARNING, logger="tocsin.store.postgres.wakeups"):
            for _ in range(600):
                if listening._connection not in (None, first):
                    break
                await asyncio.sleep(0.05)
        assert "takes no writes" in caplog.text
        async with asyncio.timeout(30):
            while not heard:
                await notifier.execute("SELECT pg_notify($1, 'w')", codec.LEASES_CHANNEL)
                await asyncio.sleep(0.1)
    finally:
        await notifier.close()
        await listening.close()


async def test_two_renewals_at_once_count_each_other(pg_store: Store, pg_migrated_url: str) -> None:
    """Both workers back after an outage renew at the same moment: each must count the other
    live (the share it keeps says so), not one live worker with half the parts."""
    await pg_store.renew_leases("a", parts=16, ttl=TTL)
    await pg_store.renew_leases("b", parts=16, ttl=TTL)
    assert len((await pg_store.renew_leases("a", parts=16, ttl=TTL)).parts) == 8
    assert len((await pg_store.renew_leases("b", parts=16, ttl=TTL)).parts) == 8
    # The outage: both heartbeats and all leases are older than a lease time.
    await _admin(
        pg_migrated_url,
        "UPDATE workers SET heartbeat_at = heartbeat_at - interval '1 minute';"
        "UPDATE leases SET expires_at = expires_at - interval '1 minute'",
    )
    # "b" is in the middle of its renewal: heartbeat written, its parts locked, not committed.
    b = await asyncpg.connect(pg_migrated_url)
    try:
        renewing = b.transaction()
        await renewing.start()
        await b.execute(q.LOCK_RENEWALS)
        await b.execute(
            "UPDATE workers SET heartbeat_at = clock_timestamp() WHERE worker = 'b';"
            "SELECT part FROM leases WHERE holder = 'b' FOR UPDATE"
        )
        a = asyncio.create_task(pg_store.renew_leases("a", parts=16, ttl=TTL))
        await asyncio.sleep(0.5)
        await renewing.commit()
        held = await a
    finally:
        await b.close()
    assert held.live_workers == 2
    assert len(held.parts) == 8
