"""A worker's open circuit breakers reach the store at its lease renewals, for the status
board: its real `Isolation` read by its real `LeaseKeeper`, on both backends."""

from __future__ import annotations

from datetime import timedelta

from tocsin.channels import DeliveryResult
from tocsin.clock import SystemClock
from tocsin.delivery.isolation import FAILURES_TO_OPEN, OUTAGE_SECONDS, Isolation
from tocsin.domain import HeldParts
from tocsin.scheduler.leases import LeaseKeeper
from tocsin.store import Store

PROVIDER = "webhook:hooks.example"


async def test_open_breakers_are_published_and_cleared_at_renewals(store: Store) -> None:
    seconds = [0.0]
    isolation = Isolation(concurrency=8, monotonic=lambda: seconds[0])
    held: list[HeldParts] = []
    keeper = LeaseKeeper(
        store,
        SystemClock(),
        held.append,
        worker="w1",
        parts=2,
        ttl=timedelta(seconds=10),
        breakers=isolation.open_breakers,
    )
    for _ in range(FAILURES_TO_OPEN):  # failures in a row, over an outage's length
        isolation.record(PROVIDER, DeliveryResult.retry("503"))
        seconds[0] += OUTAGE_SECONDS / FAILURES_TO_OPEN * 1.5

    assert await keeper.renew()
    [opened] = await store.list_workers()
    isolation.record(PROVIDER, DeliveryResult.sent())
    assert await keeper.renew()
    [closed] = await store.list_workers()

    assert opened.breakers == (PROVIDER,)
    assert closed.breakers == ()
    assert held[-1].parts == frozenset({0, 1})
