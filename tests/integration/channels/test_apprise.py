"""The apprise channel against real services on loopback: Apprise's `json://` endpoint and
an ntfy server (tests/support/peers/apprise.py), reached by Apprise itself from the pool, and
the outbound URL policy held where Apprise connects."""

from __future__ import annotations

import asyncio
import base64
import http.client
import smtplib
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.integration.channels.web_support import destination, firing
from tests.support.peers.apprise import NotificationServices, notification_services
from tocsin.channels import apprise, apprise_reach
from tocsin.channels.apprise import AppriseSender
from tocsin.channels.base import DeliveryResult
from tocsin.clock import SystemClock
from tocsin.domain import Channel, Outcome
from tocsin.outbound import RefusedAddress
from tocsin.settings import Settings

NOW = datetime.now(UTC).replace(microsecond=0)


@pytest.fixture
async def services() -> AsyncIterator[NotificationServices]:
    async with notification_services() as peer:
        yield peer


@pytest.fixture
async def channel() -> AsyncIterator[AppriseSender]:
    """A sender with 4 threads, closed after the test."""
    built = sender()
    yield built
    await built.close()


def sender(threads: int = 4, *, allow_private: bool = True) -> AppriseSender:
    """A sender; the services listen on loopback, which only `allow_private` lets it reach."""
    built = apprise.build(
        Settings(
            apprise_enabled=True,
            apprise_threads=threads,
            apprise_timeout_seconds=5.0,
            allow_private_urls=allow_private,
        ),
        SystemClock(),
    )
    assert built is not None
    return built


async def notify(sender: AppriseSender, url: str, *, time_limit: float = 5.0) -> DeliveryResult:
    contact = apprise.validate_contact({"url": url})
    ring = firing(Channel.APPRISE, due=NOW, text="Water the plants")
    return await sender.send(ring, destination(Channel.APPRISE, contact), time_limit=time_limit)


def test_off_unless_enabled() -> None:
    assert apprise.build(Settings(), SystemClock()) is None


async def test_a_json_endpoint_gets_the_title_and_text_with_its_credentials(
    services: NotificationServices, channel: AppriseSender
) -> None:
    result = await notify(channel, f"json://ana:s3cret@{services.host}/json/ana")
    assert result.outcome is Outcome.SENT
    [got] = services.received
    assert got.path == "/json/ana"
    assert got.body["title"] == "Reminder"
    assert got.body["message"] == "Water the plants"
    assert got.headers["authorization"] == "Basic " + base64.b64encode(b"ana:s3cret").decode()


async def test_an_ntfy_server_gets_the_topic_title_and_text_with_its_token(
    services: NotificationServices, channel: AppriseSender
) -> None:
    result = await notify(channel, f"ntfy://{services.host}/plants?token=tk_abcdef123")
    assert result.outcome is Outcome.SENT
    [got] = services.received
    assert got.service == "ntfy"
    assert (got.body["topic"], got.body["title"], got.body["message"]) == (
        "plants",
        "Reminder",
        "Water the plants",
    )
    assert got.headers["authorization"] == "Bearer tk_abcdef123"


@pytest.mark.parametrize("status", [400, 401, 404, 500, 503])
async def test_every_failure_is_retried_with_apprises_reason_and_no_credentials(
    services: NotificationServices, channel: AppriseSender, status: int
) -> None:
    services.answer("/json/ana", status)
    result = await notify(channel, f"json://ana:s3cret@{services.host}/json/ana")
    assert result.outcome is Outcome.RETRY
    assert result.error is not None
    assert result.error.startswith("apprise: JSON notification failed: ")
    assert f"error={status}" in result.error
    assert "s3cret" not in result.error


async def test_an_unreachable_service_is_retried_and_its_url_masked(
    channel: AppriseSender,
) -> None:
    async with notification_services() as gone_away:
        host = gone_away.host
    result = await notify(channel, f"json://ana:s3cret@{host}/json/ana")
    assert result.outcome is Outcome.RETRY
    assert result.error is not None
    assert "Connection error" in result.error
    assert host.split(":")[0] not in result.error  # every piece of the URL is masked


async def test_a_slow_service_is_abandoned_at_the_time_limit_and_frees_its_thread_soon(
    services: NotificationServices,
) -> None:
    services.answer("/json/slow", 200, delay=3.0)
    channel = sender(threads=1)
    try:
        started = time.monotonic()
        result = await notify(channel, f"json://{services.host}/json/slow", time_limit=0.5)
        assert result.outcome is Outcome.RETRY
        assert result.error == "apprise: no answer within 0.5 s (abandoned)"
        assert time.monotonic() - started < 1.0
        # The one thread is still in the abandoned call until its 0.5 s read timeout ends it,
        # well before the service's 3 s: the next send gets the thread in time.
        result = await notify(channel, f"json://{services.host}/json/fast", time_limit=2.0)
        assert result.outcome is Outcome.SENT
        assert time.monotonic() - started < 2.0
    finally:
        await channel.close()


