"""The sms channel against a Twilio-like Messages API: auth, the form as it arrives, the
validity period, idempotency keys, how each answer is classified, time limits, kept
connections."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.integration.channels.firing_factory import DUE, destination, firing
from tests.integration.channels.push_support import server_certificate
from tests.support.peers.twilio import ACCOUNT_SID, AUTH_TOKEN, Answer, TwilioPeer, twilio_peer
from tocsin.channels import sms as sms_channel
from tocsin.channels.base import DeliveryResult
from tocsin.channels.sms import SmsSender
from tocsin.clock import FakeClock
from tocsin.domain import Channel, Firing, Outcome
from tocsin.settings import Settings

ADA = "+14155550100"
FROM = "+15005550006"


def settings(base_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": "sqlite:///unused.db",
        "sms_base_url": base_url,
        "sms_account_sid": ACCOUNT_SID,
        "sms_auth_token": AUTH_TOKEN,
        "sms_from": FROM,
        "sms_timeout_seconds": 5.0,
        "delivery_concurrency": 8,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(DUE)


@pytest.fixture
async def peer() -> AsyncIterator[TwilioPeer]:
    async with twilio_peer() as running:
        yield running


def sender_for(config: Settings, clock: FakeClock) -> SmsSender:
    sender = sms_channel.build(config, clock)
    assert sender is not None
    return sender


@pytest.fixture
async def sender(peer: TwilioPeer, clock: FakeClock) -> AsyncIterator[SmsSender]:
    sending = sender_for(settings(peer.base_url), clock)
    try:
        yield sending
    finally:
        await sending.close()


async def send(
    sender: SmsSender,
    ring: Firing | None = None,
    number: str = ADA,
    contact: str = "contact-1",
    time_limit: float = 5.0,
) -> DeliveryResult:
    return await sender.send(
        ring or firing(channel=Channel.SMS),
        destination(Channel.SMS, contact, number=number),
        time_limit=time_limit,
    )


async def send_once(config: Settings, clock: FakeClock) -> DeliveryResult:
    """One ring sent by a sender made for it, closed after."""
    sender = sender_for(config, clock)
    try:
        return await send(sender)
    finally:
        await sender.close()


async def test_a_ring_is_posted_with_basic_auth_and_its_fields(
    sender: SmsSender, peer: TwilioPeer
) -> None:
    ring = firing(channel=Channel.SMS, text="Take the pills — 2 of them")

    result = await send(sender, ring, contact="contact-7")

    assert result.outcome is Outcome.SENT
    [request] = peer.requests  # the peer checked the basic auth and the form (Twilio's rules)
    assert request.form == {
        "To": ADA,
        "From": FROM,
        "Body": "Take the pills — 2 of them",
        "ValidityPeriod": "600",  # the ring's 10 minutes of freshness, all left
    }
    assert request.headers["Idempotency-Key"] == ring.id.replace(".", "-") + ":contact-7"
    assert result.provider_id is not None
    assert result.provider_id.startswith("SM")


async def test_a_messaging_service_instead_of_a_number(peer: TwilioPeer, clock: FakeClock) -> None:
    config = settings(peer.base_url, sms_from=None, sms_messaging_service_sid="MG" + "1" * 32)

    assert (await send_once(config, clock)).outcome is Outcome.SENT

    [request] = peer.requests
    assert request.form["MessagingServiceSid"] == "MG" + "1" * 32
    assert "From" not in request.form


@pytest.mark.parametrize(
    ("freshness", "elapsed", "validity"),
    [
        (timedelta(minutes=10), timedelta(minutes=3, seconds=0.4), "419"),  # whole seconds left
        (timedelta(minutes=10), timedelta(minutes=9, seconds=58.5), "1"),
        (timedelta(hours=20), timedelta(0), "36000"),  # Twilio's longest
    ],
)
async def test_the_validity_period_is_the_time_left(
    sender: SmsSender,
    peer: TwilioPeer,
    clock: FakeClock,
    freshness: timedelta,
    elapsed: timedelta,
    validity: str,
) -> None:
    clock.advance(elapsed)

    result = await send(sender, firing(channel=Channel.SMS, freshness=freshness))

    assert result.outcome is Outcome.SENT
    assert peer.requests[0].form["ValidityPeriod"] == validity


async def test_nothing_is_sent_with_less_than_a_second_left(
    sender: SmsSender, peer: TwilioPeer, clock: FakeClock
) -> None:
    clock.advance(timedelta(minutes=9, seconds=59.2))

    result = await send(sender)

    assert result.outcome is Outcome.FAILED
    assert result.error == "not sent: less than 1 s left to the deadline"
    assert peer.requests == []


@pytest.mark.parametrize(
    ("answer", "outcome", "gone", "retry_after"),
    [
        (Answer.error(429, 20429, "Too Many Requests", **{"Retry-After": "7"}), "retry", 0, 7.0),
        (Answer.error(503, 20503, "Service unavailable", **{"Retry-After": "2"}), "retry", 0, 2),
        (Answer.error(500, 20500, "Internal Server Error"), "retry", 0, None),
        (
            Answer.error(400, 21211, "The 'To' number is not a valid phone number."),
            "failed",
            0,
            None,
        ),
        (Answer.error(400, 21614, "'To' number is not a valid mobile number"), "failed", 0, None),
        (Answer.error(400, 21612, "The 'To' phone number is not reachable"), "failed", 0, None),
        (Answer.error(400, 21610, "Attempt to send to unsubscribed recipient"), "failed", 1, None),
    ],
)
async def test_answers_by_status_and_twilio_code(
    sender: SmsSender,
    peer: TwilioPeer,
    answer: Answer,
    outcome: str,
    gone: int,
    retry_after: float | None,
) -> None:
    peer.answer(ADA, answer)

    result = await send(sender)

    assert result.outcome == outcome
    assert result.gone is bool(gone)
    assert result.retry_after == retry_after
    assert result.error is not None
    assert result.error.startswith(
        f"HTTP {answer.status}, Twilio error {answer.body['code']}: {answer.body['message']}"
    )


@pytest.mark.parametrize(
    "overrides",
    [{"sms_auth_token": "not-the-token-987654"}, {"sms_account_sid": "AC" + "f" * 32}],
)
async def test_wrong_credentials_fail_as_a_configuration_error(
    peer: TwilioPeer, clock: FakeClock, overrides: dict[str, str]
) -> None:
    result = await send_once(settings(peer.base_url, **overrides), clock)

    assert result.outcome is Outcome.FAILED
    assert result.error is not None
    assert "TOCSIN_SMS_AUTH_TOKEN" in result.error
    assert "not-the-token" not in result.error
    assert AUTH_TOKEN not in result.error
    assert peer.requests == []


async def test_a_slow_gateway_is_cut_at_the_time_limit(sender: SmsSender, peer: TwilioPeer) -> None:
    peer.delay = 5.0
    started = time.monotonic()

    result = await send(sender, time_limit=0.3)

    assert time.monotonic() - started < 1.0
    assert result.outcome is Outcome.RETRY
    assert result.error == "timeout after 0.3 s"


async def test_no_gateway_listening_is_retried(clock: FakeClock) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    result = await send_once(settings(f"http://127.0.0.1:{port}"), clock)

    assert result.outcome is Outcome.RETRY
    assert result.error is not None
    assert result.error.startswith("connection error: ")


async def test_a_repeat_is_dropped_by_a_gateway_that_honours_the_key(
    sender: SmsSender, peer: TwilioPeer
) -> None:
    ring = firing(channel=Channel.SMS)

    first = await send(sender, ring)
    again = await send(sender, ring)
    tablet = await send(sender, ring, number="+14155550199", contact="contact-2")

    assert first.provider_id == again.provider_id  # the gateway answered the repeat as before
    assert tablet.provider_id not in (None, first.provider_id)  # another phone: its own message
    assert [request.form["To"] for request in peer.requests] == [ADA, "+14155550199"]


async def test_one_connection_is_kept_for_successive_rings(
    sender: SmsSender, peer: TwilioPeer
) -> None:
    for n in range(10):
        assert (await send(sender, contact=f"contact-{n}")).outcome is Outcome.SENT

    assert len({request.peer for request in peer.requests}) == 1


async def test_a_long_text_is_cut_to_twilios_limit(sender: SmsSender, peer: TwilioPeer) -> None:
    result = await send(sender, firing(channel=Channel.SMS, text="é" * 2000))

    assert result.outcome is Outcome.SENT
    assert peer.requests[0].form["Body"] == "é" * 1600


def test_build_needs_credentials_and_a_sender(clock: FakeClock) -> None:
    assert sms_channel.build(Settings(database_url="sqlite:///unused.db"), clock) is None
    with pytest.raises(ValueError, match="TOCSIN_SMS_AUTH_TOKEN not set"):
        sms_channel.build(Settings(sms_account_sid=ACCOUNT_SID, sms_from=FROM), clock)
    with pytest.raises(ValueError, match="TOCSIN_SMS_FROM or TOCSIN_SMS_MESSAGING_SERVICE_SID"):
        sms_channel.build(Settings(sms_account_sid=ACCOUNT_SID, sms_auth_token="t"), clock)
    with pytest.raises(ValueError, match="TOCSIN_SMS_BASE_URL"):
        sms_channel.build(settings("api.twilio.com"), clock)


async def test_a_gateway_with_a_private_ca_is_trusted_through_tocsin_sms_ca_file_only(
    tmp_path: Path, clock: FakeClock
) -> None:
    """A Twilio-compatible gateway on loopback whose certificate comes from a private CA:
    reached with TOCSIN_SMS_CA_FILE, refused without it; an operator's base URL needs no
    TOCSIN_ALLOW_PRIVATE_URLS."""
    certificate = server_certificate(tmp_path)
    async with twilio_peer(tls=certificate.server_tls()) as peer:
        assert peer.base_url.startswith("https://127.0.0.1:")
        trusting = sender_for(
            settings(peer.base_url, sms_ca_file=certificate.ca_file, allow_private_urls=False),
            clock,
        )
        distrusting = sender_for(settings(peer.base_url, allow_private_urls=False), clock)
        try:
            refused = await send(distrusting, contact="contact-1")
            reached = await send(trusting, contact="contact-2")
        finally:
            await trusting.close()
            await distrusting.close()

    assert refused.outcome is Outcome.RETRY
    assert "CERTIFICATE_VERIFY_FAILED" in (refused.error or "")
    assert "TOCSIN_SMS_CA_FILE" in (refused.error or "")
    assert reached.outcome is Outcome.SENT
    assert len(peer.requests) == 1
