"""The engine: leases, loaders, the ticker, claims and delivery, wired together."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from tocsin.actions import action_links
from tocsin.channels import Channels, build_channels
from tocsin.clock import Clock, DatabaseClock, SystemClock
from tocsin.delivery import Delivery, DeliveryTuning, RetryPolicy
from tocsin.delivery.destinations import Destinations
from tocsin.domain import HeldParts, Priority
from tocsin.errors import StoreError
from tocsin.ids import part_of_shard, part_shards
from tocsin.metrics.instruments import ENGINE
from tocsin.scheduler.claimer import Claimer
from tocsin.scheduler.leases import LeaseKeeper
from tocsin.scheduler.loader import LoadTuning, PartLoader, PartWatermark
from tocsin.scheduler.retention import Retention, RetentionTuning
from tocsin.scheduler.ticker import Ticker
from tocsin.scheduler.timeline import Timeline
from tocsin.settings import Settings
from tocsin.store.base import Store

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class EngineTuning:
    """Knobs beyond `Settings`, for tests and benchmarks; the defaults are for production."""

    load: LoadTuning = field(default_factory=LoadTuning)
    delivery: DeliveryTuning = field(default_factory=DeliveryTuning)
    retention: RetentionTuning = field(default_factory=RetentionTuning)
    claim_batch: int = 1000
    claim_concurrency: int = 4
    retry_base_seconds: float = 1.0
    retry_cap_seconds: float = 300.0
    stop_grace_seconds: float | None = None  # finish sending at stop; default: the lease


class Engine:
    """Rings the reminders of the parts this worker holds, delivers their firings and, while
    it holds the retention chore, deletes old rows (`Retention`).

    `start` takes the worker's fair share of parts and starts firing; `stop` stops claiming,
    finishes (or leaves to others) what it was sending, closes the channels and gives its
    leases up.
    """

    def __init__(
        self,
        store: Store,
        settings: Settings,
        clock: Clock,
        *,
        worker_id: str,
        channels: Channels,
        tuning: EngineTuning | None = None,
        rng: random.Random | None = None,
    ) -> None:
        tuning = tuning or EngineTuning()
        ENGINE.register(settings.parts)
        self.worker_id = worker_id
        self._store = store
        self._settings = settings
        self._clock = clock
        self._channels = channels
        self._load = replace(tuning.load, sweep=timedelta(seconds=settings.sweep_seconds))
        lease = timedelta(seconds=settings.lease_seconds)
        # A firing is held while `sending` long enough to wait its turn and time out once.
        firing_lease = lease + timedelta(seconds=settings.webhook_timeout_seconds)
        self._grace = tuning.stop_grace_seconds or settings.lease_seconds
        policy = RetryPolicy(
            max_attempts=settings.max_attempts,
            base_seconds=tuning.retry_base_seconds,
            cap_seconds=tuning.retry_cap_seconds,
            rng=rng or random.Random(),
        )
        delivery_tuning = replace(
            tuning.delivery,
            concurrency=settings.delivery_concurrency,
            lease=firing_lease,
            send_timeout=settings.webhook_timeout_seconds,
        )
        self.timeline = Timeline()
        default_webhook = (
            (settings.webhook_url, settings.webhook_secret) if settings.webhook_url else None
        )
        self.delivery = Delivery(
            store,
            channels,
            policy,
            clock,
            sender=worker_id,
            tuning=delivery_tuning,
            destinations=Destinations(store, default_webhook=default_webhook, null=channels.null),
        )
        self.leases = LeaseKeeper(
            store,
            clock,
            self._hold,
            worker=worker_id,
            parts=settings.parts,
            ttl=lease,
            on_time=clock.reading if isinstance(clock, DatabaseClock) else None,
            breakers=self.delivery.isolation.open_breakers,
        )
        self.claimer = Claimer(
            store,
            self.timeline,
            clock,
            self.delivery.submit,
            room=self.delivery.room,
            fence=self.leases.fence,
            sender=worker_id,
            lease=firing_lease,
            batch=tuning.claim_batch,
            concurrency=tuning.claim_concurrency,
        )
        self._ticker = Ticker(self.timeline, self.claimer, clock)
        self.retention = Retention(
            store,
            clock,
            worker=worker_id,
            keep=settings.retain_firings,
            tuning=replace(
                tuning.retention, lease=timedelta(seconds=settings.retention_lease_seconds)
            ),
        )
        # Each held part's loaders, one for each priority, and their tasks.
        self._loaders: dict[int, list[tuple[PartLoader, asyncio.Task[None]]]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._unlisten: list[Callable[[], None]] = []

    @property
    def parts(self) -> frozenset[int]:
        """The parts this worker holds now."""
        return frozenset(self._loaders)

    def holding_problem(self) -> str | None:
        """Why this worker does not hold its share of the parts now, or None. A worker with
        no part is fine only as a standby, when there are more live workers than parts."""
        held = self.leases.held
        if held.parts or held.live_workers > self._settings.parts:
            return None
        if not held.live_workers:
            return "holds no part: its leases are not renewed (the database is away?)"
        return f"holds no part of {self._settings.parts} ({held.live_workers} live workers)"

    async def start(self) -> None:
        self.delivery.start()
        self._unlisten = [
            await self._store.listen_due(self._on_due),
            await self._store.listen_leases(self.leases.leases_changed),
        ]
        await self.leases.renew()
        self._tasks = [
            asyncio.create_task(self.leases.run(), name="leases"),
            asyncio.create_task(self._ticker.run(), name="ticker"),
            asyncio.create_task(self.retention.run(), name="retention"),
        ]
        logger.info("engine started", extra={"worker": self.worker_id})

    async def stop(self) -> None:
        """Stop claiming, give the parts up, finish or leave what is in flight.

        The parts go as soon as the last claim has drained, before delivery finishes: what
        this worker claimed is fenced by each firing's sender and hold, so the next holder
        may claim the rest of the parts' rings at once, not after a slow channel's sends."""
        loading = [task for loaders in self._loaders.values() for _, task in loaders]
        for part in list(self._loaders):
            self._drop(part)
        await _cancel(*self._tasks, *loading)
        self._tasks = []
        await self.claimer.drain()
        try:
            await self._store.release_leases(self.worker_id)
        except StoreError as error:
            logger.warning("giving the leases up failed (they run out): %s", error)
        ENGINE.holding(self.worker_id, None)
        for unlisten in self._unlisten:
            unlisten()
        self._unlisten = []
        await self.delivery.stop(self._grace)
        await self._channels.close()
        await self.retention.release()
        logger.info("engine stopped", extra={"worker": self.worker_id})

    def _hold(self, held: HeldParts) -> None:
        for part in set(self._loaders) - held.parts:
            self._drop(part)
        for part in sorted(held.parts - set(self._loaders)):
            self._take(part, held.watermarks.get(part), held.swept.get(part))

    def _take(self, part: int, watermark: int | None, swept_at: datetime | None) -> None:
        shared = PartWatermark(
            self._store,
            part=part,
            worker=self.worker_id,
            watermark=watermark,
            swept_at=swept_at,
        )
        loaders = []
        for priority in Priority:
            loader = PartLoader(
                part,
                part_shards(part, self._settings.parts),
                self._store,
                self.timeline,
                self._clock,
                priority=priority.rank,
                watermark=shared,
                tuning=self._load,
            )
            task = asyncio.create_task(loader.run(), name=f"part-{part}-{priority}")
            loaders.append((loader, task))
        self._loaders[part] = loaders

    def _drop(self, part: int) -> None:
        for _, task in self._loaders.pop(part):
            task.cancel()
        self.timeline.drop_part(part)

    def _on_due(self, shard: int, due_at: datetime) -> None:
        # A wake-up does not say the reminder's priority: both loaders look (a re-read of a
        # bucket is one range scan of that priority's rows).
        for loader, _ in self._loaders.get(part_of_shard(shard, self._settings.parts), ()):
            loader.wake(due_at)


async def _cancel(*tasks: asyncio.Task[None]) -> None:
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task


def new_worker_id() -> str:
    """A worker id unique among live workers, that says where the worker runs."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def make_engine(store: Store, settings: Settings, clock: Clock) -> Engine:
    """The engine with the channels `settings` configure — the service `tocsin serve` runs
    beside the API. A real clock is kept in step with the database's (`DatabaseClock`)."""
    if isinstance(clock, SystemClock):
        clock = DatabaseClock()
    links = action_links(settings.links_base_url, store.keyring)
    channels = build_channels(settings, clock, announce=store.announce_feed, links=links)
    return Engine(store, settings, clock, worker_id=new_worker_id(), channels=channels)
