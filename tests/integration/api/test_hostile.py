"""Hostile input through the API: costly rules, far dates, huge integers, other digits.

Each answer is a 422 problem naming the field, nothing is saved, and one costly request never
holds up the others.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.integration.api.conftest import ANA, ONE_OFF, create, fields
from tocsin.api.expansion import REQUEST_SECONDS
from tocsin.store import Store

# Matches on Monday 29 February at 23:59 only (2044, 2072, 2112 …), walked minute by minute:
# 20 rings took 23 s on the event loop before the budget.
RARE = "FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO;BYHOUR=23;BYMINUTE=59"
# Rings on every 31st at 23:59, walked minute by minute: a few ms a ring, so it is accepted,
# but a hundred of them are more than one request may spend.
MONTH_ENDS = "FREQ=MINUTELY;BYMONTHDAY=31;BYHOUR=23;BYMINUTE=59"
PROBLEM = "application/problem+json"


def assert_problem(response: httpx.Response, *named: str) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == PROBLEM
    body: dict[str, Any] = response.json()
    assert fields(body) == list(named)
    return body


def assert_too_costly(problem: dict[str, Any]) -> None:
    assert problem["type"] == "urn:tocsin:problem:schedule-too-costly"
    assert f"more than {REQUEST_SECONDS:g} s of CPU time" in problem["errors"][0]["message"]


# -- item 7: costly rules ---------------------------------------------------------------------


async def test_a_rule_too_costly_to_expand_is_refused_naming_repeat(
    client: httpx.AsyncClient, store: Store
) -> None:
    preview = await client.post(
        "/v1/occurrences", json={"zone": "UTC", "repeat": RARE, "count": 20}
    )
    created = await client.post("/v1/reminders", json={**ANA, "repeat": RARE})
    # Its first ring is cheap (at its start), the next one decades of minutes away.
    started = await client.post(
        "/v1/reminders", json={**ANA, "repeat": RARE, "at": "2044-02-29T23:59"}
    )

    for response in (preview, created, started):
        assert_too_costly(assert_problem(response, "repeat"))
    assert await store.list_reminders("ana") == []


async def test_a_costly_item_of_a_batch_is_refused_alone(client: httpx.AsyncClient) -> None:
    items = [{**ANA, "repeat": RARE}, ANA]
    response = await client.post("/v1/reminders:batch", json={"items": items})

    assert response.status_code == 200, response.text
    refused, saved = response.json()["items"]
    assert saved["status"] == "created"
    assert fields(refused["problem"]) == ["items.0.repeat"]
    assert_too_costly(refused["problem"])


async def test_an_edit_to_a_costly_rule_changes_nothing(client: httpx.AsyncClient) -> None:
    made = await create(client, ANA)

    edit = await client.patch(
        f"/v1/reminders/{made['id']}", json={"repeat": RARE}, headers={"If-Match": '"1"'}
    )
    after = await client.get(f"/v1/reminders/{made['id']}")

    assert_too_costly(assert_problem(edit, "repeat"))
    assert after.headers["ETag"] == '"1"'
    assert after.json()["rule"] == made["rule"]


async def test_a_preview_too_long_to_expand_names_count(client: httpx.AsyncClient) -> None:
    made = await create(client, {**ANA, "repeat": MONTH_ENDS})

    few = await client.get(f"/v1/reminders/{made['id']}/occurrences?count=3")
    many = await client.get(f"/v1/reminders/{made['id']}/occurrences?count=100")
    preview = await client.post(
        "/v1/occurrences", json={"zone": "UTC", "repeat": MONTH_ENDS, "count": 100}
    )

    assert few.status_code == 200
    assert [o["local"][5:16] for o in few.json()["occurrences"]] == [
        "10-31T23:59",
        "12-31T23:59",
        "01-31T23:59",
    ]
    assert_too_costly(assert_problem(many, "count"))
    assert_too_costly(assert_problem(preview, "count"))


async def test_the_loop_answers_while_a_costly_preview_runs(client: httpx.AsyncClient) -> None:
    costly = asyncio.create_task(
        client.post("/v1/occurrences", json={"zone": "UTC", "repeat": RARE, "count": 20})
    )
    await asyncio.sleep(0.05)  # it tries the loop for 5 ms of CPU, then moves to the pool

    health = [await client.get("/healthz") for _ in range(3)]
    ring_soon = await client.post("/v1/reminders", json=ONE_OFF)
    served_first = not costly.done()

    assert [r.status_code for r in health] == [200, 200, 200]
    assert ring_soon.status_code == 201
    assert served_first, "the costly preview finished before the others were served"
    assert_problem(await costly, "repeat")


# -- item 8: inputs that answered 500 ---------------------------------------------------------

HUGE = 2**70


@pytest.mark.parametrize(
    ("item", "named"),
    [
        ({**ANA, "metadata": {"n": HUGE}}, "items.0.metadata"),
        ({**ANA, "metadata": {"deep": [[[[{"n": -HUGE}]]]]}}, "items.0.metadata"),
        ({**ANA, "text": HUGE}, "items.0.text"),
        ({**ANA, "extra": HUGE}, "items.0.extra"),
        (HUGE, "items.0"),
    ],
)
async def test_a_batch_with_a_key_and_a_huge_integer_names_the_item(
    client: httpx.AsyncClient, store: Store, item: Any, named: str
) -> None:
    body = {"items": [item, ONE_OFF]}
    headers = {"Idempotency-Key": "import-huge"}

    first = await client.post("/v1/reminders:batch", json=body, headers=headers)
    again = await client.post("/v1/reminders:batch", json=body, headers=headers)

    assert first.status_code == 200, first.text
    refused, saved = first.json()["items"]
    assert refused["problem"]["status"] == 422
    assert fields(refused["problem"]) == [named]
    assert saved["status"] == "created"
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    assert len(await store.list_reminders("ana")) == 1


async def test_a_batch_with_a_key_and_nesting_orjson_cannot_write(
    client: httpx.AsyncClient,
) -> None:
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    body = {"items": [{**ANA, "metadata": {"deep": deep}}]}

    response = await client.post(
        "/v1/reminders:batch", json=body, headers={"Idempotency-Key": "import-deep"}
    )

    assert response.status_code == 200, response.text
    problem = response.json()["items"][0]["problem"]
    assert fields(problem) == ["items.0.metadata"]
    assert "nested at most 254 deep" in problem["errors"][0]["message"]


async def test_a_huge_integer_elsewhere_names_its_field(client: httpx.AsyncClient) -> None:
    made = await create(client, ONE_OFF)

    single = await client.post(
        "/v1/reminders",
        json={**ANA, "metadata": {"n": [HUGE]}},
        headers={"Idempotency-Key": "one-huge"},
    )
    edit = await client.patch(
        f"/v1/reminders/{made['id']}", json={"metadata": {"n": HUGE}}, headers={"If-Match": '"1"'}
    )
    count = await client.post(
        "/v1/occurrences", json={"zone": "UTC", "repeat": "daily", "count": HUGE}
    )
    limit = await client.get(f"/v1/reminders?owner=ana&limit={HUGE}")

    assert_problem(single, "metadata")
    assert_problem(edit, "metadata")
    assert_problem(count, "count")
    assert_problem(limit, "limit")


@pytest.mark.parametrize(
    "until", ["99991231T235959Z", "99991231T235959", "99991231", "99991215T120000Z"]
)
async def test_an_until_near_the_end_of_9999_names_repeat(
    client: httpx.AsyncClient, until: str
) -> None:
    repeat = f"FREQ=DAILY;UNTIL={until}"
    for zone in ("America/New_York", "Pacific/Kiritimati"):
        created = await client.post("/v1/reminders", json={**ANA, "zone": zone, "repeat": repeat})
        preview = await client.post("/v1/occurrences", json={"zone": zone, "repeat": repeat})

        for response in (created, preview):
            body = assert_problem(response, "repeat")
            assert "6000-01-01" in body["errors"][0]["message"]


@pytest.mark.parametrize(
    ("at", "zone", "repeat"),
    [
        ("9999-12-31T23:59", "America/New_York", None),  # 10000-01-01 in UTC
        ("9999-12-31T23:59", "America/New_York", "daily"),
        ("9999-12-31T20:00-05:00", "UTC", None),
        ("9999-12-31T23:59Z", "Asia/Tokyo", "daily"),  # 10000-01-01 on Tokyo's clock
        ("0001-01-01T00:00", "Asia/Tokyo", "daily"),  # year 0 in UTC
        ("0001-01-01T00:00Z", "America/New_York", "yearly"),  # year 0 in New York
    ],
)
async def test_a_time_that_overflows_names_at(
    client: httpx.AsyncClient, store: Store, at: str, zone: str, repeat: str | None
) -> None:
    body = {"zone": zone, "at": at} | ({"repeat": repeat} if repeat else {})
    made = await create(client, ONE_OFF)

    created = await client.post("/v1/reminders", json={**ONE_OFF, **body})
    preview = await client.post("/v1/occurrences", json=body)
    edit = await client.patch(f"/v1/reminders/{made['id']}", json=body, headers={"If-Match": '"1"'})

    for response in (created, preview, edit):
        message = assert_problem(response, "at")["errors"][0]["message"]
        assert "outside the times Tocsin handles" in message
    assert [r.id for r in await store.list_reminders("ana")] == [made["id"]]


async def test_the_last_time_tocsin_rings_at_is_stored_by_every_backend(
    client: httpx.AsyncClient,
) -> None:
    # PostgreSQL keeps the ring's epoch minute in 32 bits, which run out in 6053.
    last = await create(client, {**ONE_OFF, "at": "6000-01-01T00:00Z"})
    series = await create(
        client, {**ANA, "at": "5999-12-31T09:00", "repeat": "FREQ=DAILY;UNTIL=60000101"}
    )
    past = await client.post("/v1/reminders", json={**ONE_OFF, "at": "6000-01-01T00:01Z"})

    assert (await client.get(f"/v1/reminders/{last['id']}")).json()["next"] == (
        "6000-01-01T00:00:00Z"
    )
    assert series["next"] == "5999-12-31T14:00:00Z"
    assert "6000-01-01" in assert_problem(past, "at")["errors"][0]["message"]


async def test_a_snooze_past_the_last_time_names_the_snooze(client: httpx.AsyncClient) -> None:
    made = await create(client, ONE_OFF)
    path = f"/v1/reminders/{made['id']}"

    until_far = await client.patch(path, json={"snooze_until": "9999-12-31T23:59"})
    until_instant = await client.patch(path, json={"snooze_until": "9999-12-31T23:59Z"})
    near_the_end = await client.patch(path, json={"snooze_until": "5999-12-01T00:00Z"})
    past_the_end = await client.patch(path, json={"snooze": "366d"})
    after = await client.get(path)

    assert_problem(until_far, "snooze_until")
    assert_problem(until_instant, "snooze_until")
    assert near_the_end.status_code == 200, near_the_end.text
    message = assert_problem(past_the_end, "snooze")["errors"][0]["message"]
    assert "the latest time Tocsin rings at" in message
    assert after.json()["next"] == "5999-12-01T00:00:00Z"


@pytest.mark.parametrize(
    "repeat",
    [
        "FREQ=YEARLY;BYDAY=53MO;BYMONTH=2",  # a dateutil IndexError
        "FREQ=YEARLY;BYDAY=-53MO;BYMONTH=2,3",
        "FREQ=YEARLY;BYDAY=6FR;BYMONTH=12",
    ],
)
async def test_an_ordinal_past_the_month_names_repeat(
    client: httpx.AsyncClient, repeat: str
) -> None:
    created = await client.post("/v1/reminders", json={**ANA, "repeat": repeat})
    preview = await client.post("/v1/occurrences", json={"zone": "UTC", "repeat": repeat})

    for response in (created, preview):
        message = assert_problem(response, "repeat")["errors"][0]["message"]
        assert "1 to 5 or -5 to -1" in message


ARABIC_ONE = "\u0661"


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"repeat": f"every {ARABIC_ONE} minutes"}, "repeat"),
        ({"repeat": f"daily at {ARABIC_ONE}:00"}, "repeat"),
        ({"repeat": f"FREQ=DAILY;INTERVAL={ARABIC_ONE}"}, "repeat"),
        ({"repeat": f"FREQ=MONTHLY;BYDAY={ARABIC_ONE}MO"}, "repeat"),
        ({"repeat": f"FREQ=DAILY;UNTIL=2027010{ARABIC_ONE}"}, "repeat"),
        ({"at": f"2027-01-0{ARABIC_ONE}T09:00"}, "at"),
        ({"freshness": f"{ARABIC_ONE}0m"}, "freshness"),
    ],
)
async def test_only_ascii_digits_are_accepted(
    client: httpx.AsyncClient, change: dict[str, str], named: str
) -> None:
    made = await create(client, ANA)

    created = await client.post("/v1/reminders", json={**ANA, **change})
    edit = await client.patch(
        f"/v1/reminders/{made['id']}", json=change, headers={"If-Match": '"1"'}
    )

    assert_problem(created, named)
    assert_problem(edit, named)


async def test_a_snooze_reads_ascii_digits_only(client: httpx.AsyncClient) -> None:
    made = await create(client, ONE_OFF)

    response = await client.patch(f"/v1/reminders/{made['id']}", json={"snooze": f"{ARABIC_ONE}0m"})
    count = await client.get(f"/v1/reminders/{made['id']}/occurrences?count={ARABIC_ONE}")

    assert_problem(response, "snooze")
    assert_problem(count, "count")
