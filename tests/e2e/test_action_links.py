"""A ring's Done and Snooze links through the running service (`tocsin serve` on SQLite;
`tocsin api` and a `tocsin worker` on PostgreSQL), taken from what real local peers got.

An email ring's text carries the links: a GET of the Done link (as a mail scanner makes)
marks nothing, its POST marks the ring done (read back through the API), a second POST keeps
the first instant, and a link changed by one character is refused. A ring on Web Push, APNs
and FCM at once carries the actions and their URLs in each payload: the Snooze URL of one
snoozes the reminder, the same ring's Snooze from another answers that it was snoozed
already, and another's Done marks the ring done.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.e2e.service import acreate, afirings, iso, service
from tests.e2e.test_channels import add_contact
from tests.integration.channels.push_support import local_apns
from tests.integration.channels.test_fcm import EMAIL, PROJECT, service_account_file
from tests.integration.engine.support import eventually, receiver
from tests.support.peers.apns import ApnsPeer
from tests.support.peers.fcm import FcmPeer
from tests.support.peers.fcm import serving as fcm_serving
from tests.support.peers.smtp import smtp_peer
from tests.support.peers.webpush import webpush_receiver
from tocsin.channels.webpush import new_vapid_keys

pytestmark = [pytest.mark.slow]

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
TOPIC = "com.example.reminders"
DEVICE = "ab" * 32
FCM_TOKEN = "fGx3Yv2kQ0e:APA91bH" + "x" * 140
LINK = re.compile(r"^(Done|Snooze 10 minutes): (\S+)\r?$", re.MULTILINE)


def soon() -> str:
    return iso(datetime.now(UTC) + timedelta(seconds=3))


def local(base: str, link: str) -> str:
    """The link at this service: a worker on PostgreSQL, told no TOCSIN_PUBLIC_URL, makes
    its links for the API's default port; the path (the token) is what the link is."""
    return base + urlsplit(link).path


