"""A snooze of a ring still on its way: on PostgreSQL its firing is not written until its
first try is recorded, so there is nothing yet to link a snooze to — 409 `ringing`, with
Retry-After; on SQLite the claim wrote it, and it is snoozed as a ring that went off."""

from __future__ import annotations

import httpx
import pytest

from tests.integration.api.conftest import ANA, ONE_OFF, create
from tests.integration.api.test_changes import patch, problem_of, ring, snooze
from tocsin.clock import FakeClock
from tocsin.domain import Attempt, AttemptResult, Firing, FiringState, Outcome, Reminder
from tocsin.store import Store


async def recorded(store: Store, clock: FakeClock, firing: Firing) -> None:
    """The ring's first try recorded sent, as its sender does."""
    channel = firing.channel.single
    assert channel is not None
    attempt = Attempt(number=1, at=clock.now(), channel=channel, outcome=Outcome.SENT)
    result = AttemptResult(
        firing_id=firing.id,
        sender="test",
        state=FiringState.SENT,
        attempt=attempt,
        firing=None if firing.stored else firing,
    )
    assert await store.record_attempts([result]) == 1


async def test_a_ring_on_its_way_is_snoozed_once_its_first_try_is_recorded(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ONE_OFF)
    firing = await ring(store, clock, made["id"])  # claimed, its first try not recorded

    shown = (await client.get(f"/v1/reminders/{made['id']}")).json()
    early = await snooze(client, made["id"], {"snooze": "10m"})
    await recorded(store, clock, firing)
    later = await snooze(client, made["id"], {"snooze": "10m"})

    assert (shown["last_firing"]["id"], shown["last_firing"]["state"]) == (firing.id, "sending")
    if firing.stored:  # SQLite: the claim wrote it
        assert early.status_code == 201, early.text
        assert problem_of(later, 409, "already-snoozed")["snoozed_by"] == early.json()["id"]
        return
    problem = problem_of(early, 409, "ringing")
    assert early.headers["retry-after"] == "1"
    assert firing.id in problem["detail"]
    assert later.status_code == 201, later.text
    assert later.json()["snoozed_from"] == firing.id


async def test_the_older_form_of_a_snooze_says_ringing_too(
    client: httpx.AsyncClient, store: Store, clock: FakeClock
) -> None:
    made = await create(client, ANA)
    firing = await ring(store, clock, made["id"])

    response = await patch(client, made["id"], {"snooze": "10m"})

    if firing.stored:
        assert response.status_code == 201, response.text
        assert response.json()["snoozed_from"] == firing.id
    else:
        problem_of(response, 409, "ringing")
        assert response.headers["retry-after"] == "1"


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgres"])
async def test_a_snooze_that_meets_the_rings_first_write_says_ringing(
    client: httpx.AsyncClient, store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ring's first try is recorded right after the snooze found no firing to mark: the
    answer is what the mark found, `ringing`, not a firing snoozed by nobody."""
    made = await create(client, ONE_OFF)
    firing = await ring(store, clock, made["id"])
    mark = store.snooze_firing

    async def first_write_right_after(
        firing_id: str, reminder: Reminder, *, assignee: str | None = None
    ) -> str | None:
        snoozed_by = await mark(firing_id, reminder, assignee=assignee)
        await recorded(store, clock, firing)
        return snoozed_by

    monkeypatch.setattr(store, "snooze_firing", first_write_right_after)
    raced = await snooze(client, made["id"], {"snooze": "10m"})
    monkeypatch.undo()
    again = await snooze(client, made["id"], {"snooze": "10m"})

    problem = problem_of(raced, 409, "ringing")
    assert (raced.headers["retry-after"], "snoozed_by" in problem) == ("1", False)
    assert again.status_code == 201, again.text
    assert again.json()["snoozed_from"] == firing.id
