"""The `fcm` channel against a local FCM: the OAuth2 JWT-bearer grant verified by its RS256
signature, the access token checked on each send, the message's fields checked, and FCM's
v1 errors classified."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.integration.channels.push_support import T0, firing, server_certificate
from tests.support.peers.fcm import FcmPeer, Reply, error_body, serving
from tocsin.channels import fcm
from tocsin.channels.base import DeliveryResult, Destination
from tocsin.channels.fcm import FcmSender
from tocsin.clock import FakeClock
from tocsin.domain import Channel, Firing, Outcome
from tocsin.settings import Settings

PROJECT = "tocsin-test"
EMAIL = "tocsin@tocsin-test.iam.gserviceaccount.com"
TOKEN = "fGx3Yv2kQ0e:APA91bH" + "x" * 140
OTHER = "cJ9_aa-bb:APA91bF" + "y" * 140


@dataclass
class Fcm:
    peer: FcmPeer
    sender: FcmSender
    clock: FakeClock
    settings: Settings

    async def send(
        self, item: Firing | None = None, *, token: str = TOKEN, time_limit: float = 5.0
    ) -> DeliveryResult:
        destination = Destination(id="contact-1", kind=Channel.FCM, address={"token": token})
        return await self.sender.send(
            item or firing(channel=Channel.FCM), destination, time_limit=time_limit
        )


@pytest.fixture(scope="module")
def account_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def service_account_file(
    folder: Path, key: rsa.RSAPrivateKey, token_uri: str, **changes: Any
) -> Path:
    """A service account key file as the Firebase console gives it."""
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    document = {
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": "0123456789abcdef",
        "private_key": pem,
        "client_email": EMAIL,
        "client_id": "1234567890",
        "token_uri": token_uri,
        **changes,
    }
    path = folder / "service-account.json"
    path.write_bytes(orjson.dumps(document))
    return path


@pytest.fixture
async def local(tmp_path: Path, account_key: rsa.RSAPrivateKey) -> AsyncIterator[Fcm]:
    clock = FakeClock(T0)
    peer = FcmPeer(
        public_key=account_key.public_key(),
        client_email=EMAIL,
        project_id=PROJECT,
        now=lambda: clock.now().timestamp(),
    )
    async with serving(peer) as base_url:
        config = Settings(
            fcm_service_account_file=service_account_file(tmp_path, account_key, peer.token_uri),
            fcm_base_url=base_url,
            fcm_timeout_seconds=5.0,
        )
        sender = fcm.build(config, clock)
        assert sender is not None
        try:
            yield Fcm(peer=peer, sender=sender, clock=clock, settings=config)
        finally:
            await sender.close()


async def test_a_message_arrives_with_a_granted_token_and_every_field(local: Fcm) -> None:
    item = firing(channel=Channel.FCM, metadata={"title": "Garden"})
    local.clock.advance(timedelta(seconds=100))  # sent 100 s after it was due

    result = await local.send(item)

    assert result.outcome is Outcome.SENT
    assert (result.provider_id or "").startswith(f"projects/{PROJECT}/messages/")
    [claims] = local.peer.assertions
    now = int(local.clock.now().timestamp())
    assert claims == {
        "iss": EMAIL,
        "scope": "https://www.googleapis.com/auth/firebase.messaging",
        "aud": local.peer.token_uri,
        "iat": now,
        "exp": now + 3600,
    }
    [sent] = local.peer.messages
    assert sent.message == {
        "token": TOKEN,
        "notification": {"title": "Garden", "body": "Water the plants"},
        "data": {
            "tocsin_id": item.id,
            "reminder_id": item.reminder_id,
            "due": "2026-03-02T09:00:00Z",
        },
        "android": {"ttl": "500s", "collapse_key": item.reminder_id, "priority": "high"},
        "apns": {
            "headers": {
                "apns-expiration": str(int(item.deadline.timestamp())),
                "apns-collapse-id": item.reminder_id,
                "apns-priority": "10",
            }
        },
    }


async def test_the_access_token_is_kept_until_five_minutes_before_it_expires(
    local: Fcm,
) -> None:
    await local.send()
    local.clock.advance(timedelta(minutes=54))
    await local.send()
    assert len(local.peer.assertions) == 1

    local.clock.advance(timedelta(minutes=1, seconds=1))  # 55 min: within 5 min of expiry
    await local.send()

    assert len(local.peer.assertions) == 2
    assert len({message.access_token for message in local.peer.messages}) == 2


async def test_many_sends_at_once_fetch_one_access_token(local: Fcm) -> None:
    items = [firing(number, channel=Channel.FCM) for number in range(50)]

    results = await asyncio.gather(*(local.send(item) for item in items))

    assert {result.outcome for result in results} == {Outcome.SENT}
    assert len(local.peer.assertions) == 1


async def test_a_refused_access_token_is_fetched_again_and_the_message_sent_again(
    local: Fcm,
) -> None:
    await local.send()
    local.peer.revoke_access_tokens()

    result = await local.send()

    assert result.outcome is Outcome.SENT
    assert local.peer.refusals == ["UNAUTHENTICATED"]
    assert len(local.peer.assertions) == 2


def fcm_error(
    status: int,
    state: str,
    code: str | None = None,
    message: str = "",
    *,
    field: str | None = None,
    retry_after: str | None = None,
) -> Reply:
    body = error_body(status, state, code=code, message=message, field_violation=field)
    return Reply(status=status, body=body, retry_after=retry_after)


NOT_VALID = "The registration token is not a valid FCM registration token"
BAD_TTL = "Invalid value at 'message.android.ttl'"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            fcm_error(404, "NOT_FOUND", "UNREGISTERED", "Requested entity was not found"),
            DeliveryResult.destination_gone("FCM 404 UNREGISTERED: Requested entity was not found"),
        ),
        (
            fcm_error(
                400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", NOT_VALID, field="message.token"
            ),
            DeliveryResult.destination_gone(f"FCM 400 INVALID_ARGUMENT: {NOT_VALID}"),
        ),
        (
            fcm_error(
                400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", BAD_TTL, field="message.android.ttl"
            ),
            DeliveryResult.failed(f"FCM 400 INVALID_ARGUMENT: {BAD_TTL}"),
        ),
        (
            fcm_error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "Quota", retry_after="30"),
            DeliveryResult.retry("FCM 429 QUOTA_EXCEEDED: Quota", 30.0),
        ),
        (fcm_error(503, "UNAVAILABLE", "UNAVAILABLE"), DeliveryResult.retry("FCM 503 UNAVAILABLE")),
        (fcm_error(500, "INTERNAL", "INTERNAL"), DeliveryResult.retry("FCM 500 INTERNAL")),
        # A proxy's page, not FCM's JSON.
        (Reply(status=502, body={}), DeliveryResult.retry("FCM 502")),
        (
            fcm_error(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH"),
            DeliveryResult.failed("FCM 403 SENDER_ID_MISMATCH"),
        ),
        (
            fcm_error(401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR"),
            DeliveryResult.failed("FCM 401 THIRD_PARTY_AUTH_ERROR"),
        ),
        # INVALID_ARGUMENT about the token without FCM's BadRequest detail: not proof enough.
        (
            fcm_error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", NOT_VALID),
            DeliveryResult.failed(f"FCM 400 INVALID_ARGUMENT: {NOT_VALID}"),
        ),
        # Whatever a peer says is kept as text the store and the log can hold.
        (
            fcm_error(500, "INTERNAL", "INTER\x00NAL", "bad\x00body\n2026-12-04 ERROR forged"),
            DeliveryResult.retry("FCM 500 INTER\ufffdNAL: bad\ufffdbody 2026-12-04 ERROR forged"),
        ),
    ],
)
async def test_fcms_answers_are_classified(
    local: Fcm, reply: Reply, expected: DeliveryResult
) -> None:
    local.peer.answer(TOKEN, reply)

    assert await local.send() == expected
    assert len(local.peer.assertions) == 1  # none of these is a reason to renew the token


async def test_an_assertion_signed_with_another_key_fails_for_good(
    local: Fcm, tmp_path: Path
) -> None:
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = service_account_file(tmp_path, other_key, local.peer.token_uri)
    sender = fcm.build(
        local.settings.model_copy(update={"fcm_service_account_file": path}), local.clock
    )
    assert sender is not None
    destination = Destination(id="c", kind=Channel.FCM, address={"token": TOKEN})

    result = await sender.send(firing(channel=Channel.FCM), destination, time_limit=5)

    assert result.outcome is Outcome.FAILED
    assert (result.error or "").startswith("OAuth2 token endpoint: HTTP 400: Invalid JWT")
    assert local.peer.messages == []
    await sender.close()


async def test_a_token_endpoint_that_is_down_is_retried(local: Fcm) -> None:
    local.peer.token_replies.append(Reply(status=503, body={}, retry_after="4"))

    result = await local.send()

    assert result == DeliveryResult.retry("OAuth2 token endpoint: HTTP 503: {}", 4.0)
    assert (await local.send()).outcome is Outcome.SENT


async def test_a_slow_answer_is_abandoned_at_the_time_limit(local: Fcm) -> None:
    local.peer.delay(TOKEN, 5.0)
    started = time.monotonic()

    result = await local.send(time_limit=0.3)

    assert result == DeliveryResult.retry("timeout")
    assert time.monotonic() - started < 1.0
    assert (await local.send(token=OTHER)).outcome is Outcome.SENT


async def test_sends_reuse_the_kept_connection(local: Fcm) -> None:
    for number in range(5):
        await local.send(firing(number, channel=Channel.FCM))

    assert len({message.connection for message in local.peer.messages}) == 1


async def test_a_message_past_its_deadline_says_zero_seconds_left(local: Fcm) -> None:
    local.clock.advance(timedelta(minutes=11))

    await local.send()

    assert local.peer.messages[0].message["android"]["ttl"] == "0s"


def test_without_a_service_account_the_channel_is_off() -> None:
    assert fcm.build(Settings(), FakeClock(T0)) is None


def test_a_key_file_without_a_private_key_is_refused_without_quoting_it(
    tmp_path: Path, account_key: rsa.RSAPrivateKey
) -> None:
    path = service_account_file(
        tmp_path, account_key, "http://127.0.0.1:9/token", private_key="not a key: secret"
    )

    with pytest.raises(ValueError, match="TOCSIN_FCM_SERVICE_ACCOUNT_FILE") as raised:
        fcm.build(Settings(fcm_service_account_file=path), FakeClock(T0))

    assert "secret" not in str(raised.value)


def test_the_project_comes_from_the_setting_over_the_file(
    tmp_path: Path, account_key: rsa.RSAPrivateKey
) -> None:
    path = service_account_file(tmp_path, account_key, "http://127.0.0.1:9/token", project_id=None)
    with pytest.raises(ValueError, match="TOCSIN_FCM_PROJECT_ID"):
        fcm.build(Settings(fcm_service_account_file=path), FakeClock(T0))

    assert (
        fcm.build(Settings(fcm_service_account_file=path, fcm_project_id="other"), FakeClock(T0))
        is not None
    )


async def test_a_peer_with_a_private_ca_is_trusted_through_tocsin_fcm_ca_file_only(
    tmp_path: Path, account_key: rsa.RSAPrivateKey
) -> None:
    """An FCM-compatible peer (token endpoint and send endpoint) on loopback, its certificate
    from a private CA: reached with TOCSIN_FCM_CA_FILE, refused without it. An operator's
    base URL needs no TOCSIN_ALLOW_PRIVATE_URLS, loopback as it is."""
    certificate = server_certificate(tmp_path)
    clock = FakeClock(T0)
    peer = FcmPeer(
        public_key=account_key.public_key(),
        client_email=EMAIL,
        project_id=PROJECT,
        now=lambda: clock.now().timestamp(),
    )
    async with serving(peer, tls=certificate.server_tls()) as base_url:
        assert base_url.startswith("https://127.0.0.1:")
        config = Settings(
            fcm_service_account_file=service_account_file(tmp_path, account_key, peer.token_uri),
            fcm_base_url=base_url,
            fcm_ca_file=certificate.ca_file,
            fcm_timeout_seconds=5.0,
            allow_private_urls=False,
        )
        senders = [
            fcm.build(config, clock),
            fcm.build(config.model_copy(update={"fcm_ca_file": None}), clock),
        ]
        trusting, distrusting = [
            Fcm(peer=peer, sender=sender, clock=clock, settings=config)
            for sender in senders
            if sender is not None
        ]
        try:
            refused = await distrusting.send()
            reached = await trusting.send()
        finally:
            for each in (trusting, distrusting):
                await each.sender.close()

    assert refused.outcome is Outcome.RETRY
    assert "CERTIFICATE_VERIFY_FAILED" in (refused.error or "")
    assert "TOCSIN_FCM_CA_FILE" in (refused.error or "")
    assert reached.outcome is Outcome.SENT
    assert len(peer.messages) == 1
