"""Several channels per reminder (`channel` as a list) and fallback chains (`fallback`):
what the API takes, echoes, stores and refuses, at create, in a batch and in an edit. This
server configures `log`, `webhook` and `inapp` only."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.api.conftest import ANA, create, fields, settings
from tocsin.api import create_app
from tocsin.clock import FakeClock
from tocsin.domain import Channel, Route
from tocsin.store import Store


async def patch(
    client: httpx.AsyncClient, reminder_id: str, body: dict[str, Any], etag: str
) -> httpx.Response:
    return await client.patch(f"/v1/reminders/{reminder_id}", json=body, headers={"If-Match": etag})


async def test_a_list_rings_all_at_once_and_a_chain_in_order(
    client: httpx.AsyncClient, store: Store
) -> None:
    both = await create(client, {**ANA, "channel": ["log", "webhook"]})
    chain = await create(
        client, {**{k: v for k, v in ANA.items() if k != "channel"}, "fallback": ["webhook", "log"]}
    )
    one = await create(client, {**ANA, "channel": ["log"]})

    assert both["channel"] == ["log", "webhook"]
    assert "fallback" not in both
    assert (chain["channel"], chain["fallback"]) == (None, ["webhook", "log"])
    assert one["channel"] == "log"  # one channel reads back as a name, however it was given
    saved = await store.get_reminder(chain["id"])
    assert saved is not None
    assert saved.channel == Route((Channel.WEBHOOK, Channel.LOG), fallback=True)
    assert (await client.get(f"/v1/reminders/{both['id']}")).json()["channel"] == both["channel"]


@pytest.mark.parametrize(
    ("route", "named"),
    [
        ({"channel": []}, ["channel"]),
        ({"channel": ["log", "log"]}, ["channel[1]"]),
        ({"channel": ["log", "smoke", 3]}, ["channel[1]", "channel[2]"]),
        ({"channel": ["inapp", "log"]}, ["channel[0]"]),
        ({"channel": ["log", "webhook", "email", "sms", "apns"]}, ["channel"]),
        ({"channel": {"log": 1}}, ["channel"]),
        ({"fallback": ["log"]}, ["fallback"]),
        ({"channel": "log", "fallback": ["log", "webhook"]}, ["channel"]),
        ({"channel": None}, ["channel"]),
        ({}, ["channel"]),
        ({"channel": ["log", "sms"]}, ["channel[1]"]),  # not configured here
        ({"fallback": ["apns", "log"]}, ["fallback[0]"]),  # not configured here
    ],
)
async def test_bad_channels_are_named_by_index(
    client: httpx.AsyncClient, route: dict[str, Any], named: list[str]
) -> None:
    body = {k: v for k, v in ANA.items() if k != "channel"} | route

    response = await client.post("/v1/reminders", json=body)

    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert fields(response.json()) == named


async def test_a_channel_not_configured_says_how_to_enable_it(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/reminders", json={**ANA, "channel": ["log", "sms"]})

    [error] = response.json()["errors"]
    assert "sms channel is not configured" in error["message"]
    assert "TOCSIN_SMS" in error["message"]


async def test_the_configured_channels_are_listed_for_a_client_to_offer(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/v1/channels")

    assert response.status_code == 200
    assert response.json() == {"channels": ["webhook", "inapp", "log"]}


async def test_channel_errors_come_with_the_other_fields_and_in_a_batch(
    client: httpx.AsyncClient,
) -> None:
    alone = await client.post("/v1/reminders", json={"owner": "ana", "channel": ["log", "log"]})
    batch = await client.post(
        "/v1/reminders:batch",
        json={"items": [{**ANA, "channel": ["log", "webhook"]}, {**ANA, "channel": ["x"]}]},
    )

    assert sorted(fields(alone.json())) == ["channel[1]", "text", "zone"]
    assert batch.status_code == 200
    created, invalid = batch.json()["items"]
    assert created["status"] == "created"
    assert fields(invalid["problem"]) == ["items.1.channel[0]"]


async def test_an_owner_with_no_contact_of_a_kind_is_warned_per_channel(
    store: Store, clock: FakeClock
) -> None:
    """With email configured (a sender opens nothing until it sends)."""
    config = settings().model_copy(update={"smtp_host": "127.0.0.1", "smtp_from": "r@x.org"})
    app = create_app(store=store, settings=config, clock=clock)
    transport = httpx.ASGITransport(app=app)
    body = {k: v for k, v in ANA.items() if k != "channel"}
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        chain = await create(client, {**body, "fallback": ["email", "log"]})
        both = await create(client, {**body, "channel": ["log", "email"]})

    assert [w["field"] for w in chain["warnings"]] == ["fallback[0]"]
    assert "ana has no email contact" in chain["warnings"][0]["message"]
    assert [w["field"] for w in both["warnings"]] == ["channel[1]"]


async def test_an_edit_changes_the_channels_or_changes_nothing(client: httpx.AsyncClient) -> None:
    made = await create(client, ANA)

    refused = [
        await patch(client, made["id"], body, '"1"')
        for body in ({"fallback": ["log", "log"]}, {"channel": None}, {"fallback": None})
    ]
    assert [r.status_code for r in refused] == [422, 422, 422]
    assert [fields(r.json()) for r in refused] == [["fallback[1]"], ["channel"], ["fallback"]]
    assert (await client.get(f"/v1/reminders/{made['id']}")).json() == made

    chained = await patch(client, made["id"], {"fallback": ["webhook", "log"]}, '"1"')
    assert chained.status_code == 200, chained.text
    assert (chained.json()["channel"], chained.json()["fallback"]) == (None, ["webhook", "log"])

    back = await patch(client, made["id"], {"channel": "log"}, '"2"')
    assert back.json()["channel"] == "log"
    assert "fallback" not in back.json()
