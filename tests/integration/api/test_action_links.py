"""A ring's action links through the API (`/v1/actions/{token}`), on both backends: a GET
never acts, a POST marks the ring done or snoozes it as the API does (a repeat is harmless),
with no credential even once API keys exist; a link changed, expired or not a link is
refused, as a problem or, to a browser, as a page."""

from __future__ import annotations

from datetime import timedelta

import httpx

from tests.integration.api.conftest import ONE_OFF, add_key, create
from tests.integration.api.test_changes import rang
from tests.support.keys import TEST_KEYRING
from tocsin.actions import PATH, ActionLinks, RingLinks
from tocsin.clock import FakeClock
from tocsin.domain import Firing
from tocsin.store import Store

BROWSER = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


def links_of(firing: Firing) -> RingLinks:
    return ActionLinks("http://127.0.0.1", TEST_KEYRING).of(firing)


def path(link: str) -> str:
    return link.removeprefix("http://127.0.0.1")


async def rung(
    client: httpx.AsyncClient, store: Store, clock: FakeClock, **fields: object
) -> tuple[str, Firing]:
    """A one-off that has rung: its id and its ring."""
    made = await create(client, ONE_OFF | fields)
    return made["id"], await rang(store, clock, made["id"])


async def ring_of(client: httpx.AsyncClient, reminder_id: str) -> dict[str, object]:
    found = (await client.get(f"/v1/reminders/{reminder_id}/firings")).json()["firings"]
    first: dict[str, object] = found[0]
    return first


async def test_a_done_link_shows_a_page_and_marks_the_ring_done_only_when_posted(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    _, firing = await rung(client, store, clock, until_done="5m")
    await add_key(store)  # the server is closed now: the link alone is the credential
    done = path(links_of(firing).done)

    page = await client.get(done, headers=BROWSER)
    clock.advance(timedelta(seconds=30))
    first = await client.post(done)
    clock.advance(timedelta(minutes=1))
    again = await client.post(done)
    from_the_page = await client.post(done, headers=BROWSER)

    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "form-action 'self'" in page.headers["content-security-policy"]
    assert page.headers["referrer-policy"] == "no-referrer"
    assert f'<form method="post" action="{done.removeprefix(PATH)}">' in page.text
    assert "Mark this ring done?" in page.text
    assert first.status_code == 200, first.text
    assert first.json()["id"] == firing.id
    assert first.json()["done_at"] == "2026-10-21T17:00:30Z"
    assert again.status_code == 200
    assert again.json()["done_at"] == first.json()["done_at"]  # the first instant stays
    assert from_the_page.status_code == 200
    assert "Marked done" in from_the_page.text


async def test_a_get_marks_nothing(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    reminder_id, firing = await rung(client, store, clock)
    links = links_of(firing)

    for link in (links.done, links.snooze):
        for headers in (BROWSER, {}):
            assert (await client.get(path(link), headers=headers)).status_code == 200
    reminder = (await client.get(f"/v1/reminders/{reminder_id}")).json()
    ring = await ring_of(client, reminder_id)

    assert ring["done_at"] is None
    assert ring["snoozed_by"] is None
    assert reminder["status"] == "fired"


async def test_a_snooze_link_snoozes_ten_minutes_from_now_once(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    reminder_id, firing = await rung(client, store, clock)
    clock.advance(timedelta(minutes=2))
    snooze = path(links_of(firing).snooze)

    first = await client.post(snooze)
    again = await client.post(snooze)
    ring = await ring_of(client, reminder_id)

    assert first.status_code == 201, first.text
    assert first.json()["next"] == "2026-10-21T17:12:00Z"
    assert first.json()["snoozed_from"] == firing.id
    assert ring["snoozed_by"] == first.json()["id"]
    assert again.status_code == 409
    assert again.json()["type"].endswith("already-snoozed")
    assert again.json()["snoozed_by"] == first.json()["id"]


async def test_links_changed_expired_or_not_links_are_refused_saying_why(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    reminder_id, firing = await rung(client, store, clock)
    done = path(links_of(firing).done)
    forged = done[:-3] + ("AAA" if not done.endswith("AAA") else "BBB")
    swapped = done.replace(f"{PATH}done.", f"{PATH}snooze.")

    changed = await client.post(forged)
    other_action = await client.post(swapped)
    as_a_page = await client.get(forged, headers=BROWSER)
    not_a_link = await client.post(f"{PATH}done.{firing.id}")
    clock.advance(timedelta(days=8))
    expired = await client.post(done)
    ring = await ring_of(client, reminder_id)

    for refused, status, slug in (
        (changed, 403, "action-link-forged"),
        (other_action, 403, "action-link-forged"),
        (not_a_link, 400, "not-an-action-link"),
        (expired, 410, "action-link-expired"),
    ):
        assert refused.status_code == status, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["type"].endswith(slug)
    assert "changed after it was sent" in changed.json()["detail"]
    assert as_a_page.status_code == 403
    assert as_a_page.headers["content-type"].startswith("text/html")
    assert "changed after it was sent" in as_a_page.text
    assert ring["done_at"] is None  # nothing refused acted


async def test_a_link_to_a_ring_not_there_is_a_404(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    reminder_id, firing = await rung(client, store, clock)
    elsewhere = firing._replace(id=f"{reminder_id}.1", due_at=firing.due_at)

    missing = await client.post(path(links_of(elsewhere).done))

    assert missing.status_code == 404
    assert missing.json()["type"].endswith("not-found")
