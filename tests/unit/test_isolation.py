"""Provider isolation: which provider a send goes to, and the circuit breaker's states."""

from __future__ import annotations

from tocsin.channels import DeliveryResult, Destination
from tocsin.delivery.isolation import (
    FAILURES_TO_OPEN,
    FIRST_COOL_DOWN,
    OUTAGE_SECONDS,
    Isolation,
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
