"""Values the backend tests save: reminders, claims and attempts with sensible defaults."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from tocsin.domain import (
    JSON,
    Attempt,
    AttemptResult,
    Channel,
    Claim,
    FiringState,
    Outcome,
    Reminder,
    ReminderStatus,
    Schedule,
    one,
)
from tocsin.ids import new_reminder_id, shard_of

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
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
    anchor = (due_at or NOW).replace(tzinfo=None) if rule else (due_at or NOW)
    return Reminder(
        id=new_reminder_id(shard, created_at),
        owner=owner,
        shard=shard,
        text=text,
        channel=one(Channel.WEBHOOK),
        schedule=Schedule(zone="Europe/Paris", anchor=anchor, rule=rule),
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
) -> Claim:
    """The claim of `target`'s current due time."""
    assert target.due_at is not None
    return Claim(
        reminder_id=target.id,
        due_at=target.due_at,
        version=target.version,
        next_due_at=next_due_at,
        state=state,
    )


def result(
    firing_id: str,
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
    """The result of one attempt at `firing_id`."""
    return AttemptResult(
        firing_id=firing_id,
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
    )
