"""Channels end to end: contacts and reminders made through the API of a running `tocsin serve`,
rung through a real local peer of the channel's protocol, the history read back over HTTP."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.engine.support import receiver
from tests.support.peers.smtp import PASSWORD, USERNAME, smtp_peer
from tests.support.processes import clean_env, running

pytestmark = pytest.mark.slow


@asynccontextmanager
async def serving(folder: Path, **settings: str) -> AsyncIterator[httpx.AsyncClient]:
    env = clean_env(**settings)
    with running("serve", "--db", str(folder / "tocsin.db"), env=env, log=folder / "serve.log") as (
        base,
        _,
    ):
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:
            yield client


async def final_firings(
    client: httpx.AsyncClient, reminder_id: str, within: float = 20
) -> list[dict[str, Any]]:
    give_up = time.monotonic() + within
    while time.monotonic() < give_up:
        found: list[dict[str, Any]] = (
            await client.get(f"/v1/reminders/{reminder_id}/firings")
        ).json()["firings"]
        if found and all(f["state"] in ("sent", "failed", "expired") for f in found):
            return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"no final firing for {reminder_id} after {within} s")


def soon(seconds: float = 2) -> str:
    at = datetime.now(UTC) + timedelta(seconds=seconds)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


async def add_contact(client: httpx.AsyncClient, owner: str, **fields: Any) -> dict[str, Any]:
    made = await client.post(f"/v1/owners/{owner}/contacts", json=fields)
    assert made.status_code == 201, made.text
    body: dict[str, Any] = made.json()
    return body


@pytest.mark.timeout(90)
async def test_an_email_reminder_rings_every_address_of_its_owner(tmp_path: Path) -> None:
    """Two addresses: one accepted, one refused for good (550) — the firing is sent, each
    destination recorded with its own attempt under the one identity. An owner without an
    address is warned at create and fails with no-destination; a channel this server does
    not have is refused at create."""
    async with smtp_peer("starttls") as peer:
        peer.refuse["nobody@example.org"] = "550 5.1.1 no such user"
        ca = peer.certificates.write_ca(tmp_path)
        smtp = {
            "TOCSIN_SMTP_HOST": "127.0.0.1",
            "TOCSIN_SMTP_PORT": str(peer.port),
            "TOCSIN_SMTP_FROM": "Tocsin <rings@tocsin.example>",
            "TOCSIN_SMTP_USERNAME": USERNAME,
            "TOCSIN_SMTP_PASSWORD": PASSWORD,
            "TOCSIN_SMTP_CA_FILE": str(ca),
        }
        async with serving(tmp_path, **smtp) as client:
            good = await add_contact(client, "ana", kind="email", address="ana@example.org")
            bad = await add_contact(client, "ana", kind="email", address="nobody@example.org")
            body = {"owner": "ana", "text": "Call mom", "zone": "Europe/Paris", "channel": "email"}
            made = (await client.post("/v1/reminders", json={**body, "at": soon()})).json()
            lonely = await client.post("/v1/reminders", json={**body, "owner": "bo", "at": soon()})
            texting = await client.post(
                "/v1/reminders", json={**body, "channel": "sms", "at": soon()}
            )
            [firing] = await final_firings(client, made["id"])
            [nowhere] = await final_firings(client, lonely.json()["id"])

    assert "warnings" not in made
    assert lonely.status_code == 201
    assert [w["field"] for w in lonely.json()["warnings"]] == ["channel"]
    assert texting.status_code == 422
    assert "TOCSIN_SMS" in texting.text
    assert firing["state"] == "sent"
    outcomes = {a["destination"]: a["outcome"] for a in firing["history"]}
    assert outcomes == {good["id"]: "sent", bad["id"]: "failed"}
    assert nowhere["state"] == "failed"
    assert nowhere["last_error"].startswith("no-destination: bo has no email contact")
    [message] = peer.received
    assert message.rcpt_tos == ["ana@example.org"]
    assert message.tls
    assert firing["id"] in message.message()["Message-ID"]
    assert message.message()["Subject"] == "Call mom"


@pytest.mark.timeout(120)
async def test_rings_to_a_receiver_down_for_a_while_are_retried_until_it_is_back(
    tmp_path: Path,
) -> None:
    """Issue 9, items 5 and 6, through `tocsin serve`: a receiver answering 503 for 15 s of
    its rings' 40 s freshness gets every ring once it is back, before each deadline — retries
    run to the deadline, not out of a count."""
    rings = 30
    # Failing from the start, for as long as the server and the creates take (a loaded machine
    # makes that many seconds); then until 15 s after the rings' due time.
    with receiver("--fail-from", "0", "--fail-until", str(time.time() + 3600)) as sink:
        settings = {"TOCSIN_WEBHOOK_URL": f"{sink.url}/hook", "TOCSIN_ALLOW_PRIVATE_URLS": "true"}
        async with serving(tmp_path, **settings) as client:
            body = {"owner": "ana", "text": "Tea", "zone": "UTC", "channel": "webhook"}
            at = soon(2)
            back = datetime.strptime(at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp() + 15
            made = [
                (
                    await client.post(
                        "/v1/reminders",
                        json={**body, "owner": f"o{n}", "at": at, "freshness": "40s"},
                    )
                ).json()
                for n in range(rings)
            ]
            async with httpx.AsyncClient(timeout=5) as control:
                (await control.post(f"{sink.url}/fail?from=0&until={back}")).raise_for_status()
            finals = [(await final_firings(client, m["id"], within=60))[0] for m in made]
        stats = await sink.astats()
    assert [f["state"] for f in finals] == ["sent"] * rings
    assert all(len(f["history"]) > 1 for f in finals)  # each failed first, then got through
    assert all(f["sent_at"] < f["deadline"] for f in finals)
    assert stats["unique"] == rings
