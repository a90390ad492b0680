"""Conversions both backends share: buckets, anchors, JSON and the due-soon wake-up rule."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from tocsin.domain import (
    JSON,
    SINGLE_ROUTES,
    DueRing,
    FiringState,
    Priority,
    Reminder,
    ReminderStatus,
    Route,
    Schedule,
    parse_route,
)
from tocsin.store.base import WAKE_HORIZON, Move
from tocsin.time.alerts import alerts_from_text

DUE_CHANNEL = "tocsin_due"
LEASES_CHANNEL = "tocsin_leases"  # payload: the worker that joined or let parts go
"""The PostgreSQL NOTIFY channel for wake-ups; the payload is `shard:epoch_seconds`."""
FEED_CHANNEL = "tocsin_feed"  # payload: `<owner> <firing id>` lines (see `feed_payloads`)
REVOCATIONS_CHANNEL = "tocsin_revocations"  # payload: the owner whose tokens were revoked
FEED_PAYLOAD_BYTES = 7_900  # a NOTIFY payload must be shorter than 8,000 bytes (ASCII here)


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Stored values to enum members by a dict lookup: calling the enum costs ~2 µs a row.
FIRING_STATES: dict[str, FiringState] = {member.value: member for member in FiringState}
# Routes by stored text, parsed once each: the API lets through only a few thousand
# distinct ones (`ROUTE_MAX` of the channels, in order), so the cache stays small.
_ROUTES: dict[str, Route] = {channel.value: route for channel, route in SINGLE_ROUTES.items()}


def route_of(value: str) -> Route:
    """The route a `channel` column holds (a dict lookup after its first time)."""
    route = _ROUTES.get(value)
    if route is None:
        route = _ROUTES[value] = parse_route(value)
    return route


# Where a load of a bucket range starts reading when no page of it was read yet: its keyset
# cursor is (the first bucket, this, ""), before every due instant and id of that bucket.
BEFORE_ANY = datetime(1, 1, 1, tzinfo=UTC)
# Where it stops in its last bucket when nothing bounds it by instant: after every row.
AFTER_ALL = datetime(9999, 12, 31, tzinfo=UTC)


def bucket_of(instant: datetime) -> int:
    """The bucket of an instant: its UTC epoch minute."""
    return (instant - EPOCH) // timedelta(minutes=1)


def epoch_second(instant: datetime) -> int:
    """The whole UTC epoch second of an instant (floored, so it stays in its bucket)."""
    return (instant - EPOCH) // timedelta(seconds=1)


def anchor_to_text(anchor: datetime) -> str:
    """A schedule anchor as stored: naive local ISO text, or aware UTC ending `+00:00`."""
    if anchor.tzinfo is None:
        return anchor.isoformat()
    return anchor.astimezone(UTC).isoformat()


def anchor_from_text(text: str) -> datetime:
    anchor = datetime.fromisoformat(text)
    return anchor if anchor.tzinfo is None else anchor.astimezone(UTC)


def due_ring(
    reminder_id: str,
    due_at: datetime,
    freshness: int,
    zone: str,
    anchor: str,
    rule: str | None,
    alerts: str | None,
    nag: int | None,
    nags: int | None,
    version: int,
    priority: int | None,
    content: str | None = None,
    prev_due: datetime | None = None,
) -> DueRing:
    """A `load_due` row of SQLite as the scheduler holds it: a schedule for a series, or a
    one-off with alerts or nags, only (a plain one-off's claim needs no next ring)."""
    plain = rule is None and alerts is None and nag is None
    schedule = None if plain else schedule_of(zone, anchor, rule, alerts, nag, nags)
    return DueRing(
        reminder_id, due_at, freshness, schedule, version, priority or 0, content, prev_due
    )


def due_ring_of(
    reminder_id: str,
    due_at: datetime,
    version: int,
    rank: int,
    content: str,
    prev_due: datetime | None,
) -> DueRing:
    """A `load_due` row of PostgreSQL as the scheduler holds it: its freshness and schedule
    read from what the ring says (`content`, the occurrence's `ring`), which goes on to the
    claim as it is."""
    said = orjson.loads(content)
    rule, alerts, nag = said["rule"], said["alerts"], said["nag"]
    plain = rule is None and alerts is None and nag is None
    schedule = None
    if not plain:
        schedule = schedule_of(said["zone"], said["anchor"], rule, alerts, nag, said["nags"])
    freshness = said["freshness"]
    return DueRing(reminder_id, due_at, freshness, schedule, version, rank, content, prev_due)


def priority_of(stored: int | None) -> Priority:
    """A stored priority: NULL is urgent (stored as nothing), 1 bulk (migration 0016)."""
    return Priority.BULK if stored else Priority.URGENT


def stored_priority(priority: Priority) -> int | None:
    """How a priority is stored: NULL for urgent, the default, else its rank."""
    return priority.rank or None


def stored_flag(value: bool) -> bool | None:
    """How an opt-in flag is stored: true, or NULL (a bit of the null bitmap) when unset."""
    return True if value else None


def schedule_of(
    zone: str,
    anchor: str,
    rule: str | None,
    alerts: str | None = None,
    nag: int | None = None,
    nags: int | None = None,
) -> Schedule:
    """A schedule from its stored columns."""
    return Schedule(
        zone=zone,
        anchor=anchor_from_text(anchor),
        rule=rule,
        alerts=alerts_from_text(alerts),
        nag=nag or 0,
        nags=nags or 0,
    )


def schedule_of_row(row: Any) -> Schedule:
    """A schedule from a row with the columns by name."""
    return schedule_of(
        row["zone"], row["anchor"], row["rule"], row["alerts"], row["nag"], row["nags"]
    )


def dump_json(value: JSON | None) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def load_json(text: str | None) -> JSON | None:
    if text is None:
        return None
    value: JSON = orjson.loads(text)
    return value


def wakes(reminder: Reminder) -> bool:
    """Whether saving `reminder` must wake the scheduler (see `WAKE_HORIZON`)."""
    return (
        reminder.status is ReminderStatus.PENDING
        and reminder.due_at is not None
        and reminder.due_at - reminder.updated_at <= WAKE_HORIZON
    )


def wake_ups(reminders: Iterable[Reminder]) -> list[tuple[int, datetime]]:
    """The distinct (shard, due second) pairs that saving `reminders` must announce."""
    seen: dict[tuple[int, int], None] = {}
    for reminder in reminders:
        if wakes(reminder) and reminder.due_at is not None:
            seen[(reminder.shard, epoch_second(reminder.due_at))] = None
    return [(shard, datetime.fromtimestamp(second, UTC)) for shard, second in seen]


def move_wake_ups(moves: Iterable[Move], now: datetime) -> list[tuple[int, datetime]]:
    """The distinct (shard, due second) pairs that `Store.reschedule` moving `moves` at `now`
    must announce (the same rule as `wakes`)."""
    seen: dict[tuple[int, int], None] = {}
    for move in moves:
        if move.due_at - now <= WAKE_HORIZON:
            seen[(move.shard, epoch_second(move.due_at))] = None
    return [(shard, datetime.fromtimestamp(second, UTC)) for shard, second in seen]


def wake_payload(shard: int, due_at: datetime) -> str:
    return f"{shard}:{epoch_second(due_at)}"


def parse_wake_payload(payload: str) -> tuple[int, datetime]:
    """The (shard, due_at) of a NOTIFY payload; ValueError when it is not one of ours."""
    shard, _, second = payload.partition(":")
    return int(shard), datetime.fromtimestamp(int(second), UTC)


def feed_payloads(rings: Iterable[tuple[str, str]]) -> list[str]:
    """In-app rings' NOTIFY payloads: a `<owner> <firing id>` line per ring (neither has a
    space or a line break), as many lines to a payload as fit under NOTIFY's limit. A
    burst is then a few notifications for each listener to take in, not one per ring."""
    payloads: list[str] = []
    lines: list[str] = []
    size = 0
    for owner, firing_id in rings:
        line = f"{owner} {firing_id}"
        if lines and size + len(line) > FEED_PAYLOAD_BYTES:
            payloads.append("\n".join(lines))
            lines, size = [], 0
        lines.append(line)
        size += len(line) + 1
    if lines:
        payloads.append("\n".join(lines))
    return payloads


def parse_feed_payload(payload: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The (owner, firing id) rings of a feed payload, and the lines that are not one."""
    rings: list[tuple[str, str]] = []
    bad: list[str] = []
    for line in payload.split("\n"):
        owner, space, firing_id = line.partition(" ")
        if space and owner and firing_id:
            rings.append((owner, firing_id))
        else:
            bad.append(line)
    return rings, bad
