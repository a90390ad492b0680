"""Scheduler leases: fair shares, takeover after expiry (by the database's clock), epochs,
release, watermarks, on both backends."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from tests.integration.engine.support import eventually
from tocsin.domain import HeldParts
from tocsin.errors import StoreError
from tocsin.store import Store, open_store
from tocsin.store.postgres import queries as pg
from tocsin.store.postgres.store import RENEWAL_TIMEOUT_FLOOR

TTL = timedelta(seconds=10)
SHORT = timedelta(seconds=0.5)  # for the tests that wait for a lease to run out
PARTS = 16

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)  # a sweep's reading time


async def renew(store: Store, worker: str, ttl: timedelta = TTL) -> HeldParts:
    return await store.renew_leases(worker, parts=PARTS, ttl=ttl)


async def test_a_lone_worker_holds_every_part(store: Store) -> None:
    held = await renew(store, "w1")

    assert held.parts == frozenset(range(PARTS))
    assert held.live_workers == 1
    assert held.watermarks == dict.fromkeys(range(PARTS))


async def test_two_workers_converge_on_half_each(store: Store) -> None:
    await renew(store, "w1")
    second = await renew(store, "w2")  # everything is held: w2 waits for w1 to let go
    first = await renew(store, "w1")
    second = await renew(store, "w2")

    assert first.live_workers == second.live_workers == 2
    assert len(first.parts) == len(second.parts) == PARTS // 2
    assert first.parts.isdisjoint(second.parts)


async def test_three_workers_take_ceil_shares(store: Store) -> None:
    workers = ["w1", "w2", "w3"]
    held: dict[str, HeldParts] = {}
    for _ in range(3):
        for worker in workers:
            held[worker] = await renew(store, worker)

    sizes = sorted(len(h.parts) for h in held.values())
    assert sizes == [4, 6, 6]  # ceil(16 / 3) = 6, and 4 left
    assert frozenset().union(*(h.parts for h in held.values())) == frozenset(range(PARTS))
    assert sum(sizes) == PARTS


async def test_a_silent_workers_parts_are_taken_over_after_expiry(store: Store) -> None:
    await renew(store, "w1", SHORT)
    await renew(store, "w2", SHORT)
    first = await renew(store, "w1", SHORT)
    before = await renew(store, "w2", SHORT)
    # w2 goes silent; before its lease runs out, w1 cannot take its parts, and is told when
    # the first of them runs out.
    early = await renew(store, "w1", SHORT)
    assert early.next_expiry is not None
    await asyncio.sleep(early.next_expiry + 0.05)
    late = await renew(store, "w1", SHORT)

    assert early.parts == first.parts
    assert 0 < early.next_expiry <= SHORT.total_seconds()
    assert late.parts == frozenset(range(PARTS))
    assert late.live_workers == 1
    assert before.parts <= late.parts
    assert late.next_expiry is None  # nobody else holds anything
    # Taking the silent worker's parts is a takeover; sharing out free parts is not.
    assert late.taken_over == len(before.parts)
    assert first.taken_over == before.taken_over == early.taken_over == 0
    # A part taken over starts a new epoch: the silent worker's claims are fenced off.
    assert all(late.epochs[part] == before.epochs[part] + 1 for part in before.parts)
    assert all(late.epochs[part] == first.epochs[part] for part in first.parts)


async def test_leases_are_judged_by_the_databases_clock(store: Store) -> None:
    before = datetime.now(UTC)
    held = await renew(store, "w1")
    after = datetime.now(UTC)

    # The database's clock here is this host's; what matters is that it is the one used.
    assert held.as_of is not None
    assert before - timedelta(seconds=1) <= held.as_of <= after + timedelta(seconds=1)
    assert held.epochs == dict.fromkeys(range(PARTS), 1)


async def test_joining_and_letting_go_tell_the_other_workers(store: Store) -> None:
    told: list[int] = []
    stop = await store.listen_leases(lambda: told.append(1))

    async def heard(count: int) -> None:
        """Wait for `count` notices: NOTIFY arrives after commit, on its own connection."""
        for _ in range(100):
            if len(told) >= count:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"{len(told)} notices, not {count}")

    try:
        await renew(store, "w1")  # joined
        await heard(1)
        await renew(store, "w1")  # nothing changed
        await asyncio.sleep(0.2)
        quiet = len(told)
        await renew(store, "w2")  # joined
        await heard(2)
        await renew(store, "w1")  # lets half go
        await heard(3)
        await store.release_leases("w2")
        await heard(4)
    finally:
        stop()

    assert quiet == 1  # a renewal that changed nothing tells nobody


async def test_concurrent_renewals_never_share_a_part(store: Store, migrated_db_url: str) -> None:
    others = [await open_store(migrated_db_url) for _ in range(2)]
    stores = [store, *others]
    try:
        for _ in range(4):
            rounds = await asyncio.gather(*(renew(s, f"w{n}") for n, s in enumerate(stores)))
            seen: set[int] = set()
            for held in rounds:
                assert seen.isdisjoint(held.parts)
                seen |= held.parts
    finally:
        for other in others:
            await other.close()
    assert sorted(len(h.parts) for h in rounds) == [4, 6, 6]


async def test_release_lets_others_take_over_at_once(store: Store) -> None:
    await renew(store, "w1")
    await store.release_leases("w1", parts=[0, 1])
    partial = await renew(store, "w2")
    await store.release_leases("w1")
    rest = await renew(store, "w2")

    assert partial.parts == frozenset({0, 1})
    assert rest.parts == frozenset(range(PARTS))
    assert rest.live_workers == 1  # w1's heartbeat went with its leases
    assert partial.taken_over == rest.taken_over == 0  # let go, not run out


async def test_watermarks_rise_only_by_the_holder_and_stay_with_the_part(store: Store) -> None:
    await renew(store, "w1")

    assert await store.advance_watermark("w1", part=3, bucket=100, swept_at=NOW) is True
    assert await store.advance_watermark("w1", part=3, bucket=99, swept_at=NOW) is False
    assert await store.advance_watermark("w1", part=3, bucket=100, swept_at=NOW) is False
    assert await store.advance_watermark("w2", part=3, bucket=200, swept_at=NOW) is False
    later = NOW + timedelta(seconds=2)
    assert await store.advance_watermark("w1", part=3, bucket=101, swept_at=later) is True

    await store.release_leases("w1")
    taken = await renew(store, "w2")
    assert taken.watermarks[3] == 101
    assert taken.swept[3] == later  # the new holder sweeps from the last sweep's time
    assert taken.watermarks[4] is None
    assert taken.swept[4] is None


async def test_a_new_part_count_starts_from_the_lowest_watermark(store: Store) -> None:
    await renew(store, "w1")
    for part in range(PARTS):
        assert await store.advance_watermark("w1", part=part, bucket=500 + part, swept_at=NOW)
    await store.release_leases("w1")

    regrouped = await store.renew_leases("w1", parts=4, ttl=TTL)

    assert regrouped.parts == frozenset(range(4))
    assert set(regrouped.watermarks.values()) == {500}


@pytest.mark.postgres
async def test_a_renewal_stopped_inside_its_turn_is_ended_and_others_renew(
    pg_store: Store, pg_migrated_url: str
) -> None:
    """A worker stopped inside its renewal (paused, cut off) held the renewals' turn until its
    connection closed: nobody renewed meanwhile. The server now ends it once it has been idle
    for half the lease (at least RENEWAL_TIMEOUT_FLOOR), and the others renew."""
    await renew(pg_store, "healthy", ttl=SHORT)
    stopped = await _in_the_turn(pg_migrated_url)  # and then sends nothing more
    try:
        pid = stopped.get_server_pid()

        held = await asyncio.wait_for(renew(pg_store, "healthy", ttl=SHORT), timeout=60)

        assert held.parts == set(range(PARTS))
        await _ended(pg_migrated_url, pid)  # the server ended the stopped session
    finally:
        stopped.terminate()


@pytest.mark.postgres
async def test_a_renewal_stopped_between_two_messages_of_a_statement_is_ended_by_the_next(
    pg_store: Store, pg_migrated_url: str
) -> None:
    """asyncpg sends a statement new to its connection as Parse, Describe and Flush, and its
    Bind, Execute and Sync once answered: a worker stopped between the two (SIGSTOP) is not
    idle in a transaction to the server, whose timeout (RENEWAL_TIMEOUT) never ended it. It
    held the renewals' turn and its lease rows until its connection closed, and the others
    waited for the turn, their own leases running out (an end-to-end test's paused worker,
    under a loaded machine). The next renewal to find it so for half the lease ends it."""
    for worker in ("healthy", "stopped", "healthy", "stopped"):
        held = await renew(pg_store, worker, ttl=SHORT)
    assert len(held.parts) == PARTS // 2  # half each
    stopped = await _in_the_turn(pg_migrated_url)
    try:
        assert len(await stopped.fetch(pg.HELD, PARTS, "stopped")) == PARTS // 2  # locked
        await stopped.prepare(pg.TAKE_PARTS)  # Parse, Describe, Flush: and then it stops
        pid = stopped.get_server_pid()

        async def renewed_all() -> HeldParts:
            while True:  # as its lease keeper does, after a renewal that failed
                try:
                    held = await renew(pg_store, "healthy", ttl=SHORT)
                except StoreError:
                    held = None
                if held is not None and held.parts == set(range(PARTS)):
                    return held
                await asyncio.sleep(0.1)

        held = await asyncio.wait_for(renewed_all(), timeout=30)

        assert held.taken_over == PARTS // 2
        await _ended(pg_migrated_url, pid)
    finally:
        stopped.terminate()


async def _in_the_turn(url: str) -> asyncpg.Connection:
    """A session that started a renewal of SHORT and holds the renewals' turn."""
    connection = await asyncpg.connect(url)
    transaction = connection.transaction()
    await transaction.start()
    floor_ms = int(RENEWAL_TIMEOUT_FLOOR.total_seconds() * 1000)
    await connection.execute(pg.RENEWAL_TIMEOUT, str(floor_ms), str(2 * floor_ms))
    await connection.execute(pg.LOCK_RENEWALS)
    return connection


async def _ended(url: str, pid: int) -> None:
    """Wait until the server ended session `pid` (asked of the server: a stopped client's
    connection may still be reading the server's goodbye)."""
    watcher = await asyncpg.connect(url)
    try:
        alive = "SELECT count(*) FROM pg_stat_activity WHERE pid = $1"
        await eventually(lambda: _gone(watcher, alive, pid), within=30)
    finally:
        await watcher.close()


async def _gone(connection: asyncpg.Connection, alive: str, pid: int) -> bool:
    count: int = await connection.fetchval(alive, pid)
    return count == 0