async def test_no_time_left_sends_nothing(
    services: NotificationServices, channel: AppriseSender
) -> None:
    result = await notify(channel, f"json://{services.host}/json/ana", time_limit=0)
    assert result.outcome is Outcome.RETRY
    assert services.received == []


async def test_a_send_still_queued_at_its_limit_is_never_made(
    services: NotificationServices,
) -> None:
    services.answer("/json/slow", 200, delay=1.0)
    channel = sender(threads=1)
    try:
        slow = asyncio.create_task(notify(channel, f"json://{services.host}/json/slow"))
        await asyncio.sleep(0.1)  # the one thread is busy with it
        queued = await notify(channel, f"json://{services.host}/json/queued", time_limit=0.3)
        assert queued.outcome is Outcome.RETRY
        assert (await slow).outcome is Outcome.SENT
        await asyncio.sleep(0.2)
    finally:
        await channel.close()
    assert [n.path for n in services.received] == ["/json/slow"]


async def test_the_pool_bounds_how_many_notifications_run_at_once(
    services: NotificationServices,
) -> None:
    services.answer("/json/ana", 200, delay=0.3)
    channel = sender(threads=2)
    try:
        url = f"json://{services.host}/json/ana"
        results = await asyncio.gather(*(notify(channel, url) for _ in range(6)))
    finally:
        await channel.close()
    assert all(r.outcome is Outcome.SENT for r in results)
    assert len(services.received) == 6
    assert services.most_in_flight == 2


async def test_a_service_on_a_private_address_is_refused_for_good_and_never_called(
    services: NotificationServices,
) -> None:
    strict = sender(allow_private=False)
    try:
        results = [
            await notify(strict, f"json://ana:s3cret@{services.host}/json/ana"),
            await notify(strict, f"ntfy://{services.host}/plants"),
        ]
    finally:
        await strict.close()
    for result in results:
        assert result.outcome is Outcome.FAILED
        assert "TOCSIN_ALLOW_PRIVATE_URLS" in (result.error or "")
        assert "s3cret" not in (result.error or "")
    assert services.received == []


async def test_a_name_that_resolves_to_a_private_address_at_send_time_is_not_connected_to(
    services: NotificationServices, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A public-looking name that resolves to loopback when the ring goes (DNS rebinding):
    judged at the connection Apprise opens, not only as the URL was written."""
    resolve = apprise_reach._resolve

    def rebound(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        return resolve("127.0.0.1" if host == "hooks.example.com" else host, port, *args, **kwargs)

    monkeypatch.setattr(apprise_reach, "_resolve", rebound)
    port = services.host.rsplit(":", 1)[1]
    strict = sender(allow_private=False)
    try:
        result = await notify(strict, f"json://hooks.example.com:{port}/json/ana")
    finally:
        await strict.close()
    assert result.outcome is Outcome.FAILED
    assert "resolves to non-public addresses only" in (result.error or "")
    assert services.received == []


async def test_a_service_tocsin_cannot_judge_is_refused_unless_private_urls_are_allowed() -> None:
    strict = sender(allow_private=False)
    try:
        result = await notify(strict, "rsyslog://syslog.example.com")
    finally:
        await strict.close()
    assert result.outcome is Outcome.FAILED
    assert "cannot check where Remote Syslog connects" in (result.error or "")


async def test_the_check_holds_every_connection_made_in_its_block_and_no_other(
    services: NotificationServices,
) -> None:
    """HTTP (http.client here; requests in Apprise: both connect through
    socket.create_connection) and SMTP (smtplib) resolve through the wrapped resolver, in the
    thread that entered the check; a thread outside one reaches the same service."""
    host, port = services.host.rsplit(":", 1)

    def post() -> int:
        connection = http.client.HTTPConnection(host, int(port), timeout=5)
        try:
            connection.request("POST", "/json/ana", body=b"{}")
            return connection.getresponse().status
        finally:
            connection.close()

    def checked() -> list[str]:
        with apprise_reach.connections_checked(allow_private=False) as check:
            with pytest.raises(RefusedAddress):
                post()
            with pytest.raises(RefusedAddress):
                smtplib.SMTP("localhost", 25, timeout=5)
        return check.refused

    loop = asyncio.get_running_loop()
    refused = await loop.run_in_executor(None, checked)
    assert len(refused) == 2
    assert all("TOCSIN_ALLOW_PRIVATE_URLS" in reason for reason in refused)
    assert services.received == []
    assert await loop.run_in_executor(None, post) == 200
    assert len(services.received) == 1
