"""Quiet hours and a shared list's rings, through a running engine on both backends (the
clock injected) to a real webhook receiver for each member: a bulk ring reaches the member
who is not quiet at once and the quiet one when his quiet hours end, each once, under the one
identity; an urgent ring reaches both at once; a ring whose freshness ends before the quiet
hours do is given up for the quiet member, saying so; a fallback chain waits for him rather
than moving on. The status board counts the rings held."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from datetime import UTC, datetime, time, timedelta

import httpx

from tests.integration.api.conftest import settings as api_settings
from tests.integration.engine import support
from tests.integration.engine.support import Receiver, add_contact, eventually
from tocsin.api import create_app
from tocsin.channels.signing import new_secret
from tocsin.clock import FakeClock
from tocsin.domain import (
    Channel,
    Firing,
    FiringState,
    Member,
    Outcome,
    Priority,
    Reminder,
    Role,
    Route,
    SharedList,
)
from tocsin.ids import new_reminder_id, shard_of
from tocsin.store import Store
from tocsin.time.quiet import QuietHours

WEBHOOK_THEN_EMAIL = Route((Channel.WEBHOOK, Channel.EMAIL), fallback=True)
MEMBERS = ("ben", "cy")  # cy's quiet hours hold when the rings are due; ben has none


@contextmanager
def sinks() -> Iterator[dict[str, Receiver]]:
    """A receiver for each member's webhook contact."""
    with ExitStack() as stack:
        yield {member: stack.enter_context(support.receiver()) for member in MEMBERS}


async def household(
    store: Store, now: datetime, urls: dict[str, str]
) -> tuple[SharedList, dict[str, str]]:
    """A list both members joined, each with a webhook contact of his own (its id, by
    member)."""
    list_id = new_reminder_id(shard_of("ben"), now)
    members = tuple(
        Member(list_id=list_id, member=m, role=Role.EDITOR, invited_at=now, joined_at=now)
        for m in MEMBERS
    )
    shared = SharedList(id=list_id, name="Household", source=None, created_at=now, updated_at=now)
    await store.add_list(replace(shared, members=members[:1]))
    await store.save_member(members[1])
    contacts = {
        member: await add_contact(
            store, member, Channel.WEBHOOK, {"url": url}, now=now, secret=new_secret()
        )
        for member, url in urls.items()
    }
    return shared, contacts


def ring(
    shared: SharedList,
    due: datetime,
    priority: Priority,
    freshness: int,
    route: Channel | Route = Channel.WEBHOOK,
) -> Reminder:
    made = support.reminder(shared.owner, now=due - timedelta(seconds=5), at=due, channel=route)
    return replace(made, priority=priority, freshness=freshness)


async def newest(store: Store, one: Reminder) -> Firing | None:
    found = await support.firings_of(store, one.id)
    return found[-1] if found else None


async def decided(store: Store, reminders: list[Reminder]) -> list[Firing]:
    """Each reminder's firing once a round decided it (no longer `sending`)."""

    async def done() -> bool:
        found = [await newest(store, one) for one in reminders]
        return all(f is not None and f.state is not FiringState.SENDING for f in found)

    await eventually(done, within=90)
    return [f for one in reminders if (f := await newest(store, one)) is not None]


def reached(firing: Firing) -> dict[str | None, datetime]:
    """When each destination the firing's attempts reached was sent to, by contact id."""
    return {a.destination: a.at for a in firing.history if a.outcome is Outcome.SENT}


async def arrivals(sink: Receiver) -> dict[str, int]:
    """How many times each firing id arrived at `sink`."""
    stats = await sink.astats(ids=True)
    return {firing_id: len(times) for firing_id, times in stats["arrivals"].items()}


