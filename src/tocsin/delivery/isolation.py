"""Isolation between providers: a concurrency limit and a circuit breaker per provider (per
host for webhooks and Web Push endpoints), so one slow or failing provider does not hold up
the others' rings.

- **Concurrency.** A provider may use at most `share` of the delivery pool's senders at once
  (default three quarters): a provider that answers slowly fills its share, and the other
  quarter keeps every other provider's rings going. A send over the share waits for a slot.
- **Circuit breaker.** After `FAILURES_TO_OPEN` retryable failures in a row (timeouts,
  connection errors, 5xx, 429), a provider's breaker opens for a cool-down (5 s, doubling to
  30 s while it keeps failing): sends to it are not made, but recorded as retries saying the
  breaker is open (the firing's history shows it), due again when it closes. After the
  cool-down one probe goes through; an answer that is not a retryable failure closes it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from tocsin.channels import DeliveryResult, Destination
from tocsin.domain import Channel, Outcome

FAILURES_TO_OPEN = 20
FIRST_COOL_DOWN = 5.0
MAX_COOL_DOWN = 30.0
SHARE = 0.75


@dataclass(slots=True)
class _Breaker:
    failures: int = 0  # retryable failures in a row
    open_until: float = 0.0
    cool_down: float = FIRST_COOL_DOWN
    probing: bool = False


def provider(channel: Channel, destination: Destination) -> str:
    """Who answers a send: the host for URL destinations, else the channel's one provider."""
    url = destination.address.get("url") or destination.address.get("endpoint")
    if channel in (Channel.WEBHOOK, Channel.WEBPUSH) and url:
        return f"{channel}:{urlsplit(url).hostname}"
    return str(channel)


class Isolation:
    """The limits and breakers of every provider this worker sends to."""

    def __init__(
        self,
        *,
        concurrency: int,
        share: float = SHARE,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._limit = max(1, int(concurrency * share))
        self._monotonic = monotonic
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._breakers: dict[str, _Breaker] = {}

    def refusal(self, key: str) -> DeliveryResult | None:
        """A retry saying the provider's breaker is open, or None: the send may go."""
        breaker = self._breakers.get(key)
        if breaker is None or breaker.failures < FAILURES_TO_OPEN:
            return None
        left = breaker.open_until - self._monotonic()
        if left <= 0 and not breaker.probing:
            breaker.probing = True  # this send is the probe
            return None
        return DeliveryResult.retry(
            f"circuit breaker open for {key}: {breaker.failures} failures in a row; not tried",
            retry_after=max(left, 1.0),
        )

    def slot(self, key: str) -> asyncio.Semaphore:
        """The provider's share of the senders."""
        slots = self._slots.get(key)
        if slots is None:
            slots = self._slots[key] = asyncio.Semaphore(self._limit)
        return slots

    def record(self, key: str, result: DeliveryResult) -> None:
        """Count an answer: retryable failures open the breaker, anything else closes it."""
        breaker = self._breakers.get(key)
        if result.outcome is not Outcome.RETRY or result.held:  # held: taken in, no failure
            if breaker is not None:
                del self._breakers[key]
            return
        if breaker is None:
            breaker = self._breakers[key] = _Breaker()
        breaker.failures += 1
        if breaker.probing or breaker.failures == FAILURES_TO_OPEN:
            if breaker.probing:  # the probe failed: wait longer
                breaker.cool_down = min(breaker.cool_down * 2, MAX_COOL_DOWN)
            breaker.open_until = self._monotonic() + breaker.cool_down
            breaker.probing = False

    def open_breakers(self) -> list[str]:
        """The providers whose breaker is open now."""
        now = self._monotonic()
        return sorted(
            key
            for key, b in self._breakers.items()
            if b.failures >= FAILURES_TO_OPEN and b.open_until > now
        )