async def create(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    """Ana's reminder due in a few seconds, on Paris's clock."""
    return await acreate(client, text="Call mom", zone="Europe/Paris", at=soon(), **fields)


async def first_ring(client: httpx.AsyncClient, made: dict[str, Any]) -> dict[str, Any]:
    return (await afirings(client, made))[-1]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", BACKENDS)
async def test_an_emailed_done_link_marks_the_ring_done_only_when_posted(
    kind: str, pg_migrated_url: str, tmp_path: Path
) -> None:
    async with smtp_peer("none") as smtp:
        settings = {
            "TOCSIN_SMTP_HOST": "127.0.0.1",
            "TOCSIN_SMTP_PORT": str(smtp.port),
            "TOCSIN_SMTP_TLS": "none",
            "TOCSIN_SMTP_FROM": "rings@tocsin.example",
            "TOCSIN_ALLOW_PRIVATE_URLS": "true",  # the webhook sink `service` sets
        }
        with receiver() as sink, service(kind, tmp_path, pg_migrated_url, sink, settings) as base:
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                await add_contact(client, "ana", kind="email", address="ana@example.org")
                made = await create(client, channel="email")

                async def mailed() -> bool:
                    return bool(smtp.received)

                await eventually(mailed, within=45, every=0.2)
                [message] = smtp.received
                text = message.message().get_body(preferencelist=("plain",))
                assert text is not None
                links = dict(LINK.findall(text.get_content()))
                html = message.message().get_body(preferencelist=("html",))
                assert html is not None
                done = local(base, links["Done"])

                scanned = await client.get(done, headers={"Accept": "text/html"})
                after_scan = await first_ring(client, made)
                forged = await client.post(done[:-1] + ("A" if done[-1] != "A" else "B"))
                first = await client.post(done)
                again = await client.post(done)
                read_back = await first_ring(client, made)

    assert set(links) == {"Done", "Snooze 10 minutes"}
    assert f'href="{links["Done"]}"' in html.get_content()
    if kind == "sqlite":  # `tocsin serve` knows its own address
        assert links["Done"] == done
    assert scanned.status_code == 200
    assert "<form" in scanned.text
    assert after_scan["done_at"] is None  # a GET marks nothing
    assert forged.status_code == 403
    assert forged.json()["type"].endswith("action-link-forged")
    assert first.status_code == 200, first.text
    assert first.json()["id"] == after_scan["id"]
    assert again.json()["done_at"] == first.json()["done_at"]
    assert read_back["done_at"] == first.json()["done_at"]


@asynccontextmanager
async def push_peers(folder: Path) -> AsyncIterator[tuple[Any, ApnsPeer, FcmPeer, dict[str, str]]]:
    """A push service, APNs and FCM on loopback, and the settings that point Tocsin at them."""
    account_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    fcm = FcmPeer(public_key=account_key.public_key(), client_email=EMAIL, project_id=PROJECT)
    vapid_private, vapid_public = new_vapid_keys()
    async with (
        webpush_receiver() as push_service,
        local_apns(folder, TOPIC) as (apns, apns_settings),
        fcm_serving(fcm) as fcm_url,
    ):
        browser = push_service.subscribe(vapid_public)
        account = service_account_file(folder, account_key, fcm.token_uri)
        settings = {
            "TOCSIN_ALLOW_PRIVATE_URLS": "true",
            "TOCSIN_VAPID_PRIVATE_KEY": vapid_private,
            "TOCSIN_VAPID_SUBJECT": "mailto:ops@tocsin.example",
            **apns_settings,
            "TOCSIN_FCM_SERVICE_ACCOUNT_FILE": str(account),
            "TOCSIN_FCM_BASE_URL": fcm_url,
        }
        yield (push_service, browser), apns, fcm, settings


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", BACKENDS)
async def test_push_payloads_offer_done_and_snooze_and_their_urls_act(
    kind: str, pg_migrated_url: str, tmp_path: Path
) -> None:
    async with push_peers(tmp_path) as ((push_service, browser), apns, fcm, settings):
        with receiver() as sink, service(kind, tmp_path, pg_migrated_url, sink, settings) as base:
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                await add_contact(
                    client, "ana", kind="webpush", subscription=browser.subscription()
                )
                await add_contact(client, "ana", kind="apns", token=DEVICE)
                await add_contact(client, "ana", kind="fcm", token=FCM_TOKEN)
                made = await create(client, channel=["webpush", "apns", "fcm"])

                async def pushed() -> bool:
                    return bool(push_service.pushes and apns.pushes and fcm.messages)

                await eventually(pushed, within=45, every=0.2)
                web = push_service.pushes[0].payload
                aps = apns.pushes[0].payload
                message = fcm.messages[0].message
                actions = {a["action"]: a for a in web["actions"]}

                snoozed = await client.post(local(base, actions["snooze"]["url"]))
                repeated = await client.post(local(base, aps["tocsin"]["snooze_url"]))
                done = await client.post(local(base, message["data"]["done_url"]))
                ring = await first_ring(client, made)

    assert [a["action"] for a in web["actions"]] == ["done", "snooze"]
    assert [a["title"] for a in web["actions"]] == ["Done", "Snooze 10 min"]
    assert aps["aps"]["category"] == "TOCSIN_RING"
    assert message["android"]["notification"]["click_action"] == "TOCSIN_RING"
    assert message["apns"]["payload"]["aps"]["category"] == "TOCSIN_RING"
    # The one ring's links, whichever channel carried them.
    assert aps["tocsin"]["done_url"] == message["data"]["done_url"] == actions["done"]["url"]
    assert message["data"]["snooze_url"] == actions["snooze"]["url"]
    assert snoozed.status_code == 201, snoozed.text
    assert snoozed.json()["snoozed_from"] == web["id"] == ring["id"]
    assert repeated.status_code == 409
    assert repeated.json()["snoozed_by"] == snoozed.json()["id"]
    assert done.status_code == 200, done.text
    assert ring["snoozed_by"] == snoozed.json()["id"]
    assert ring["done_at"] == done.json()["done_at"]
