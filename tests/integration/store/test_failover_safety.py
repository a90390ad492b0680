"""What a failover does to a worker, on real PostgreSQL: a database that answers but takes no
writes (a standby) stops it at once and says so, and a database clock that jumps (the new
primary's clock is not the old one's) changes who holds a part, never lets two claim it."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

import pytest

from tests.integration.store.factories import LEASE, NOW, claim, reminder
from tests.support.postgres import PostgresServer
from tests.support.postgres import execute as _admin
from tocsin.clock import SystemClock
from tocsin.domain import HeldParts
from tocsin.errors import DatabaseReadOnly
from tocsin.readiness import database_problem
from tocsin.scheduler.leases import LeaseKeeper
from tocsin.store import Store, open_store

pytestmark = pytest.mark.postgres


async def test_a_read_only_database_stops_the_worker_and_readiness_says_why(
    pg_migrated_url: str, pg_server: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    name = pg_migrated_url.rpartition("/")[2]
    await _admin(
        pg_server.admin_url, f'ALTER DATABASE "{name}" SET default_transaction_read_only = on'
    )
    store = await open_store(pg_migrated_url)
    reports: list[HeldParts] = []
    keeper = LeaseKeeper(
        store, SystemClock(), reports.append, worker="w", parts=4, ttl=timedelta(seconds=10)
    )
    try:
        with caplog.at_level(logging.WARNING, logger="tocsin.scheduler.leases"):
            assert await keeper.renew() is False
        assert keeper.held.parts == frozenset()
        assert reports
        assert reports[-1].parts == frozenset()
        assert "read-only, not the primary: claiming nothing" in caplog.text
        problem = await database_problem(store)
        assert problem is not None
        assert "read-only" in problem
        with pytest.raises(DatabaseReadOnly):
            await store.renew_leases("w", parts=4, ttl=LEASE)

        # The primary is back where the pool reaches: its connections, made read-only, were
        # expired by the refusal, so the next renewal runs on new ones and succeeds.
        await _admin(
            pg_server.admin_url, f'ALTER DATABASE "{name}" RESET default_transaction_read_only'
        )
        await asyncio.sleep(0.1)
        assert await keeper.renew() is True
        assert len(keeper.held.parts) == 4
        assert await database_problem(store) is None
    finally:
        await store.close()


async def test_a_database_clock_ahead_hands_parts_over_and_fences_the_old_holder(
    pg_store: Store, pg_migrated_url: str
) -> None:
    one_off = reminder()
    await pg_store.add_reminders([one_off])
    first = await pg_store.renew_leases("a", parts=1, ttl=LEASE)
    assert first.parts == frozenset({0})

    # The new primary's clock is an hour ahead of the old one's: every lease row that came
    # over with the data has run out by its reading.
    await _admin(pg_migrated_url, "UPDATE leases SET expires_at = expires_at - interval '1 hour'")
    taken = await pg_store.renew_leases("b", parts=1, ttl=LEASE)
    assert taken.parts == frozenset({0})
    assert taken.taken_over == 1

    mine = claim(one_off)._replace(part=0)
    assert (
        await pg_store.claim([mine], sender="a", now=NOW, lease=LEASE, fence=first.fence(1)) == []
    )
    assert (await pg_store.renew_leases("a", parts=1, ttl=LEASE)).parts == frozenset()
    [fired] = await pg_store.claim([mine], sender="b", now=NOW, lease=LEASE, fence=taken.fence(1))
    assert fired.reminder_id == one_off.id


async def test_a_database_clock_behind_keeps_a_dead_holders_part_longer(
    pg_store: Store, pg_migrated_url: str
) -> None:
    await pg_store.renew_leases("a", parts=1, ttl=LEASE)

    # The new primary's clock is an hour behind: the lease of "a", which then dies, runs out
    # an hour later by its reading, and nobody may take the part before.
    await _admin(pg_migrated_url, "UPDATE leases SET expires_at = expires_at + interval '1 hour'")
    other = await pg_store.renew_leases("b", parts=1, ttl=LEASE)

    assert other.parts == frozenset()
    assert other.next_expiry is not None
    assert other.next_expiry > 3000


async def test_a_multi_host_url_passes_over_a_dead_host(pg_migrated_url: str) -> None:
    scheme, _, rest = pg_migrated_url.partition("://")
    credentials, _, path = rest.partition("/")
    user, _, host = credentials.rpartition("@")
    # A port nothing listens on (the kernel's ephemeral ports are not handed to listeners
    # here), then the real server; only the writable one is taken.
    url = f"{scheme}://{user}@127.0.0.1:1,{host}/{path}?target_session_attrs=read-write"
    store = await open_store(url)
    try:
        assert await database_problem(store) is None
        await store.add_reminders([reminder()])
    finally:
        await store.close()