async def test_a_lists_bulk_ring_waits_for_each_member_s_quiet_hours_to_end(
    store: Store,
) -> None:
    start = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(seconds=30)
    clock = FakeClock(start)
    due = start + timedelta(seconds=2)
    ends = start.replace(second=0) + timedelta(minutes=2)  # 90 s after `start`
    config = support.settings()
    with sinks() as sink:
        shared, contact = await household(store, start, {m: s.url for m, s in sink.items()})
        await store.save_quiet_hours(
            QuietHours(
                owner="cy",
                source=None,
                start=time((ends.hour - 3) % 24, ends.minute),
                end=ends.time(),
                zone="UTC",
                updated_at=start,
            )
        )
        bulk = ring(shared, due, Priority.BULK, freshness=3600)
        urgent = ring(shared, due, Priority.URGENT, freshness=3600)
        stale = ring(shared, due, Priority.BULK, freshness=60)  # its last try comes first
        alone = ring(shared, due, Priority.BULK, freshness=60)  # cy's alone: no one to reach
        chain = ring(shared, due, Priority.BULK, freshness=3600, route=WEBHOOK_THEN_EMAIL)
        await store.add_reminders([bulk, urgent, stale])
        await store.add_reminders([alone, chain], assignees={alone.id: "cy", chain.id: "cy"})
        async with support.running(store, config, clock):
            clock.set(due)
            rings = [bulk, urgent, stale, alone, chain]
            held, through, partly, expired, waiting = await decided(store, rings)

            assert through.state is FiringState.SENT
            assert reached(through) == {contact["ben"]: due, contact["cy"]: due}
            assert held.state is FiringState.QUEUED
            assert held.next_attempt_at == ends
            assert held.last_error == f"held by quiet hours until {iso(ends)} for 1 member"
            assert reached(held) == {contact["ben"]: due}  # cy: neither tried nor recorded
            assert [a.destination for a in held.history] == [contact["ben"]]
            assert partly.state is FiringState.SENT
            assert reached(partly) == {contact["ben"]: due}
            assert partly.last_error == (
                f"not sent to cy, whose quiet hours end at {iso(ends)}, after its deadline"
            )
            assert expired.state is FiringState.EXPIRED
            assert expired.history == ()
            assert expired.last_error == (
                f"expired: not sent to cy, whose quiet hours end at {iso(ends)}, after its deadline"
            )
            # A chain's step whose only destination is held waits: it has not failed for
            # good, so the ring does not move on to email.
            assert waiting.state is FiringState.QUEUED
            assert waiting.history == ()
            assert waiting.next_attempt_at == ends
            assert await quiet_on_the_board(store, clock) == 2

            clock.set(ends - timedelta(seconds=1))
            await asyncio.sleep(0.3)
            before = await newest(store, bulk)
            assert before is not None
            assert before.state is FiringState.QUEUED, "not before his quiet hours end"
            clock.set(ends)

            async def sent() -> bool:
                found = [await newest(store, one) for one in (bulk, chain)]
                return all(f is not None and f.state is FiringState.SENT for f in found)

            await eventually(sent, within=90)
        rang = await newest(store, bulk)
        assert rang is not None
        assert reached(rang) == {contact["ben"]: due, contact["cy"]: ends}
        assert rang.attempts == 2
        after = await newest(store, chain)
        assert after is not None
        assert [(a.channel, a.destination, a.at) for a in after.history] == [
            (Channel.WEBHOOK, contact["cy"], ends)
        ]
        ben, cy = await arrivals(sink["ben"]), await arrivals(sink["cy"])
    assert ben == {bulk_id: 1 for bulk_id in (held.id, through.id, partly.id)}
    assert cy == {
        held.id: 1,
        through.id: 1,
        waiting.id: 1,
    }  # each once, under the ring's one identity


async def quiet_on_the_board(store: Store, clock: FakeClock) -> int:
    """The status board's count of rings held by quiet hours, read through the API."""
    app = create_app(store=store, settings=api_settings(), clock=clock)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        board = await client.get("/v1/status")
    assert board.status_code == 200, board.text
    count: int = board.json()["queue"]["quiet"]
    return count


def iso(instant: datetime) -> str:
    return f"{instant:%Y-%m-%dT%H:%M:%SZ}"
