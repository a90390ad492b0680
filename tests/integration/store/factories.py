"""Values the backend tests save: reminders, claims and attempts with sensible defaults; and
the way a firing gets written `sending`, held by a sender, on either backend."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import orjson

from tocsin.domain import (
    JSON,
    Attempt,
    AttemptResult,
    Channel,
    Claim,
    Firing,
    FiringState,
    Outcome,
    Reminder,
    ReminderStatus,
    Schedule,
    one,
)
from tocsin.ids import new_reminder_id, shard_of
from tocsin.store import Store, codec
from tocsin.time.alerts import stored_alerts

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
PARIS = ZoneInfo("Europe/Paris")
LEASE = timedelta(seconds=30)


def reminder(
    owner: str = "ana",
    *,
    due_at: datetime | None = NOW + timedelta(minutes=10),
    rule: str | None = None,
    status: ReminderStatus = ReminderStatus.PENDING,
    created_at: datetime = NOW,
    text: str = "Water the plants",
    freshness: int = 600,
    metadata: JSON | None = None,
    shard: int | None = None,
) -> Reminder:
    """A reminder of `owner`; a series when `rule` is given."""
    shard = shard_of(owner) if shard is None else shard
    # A series' anchor is its first ring's wall time in its zone, so that its timeline (where
    # readers look for its rings: tocsin.store.looking) holds the instants its rings are at.
    first = due_at or NOW
    anchor = first.astimezone(PARIS).replace(tzinfo=None) if rule else first
    return Reminder(
        id=new_reminder_id(shard, created_at),
        owner=owner,
        shard=shard,
        text=text,
        channel=one(Channel.WEBHOOK),
        schedule=Schedule(zone=PARIS.key, anchor=anchor, rule=rule),
        at=None if rule else (due_at or NOW).isoformat(),
        repeat="daily 10:00" if rule else None,
        status=status,
        due_at=due_at if status is ReminderStatus.PENDING else None,
        freshness=freshness,
        metadata=metadata,
        source="phone",
        snoozed_from=None,
        version=1,
        created_at=created_at,
        updated_at=created_at,
    )


def edited(original: Reminder, **changes: object) -> Reminder:
    """`original` with `changes`, as an app would send it for `update_reminder`."""
    return replace(original, **changes)  # type: ignore[arg-type]


def claim(
    target: Reminder,
    *,
    next_due_at: datetime | None = None,
    state: FiringState = FiringState.SENDING,
    prev_due: datetime | None = None,
) -> Claim:
    """The claim of `target`'s current due time, as a load of `target` makes it (`prev_due`:
    the ring before it, which the load reads with the occurrence)."""
    assert target.due_at is not None
    return Claim(
        reminder_id=target.id,
        due_at=target.due_at,
        version=target.version,
        next_due_at=next_due_at,
        state=state,
        content=content_of(target),
        prev_due=prev_due,
    )


def content_of(target: Reminder) -> str:
    """What a load of `target` reads for its claim (`DueRing.content`, PostgreSQL's
    `_LOAD_LANE`: what its occurrence holds), for a reminder no ring of which went before
    (`rang_due_at` NULL)."""
    return orjson.dumps(
        {
            "owner": target.owner,
            "shard": target.shard,
            "channel": target.channel.value,
            "text": target.text,
            "metadata": codec.dump_json(target.metadata),
            "source": target.source,
            "priority": codec.stored_priority(target.priority),
            "freshness": target.freshness,
            "rang_due_at": None,
            "zone": target.schedule.zone,
            "anchor": codec.anchor_to_text(target.schedule.anchor),
            "rule": target.schedule.rule,
            "alerts": stored_alerts(target.schedule.alerts),
            "nag": target.schedule.nag or None,
            "nags": target.schedule.nags or None,
        }
    ).decode()


def result(
    target: str | Firing,
    *,
    sender: str = "worker-1",
    state: FiringState = FiringState.SENT,
    number: int = 1,
    at: datetime = NOW,
    outcome: Outcome = Outcome.SENT,
    error: str | None = None,
    next_attempt_at: datetime | None = None,
    provider_id: str | None = None,
) -> AttemptResult:
    """The result of one attempt at `target`: a firing id, or a firing as a claim or a take
    handed it out, which the result carries when its row is not written yet (`Firing.stored`
    False, a first try on PostgreSQL), as delivery's results do."""
    firing = target if isinstance(target, Firing) else None
    return AttemptResult(
        firing_id=target.id if isinstance(target, Firing) else target,
        sender=sender,
        attempt=Attempt(
            number=number,
            at=at,
            channel=Channel.WEBHOOK,
            outcome=outcome,
            error=error,
            provider_id=provider_id,
        ),
        state=state,
        next_attempt_at=next_attempt_at,
        firing=firing if firing is not None and not firing.stored else None,
    )


async def put_back(store: Store, original: Reminder) -> Reminder:
    """`original`, a one-off that rang, put back pending at the due time it rang at (as the
    app may edit it back to that instant)."""
    current = await store.get_reminder(original.id)
    assert current is not None
    back = await store.update_reminder(
        replace(current, status=ReminderStatus.PENDING, due_at=original.due_at),
        expected_version=current.version,
        waiting=current.due_at,
    )
    assert back is not None
    return back


async def held(
    store: Store, targets: Sequence[Reminder], *, sender: str = "worker-1", now: datetime = NOW
) -> list[Firing]:
    """Ring `targets` and get each one's firing written `sending`, held by `sender` from
    `now` for LEASE, untried, the way either backend gets there: claimed by another sender
    whose hold ran out before `now` without a word, recovered (PostgreSQL writes it `queued`
    then; SQLite wrote it `sending` at the claim) and taken. In the order of `targets`."""
    claimed_at = now - LEASE - timedelta(seconds=1)
    await store.claim([claim(t) for t in targets], sender="gone", now=claimed_at, lease=LEASE)
    await store.recover_claims(now=now, limit=100)
    taken = await store.take_deliveries(
        sender=sender, shards=None, now=now, lease=LEASE, limit=len(targets) + 100
    )
    by_reminder = {firing.reminder_id: firing for firing in taken}
    assert set(by_reminder) >= {t.id for t in targets}, taken
    return [by_reminder[t.id] for t in targets]
