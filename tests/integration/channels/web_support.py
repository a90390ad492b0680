"""Firings and destinations for the webpush and apprise channel tests."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from tocsin.channels.base import Destination
from tocsin.domain import Channel, Firing, FiringState, one
from tocsin.ids import firing_id, new_reminder_id, shard_of


def firing(
    channel: Channel,
    *,
    due: datetime,
    text: str = "Water the plants",
    freshness: float = 600.0,
    reminder_id: str | None = None,
) -> Firing:
    """A firing of Ana's due at `due`, being sent, with a deadline `freshness` seconds later."""
    rid = reminder_id or new_reminder_id(shard_of("ana"), due)
    return Firing(
        id=firing_id(rid, due),
        reminder_id=rid,
        owner="ana",
        shard=shard_of("ana"),
        due_at=due,
        deadline=due + timedelta(seconds=freshness),
        channel=one(channel),
        text=text,
        metadata=None,
        source=None,
        state=FiringState.SENDING,
        attempts=0,
        next_attempt_at=None,
        sender="worker-1",
        lease_until=due + timedelta(seconds=30),
        created_at=due,
    )


def destination(channel: Channel, address: Mapping[str, str]) -> Destination:
    return Destination(id="contact-1", kind=channel, address=dict(address))
