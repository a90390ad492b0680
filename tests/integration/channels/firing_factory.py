"""Firings and destinations for the channel tests, built as delivery hands them to a sender."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tocsin.channels.base import Destination
from tocsin.domain import Channel, Firing, FiringState, one
from tocsin.ids import firing_id, new_reminder_id, shard_of

# A Monday at 09:00 UTC: the ring's due time in these tests.
DUE = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def firing(
    *,
    channel: Channel,
    text: str = "Call mom",
    owner: str = "ada",
    due: datetime = DUE,
    freshness: timedelta = timedelta(minutes=10),
) -> Firing:
    """A firing of a new one-off reminder, being sent."""
    shard = shard_of(owner)
    reminder_id = new_reminder_id(shard, due - timedelta(days=1))
    return Firing(
        id=firing_id(reminder_id, due),
        reminder_id=reminder_id,
        owner=owner,
        shard=shard,
        due_at=due,
        deadline=due + freshness,
        channel=one(channel),
        text=text,
        metadata=None,
        source="phone-app",
        state=FiringState.SENDING,
        attempts=0,
        next_attempt_at=None,
        sender="worker-1",
        lease_until=due + timedelta(seconds=30),
        created_at=due,
    )


def destination(kind: Channel, contact_id: str = "contact-1", **address: str) -> Destination:
    """One of the owner's contacts, with its fields as `validate_contact` returned them."""
    return Destination(id=contact_id, kind=kind, address=address)
