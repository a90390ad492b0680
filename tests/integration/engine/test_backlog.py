"""A delivery backlog goes out closest deadline first: the engine, one sender at a time,
against the local receiver (its own process), which records the order things arrive in."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from tests.integration.engine.support import TUNING, eventually, receiver, reminder, running
from tests.integration.engine.support import settings as engine_settings
from tests.integration.store.factories import content_of
from tocsin.clock import SystemClock
from tocsin.delivery import DeliveryTuning
from tocsin.domain import Channel, Claim, FiringState
from tocsin.scheduler import EngineTuning
from tocsin.store import Store

clock = SystemClock()


@pytest.mark.parametrize(
    "pickup_batch",
    [
        pytest.param(1000, id="all-taken-at-once-the-line-orders-them"),
        pytest.param(7, id="taken-in-small-batches-the-store-orders-them"),
    ],
)
async def test_a_backlog_of_retries_goes_out_closest_deadline_first(
    store: Store, pickup_batch: int
) -> None:
    """60 retries due at once, each with its own freshness (1 to 60 minutes), shuffled."""
    now = clock.now().replace(microsecond=0)
    freshness = [60 * (n + 1) for n in range(60)]
    random.Random(5).shuffle(freshness)
    backlog = [
        reminder(f"owner-{n}", now=now, at=now, channel=Channel.WEBHOOK, freshness=f)
        for n, f in enumerate(freshness)
    ]
    await store.add_reminders(backlog)
    claims = [
        Claim(
            reminder_id=r.id,
            due_at=now,
            version=r.version,
            next_due_at=None,
            state=FiringState.QUEUED,
            content=content_of(r),
        )
        for r in backlog
    ]
    firings = await store.claim(claims, sender="gone", now=now, lease=timedelta(seconds=30))
    deadline = {f.id: f.deadline for f in firings}
    tuning = EngineTuning(
        load=TUNING.load,
        delivery=DeliveryTuning(pickup_batch=pickup_batch),
        retry_base_seconds=TUNING.retry_base_seconds,
    )

    with receiver() as sink:
        config = engine_settings(webhook_url=sink.url, delivery_concurrency=1)
        async with running(store, config, clock, tuning=tuning):

            async def all_arrived() -> bool:
                unique: int = (await sink.astats())["unique"]
                return unique == len(backlog)

            await eventually(all_arrived, within=20)
        arrivals = (await sink.astats(ids=True))["arrivals"]

    order = sorted(deadline, key=lambda firing_id: arrivals[firing_id][0][0])
    assert [deadline[f] for f in order] == sorted(deadline.values())
