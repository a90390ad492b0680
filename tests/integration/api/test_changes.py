"""POST /v1/reminders/{id}/snooze, PATCH and DELETE /v1/reminders/{id}: snooze, edit and
cancel, each a conditional write; and a snooze sent through PATCH, its older form."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx

from tests.integration.api.conftest import ANA, ONE_OFF, create, fields
from tests.integration.store.factories import content_of
from tocsin.clock import FakeClock
from tocsin.domain import Attempt, AttemptResult, Claim, Firing, FiringState, Outcome
from tocsin.store import Store
from tocsin.time import next_after


async def ring(
    store: Store, clock: FakeClock, reminder_id: str, state: FiringState = FiringState.SENDING
) -> Firing:
    """Move time to the reminder's due and claim it as the scheduler would."""
    reminder = await store.get_reminder(reminder_id)
    assert reminder is not None
    assert reminder.due_at is not None
    clock.set(reminder.due_at)
    upcoming = next_after(reminder.schedule, reminder.due_at)
    claim = Claim(
        reminder_id=reminder_id,
        due_at=reminder.due_at,
        version=reminder.version,
        next_due_at=upcoming,
        state=state,
        content=content_of(reminder),
    )
    fired = await store.claim([claim], sender="test", now=clock.now(), lease=timedelta(minutes=1))
    assert len(fired) == 1
    return fired[0]


async def rang(store: Store, clock: FakeClock, reminder_id: str) -> Firing:
    """Claim the reminder's ring and record it sent, as a worker would."""
    firing = await ring(store, clock, reminder_id)
    channel = firing.channel.single
    assert channel is not None
    result = AttemptResult(
        firing_id=firing.id,
        sender="test",
        state=FiringState.SENT,
        attempt=Attempt(number=1, at=clock.now(), channel=channel, outcome=Outcome.SENT),
        firing=None if firing.stored else firing,
    )
    assert await store.record_attempts([result]) == 1
    return firing


async def patch(
    client: httpx.AsyncClient, reminder_id: str, body: dict[str, Any], etag: str | None = None
) -> httpx.Response:
    headers = {"If-Match": etag} if etag else {}
    return await client.patch(f"/v1/reminders/{reminder_id}", json=body, headers=headers)


async def snooze(
    client: httpx.AsyncClient, reminder_id: str, body: dict[str, Any]
) -> httpx.Response:
    return await client.post(f"/v1/reminders/{reminder_id}/snooze", json=body)


