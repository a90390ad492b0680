"""Provider isolation: which provider a send goes to, its share of the senders, and the circuit
breaker's states."""

from __future__ import annotations

import asyncio

from tocsin.channels import DeliveryResult, Destination
from tocsin.delivery.isolation import (
    FAILURES_TO_OPEN,
    FIRST_COOL_DOWN,
    OUTAGE_SECONDS,
    Isolation,
    Slots,
    provider,
)
from tocsin.domain import Channel

FAIL = DeliveryResult.retry("HTTP 503")


class Ticks:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_providers_are_hosts_for_urls_and_channels_otherwise() -> None:
    hook = Destination(id="c1", kind=Channel.WEBHOOK, address={"url": "https://a.example/x"})
    push = Destination(id="c2", kind=Channel.WEBPUSH, address={"endpoint": "https://fcm.example/p"})
    mail = Destination(id="c3", kind=Channel.EMAIL, address={"address": "ana@example.org"})
    assert provider(Channel.WEBHOOK, hook) == "webhook:a.example"
    assert provider(Channel.WEBPUSH, push) == "webpush:fcm.example"
    assert provider(Channel.EMAIL, mail) == "email"


def test_the_breaker_opens_after_failures_in_a_row_then_probes() -> None:
    ticks = Ticks()
    isolation = Isolation(concurrency=8, monotonic=ticks)
    for _ in range(FAILURES_TO_OPEN - 1):
        assert isolation.refusal("p", 600) is None
        isolation.record("p", FAIL)
    isolation.record("p", DeliveryResult.sent())  # an answer resets the count
    for _ in range(FAILURES_TO_OPEN):
        isolation.record("p", FAIL)
    assert isolation.refusal("p", 600) is None  # a burst meeting one bad second: not an outage
    ticks.now += OUTAGE_SECONDS
    isolation.record("p", FAIL)

    refused = isolation.refusal("p", 600)
    assert refused is not None
    assert refused.error is not None
    assert "circuit breaker open for p" in refused.error
    assert refused.retry_after == FIRST_COOL_DOWN
    assert isolation.refusal("other", 600) is None  # other providers go on
    assert isolation.open_breakers() == ["p"]
    assert isolation.refusal("p", FIRST_COOL_DOWN) is None  # its last chance goes anyway
    assert isolation.refusal("p", 600, final=True) is None  # and so does its last try
    assert refused.not_tried

    ticks.now += FIRST_COOL_DOWN
    assert isolation.refusal("p", 600) is None  # the probe
    assert isolation.refusal("p", 600) is not None  # only one
    isolation.record("p", FAIL)  # the probe failed: twice as long
    again = isolation.refusal("p", 600)
    assert again is not None
    assert again.retry_after == 2 * FIRST_COOL_DOWN
    ticks.now += 2 * FIRST_COOL_DOWN
    assert isolation.refusal("p", 600) is None
    isolation.record("p", DeliveryResult.failed("HTTP 400"))  # an answer: closed
    assert isolation.refusal("p", 600) is None
    assert isolation.open_breakers() == []


async def test_slots_let_a_share_of_sends_in_and_hand_each_freed_slot_to_the_first_waiter() -> None:
    slots = Slots(2)
    order: list[str] = []
    release = asyncio.Event()

    async def send(name: str) -> None:
        async with slots:
            order.append(name)
            await release.wait()

    tasks = [asyncio.create_task(send(name)) for name in "abcd"]
    await asyncio.sleep(0)
    assert order == ["a", "b"]  # the share is full: c and d wait, in arrival order
    tasks[2].cancel()  # a waiter that gives up leaves the line
    release.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert order == ["a", "b", "d"]
    async with slots, slots:  # every slot came back
        pass


async def test_a_slot_handed_to_a_send_cancelled_before_it_ran_goes_to_the_next() -> None:
    slots = Slots(1)
    entered: list[str] = []
    await slots.__aenter__()  # the one slot, taken

    async def send(name: str) -> None:
        async with slots:
            entered.append(name)

    first, second = asyncio.create_task(send("first")), asyncio.create_task(send("second"))
    await asyncio.sleep(0)
    await slots.__aexit__(None, None, None)  # handed to `first`...
    first.cancel()  # ...which is cancelled before it runs
    await asyncio.gather(first, second, return_exceptions=True)
    assert entered == ["second"]
