"""`when` and phrases in `at`: a reminder made, previewed and edited from what a person types,
resolved by the API's clock (a FakeClock here) in the reminder's zone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.integration.api.conftest import create, fields
from tests.integration.api.test_changes import patch
from tocsin.clock import FakeClock

# NOW is Wednesday 21 October 2026, 14:00 in Paris (+02:00); Paris falls back on Sunday 25th.
BASE = {"owner": "ana", "text": "Call mom", "zone": "Europe/Paris", "channel": "log"}


@pytest.mark.parametrize(
    ("when", "at", "next_"),
    [
        ("18:00", "2026-10-21T18:00:00", "2026-10-21T16:00:00Z"),
        ("at 6pm", "2026-10-21T18:00:00", "2026-10-21T16:00:00Z"),
        ("noon", "2026-10-22T12:00:00", "2026-10-22T10:00:00Z"),  # passed today: tomorrow
        ("tonight at 9", "2026-10-21T21:00:00", "2026-10-21T19:00:00Z"),
        ("tomorrow 9am", "2026-10-22T09:00:00", "2026-10-22T07:00:00Z"),
        ("next Friday at 17:00", "2026-10-23T17:00:00", "2026-10-23T15:00:00Z"),
        ("on Sunday at 2:30", "2026-10-25T02:30:00", "2026-10-25T00:30:00Z"),  # the first
        ("Dec 24 at 18:00", "2026-12-24T18:00:00", "2026-12-24T17:00:00Z"),
        ("2026-12-24 18:00", "2026-12-24T18:00:00", "2026-12-24T17:00:00Z"),
        ("in 10 minutes", "2026-10-21T12:10:00Z", "2026-10-21T12:10:00Z"),
        ("in 1h30", "2026-10-21T13:30:00Z", "2026-10-21T13:30:00Z"),
    ],
)
async def test_a_one_off_from_when(
    client: httpx.AsyncClient, when: str, at: str, next_: str
) -> None:
    made = await create(client, BASE | {"when": when})

    assert (made["at"], made["repeat"], made["rule"], made["next"]) == (at, None, None, next_)


async def test_a_repeat_from_when_keeps_its_phrase(client: httpx.AsyncClient) -> None:
    made = await create(client, BASE | {"when": "weekdays at 8:30pm"})

    assert made["at"] is None
    assert made["repeat"] == "weekdays at 8:30pm"
    assert made["rule"] == "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=20;BYMINUTE=30"
    assert made["next"] == "2026-10-21T18:30:00Z"


async def test_at_takes_the_same_phrases(client: httpx.AsyncClient) -> None:
    one_off = await create(client, BASE | {"at": "tomorrow 9am"})
    series = await create(client, BASE | {"at": "on Friday", "repeat": "every Friday at 7pm"})

    assert (one_off["at"], one_off["next"]) == ("2026-10-22T09:00:00", "2026-10-22T07:00:00Z")
    assert series["at"] == "2026-10-23T09:00:00"  # its first day
    assert series["next"] == "2026-10-23T17:00:00Z"


async def test_preview_says_which_day(client: httpx.AsyncClient) -> None:
    body = {"zone": "Europe/Paris", "count": 3}
    later = await client.post("/v1/occurrences", json=body | {"when": "18:00"})
    passed = await client.post("/v1/occurrences", json=body | {"when": "9:00"})
    series = await client.post("/v1/occurrences", json=body | {"when": "every Monday at 9am"})

    assert later.json()["occurrences"] == [
        {"at": "2026-10-21T16:00:00Z", "local": "2026-10-21T18:00:00+02:00"}
    ]
    assert passed.json()["occurrences"] == [
        {"at": "2026-10-22T07:00:00Z", "local": "2026-10-22T09:00:00+02:00"}
    ]
    assert [o["local"] for o in series.json()["occurrences"]] == [
        "2026-10-26T09:00:00+01:00",
        "2026-11-02T09:00:00+01:00",
        "2026-11-09T09:00:00+01:00",
    ]


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"when": "blursday"}, "when", "could not read 'blursday' as a time or a repeat"),
        ({"when": "every blursday"}, "when", "understood 'every', could not read 'blursday'"),
        ({"when": "tomorrow at nine-ish"}, "when", "understood 'tomorrow at'"),
        ({"when": "today 08:00"}, "when", "has passed: it is 2026-10-21 14:00 in Europe/Paris"),
        ({"when": "Feb 30"}, "when", "there is no 30 February"),
        ({"when": "every 30 seconds"}, "when", "the shortest repeat is once a minute"),
        ({"when": "18:00", "at": "18:00"}, "when", "give `when` alone"),
        ({"when": "18:00", "repeat": "daily"}, "when", "give `when` alone"),
        ({"at": "blursday"}, "at", "could not read 'blursday' as a time; e.g. 'tomorrow 9am'"),
        ({"at": "today 08:00"}, "at", "say 'tomorrow 08:00'"),
        ({"when": None}, "at", "give `at`, `repeat` or both, or `when`"),
    ],
)
async def test_refusals_name_the_field_and_suggest_a_form(
    client: httpx.AsyncClient, body: dict[str, Any], field: str, says: str
) -> None:
    for path, sent in (("/v1/reminders", BASE | body), ("/v1/occurrences", {"zone": "UTC"} | body)):
        sent = sent | ({"zone": "Europe/Paris"} if path == "/v1/occurrences" else {})
        response = await client.post(path, json=sent)

        assert response.status_code == 422, (path, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        problem = response.json()
        assert fields(problem) == [field], problem
        assert says in problem["errors"][0]["message"], problem


async def edit(client: httpx.AsyncClient, reminder_id: str, body: dict[str, Any]) -> httpx.Response:
    etag = (await client.get(f"/v1/reminders/{reminder_id}")).headers["ETag"]
    return await patch(client, reminder_id, body, etag)


async def test_an_edit_with_when_replaces_at_and_repeat(client: httpx.AsyncClient) -> None:
    made = await create(client, BASE | {"repeat": "daily 9:00"})

    to_one_off = await edit(client, made["id"], {"when": "Friday 6pm"})
    assert to_one_off.status_code == 200, to_one_off.text
    edited = to_one_off.json()
    assert (edited["at"], edited["repeat"], edited["rule"]) == ("2026-10-23T18:00:00", None, None)
    assert edited["next"] == "2026-10-23T16:00:00Z"

    to_series = await edit(client, made["id"], {"when": "every Monday at 9am"})
    assert to_series.status_code == 200, to_series.text
    assert (to_series.json()["at"], to_series.json()["repeat"]) == (None, "every Monday at 9am")

    for bad, says in (({"when": None}, "may not be null"), ({"when": "x", "at": "9:00"}, "alone")):
        refused = await edit(client, made["id"], bad)
        assert refused.status_code == 422
        assert fields(refused.json()) == ["when"]
        assert says in refused.json()["errors"][0]["message"]


async def test_snooze_until_a_phrase(client: httpx.AsyncClient) -> None:
    made = await create(client, BASE | {"when": "in 10 minutes"})

    snoozed = await patch(client, made["id"], {"snooze_until": "tomorrow 9am"})

    assert snoozed.status_code == 200, snoozed.text
    assert snoozed.json()["next"] == "2026-10-22T07:00:00Z"


async def test_a_batch_item_with_when(client: httpx.AsyncClient) -> None:
    items = [BASE | {"when": "in 2 hours"}, BASE | {"when": "sometime"}]

    response = await client.post("/v1/reminders:batch", json={"items": items})

    assert response.status_code == 200, response.text
    results = response.json()["items"]
    assert results[0]["next"] == "2026-10-21T14:00:00Z"
    assert [e["field"] for e in results[1]["problem"]["errors"]] == ["items.1.when"]


class TestAtASpringForward:
    """The API's clock at 00:30 in Paris on 29 March 2026, ninety minutes before the clocks
    jump from 02:00 to 03:00."""

    @pytest.fixture
    def clock(self) -> FakeClock:
        return FakeClock(datetime(2026, 3, 28, 23, 30, tzinfo=UTC))

    async def test_a_time_in_the_gap_rings_after_it(self, client: httpx.AsyncClient) -> None:
        made = await create(client, BASE | {"when": "2:30am"})

        assert made["at"] == "2026-03-29T02:30:00"  # the wall time kept, for `tocsin rezone`
        assert (made["next"], made["next_local"]) == (
            "2026-03-29T01:30:00Z",
            "2026-03-29T03:30:00+02:00",
        )

    async def test_a_delay_is_elapsed_time(self, client: httpx.AsyncClient) -> None:
        made = await create(client, BASE | {"when": "in 2 hours"})

        assert made["next_local"] == "2026-03-29T03:30:00+02:00"
