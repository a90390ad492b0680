"""Isolation between providers: a concurrency limit and a circuit breaker per provider (per
host for webhooks and Web Push endpoints), so one slow or failing provider does not hold up
the others' rings.

- **Concurrency.** A provider may use at most `share` of the delivery pool's senders at once
  (default three quarters): a provider that answers slowly fills its share, and the other
  quarter keeps every other provider's rings going. A send over the share waits for a slot.
- **Circuit breaker.** After `FAILURES_TO_OPEN` retryable failures in a row (timeouts,
  connection errors, 5xx, 429) spanning at least `OUTAGE_SECONDS` — an outage, not a burst
  of rings meeting one bad second — a provider's breaker opens for a cool-down (2 s,
  doubling to 15 s while it keeps failing): sends to it are not made, but recorded as retries
  saying the breaker is open (the firing's history shows it), due again when it closes —
  or at the firing's last try, which goes through an open breaker: the breaker is this
  worker's guess, not the peer's word, and never what makes a ring expire.
  After the cool-down one probe goes through; an answer that is not a retryable failure
  closes it. The cool-down stays short because a ring waits on it: a provider back from an
  outage is found within 15 s.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import urlsplit

from tocsin.channels import DeliveryResult, Destination
from tocsin.domain import Channel, Outcome

FAILURES_TO_OPEN = 50
OUTAGE_SECONDS = 5.0  # and the failures in a row span this long: an outage, not a blip
FIRST_COOL_DOWN = 2.0
MAX_COOL_DOWN = 15.0
LAST_CHANCE = 2.0  # seconds: a send this close to its deadline skips an open breaker
SHARE = 0.75


@dataclass(slots=True)
class _Breaker:
    first: float  # when the failures in a row began
    failures: int = 0  # retryable failures in a row
    open_until: float = 0.0
    cool_down: float = FIRST_COOL_DOWN
    probing: bool = False


class Slots:
    """A share of senders (or claims): at most `limit` at once, the others waiting — urgent
    waiters first, each kind in arrival order (`acquire`'s `rank`: `Priority.rank`), so a
    bulk backlog waiting for a provider never holds an urgent ring back by more than the
    sends already out. `asyncio.Semaphore` would wait in arrival order only, and its every
    `acquire` scans its waiters (`locked()`): a tenth of a null ring's delivery time in a
    burst's profile. Here a send with a slot free takes it at once, and a freed slot goes
    straight to the first waiter."""

    __slots__ = ("_free", "_waiters")

    def __init__(self, limit: int) -> None:
        self._free = limit
        # one line of waiters per rank: urgent, bulk
        self._waiters: tuple[deque[asyncio.Future[None]], ...] = (deque(), deque())

    async def acquire(self, rank: int = 0) -> None:
        """Take a slot, waiting behind the waiters of this rank and of any more urgent."""
        urgent, bulk = self._waiters
        if self._free > 0 and not urgent and not bulk:
            self._free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        waiters = self._waiters[rank]
        waiters.append(waiter)
        try:
            await waiter  # handed the slot of a send that ended (`release`)
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot, then cancelled: pass it on
            elif waiter in waiters:
                waiters.remove(waiter)
            raise

    def release(self) -> None:
        """Give the slot back: to the first urgent waiter, else the first bulk one."""
        for waiters in self._waiters:
            while waiters:
                waiter = waiters.popleft()
                if not waiter.done():
                    waiter.set_result(None)
                    return
        self._free += 1

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.release()


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
        self._slots: dict[str, Slots] = {}
        self._breakers: dict[str, _Breaker] = {}

    def refusal(self, key: str, time_left: float, *, final: bool = False) -> DeliveryResult | None:
        """A retry saying the provider's breaker is open, or None: the send may go. The
        firing's `final` try, and a send with `time_left` to its deadline shorter than the
        cool-down left, go anyway: a breaker must not be what makes a ring stale."""
        breaker = self._breakers.get(key)
        if breaker is None or not breaker.open_until or final:
            return None
        left = breaker.open_until - self._monotonic()
        if left + LAST_CHANCE >= time_left:
            return None
        if left <= 0 and not breaker.probing:
            breaker.probing = True  # this send is the probe
            return None
        return DeliveryResult.refused_here(
            f"circuit breaker open for {key}: {breaker.failures} failures in a row; not tried",
            wait=max(left, 0.5),
        )

    def slot(self, key: str) -> Slots:
        """The provider's share of the senders."""
        slots = self._slots.get(key)
        if slots is None:
            slots = self._slots[key] = Slots(self._limit)
        return slots

    @property
    def watching(self) -> bool:
        """Whether any provider has a breaker (open or counting failures): only then can a
        send be refused, and is it worth knowing whether a try is a firing's last."""
        return bool(self._breakers)

    def record(self, key: str, result: DeliveryResult) -> None:
        """Count an answer: retryable failures open the breaker, anything else closes it."""
        breaker = self._breakers.get(key)
        if result.outcome is not Outcome.RETRY or result.held:  # held: taken in, no failure
            if breaker is not None:
                del self._breakers[key]
            return
        now = self._monotonic()
        if breaker is None:
            breaker = self._breakers[key] = _Breaker(first=now)
        breaker.failures += 1
        if breaker.probing:  # the probe failed: wait longer
            breaker.cool_down = min(breaker.cool_down * 2, MAX_COOL_DOWN)
            breaker.open_until = now + breaker.cool_down
            breaker.probing = False
        elif (
            not breaker.open_until
            and breaker.failures >= FAILURES_TO_OPEN
            and now - breaker.first >= OUTAGE_SECONDS
        ):
            breaker.open_until = now + breaker.cool_down

    def open_breakers(self) -> list[str]:
        """The providers whose breaker is open now."""
        now = self._monotonic()
        return sorted(key for key, b in self._breakers.items() if b.open_until > now)
