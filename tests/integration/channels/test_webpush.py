"""The webpush channel against a real Web Push receiver on loopback, which verifies each
VAPID JWT and decrypts each payload with the browser's keys (tests/support/peers/webpush.py)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.integration.channels.push_support import server_certificate
from tests.integration.channels.web_support import destination, firing
from tests.support.peers.webpush import WebPushReceiver, webpush_receiver
from tests.support.processes import tocsin
from tocsin.channels import webpush
from tocsin.channels.webpush import WebPushSender
from tocsin.clock import FakeClock
from tocsin.domain import Channel, Outcome
from tocsin.settings import Settings

SUBJECT = "mailto:ops@example.com"
NOW = datetime.now(UTC).replace(microsecond=0)  # near the real time: the peer checks `exp`


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
def keys() -> tuple[str, str]:
    return webpush.new_vapid_keys()


@pytest.fixture
async def receiver() -> AsyncIterator[WebPushReceiver]:
    async with webpush_receiver() as peer:
        yield peer


@pytest.fixture
async def sender(keys: tuple[str, str], clock: FakeClock) -> AsyncIterator[WebPushSender]:
    built = webpush.build(settings(vapid_private_key=keys[0]), clock)
    assert built is not None
    yield built
    await built.close()


def settings(**values: object) -> Settings:
    """The test receiver listens on loopback, which the outbound policy allows only here."""
    values.setdefault("allow_private_urls", True)
    return Settings(vapid_subject=SUBJECT, webpush_timeout_seconds=5.0, **values)  # type: ignore[arg-type]


async def test_a_push_arrives_signed_encrypted_and_decryptable(
    receiver: WebPushReceiver, sender: WebPushSender, keys: tuple[str, str]
) -> None:
    browser = receiver.subscribe(keys[1])
    contact = webpush.validate_contact({"subscription": browser.subscription()})
    ring = firing(Channel.WEBPUSH, due=NOW - timedelta(seconds=30), freshness=600)

    result = await sender.send(ring, destination(Channel.WEBPUSH, contact), time_limit=5)

    assert receiver.refused == []
    assert result.outcome is Outcome.SENT
    assert result.provider_id == f"{receiver.origin}/message/1"  # the Location header
    [push] = receiver.pushes
    assert push.payload == {
        "id": ring.id,
        "reminder_id": ring.reminder_id,
        "text": "Water the plants",
        "due": (NOW - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    assert push.headers["ttl"] == "570"  # whole seconds from now to the deadline
    assert push.headers["urgency"] == "high"
    assert push.headers["topic"] == webpush.topic(ring.reminder_id)
    assert push.headers["content-encoding"] == "aes128gcm"
    assert push.claims["aud"] == receiver.origin
    assert push.claims["sub"] == SUBJECT
    assert push.claims["exp"] == int(NOW.timestamp()) + 12 * 3600


async def test_every_ring_of_a_reminder_has_one_topic_and_each_reminder_its_own(
    receiver: WebPushReceiver, sender: WebPushSender, keys: tuple[str, str]
) -> None:
    browser = receiver.subscribe(keys[1])
    first = firing(Channel.WEBPUSH, due=NOW)
    again = firing(Channel.WEBPUSH, due=NOW + timedelta(days=1), reminder_id=first.reminder_id)
    other = firing(Channel.WEBPUSH, due=NOW, reminder_id=first.reminder_id + "x")
    for ring in (first, again, other):
        await sender.send(ring, destination(Channel.WEBPUSH, browser.address()), time_limit=5)
    topics = [push.headers["topic"] for push in receiver.pushes]
    assert topics[0] == topics[1] != topics[2]
    assert all(len(t) == 32 for t in topics)


async def test_one_jwt_per_origin_until_near_its_expiry(
    receiver: WebPushReceiver, sender: WebPushSender, keys: tuple[str, str], clock: FakeClock
) -> None:
    browser = receiver.subscribe(keys[1])
    to = destination(Channel.WEBPUSH, browser.address())
    await sender.send(firing(Channel.WEBPUSH, due=NOW), to, time_limit=5)
    clock.advance(timedelta(hours=10))
    await sender.send(firing(Channel.WEBPUSH, due=clock.now()), to, time_limit=5)
    clock.advance(timedelta(hours=1, minutes=1))  # less than an hour left: a new one
    await sender.send(firing(Channel.WEBPUSH, due=clock.now()), to, time_limit=5)
    tokens = [push.headers["authorization"] for push in receiver.pushes]
    assert receiver.refused == []
    assert tokens[0] == tokens[1] != tokens[2]
    assert receiver.pushes[2].claims["exp"] == int(clock.now().timestamp()) + 12 * 3600


async def test_sends_reuse_one_connection(
    receiver: WebPushReceiver, sender: WebPushSender, keys: tuple[str, str]
) -> None:
    browser = receiver.subscribe(keys[1])
    for _ in range(3):
        ring = firing(Channel.WEBPUSH, due=NOW)
        await sender.send(ring, destination(Channel.WEBPUSH, browser.address()), time_limit=5)
    assert len({push.client for push in receiver.pushes}) == 1


@pytest.mark.parametrize(
    ("status", "retry_after", "outcome", "gone", "wait", "says"),
    [
        (201, None, Outcome.SENT, False, None, None),
        (202, None, Outcome.SENT, False, None, None),
        (404, None, Outcome.FAILED, True, None, "expired or was removed"),
        (410, None, Outcome.FAILED, True, None, "expired or was removed"),
        (429, "7", Outcome.RETRY, False, 7.0, "HTTP 429"),
        (500, None, Outcome.RETRY, False, None, "HTTP 500"),
        (503, "12", Outcome.RETRY, False, 12.0, "HTTP 503"),
        (413, None, Outcome.FAILED, False, None, "payload too large"),
        (400, None, Outcome.FAILED, False, None, "HTTP 400: the reason"),
        (401, None, Outcome.FAILED, False, None, "HTTP 401: the reason (VAPID refused"),
        (403, None, Outcome.FAILED, False, None, "HTTP 403: the reason (VAPID refused"),
    ],
)
async def test_each_answer_is_classified(
    receiver: WebPushReceiver,
    sender: WebPushSender,
    keys: tuple[str, str],
    status: int,
    retry_after: str | None,
    outcome: Outcome,
    gone: bool,
    wait: float | None,
    says: str | None,
) -> None:
    browser = receiver.subscribe(keys[1])
    receiver.answer(browser, status, retry_after=retry_after, body="the reason")
    ring = firing(Channel.WEBPUSH, due=NOW)
    result = await sender.send(ring, destination(Channel.WEBPUSH, browser.address()), time_limit=5)
    assert (result.outcome, result.gone, result.retry_after) == (outcome, gone, wait)
    if says is None:
        assert result.error is None
    else:
        assert result.error is not None
        assert says in result.error
    assert len(receiver.pushes) == 1  # it was decrypted and verified all the same


async def test_a_push_service_that_does_not_answer_is_given_up_at_the_time_limit(
    receiver: WebPushReceiver, sender: WebPushSender, keys: tuple[str, str]
) -> None:
    browser = receiver.subscribe(keys[1])
    receiver.answer(browser, 201, delay=5.0)
    started = time.monotonic()
    ring = firing(Channel.WEBPUSH, due=NOW)
    result = await sender.send(
        ring, destination(Channel.WEBPUSH, browser.address()), time_limit=0.3
    )
    assert result.outcome is Outcome.RETRY
    assert result.error == "timeout"
    assert time.monotonic() - started < 1.0


async def test_no_time_left_sends_nothing(
    receiver: WebPushReceiver, sender: WebPushSender, keys: tuple[str, str]
) -> None:
    browser = receiver.subscribe(keys[1])
    ring = firing(Channel.WEBPUSH, due=NOW)
    result = await sender.send(ring, destination(Channel.WEBPUSH, browser.address()), time_limit=0)
    assert result.outcome is Outcome.RETRY
    assert receiver.pushes == []


async def test_a_private_endpoint_is_refused_at_send_time(
    receiver: WebPushReceiver, keys: tuple[str, str], clock: FakeClock
) -> None:
    """A subscription saved while private hosts were allowed is not called once they are not
    (the same policy as webhooks: no request reaches a loopback or private address)."""
    strict = webpush.build(settings(vapid_private_key=keys[0], allow_private_urls=False), clock)
    assert strict is not None
    browser = receiver.subscribe(keys[1])
    try:
        result = await strict.send(
            firing(Channel.WEBPUSH, due=NOW),
            destination(Channel.WEBPUSH, browser.address()),
            time_limit=2,
        )
    finally:
        await strict.close()
    assert result.outcome is Outcome.FAILED
    assert result.error is not None
    assert "push endpoint refused" in result.error
    assert "TOCSIN_ALLOW_PRIVATE_URLS" in result.error
    assert receiver.pushes == []


async def test_an_unreachable_push_service_is_retried(
    sender: WebPushSender, keys: tuple[str, str]
) -> None:
    async with webpush_receiver() as gone_away:
        browser = gone_away.subscribe(keys[1])
    ring = firing(Channel.WEBPUSH, due=NOW)
    result = await sender.send(ring, destination(Channel.WEBPUSH, browser.address()), time_limit=2)
    assert result.outcome is Outcome.RETRY
    assert result.error is not None
    assert result.error.startswith("connection error")


async def test_a_subscription_made_with_another_key_is_refused_and_said_why(
    receiver: WebPushReceiver, sender: WebPushSender
) -> None:
    browser = receiver.subscribe(webpush.new_vapid_keys()[1])
    ring = firing(Channel.WEBPUSH, due=NOW)
    result = await sender.send(ring, destination(Channel.WEBPUSH, browser.address()), time_limit=5)
    assert result.outcome is Outcome.FAILED
    assert not result.gone
    assert result.error is not None
    assert "another application server key" in result.error


async def test_a_long_text_is_shortened_to_fit_one_record(
    receiver: WebPushReceiver, sender: WebPushSender, keys: tuple[str, str]
) -> None:
    browser = receiver.subscribe(keys[1])
    ring = firing(Channel.WEBPUSH, due=NOW, text="💧" * 1000)  # 4,000 bytes of UTF-8
    result = await sender.send(ring, destination(Channel.WEBPUSH, browser.address()), time_limit=5)
    assert result.outcome is Outcome.SENT
    [push] = receiver.pushes
    assert push.payload["text"].endswith("💧…")
    assert int(push.headers["content-length"]) <= webpush.RECORD_SIZE


async def test_the_key_pair_tocsin_keys_vapid_prints_works(
    receiver: WebPushReceiver, clock: FakeClock, tmp_path: Path
) -> None:
    done = tocsin("keys", "vapid")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    private, public = lines[1], lines[3]
    assert "TOCSIN_VAPID_PRIVATE_KEY" in lines[0]
    assert "applicationServerKey" in lines[2]
    key_file = tmp_path / "vapid.key"
    key_file.write_text(private + "\n")
    sender = webpush.build(settings(vapid_private_key_file=key_file), clock)
    assert sender is not None
    browser = receiver.subscribe(public)
    try:
        ring = firing(Channel.WEBPUSH, due=NOW)
        result = await sender.send(
            ring, destination(Channel.WEBPUSH, browser.address()), time_limit=5
        )
    finally:
        await sender.close()
    assert result.outcome is Outcome.SENT
    assert receiver.refused == []


async def test_a_push_service_with_a_private_ca_is_trusted_through_tocsin_webpush_ca_file(
    clock: FakeClock, keys: tuple[str, str], tmp_path: Path
) -> None:
    """A push service whose certificate comes from a private CA: reached with
    TOCSIN_WEBPUSH_CA_FILE, refused without it. Its endpoint is an owner's contact, so
    loopback still needs TOCSIN_ALLOW_PRIVATE_URLS (set by `settings`)."""
    certificate = server_certificate(tmp_path)
    async with webpush_receiver(tls=certificate.server_tls()) as receiver:
        assert receiver.origin.startswith("https://127.0.0.1:")
        browser = receiver.subscribe(keys[1])
        to = destination(
            Channel.WEBPUSH, webpush.validate_contact({"subscription": browser.subscription()})
        )
        trusting = webpush.build(
            settings(vapid_private_key=keys[0], webpush_ca_file=certificate.ca_file), clock
        )
        distrusting = webpush.build(settings(vapid_private_key=keys[0]), clock)
        assert trusting is not None
        assert distrusting is not None
        try:
            refused = await distrusting.send(firing(Channel.WEBPUSH, due=NOW), to, time_limit=5)
            reached = await trusting.send(firing(Channel.WEBPUSH, due=NOW), to, time_limit=5)
        finally:
            await trusting.close()
            await distrusting.close()

    assert refused.outcome is Outcome.RETRY
    assert "CERTIFICATE_VERIFY_FAILED" in (refused.error or "")
    assert "TOCSIN_WEBPUSH_CA_FILE" in (refused.error or "")
    assert reached.outcome is Outcome.SENT
    assert len(receiver.pushes) == 1
