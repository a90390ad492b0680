"""Every metric Tocsin exports, in one place: what it counts is in its help text, and
docs/operations.md ("Metrics and health") says what to do about each.

Three kinds, by who updates them and how often:

- `ENGINE`: the scheduler's and delivery's numbers (rings, lateness, claims, leases,
  retries, expiries, breakers). Updated on the hot path, so kept as plain numbers
  (`tallies`) and counted per batch where the code has one; read when scraped. Registered
  only in a process that runs an engine (`tocsin worker`, `tocsin serve`).
- `QUEUE`: the queue depth and the oldest due-but-unclaimed ring, read from the database by
  one cheap indexed query when scraped (at most every `QUEUE_REFRESH_SECONDS`), never per
  ring. Any process with a store exports them: they say most when no worker is left.
- `http_metrics()`: the API's requests, with prometheus-client's own counter and histogram,
  whose values live in shared files under `tocsin api --workers N` (`exposition`).
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Protocol

from prometheus_client import REGISTRY, Counter, Histogram
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from tocsin.domain import Channel, FiringState, QueueStats, Route
from tocsin.errors import StoreError
from tocsin.metrics.tallies import Spread, Tally
from tocsin.store.ports import StatusReads

logger = logging.getLogger(__name__)

# Due→sent lateness, from 10 ms (on time) to 10 min (the default freshness: past it, a ring
# expires rather than go out late).
LATENESS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
CLAIM_BATCH_BUCKETS = (1, 10, 50, 100, 250, 500, 1000, 2000)
CLAIM_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
REQUEST_SECONDS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10)
QUEUE_REFRESH_SECONDS = 5.0  # scrapes closer together than this reuse the last reading
QUEUE_TIMEOUT_SECONDS = 2.0

# Why a send failed retryably (`tocsin_retries_total`) or a ring expired
# (`tocsin_expiries_total`): a short, fixed set, never an error text.
RETRY_ERROR = "error"  # a timeout, a refused connection, a 5xx or 429 without Retry-After
RETRY_AFTER = "retry_after"  # the peer said when to come back
RETRY_BREAKER_OPEN = "breaker_open"  # not tried: the provider's circuit breaker is open
RETRY_LOOKUP = "lookup_failed"  # the destinations could not be read from the database
RETRY_NO_TIME_IN_HOLD = "no_time_in_hold"  # not tried: the hold would end before the send
RETRY_QUIET_HOURS = "quiet_hours"  # not tried: a bulk ring held until its owner's quiet hours end
EXPIRED_AT_CLAIM = "stale_at_claim"  # already past its freshness when claimed (catch-up)
EXPIRED_BEFORE_SEND = "deadline_before_send"  # its deadline came while it waited to be sent
EXPIRED_LAST_TRY = "last_try_failed"  # retried until its deadline; the last try failed too
EXPIRED_RETRY_AFTER = "retry_after_past_deadline"  # the peer asked to wait past the deadline
EXPIRED_QUIET_HOURS = "quiet_hours_past_deadline"  # quiet hours end after its last try


_RETRIED = FiringState.QUEUED  # a module constant: an enum class's attribute costs more


class Breakers(Protocol):
    """What reports open circuit breakers (`tocsin.delivery.isolation.Isolation`)."""

    def open_breakers(self) -> list[str]: ...


class EngineMetrics(Collector):
    """The engine's instruments; `ENGINE` is the process's one."""

    def __init__(self) -> None:
        self.rings = Tally(
            "tocsin_rings_total",
            "Rings that reached an outcome (sent, failed, expired), by channel.",
            ["channel", "outcome"],
        )
        self.lateness = Spread(
            "tocsin_ring_lateness_seconds",
            "Seconds from a ring's due time to the end of the send that delivered it.",
            LATENESS_BUCKETS,
        )
        self.claim_batch = Spread(
            "tocsin_claim_batch_size", "Rings tried in one claim transaction.", CLAIM_BATCH_BUCKETS
        )
        self.claim_seconds = Spread(
            "tocsin_claim_seconds", "Seconds one claim transaction took.", CLAIM_SECONDS_BUCKETS
        )
        self.claims = Tally(
            "tocsin_claims_total",
            "Rings tried in claims, by result: claimed (to send), expired or failed at the "
            "claim, or lost (the row had moved on: edited, cancelled, claimed elsewhere).",
            ["result"],
        )
        self.retries = Tally(
            "tocsin_retries_total",
            "Sends that failed retryably, by channel and reason: the ring is tried again "
            "while its deadline allows, else it expires.",
            ["channel", "reason"],
        )
        self.expiries = Tally(
            "tocsin_expiries_total",
            "Rings recorded expired (never sent: too late to be useful), by reason.",
            ["reason"],
        )
        self.takeovers = Tally(
            "tocsin_lease_takeovers_total",
            "Parts this worker took over from a worker whose lease ran out.",
            [],
        )
        self.takeovers.add((), 0)
        self.parts = 0
        self.held: dict[str, int] = {}
        self._breakers: weakref.WeakSet[Breakers] = weakref.WeakSet()
        self._registered = False

    def register(self, parts: int) -> None:
        """Export these from this process (once, whoever asks first); `parts` configured."""
        self.parts = parts
        if not self._registered:
            REGISTRY.register(self)
            self._registered = True

    def watch(self, breakers: Breakers) -> None:
        """Count the open breakers of `breakers` while it lives."""
        self._breakers.add(breakers)

    def holding(self, worker: str, parts: int | None) -> None:
        """`worker` holds `parts` parts now (None: it stopped)."""
        if parts is None:
            self.held.pop(worker, None)
        else:
            self.held[worker] = parts

    def expired(self, reason: str, count: int = 1) -> None:
        self.expiries.add((reason,), count)

    def retried(self, channel: Channel | Route, reason: str) -> None:
        self.retries.add((str(channel), reason))

    def finished(self, route: Route, state: FiringState, lateness: float | None) -> None:
        """A firing's round ended in `state`; `lateness` (seconds past due) when sent. Rings
        on several channels are counted under their route (`apns,email`, `apns>sms`)."""
        if state is _RETRIED:  # counted by reason where decided
            return
        counts = self.rings.counts  # once per ring: inlined `Tally.add`, keyed by the enums
        key = (route.single or route.value, state)
        counts[key] = counts.get(key, 0) + 1
        if lateness is not None:
            self.lateness.observe(lateness)

    def describe(self) -> list[Metric]:
        return []  # collected fresh at each scrape; nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        for tally in (self.rings, self.claims, self.retries, self.expiries, self.takeovers):
            yield tally.family()
        for spread in (self.lateness, self.claim_batch, self.claim_seconds):
            yield spread.family()
        held = GaugeMetricFamily(
            "tocsin_parts_held", "Scheduler parts the worker holds now.", labels=["worker"]
        )
        for worker, count in sorted(self.held.items()):
            held.add_metric([worker], count)
        yield held
        yield GaugeMetricFamily(
            "tocsin_parts", "Scheduler parts configured (TOCSIN_PARTS).", value=self.parts
        )
        opened = sum(len(b.open_breakers()) for b in list(self._breakers))
        yield GaugeMetricFamily(
            "tocsin_circuit_breakers_open",
            "Providers whose circuit breaker is open now (sends to them wait).",
            value=opened,
        )


ENGINE = EngineMetrics()


class QueueMetrics(Collector):
    """The queue depth by firing state and the age of the oldest due-but-unclaimed ring, as
    last read from the database (`refresh`)."""

    def __init__(self) -> None:
        self._stats: QueueStats | None = None
        self._read_at = 0.0
        self._registered = False

    async def refresh(self, store: StatusReads) -> None:
        """Read the numbers again, unless they were read in the last few seconds. A failed
        read leaves them out of the scrape (their absence is itself a signal)."""
        if not self._registered:
            REGISTRY.register(self)
            self._registered = True
        if time.monotonic() - self._read_at < QUEUE_REFRESH_SECONDS:
            return
        try:
            stats = await asyncio.wait_for(store.queue_stats(), QUEUE_TIMEOUT_SECONDS)
        except (StoreError, TimeoutError) as error:
            logger.warning("reading the queue's numbers failed: %s", error)
            self._stats = None
            return
        self._stats, self._read_at = stats, time.monotonic()

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        stats = self._stats
        if stats is None:
            return
        depth = GaugeMetricFamily(
            "tocsin_queue_depth",
            "Firings in the delivery queue, by state: queued (waiting for a retry or a "
            "sender) or sending (held by a worker now).",
            labels=["state"],
        )
        for state, count in sorted(stats.depth.items()):
            depth.add_metric([state], count)
        yield depth
        oldest = 0.0
        if stats.oldest_due is not None:
            oldest = max(0.0, (datetime.now(UTC) - stats.oldest_due).total_seconds())
        yield GaugeMetricFamily(
            "tocsin_oldest_unclaimed_seconds",
            "Age of the oldest ring that is due and not claimed yet (0 when none): the "
            "number to page on.",
            value=oldest,
        )


QUEUE = QueueMetrics()


@dataclass(frozen=True, slots=True)
class HttpMetrics:
    requests: Counter
    seconds: Histogram


@cache
def http_metrics() -> HttpMetrics:
    """The API's instruments, made at the first request: by then `tocsin api --workers N`
    has switched prometheus-client to its multiprocess values (`exposition`)."""
    return HttpMetrics(
        requests=Counter(
            "tocsin_http_requests",
            "API requests, by method, route template and status.",
            ["method", "route", "status"],
        ),
        seconds=Histogram(
            "tocsin_http_request_duration_seconds",
            "Seconds the API took to answer, by method and route template.",
            ["method", "route"],
            buckets=REQUEST_SECONDS_BUCKETS,
        ),
    )
