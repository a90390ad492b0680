"""Reminders that ring at a place, through the running service (`tocsin serve` on SQLite;
`tocsin api` and a `tocsin worker` on PostgreSQL).

An owner's device reports crossings of his place "Home"; the place's reminders ring through
the delivery queue and the worker's sender into a webhook sink. A crossing reported three
times (twice at once) rings each reminder once; one outside a reminder's local window rings
it not; `once: day` rings once in the day where a plain one rings at each arrival, `once:
ever` once, and then reads `fired`; a flap of the geofence within five minutes rings
nothing; a crossing too old is a 422 naming `at`; a cancel that answered 204 never rings,
even when it races the crossing.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.service import afirings, iso, service
from tests.integration.engine.support import eventually, receiver
from tests.support.processes import clean_env, running

pytestmark = [pytest.mark.slow, pytest.mark.long]

SETTINGS = {"TOCSIN_ALLOW_PRIVATE_URLS": "true"}
FLAP = timedelta(minutes=5, seconds=30)  # a crossing this long after the last is a new one
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def _clock(instant: datetime) -> str:
    return instant.strftime("%H:%M")


async def _place(client: httpx.AsyncClient) -> str:
    body = {"name": "Home", "latitude": 52.52, "longitude": 13.405}
    answer = await client.post("/v1/owners/ana/places", json=body)
    assert answer.status_code == 201, answer.text
    place_id: str = answer.json()["id"]
    return place_id


async def _at_place(client: httpx.AsyncClient, text: str, zone: str, **on: Any) -> str:
    body = {"owner": "ana", "text": text, "zone": zone, "channel": "webhook", "on": on}
    answer = await client.post("/v1/reminders", json=body)
    assert answer.status_code == 201, answer.text
    made: dict[str, Any] = answer.json()
    assert (made["status"], made["next"]) == ("pending", None), made
    reminder_id: str = made["id"]
    return reminder_id


async def _cross(
    client: httpx.AsyncClient, place: str, at: datetime, event: str = "arrive"
) -> httpx.Response:
    body = {"event": event, "at": iso(at)}
    return await client.post(f"/v1/owners/ana/places/{place}/events", json=body)


def _rang(*answers: httpx.Response) -> list[str]:
    found = []
    for answer in answers:
        assert answer.status_code == 200, answer.text
        found += [ring["reminder"] for ring in answer.json()["rang"]]
    return found


async def _delivered(sink: Any, expected: int) -> dict[str, int]:
    """The rings the sink received, by reminder, once `expected` firings arrived."""

    async def arrived() -> bool:
        return len((await sink.astats(ids=True))["arrivals"]) >= expected

    await eventually(arrived, within=60, every=0.5)
    await asyncio.sleep(3)  # anything more would have come by now: the sender is idle
    counted: dict[str, int] = {}
    for firing_id in (await sink.astats(ids=True))["arrivals"]:
        reminder = firing_id.rpartition(".")[0]
        counted[reminder] = counted.get(reminder, 0) + 1
    return counted


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", BACKENDS)
async def test_crossings_ring_each_reminder_once_inside_its_window_and_its_once(
    kind: str, pg_migrated_url: str, tmp_path: Path
) -> None:
    with receiver() as sink, service(kind, tmp_path, pg_migrated_url, sink, SETTINGS) as base:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            now = datetime.now(UTC)
            first, second = now - timedelta(minutes=8), now - timedelta(minutes=1)
            # a zone where both crossings fall on one local day
            zone = "UTC" if first.date() == second.date() else "Etc/GMT+1"
            local = now
            home = await _place(client)
            plain = await _at_place(client, "plain", zone, place=home)
            inside = await _at_place(
                client,
                "inside",
                "UTC",
                place=home,
                after=_clock(local - timedelta(hours=1)),
                before=_clock(local + timedelta(hours=1)),
            )
            outside = await _at_place(
                client,
                "outside",
                "UTC",
                place=home,
                after=_clock(local + timedelta(hours=2)),
                before=_clock(local + timedelta(hours=3)),
            )
            daily = await _at_place(client, "daily", zone, place=home, once="day")
            ever = await _at_place(client, "ever", zone, place=home, once="ever")
            leaving = await _at_place(client, "leaving", zone, place=home, event="leave")
            cancelled = await _at_place(client, "cancelled", zone, place=home)
            assert (await client.delete(f"/v1/reminders/{cancelled}")).status_code == 204

            shown = (await client.get(f"/v1/reminders/{daily}")).json()
            assert shown["on"] == {
                "place": home,
                "event": "arrive",
                "after": None,
                "before": None,
                "once": "day",
            }

            # one crossing, reported twice at once and once more after
            twice = await asyncio.gather(_cross(client, home, first), _cross(client, home, first))
            again = await _cross(client, home, first)
            rang = _rang(*twice, again)
            assert sorted(rang) == sorted([plain, inside, daily, ever]), rang
            reasons = {p["reminder"]: p["reason"] for p in again.json()["passed"]}
            assert reasons[outside].startswith("outside its window"), reasons
            assert not {cancelled, leaving} & reasons.keys(), reasons

            # once ever rang its one ring: it reads fired, and is armed no more
            shown = (await client.get(f"/v1/reminders/{ever}")).json()
            assert (shown["status"], shown["next"]) == ("fired", None), shown

            # the next arrival, seven minutes later: once a day and once ever ring no more
            later = await _cross(client, home, second)
            assert sorted(_rang(later)) == sorted([plain, inside]), later.text
            passed = {p["reminder"]: p["reason"] for p in later.json()["passed"]}
            assert "(once: day)" in passed[daily], passed
            assert ever not in passed, passed  # fired: not pending, so not armed

            # the geofence flaps: out and in again half a minute later
            flap = await _cross(client, home, second + timedelta(seconds=30))
            assert _rang(flap) == [], flap.text
            left = await _cross(client, home, second + timedelta(seconds=10), event="leave")
            assert _rang(left) == [leaving], left.text

            old = await _cross(client, home, now - timedelta(minutes=20))
            assert old.status_code == 422, old.text
            assert [e["field"] for e in old.json()["errors"]] == ["at"]

            delivered = await _delivered(sink, 6)
            assert delivered == {plain: 2, inside: 2, daily: 1, ever: 1, leaving: 1}, delivered
            firings = (await client.get(f"/v1/reminders/{plain}/firings")).json()["firings"]
            assert [f["state"] for f in firings] == ["sent", "sent"], firings
            assert [f["due"] for f in firings] == [iso(second), iso(first)]
            shown = (await client.get(f"/v1/reminders/{plain}")).json()
            assert (shown["status"], shown["next"]) == ("pending", None), shown


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_cancel_that_answered_204_never_rings_when_it_races_a_crossing(
    kind: str, pg_migrated_url: str, tmp_path: Path
) -> None:
    with receiver() as sink, service(kind, tmp_path, pg_migrated_url, sink, SETTINGS) as base:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            home = await _place(client)
            made = [await _at_place(client, f"r{n}", "UTC", place=home) for n in range(12)]

            async def cancel(one: str) -> tuple[int, datetime]:
                answer = await client.delete(f"/v1/reminders/{one}")
                return answer.status_code, datetime.now(UTC)

            crossed = asyncio.ensure_future(_cross(client, home, datetime.now(UTC)))
            cancels = await asyncio.gather(*(cancel(one) for one in made))
            crossing = await crossed
            rang = set(_rang(crossing))
            codes = {one: code for one, (code, _) in zip(made, cancels, strict=True)}
            answered = {one: at for one, (_, at) in zip(made, cancels, strict=True)}
            assert set(codes.values()) <= {200, 204}, codes
            # 200: the ring was on its way when the cancel landed; 204: nothing of it rings
            # after the answer. A ring the crossing decided first may have gone by then (the
            # cancel waited for the crossing, and the sender was quick): it was sent before.
            on_its_way = {one for one, code in codes.items() if code == 200}
            assert on_its_way <= rang, (rang, codes)
            for one in rang - on_its_way:
                [ring] = await afirings(client, {"id": one})
                assert ring["state"] == "sent", ring
                assert datetime.fromisoformat(ring["sent_at"]) <= answered[one], ring
            again = await _cross(client, home, datetime.now(UTC))
            assert (_rang(again), again.json()["passed"]) == ([], []), again.text
            if rang:
                delivered = await _delivered(sink, len(rang))
                assert set(delivered) == rang, delivered
            else:
                await asyncio.sleep(3)
                assert not (await sink.astats(ids=True))["arrivals"]


@pytest.mark.postgres
@pytest.mark.timeout(300)
async def test_a_crossing_two_api_processes_take_at_once_rings_once(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    with (
        receiver() as sink,
        service("postgres", tmp_path, pg_migrated_url, sink, SETTINGS) as base,
        running("api", "--db", pg_migrated_url, env=clean_env(**SETTINGS)) as (other, _),
    ):
        async with (
            httpx.AsyncClient(base_url=base, timeout=30) as one,
            httpx.AsyncClient(base_url=other, timeout=30) as two,
        ):
            home = await _place(one)
            made = [await _at_place(one, f"r{n}", "UTC", place=home) for n in range(5)]
            rang: list[str] = []
            first = datetime.now(UTC) - timedelta(minutes=9, seconds=30)
            for step in range(3):  # three arrivals and leaves, each reported to both at once
                arrived = first + step * FLAP
                for at, event in ((arrived, "arrive"), (arrived + timedelta(minutes=1), "leave")):
                    answers = await asyncio.gather(
                        _cross(one, home, at, event), _cross(two, home, at, event)
                    )
                    rang += _rang(*answers)
            assert sorted(rang) == sorted(made * 3), rang  # each arrival once, no leave
            delivered = await _delivered(sink, len(rang))
            assert delivered == dict.fromkeys(made, 3), delivered