def problem_of(response: httpx.Response, status: int, kind: str) -> dict[str, Any]:
    """The answer's problem, checked to be an RFC 9457 one of this status and type."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert (body["status"], body["type"]) == (status, f"urn:tocsin:problem:{kind}")
    return body


# -- cancel ----------------------------------------------------------------------------------


async def test_cancel_a_pending_reminder(client: httpx.AsyncClient) -> None:
    made = await create(client, ANA)

    first = await client.delete(f"/v1/reminders/{made['id']}")
    again = await client.delete(f"/v1/reminders/{made['id']}")
    shown = (await client.get(f"/v1/reminders/{made['id']}")).json()

    assert first.status_code == 204
    assert first.content == b""
    assert shown["status"] == "cancelled"
    assert shown["next"] is None
    assert again.status_code == 409
    assert again.json()["type"].endswith("already-cancelled")


async def test_cancel_a_one_off_that_is_ringing_is_a_409(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ONE_OFF)
    await ring(store, clock, made["id"], FiringState.SENDING)

    response = await client.delete(f"/v1/reminders/{made['id']}")

    assert response.status_code == 409
    problem = response.json()
    assert problem["type"].endswith(":ringing")
    assert problem["reminder_status"] == "fired"
    assert problem["last_firing"]["state"] == "sending"


async def test_cancel_a_one_off_that_rang_is_a_409(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ONE_OFF)
    await ring(store, clock, made["id"], FiringState.EXPIRED)

    response = await client.delete(f"/v1/reminders/{made['id']}")

    assert response.status_code == 409
    assert response.json()["type"].endswith("already-rang")
    assert "already rang" in response.json()["detail"]


async def test_cancel_a_series_that_rang_cancels_what_is_left(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ANA)
    await ring(store, clock, made["id"], state=FiringState.EXPIRED)  # a ring that is over

    response = await client.delete(f"/v1/reminders/{made['id']}")

    assert response.status_code == 204
    firings = (await client.get(f"/v1/reminders/{made['id']}/firings")).json()["firings"]
    assert len(firings) == 1


async def test_cancel_a_series_while_it_rings_says_that_ring_is_on_its_way(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ANA)
    fired = await ring(store, clock, made["id"])  # claimed, being sent

    response = await client.delete(f"/v1/reminders/{made['id']}")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "cancelled"
    assert body["next"] is None
    assert body["last_firing"]["id"] == fired.id
    assert body["last_firing"]["state"] == "sending"


async def test_cancel_unknown_is_a_404(client: httpx.AsyncClient) -> None:
    assert (await client.delete("/v1/reminders/0000000000000000")).status_code == 404


# -- snooze ----------------------------------------------------------------------------------


async def test_snooze_a_pending_one_off_moves_it_after_its_due(client: httpx.AsyncClient) -> None:
    made = await create(client, ONE_OFF)

    response = await snooze(client, made["id"], {"snooze": "10m"})

    assert response.status_code == 200
    body = response.json()
    assert body["id"] == made["id"]
    assert body["next"] == "2026-10-21T17:10:00Z"
    assert body["at"] == "2026-10-21T17:10:00Z"
    assert response.headers["etag"] == '"2"'


async def test_snooze_an_overdue_one_off_counts_from_now(
    client: httpx.AsyncClient, clock: FakeClock
) -> None:
    made = await create(client, ONE_OFF)
    clock.set(clock.now() + timedelta(hours=5, minutes=1))  # 17:01Z, not yet claimed

    body = (await snooze(client, made["id"], {"snooze": "5m"})).json()

    assert body["next"] == "2026-10-21T17:06:00Z"


async def test_snooze_a_one_off_that_rang_makes_a_new_one_off(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ONE_OFF)
    firing = await rang(store, clock, made["id"])

    response = await snooze(client, made["id"], {"snooze": "10m"})
    twice = await snooze(client, made["id"], {"snooze": "10m"})

    assert response.status_code == 201
    copy = response.json()
    assert copy["id"] != made["id"]
    assert response.headers["location"] == f"/v1/reminders/{copy['id']}"
    assert copy["snoozed_from"] == firing.id
    assert copy["next"] == "2026-10-21T17:10:00Z"
    assert copy["status"] == "pending"
    assert copy["repeat"] is None
    assert (copy["text"], copy["channel"]) == (made["text"], made["channel"])
    original = (await client.get(f"/v1/reminders/{made['id']}")).json()
    assert original["status"] == "fired"
    firings = (await client.get(f"/v1/reminders/{made['id']}/firings")).json()["firings"]
    assert firings[0]["snoozed_by"] == copy["id"]
    assert problem_of(twice, 409, "already-snoozed")["snoozed_by"] == copy["id"]


async def test_snooze_a_series_leaves_the_series_alone(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ANA)
    await rang(store, clock, made["id"])
    series_before = (await client.get(f"/v1/reminders/{made['id']}")).json()

    response = await snooze(client, made["id"], {"snooze_until": "2026-10-26T09:30"})

    assert response.status_code == 201
    assert response.json()["next"] == "2026-10-26T13:30:00Z"
    series_after = (await client.get(f"/v1/reminders/{made['id']}")).json()
    assert series_after["next"] == series_before["next"] == "2026-11-02T14:00:00Z"
    assert series_after["status"] == "pending"


async def test_snooze_a_series_counts_from_now_not_from_its_next_ring(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ANA)
    await rang(store, clock, made["id"])
    clock.advance(timedelta(minutes=1))

    response = await snooze(client, made["id"], {"snooze": "15m"})

    assert response.status_code == 201
    assert response.json()["next"] == "2026-10-26T13:16:00Z"


async def test_snooze_a_series_that_never_rang_is_a_409(client: httpx.AsyncClient) -> None:
    made = await create(client, ANA)

    response = await snooze(client, made["id"], {"snooze": "10m"})

    assert "not rung" in problem_of(response, 409, "not-rung")["detail"]


async def test_snooze_until_an_absolute_instant(client: httpx.AsyncClient) -> None:
    made = await create(client, ONE_OFF)

    body = (await snooze(client, made["id"], {"snooze_until": "2026-10-22T08:00:00Z"})).json()

    assert body["next"] == "2026-10-22T08:00:00Z"


async def test_bad_snoozes_are_422_and_change_nothing(client: httpx.AsyncClient) -> None:
    made = await create(client, ONE_OFF)
    cases: list[tuple[dict[str, Any], list[str]]] = [
        ({"snooze": "soon"}, ["snooze"]),
        ({"snooze": None}, ["snooze"]),
        ({"snooze": "400d"}, ["snooze"]),
        ({"snooze_until": "2020-01-01T00:00:00Z"}, ["snooze_until"]),
        ({"snooze_until": "someday"}, ["snooze_until"]),
        ({"snooze": "10m", "snooze_until": "2026-10-22T08:00:00Z"}, ["snooze_until"]),
        ({"snooze": "10m", "text": "x"}, ["text"]),
        ({}, ["body"]),
        ({"snoze": "10m"}, ["snoze"]),
        ({"snooze": 10}, ["snooze"]),
    ]
    for body, named in cases:
        response = await snooze(client, made["id"], body)
        assert fields(problem_of(response, 422, "invalid-input")) == named, body
    assert (await client.get(f"/v1/reminders/{made['id']}")).json() == made


async def test_a_cancelled_reminder_cannot_be_snoozed(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    one_off, series = await create(client, ONE_OFF), await create(client, ANA)
    await ring(store, clock, series["id"], FiringState.EXPIRED)
    for made in (one_off, series):
        await client.delete(f"/v1/reminders/{made['id']}")

        response = await snooze(client, made["id"], {"snooze": "10m"})

        assert "cancelled" in problem_of(response, 409, "cancelled")["detail"]


async def test_a_snooze_of_an_unknown_reminder_is_a_404(client: httpx.AsyncClient) -> None:
    response = await snooze(client, "0000000000000000", {"snooze": "10m"})

    problem_of(response, 404, "not-found")


async def test_a_snooze_needs_no_if_match_and_ignores_one(client: httpx.AsyncClient) -> None:
    made = await create(client, ONE_OFF)
    path = f"/v1/reminders/{made['id']}/snooze"

    response = await client.post(path, json={"snooze": "10m"}, headers={"If-Match": '"7"'})

    assert response.status_code == 200
    assert response.headers["etag"] == '"2"'


# -- snooze, the older form: through PATCH ---------------------------------------------------


async def test_the_older_form_moves_a_pending_one_off_as_the_snooze_does(
    client: httpx.AsyncClient,
) -> None:
    older, newer = await create(client, ONE_OFF), await create(client, ONE_OFF)

    through_patch = await patch(client, older["id"], {"snooze": "10m"})
    through_post = await snooze(client, newer["id"], {"snooze": "10m"})

    assert through_patch.status_code == through_post.status_code == 200
    assert through_patch.json()["next"] == through_post.json()["next"] == "2026-10-21T17:10:00Z"
    assert through_patch.headers["etag"] == through_post.headers["etag"] == '"2"'


async def test_the_older_form_snoozes_a_ring_into_a_new_one_off(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ANA)
    firing = await rang(store, clock, made["id"])

    response = await patch(client, made["id"], {"snooze_until": "2026-10-26T09:30"})
    twice = await snooze(client, made["id"], {"snooze": "10m"})  # the same ring, either way

    assert response.status_code == 201
    copy = response.json()
    assert response.headers["location"] == f"/v1/reminders/{copy['id']}"
    assert (copy["snoozed_from"], copy["next"]) == (firing.id, "2026-10-26T13:30:00Z")
    assert problem_of(twice, 409, "already-snoozed")["snoozed_by"] == copy["id"]


async def test_the_older_form_refuses_what_the_snooze_refuses(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    series, cancelled = await create(client, ANA), await create(client, ONE_OFF)
    await client.delete(f"/v1/reminders/{cancelled['id']}")
    cases: list[tuple[str, dict[str, Any], int, str]] = [
        (series["id"], {"snooze": "10m"}, 409, "not-rung"),
        (cancelled["id"], {"snooze": "10m"}, 409, "cancelled"),
        (series["id"], {"snooze": "soon"}, 422, "invalid-input"),
        (series["id"], {"snooze": "10m", "snooze_until": "18:00"}, 422, "invalid-input"),
        (series["id"], {"snooze": "10m", "text": "x"}, 422, "invalid-input"),
    ]
    for reminder_id, body, status, kind in cases:
        older = await patch(client, reminder_id, body)
        newer = await snooze(client, reminder_id, body)
        said = problem_of(older, status, kind), problem_of(newer, status, kind)
        assert fields(said[0]) == fields(said[1]), body
    assert (await client.get(f"/v1/reminders/{series['id']}")).json() == series


# -- edit ------------------------------------------------------------------------------------


async def test_an_edit_needs_if_match(client: httpx.AsyncClient) -> None:
    made = await create(client, ANA)

    missing = await patch(client, made["id"], {"text": "Water the ferns"})
    stale = await patch(client, made["id"], {"text": "Water the ferns"}, '"7"')

    assert missing.status_code == 428
    assert stale.status_code == 412
    assert stale.headers["etag"] == '"1"'


async def test_an_edit_of_the_text_keeps_the_schedule(client: httpx.AsyncClient) -> None:
    made = await create(client, ANA)

    response = await patch(client, made["id"], {"text": "Water the ferns"}, '"1"')

    assert response.status_code == 200
    body = response.json()
    assert body["text"] == "Water the ferns"
    assert body["next"] == made["next"]
    assert response.headers["etag"] == '"2"'
    stale = await patch(client, made["id"], {"text": "again"}, '"1"')
    assert stale.status_code == 412


async def test_an_edit_of_the_schedule_recomputes_next(client: httpx.AsyncClient) -> None:
    made = await create(client, ANA)

    body = (
        await patch(
            client,
            made["id"],
            {"repeat": "daily 18:00", "zone": "Europe/Lisbon", "freshness": "1h"},
            '"1"',
        )
    ).json()

    assert body["next"] == "2026-10-21T17:00:00Z"
    assert body["zone"] == "Europe/Lisbon"
    assert body["freshness"] == "1h"
    assert "FREQ=DAILY" in body["rule"]


async def test_an_edit_can_set_and_clear_metadata(client: httpx.AsyncClient) -> None:
    made = await create(client, {**ANA, "metadata": {"a": 1}})

    cleared = (await patch(client, made["id"], {"metadata": None}, '"1"')).json()
    set_again = (await patch(client, made["id"], {"metadata": {"b": [2]}}, '"2"')).json()

    assert cleared["metadata"] is None
    assert set_again["metadata"] == {"b": [2]}


async def test_a_bad_edit_is_a_422_and_changes_nothing(client: httpx.AsyncClient) -> None:
    made = await create(client, ANA)
    cases: list[tuple[dict[str, Any], list[str]]] = [
        ({"repeat": "now and then"}, ["repeat"]),
        ({"text": None}, ["text"]),
        ({"zone": "Atlantis"}, ["zone"]),
        ({"channel": "smoke"}, ["channel"]),
        ({"freshness": "1s"}, ["freshness"]),
        ({"text": "", "channel": "smoke"}, ["text", "channel"]),
    ]
    for body, named in cases:
        response = await patch(client, made["id"], body, '"1"')
        assert response.status_code == 422, body
        assert sorted(fields(response.json())) == sorted(named), body
    assert (await client.get(f"/v1/reminders/{made['id']}")).json() == made


async def test_an_edit_with_a_new_at_rearms_a_one_off_that_rang(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ONE_OFF)
    await ring(store, clock, made["id"], FiringState.EXPIRED)
    fired = await client.get(f"/v1/reminders/{made['id']}")
    assert fired.json()["status"] == "fired"

    response = await patch(client, made["id"], {"at": "2026-10-22T18:00"}, fired.headers["etag"])

    assert response.status_code == 200
    assert response.json()["status"] == "pending"
    assert response.json()["next"] == "2026-10-22T17:00:00Z"


async def test_a_cancelled_reminder_cannot_be_edited(client: httpx.AsyncClient) -> None:
    made = await create(client, ANA)
    await client.delete(f"/v1/reminders/{made['id']}")

    response = await patch(client, made["id"], {"text": "x"}, "*")

    assert response.status_code == 409


async def test_two_edits_from_one_read_one_wins(client: httpx.AsyncClient) -> None:
    made = await create(client, ANA)

    answers = await asyncio.gather(
        *(patch(client, made["id"], {"text": f"edit {i}"}, '"1"') for i in range(4))
    )

    assert sorted(a.status_code for a in answers) == [200, 412, 412, 412]
