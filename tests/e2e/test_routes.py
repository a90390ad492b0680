"""Several channels and fallback chains end to end: reminders made through the API of a running
`tocsin serve`, rung to real local peers (the webhook receiver, an SMTP server and an
HTTP/2 APNs that verifies each push), the history read back over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_channels import add_contact, final_firings, serving, soon
from tests.integration.channels.push_support import local_apns
from tests.integration.engine.support import Receiver, receiver
from tests.support.peers.apns import ApnsPeer
from tests.support.peers.smtp import SmtpPeer, smtp_peer

pytestmark = pytest.mark.slow

TOPIC = "com.example.reminders"
ACCEPTED = "ab" * 32
REFUSED = "cd" * 32
CHAIN = ["apns", "email"]


@dataclass(frozen=True)
class Peers:
    apns: ApnsPeer
    smtp: SmtpPeer
    sink: Receiver
    settings: dict[str, str]


@asynccontextmanager
async def peers(folder: Path) -> AsyncIterator[Peers]:
    """The three peers, and the settings that point `tocsin serve` at them."""
    async with local_apns(folder, TOPIC) as (apns, apns_settings), smtp_peer("none") as smtp:
        with receiver("--keep-bodies") as sink:
            yield Peers(
                apns=apns,
                smtp=smtp,
                sink=sink,
                settings={
                    **apns_settings,
                    "TOCSIN_SMTP_HOST": "127.0.0.1",
                    "TOCSIN_SMTP_PORT": str(smtp.port),
                    "TOCSIN_SMTP_TLS": "none",
                    "TOCSIN_SMTP_FROM": "rings@tocsin.example",
                    "TOCSIN_WEBHOOK_URL": f"{sink.url}/hook",
                    "TOCSIN_ALLOW_PRIVATE_URLS": "true",
                },
            )


def mailed(smtp: SmtpPeer) -> dict[str, str]:
    """Each recipient, with the Message-ID it got."""
    return {
        address: str(message.message()["Message-ID"])
        for message in smtp.received
        for address in message.rcpt_tos
    }


def history(firing: dict[str, Any]) -> list[tuple[str, str, int | None, bool]]:
    """Each attempt's channel, outcome, step and whether it reached a destination."""
    return [
        (a["channel"], a["outcome"], a.get("step"), a["destination"] is not None)
        for a in firing["history"]
    ]


@pytest.mark.timeout(90)
async def test_lists_and_chains_ring_the_right_peers(tmp_path: Path) -> None:
    """ana: webhook and email at once, one identity. bo: a chain whose APNs refuses the
    device for good, so email rings. cy: APNs accepts, so email gets nothing. di has no
    device: straight to email."""
    async with peers(tmp_path) as local, serving(tmp_path, **local.settings) as client:
        local.apns.answer(REFUSED, 400, "BadDeviceToken")
        for owner in ("ana", "bo", "cy", "di"):
            await add_contact(client, owner, kind="email", address=f"{owner}@example.org")
        await add_contact(client, "bo", kind="apns", token=REFUSED)
        await add_contact(client, "cy", kind="apns", token=ACCEPTED)
        base = {"text": "Call mom", "zone": "Europe/Paris", "at": soon()}
        made = {}
        for owner, route in (
            ("ana", {"channel": ["webhook", "email"]}),
            ("bo", {"fallback": CHAIN}),
            ("cy", {"fallback": CHAIN}),
            ("di", {"fallback": CHAIN}),
        ):
            answer = await client.post("/v1/reminders", json={**base, "owner": owner, **route})
            assert answer.status_code == 201, answer.text
            made[owner] = answer.json()
        rung = {owner: (await final_firings(client, m["id"]))[0] for owner, m in made.items()}
        hooked = (await local.sink.astats(bodies=True))["bodies"]

    assert [w["field"] for w in made["di"]["warnings"]] == ["fallback[0]"]
    assert {owner: f["state"] for owner, f in rung.items()} == dict.fromkeys(made, "sent")
    messages = mailed(local.smtp)
    assert sorted(messages) == ["ana@example.org", "bo@example.org", "di@example.org"]
    assert rung["ana"]["id"] in messages["ana@example.org"]
    assert list(hooked) == [rung["ana"]["id"]]  # the same identity on both channels
    assert sorted(history(rung["ana"])) == [
        ("email", "sent", None, True),
        ("webhook", "sent", None, True),
    ]
    assert history(rung["bo"]) == [("apns", "failed", 1, True), ("email", "sent", 2, True)]
    assert rung["bo"]["history"][1]["reason"] == "step 1 (apns) failed for good"
    assert history(rung["cy"]) == [("apns", "sent", 1, True)]
    assert sorted(push.token for push in local.apns.pushes) == [ACCEPTED, REFUSED]  # once each
    assert history(rung["di"]) == [("apns", "failed", 1, False), ("email", "sent", 2, True)]
    assert rung["di"]["fallback"] == CHAIN
