"""The `apns` channel against a local APNs: HTTP/2 over TLS, the provider token verified by
its signature, every header checked, and Apple's answers classified."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from tests.integration.channels.push_support import (
    T0,
    ServerCertificate,
    firing,
    server_certificate,
    write_pem,
)
from tests.support.peers.apns import ApnsPeer, serving
from tocsin.channels import apns
from tocsin.channels.apns import ApnsSender
from tocsin.channels.base import DeliveryResult, Destination
from tocsin.clock import FakeClock
from tocsin.domain import Channel, Firing, Outcome
from tocsin.settings import Settings

KEY_ID = "ABC123DEFG"
TEAM_ID = "DEF123GHIJ"
TOPIC = "com.example.reminders"
TOKEN = "ab" * 32
SANDBOX_TOKEN = "cd" * 32


@dataclass
class Apns:
    """A running local APNs (production and sandbox) and a sender pointed at it."""

    peer: ApnsPeer
    sandbox: ApnsPeer
    sender: ApnsSender
    clock: FakeClock
    settings: Settings

    async def send(
        self, item: Firing | None = None, *, time_limit: float = 5.0, **address: str
    ) -> DeliveryResult:
        destination = Destination(
            id="contact-1", kind=Channel.APNS, address={"token": TOKEN, **address}
        )
        return await self.sender.send(
            item or firing(channel=Channel.APNS), destination, time_limit=time_limit
        )


@pytest.fixture
def certificate(tmp_path: Path) -> ServerCertificate:
    return server_certificate(tmp_path)


@pytest.fixture
def signing_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def apns_settings(key_file: Path, urls: tuple[str, str], ca_file: Path | None) -> Settings:
    return Settings(
        apns_key_file=key_file,
        apns_key_id=KEY_ID,
        apns_team_id=TEAM_ID,
        apns_topic=TOPIC,
        apns_base_url=urls[0],
        apns_sandbox_base_url=urls[1],
        apns_ca_file=ca_file,
        apns_timeout_seconds=5.0,
    )


def served(
    peer: ApnsPeer, certificate: ServerCertificate, port: int = 0
) -> AbstractAsyncContextManager[str]:
    return serving(
        peer, certfile=str(certificate.cert_file), keyfile=str(certificate.key_file), port=port
    )


@pytest.fixture
async def local(
    tmp_path: Path, certificate: ServerCertificate, signing_key: ec.EllipticCurvePrivateKey
) -> AsyncIterator[Apns]:
    clock = FakeClock(T0)

    def peer() -> ApnsPeer:
        return ApnsPeer(
            public_key=signing_key.public_key(),
            key_id=KEY_ID,
            team_id=TEAM_ID,
            topics=frozenset({TOPIC, "com.example.other"}),
            now=lambda: clock.now().timestamp(),
        )

    production, sandbox = peer(), peer()
    async with (
        served(production, certificate) as url,
        served(sandbox, certificate) as sandbox_url,
    ):
        key_file = write_pem(signing_key, tmp_path / "AuthKey.p8")
        config = apns_settings(key_file, (url, sandbox_url), certificate.ca_file)
        sender = apns.build(config, clock)
        assert sender is not None
        try:
            yield Apns(
                peer=production, sandbox=sandbox, sender=sender, clock=clock, settings=config
            )
        finally:
            await sender.close()


async def test_an_alert_arrives_signed_with_every_header(local: Apns) -> None:
    item = firing(channel=Channel.APNS, metadata={"title": "Garden"})

    result = await local.send(item)

    assert result == DeliveryResult.sent(apns.apns_id(item))
    [push] = local.peer.pushes
    assert push.http_version == "2"
    assert push.token == TOKEN
    assert push.kid == KEY_ID
    assert push.claims == {"iss": TEAM_ID, "iat": int(T0.timestamp())}
    assert push.headers["authorization"].startswith("bearer ")
    assert push.headers["apns-push-type"] == "alert"
    assert push.headers["apns-priority"] == "10"
    assert push.headers["apns-expiration"] == str(int(item.deadline.timestamp()))
    assert push.headers["apns-collapse-id"] == item.reminder_id
    assert push.headers["apns-id"] == str(uuid.uuid5(apns.APNS_ID_NAMESPACE, item.id))
    assert push.headers["apns-topic"] == TOPIC
    assert push.payload == {
        "aps": {"alert": {"title": "Garden", "body": "Water the plants"}, "sound": "default"},
        "tocsin": {"id": item.id, "reminder_id": item.reminder_id, "due": "2026-03-02T09:00:00Z"},
    }


async def test_a_repeat_carries_the_same_apns_id_and_another_firing_another(
    local: Apns,
) -> None:
    first, other = firing(1, channel=Channel.APNS), firing(2, channel=Channel.APNS)

    await local.send(first)
    await local.send(first)
    await local.send(other)

    ids = [push.headers["apns-id"] for push in local.peer.pushes]
    assert ids[0] == ids[1] != ids[2]
    assert local.peer.pushes[2].payload["aps"]["alert"]["title"] == "Reminder"


async def test_a_sandbox_contact_goes_to_the_sandbox_host_with_its_bundle_id(
    local: Apns,
) -> None:
    result = await local.send(
        token=SANDBOX_TOKEN, environment="sandbox", bundle_id="com.example.other"
    )

    assert result.outcome is Outcome.SENT
    assert local.peer.pushes == []
    [push] = local.sandbox.pushes
    assert push.token == SANDBOX_TOKEN
    assert push.headers["apns-topic"] == "com.example.other"


async def test_without_a_topic_the_send_fails_and_says_which_setting(
    local: Apns, signing_key: ec.EllipticCurvePrivateKey, tmp_path: Path
) -> None:
    config = local.settings.model_copy(update={"apns_topic": None})
    sender = apns.build(config, local.clock)
    assert sender is not None
    destination = Destination(id="c", kind=Channel.APNS, address={"token": TOKEN})

    result = await sender.send(firing(channel=Channel.APNS), destination, time_limit=5)

    assert result == DeliveryResult.failed(
        "no apns-topic: set TOCSIN_APNS_TOPIC or the contact's bundle_id"
    )
    await sender.close()


@pytest.mark.parametrize(
    ("status", "reason", "retry_after", "expected"),
    [
        (410, "Unregistered", None, DeliveryResult.destination_gone("APNs 410 Unregistered")),
        (400, "BadDeviceToken", None, DeliveryResult.destination_gone("APNs 400 BadDeviceToken")),
        (
            400,
            "DeviceTokenNotForTopic",
            None,
            DeliveryResult.destination_gone("APNs 400 DeviceTokenNotForTopic"),
        ),
        (429, "TooManyRequests", "7", DeliveryResult.retry("APNs 429 TooManyRequests", 7.0)),
        (500, "InternalServerError", None, DeliveryResult.retry("APNs 500 InternalServerError")),
        (503, "ServiceUnavailable", "3", DeliveryResult.retry("APNs 503 ServiceUnavailable", 3)),
        (503, "Shutdown", None, DeliveryResult.retry("APNs 503 Shutdown")),
        (403, "InvalidProviderToken", None, DeliveryResult.failed("APNs 403 InvalidProviderToken")),
        (400, "BadCollapseId", None, DeliveryResult.failed("APNs 400 BadCollapseId")),
        (413, "PayloadTooLarge", None, DeliveryResult.failed("APNs 413 PayloadTooLarge")),
        # Whatever a peer says is kept as text the store and the log can hold.
        (
            410,
            "Gone\x00\n2026-12-04T00:00:00.000Z ERROR tocsin.fake FORGED",
            None,
            DeliveryResult.destination_gone(
                "APNs 410 Gone\ufffd 2026-12-04T00:00:00.000Z ERROR tocsin.fake FORGED"
            ),
        ),
        (500, "x" * 1000, None, DeliveryResult.retry("APNs 500 " + "x" * 199 + "…")),
    ],
)
async def test_apples_answers_are_classified(
    local: Apns, status: int, reason: str, retry_after: str | None, expected: DeliveryResult
) -> None:
    local.peer.answer(TOKEN, status, reason, retry_after=retry_after)

    assert await local.send() == expected


async def test_an_expired_provider_token_is_renewed_and_the_push_sent_again(
    local: Apns,
) -> None:
    await local.send()
    local.clock.advance(timedelta(minutes=25))
    # Apple's clock says the token is too old (say this host's clock was behind).
    local.peer.expire_tokens_before = local.clock.now().timestamp()

    result = await local.send()

    assert result.outcome is Outcome.SENT
    assert local.peer.refusals == ["ExpiredProviderToken"]
    assert len(local.peer.provider_tokens) == 2
    assert local.peer.pushes[-1].claims["iat"] == int(local.clock.now().timestamp())


async def test_the_provider_token_is_reused_then_renewed_within_apples_window(
    local: Apns,
) -> None:
    for minutes in (0, 1, 19, 39):  # the peer refuses a renewal within 20 minutes
        local.clock.set(T0 + timedelta(minutes=minutes))
        assert (await local.send()).outcome is Outcome.SENT
    assert len(local.peer.provider_tokens) == 1

    local.clock.set(T0 + timedelta(minutes=40))
    assert (await local.send()).outcome is Outcome.SENT
    local.clock.set(T0 + timedelta(minutes=79))  # the peer refuses one older than an hour
    assert (await local.send()).outcome is Outcome.SENT

    assert len(local.peer.provider_tokens) == 2
    assert local.peer.refusals == []


async def test_one_connection_carries_many_sends_at_once(local: Apns) -> None:
    items = [firing(number, channel=Channel.APNS) for number in range(200)]

    results = await asyncio.gather(*(local.send(item) for item in items))
    await local.send()

    assert {result.outcome for result in results} == {Outcome.SENT}
    assert len(local.peer.pushes) == 201
    assert len({push.connection for push in local.peer.pushes}) == 1
    assert local.sender.connections_opened() == 1


async def test_when_the_server_closes_the_connection_the_next_send_opens_another(
    local: Apns, certificate: ServerCertificate
) -> None:
    async with served(local.peer, certificate) as url:
        sender = apns.build(local.settings.model_copy(update={"apns_base_url": url}), local.clock)
        assert sender is not None
        destination = Destination(id="c", kind=Channel.APNS, address={"token": TOKEN})
        assert (
            await sender.send(firing(1, channel=Channel.APNS), destination, time_limit=5)
        ).outcome is Outcome.SENT
    port = int(url.rsplit(":", 1)[1])
    async with served(local.peer, certificate, port=port):  # APNs restarted, say
        result = await sender.send(firing(2, channel=Channel.APNS), destination, time_limit=5)
        await sender.close()

    assert result.outcome is Outcome.SENT
    assert sender.connections_opened() == 2
    assert len({push.connection for push in local.peer.pushes}) == 2


async def test_a_slow_answer_is_abandoned_at_the_time_limit_and_the_connection_kept(
    local: Apns,
) -> None:
    local.peer.delay(TOKEN, 5.0)
    started = time.monotonic()

    result = await local.send(time_limit=0.3)

    assert result == DeliveryResult.retry("timeout")
    assert time.monotonic() - started < 1.0
    assert (await local.send(token="ef" * 32)).outcome is Outcome.SENT
    assert local.sender.connections_opened() == 1


async def test_a_token_signed_with_another_key_is_refused_for_good(
    local: Apns, tmp_path: Path
) -> None:
    wrong = write_pem(ec.generate_private_key(ec.SECP256R1()), tmp_path / "other.p8")
    sender = apns.build(local.settings.model_copy(update={"apns_key_file": wrong}), local.clock)
    assert sender is not None
    destination = Destination(id="c", kind=Channel.APNS, address={"token": TOKEN})

    result = await sender.send(firing(channel=Channel.APNS), destination, time_limit=5)

    assert result == DeliveryResult.failed("APNs 403 InvalidProviderToken")
    assert local.peer.pushes == []
    await sender.close()


async def test_a_host_not_trusted_is_not_sent_to(local: Apns) -> None:
    sender = apns.build(local.settings.model_copy(update={"apns_ca_file": None}), local.clock)
    assert sender is not None
    destination = Destination(id="c", kind=Channel.APNS, address={"token": TOKEN})

    result = await sender.send(firing(channel=Channel.APNS), destination, time_limit=5)

    assert result.outcome is Outcome.RETRY
    assert "CERTIFICATE_VERIFY_FAILED" in (result.error or "")
    assert local.peer.pushes == []
    await sender.close()


async def test_a_host_that_is_down_is_retried(local: Apns) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    config = local.settings.model_copy(update={"apns_base_url": f"https://127.0.0.1:{port}"})
    sender = apns.build(config, local.clock)
    assert sender is not None

    result = await sender.send(
        firing(channel=Channel.APNS),
        Destination(id="c", kind=Channel.APNS, address={"token": TOKEN}),
        time_limit=5,
    )

    assert result.outcome is Outcome.RETRY
    assert (result.error or "").startswith("connection error: ConnectionRefusedError")
    await sender.close()


async def test_a_long_text_is_cut_to_fit_apples_4_kib(local: Apns) -> None:
    item = firing(channel=Channel.APNS, text="🔔" * 1000)  # 4 bytes each in UTF-8

    result = await local.send(item)

    assert result.outcome is Outcome.SENT
    body: Any = local.peer.pushes[0].payload["aps"]["alert"]["body"]
    assert body.endswith("…")
    assert len(orjson.dumps(local.peer.pushes[0].payload)) <= 4096


def test_without_its_settings_the_channel_is_off(tmp_path: Path) -> None:
    assert apns.build(Settings(apns_key_id=KEY_ID, apns_team_id=TEAM_ID), FakeClock(T0)) is None


def test_a_key_file_that_is_no_p256_key_is_refused_without_quoting_it(tmp_path: Path) -> None:
    bad = tmp_path / "AuthKey.p8"
    bad.write_text("-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n")
    config = Settings(apns_key_file=bad, apns_key_id=KEY_ID, apns_team_id=TEAM_ID)

    with pytest.raises(ValueError, match="TOCSIN_APNS_KEY_FILE") as raised:
        apns.build(config, FakeClock(T0))

    assert "secret" not in str(raised.value)
