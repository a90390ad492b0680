"""Stored rows to domain values, for both backends: each says only how it stores an instant.

PostgreSQL hands back aware datetimes (`timestamptz`); SQLite stores integer microseconds.
The rest of a row (columns, enums, JSON, anchors) reads the same on both. Secrets are sealed
and opened here, and only here, for both backends (the `secrets` table's single value is
each backend's `ensure_secret`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime, time
from typing import Any, Protocol, TypeVar

import orjson

from tocsin.domain import (
    App,
    Armed,
    Attempt,
    Channel,
    Contact,
    Firing,
    FiringState,
    FiringSummary,
    HeldParts,
    Lateness,
    Member,
    Once,
    Outcome,
    Place,
    PlaceEvent,
    PlaceRing,
    PlaceTrigger,
    Reminder,
    ReminderStatus,
    RingMinute,
    Role,
    Route,
    SharedList,
    WorkerState,
)
from tocsin.ids import firing_id
from tocsin.keyring import Keyring
from tocsin.store import codec
from tocsin.time.quiet import QuietHours

Instant = Callable[[Any], datetime]
T = TypeVar("T")
K = TypeVar("K")
"""Turns a stored instant (never NULL) into an aware UTC datetime."""


class Row(Protocol):
    """What both drivers' rows offer: columns by name, and their names."""

    def __getitem__(self, key: str, /) -> Any: ...

    def keys(self) -> Iterable[str]: ...


def _optional(value: Any, instant: Instant) -> datetime | None:
    return None if value is None else instant(value)


def reminder_from(row: Row, instant: Instant) -> Reminder:
    """A stored reminder, with its last firing when the row has one. A row read with what its
    rings say (`now_status`, `now_due`: the store's ring state) is as it is now; the
    reminder's own columns are what its last API write made it. `due_at` is None unless it
    is pending: a reminder a ring of an earlier release finished keeps that ring's instant in
    the column, which is no next ring to show."""
    columns = row.keys()  # `in` on an sqlite3.Row looks at values, not names
    now = "now_status" in columns
    status = ReminderStatus(row["now_status"] if now else row["status"])
    due_at = row["now_due"] if now else row["due_at"]
    last = None
    if "last_id" in columns and row["last_id"] is not None:
        last = FiringSummary(
            id=row["last_id"],
            due_at=instant(row["last_due_at"]),
            state=FiringState(row["last_state"]),
        )
    return Reminder(
        id=row["id"],
        owner=row["owner"],
        shard=row["shard"],
        text=row["text"],
        channel=codec.route_of(row["channel"]),
        schedule=codec.schedule_of_row(row),
        at=row["at"],
        repeat=row["repeat"],
        status=status,
        due_at=_optional(due_at, instant) if status is ReminderStatus.PENDING else None,
        freshness=row["freshness"],
        metadata=codec.load_json(row["metadata"]),
        source=row["source"],
        snoozed_from=row["snoozed_from"],
        version=row["version"],
        created_at=instant(row["created_at"]),
        updated_at=instant(row["updated_at"]),
        last_firing=last,
        priority=codec.priority_of(row["priority"]),
        rang=now and row["last_rung"] is not None,
        ignore_quiet_hours=bool(row["ignore_quiet"]),
    )


def firing_id_of(row: Row) -> str:
    """A stored firing's id: SQLite keeps it; PostgreSQL keeps the key it names, the reminder
    and the due second (migration 0034), and it is theirs, joined."""
    if "due_second" in row.keys():  # noqa: SIM118 (a sqlite3.Row has no mapping `in`)
        return f"{row['reminder_id']}.{row['due_second']}"
    identity: str = row["id"]
    return identity


def firing_from(row: Row, history: tuple[Attempt, ...], instant: Instant) -> Firing:
    """A stored firing with `history`, its attempt rows; a first try kept on the firing row
    itself (`sent_to` set: `Store.record_attempts`) comes first in it."""
    route = codec.route_of(row["channel"])
    if row["sent_to"] is not None:
        history = (first_try_attempt(row, route, instant), *history)
    return Firing(
        id=firing_id_of(row),
        reminder_id=row["reminder_id"],
        owner=row["owner"],
        shard=row["shard"],
        due_at=instant(row["due_at"]),
        deadline=instant(row["deadline"]),
        channel=route,
        text=row["text"],
        metadata=codec.load_json(row["metadata"]),
        source=row["source"],
        state=FiringState(row["state"]),
        attempts=row["attempts"],
        next_attempt_at=_optional(row["next_attempt_at"], instant),
        sender=row["sender"],
        lease_until=_optional(row["lease_until"], instant),
        created_at=instant(row["created_at"]),
        sent_at=_optional(row["sent_at"], instant),
        provider_id=row["provider_id"],
        last_error=row["last_error"],
        snoozed_by=row["snoozed_by"],
        history=history,
        priority=codec.priority_of(row["priority"]),
        done_at=_optional(row["done_at"], instant),
    )


def first_try_attempt(row: Row, route: Route, instant: Instant) -> Attempt:
    """The first try of a firing that kept it on its own row (`AttemptResult.sent_to`):
    the one attempt, accepted at `sent_at` on the firing's channel, as an attempts row would
    have said it."""
    channel = route.single
    if channel is None:  # only a single-channel firing's try is kept on its row
        raise ValueError(f"firing {firing_id_of(row)} on {route} keeps a first try on its row")
    return Attempt(
        number=1,
        at=instant(row["sent_at"]),
        channel=channel,
        outcome=Outcome.SENT,
        provider_id=row["provider_id"],
        destination=row["sent_to"],
    )


def claimed_firing_from(
    row: Sequence[Any],
    instant: Instant,
    *,
    sender: str,
    lease_until: datetime,
    now: datetime,
    stored: bool = True,
) -> Firing:
    """A firing a claim just inserted, from the columns the claim answers with (id,
    reminder_id, owner, shard, due_at, deadline, channel, text, metadata, source, state,
    last_error, priority): the rest is the claim's own values — no attempt yet, held by `sender`
    until `lease_until` when `sending`; when `queued`, due for pickup now, or, a ring for
    the in-app feed alone, waiting for a page until its deadline."""
    (
        id_,
        reminder_id,
        owner,
        shard,
        due_at,
        deadline,
        channel,
        text,
        metadata,
        source,
        value,
        error,
        priority,
        *_,  # whether the claim wrote the firing (`stored`), or queued it for the feed
    ) = row
    state = codec.FIRING_STATES[value]
    sending = state is FiringState.SENDING
    route = codec.route_of(channel)
    waiting = state is FiringState.QUEUED
    # queued by the claim: the feed's for a page until the deadline, the rest for pickup now
    due_next = (instant(deadline) if route.single is Channel.INAPP else now) if waiting else None
    # Built by position, in the order of Firing's fields: one is built per ring claimed, and
    # a named tuple built by keyword takes about four times as long.
    return Firing(
        id_,
        reminder_id,
        owner,
        shard,
        instant(due_at),
        instant(deadline),
        route,
        text,
        None if metadata is None else codec.load_json(metadata),
        source,
        state,
        0,  # attempts
        due_next,  # next_attempt_at
        sender if sending else None,
        lease_until if sending else None,
        now,  # created_at
        None,  # sent_at
        None,  # provider_id
        error,  # last_error
        None,  # snoozed_by
        (),  # history
        stored,
        codec.priority_of(priority),
    )


def attempt_from(row: Row, instant: Instant) -> Attempt:
    return Attempt(
        number=row["number"],
        at=instant(row["at"]),
        channel=Channel(row["channel"]),
        outcome=Outcome(row["outcome"]),
        error=row["error"],
        provider_id=row["provider_id"],
        destination=row["destination"],
    )


def _opened(stored: str | None, keyring: Keyring) -> str | None:
    return None if stored is None else keyring.open(stored)


def _sealed(secret: str | None, keyring: Keyring) -> str | None:
    return None if secret is None else keyring.seal(secret)


# The address fields that are credentials, by kind, sealed in the database as webhook secrets
# are: a Web Push subscription's `auth` secret (with it, anyone can encrypt to that browser)
# and an Apprise URL (it carries the service's token). The other fields stay readable, so
# that an operator can find a contact by its address.
SEALED_FIELDS: dict[Channel, frozenset[str]] = {
    Channel.WEBPUSH: frozenset({"auth"}),
    Channel.APPRISE: frozenset({"url"}),
}
_SEALED_NAMES = frozenset().union(*SEALED_FIELDS.values())


def address_value(kind: Channel, address: dict[str, str], keyring: Keyring) -> str:
    """A contact's address as stored: JSON text, its kind's `SEALED_FIELDS` sealed."""
    sealed = SEALED_FIELDS.get(kind, frozenset())
    fields = {name: keyring.seal(v) if name in sealed else v for name, v in address.items()}
    return orjson.dumps(fields).decode()


def _address_from(kind: Channel, stored: str, keyring: Keyring) -> dict[str, str]:
    loaded: dict[str, str] = codec.load_json(stored) or {}
    sealed = SEALED_FIELDS.get(kind, frozenset())
    return {name: keyring.open(v) if name in sealed else v for name, v in loaded.items()}


def resealed_address(stored: str, keyring: Keyring) -> str | None:
    """An address of a kind with sealed fields (`reseal_secrets` reads only those) with each
    such field sealed with the ring's first key, or None when every one is already."""
    loaded: dict[str, str] = codec.load_json(stored) or {}
    names = _SEALED_NAMES & loaded.keys()
    changed = {name: keyring.reseal(loaded[name]) for name in names}
    if all(value is None for value in changed.values()):
        return None
    return orjson.dumps({**loaded, **{k: v for k, v in changed.items() if v is not None}}).decode()


def contact_from(row: Row, instant: Instant, keyring: Keyring) -> Contact:
    kind = Channel(row["kind"])
    return Contact(
        id=row["id"],
        owner=row["owner"],
        shard=row["shard"],
        kind=kind,
        address=_address_from(kind, row["address"], keyring),
        label=row["label"],
        secret=_opened(row["secret"], keyring),
        disabled_reason=row["disabled_reason"],
        disabled_at=_optional(row["disabled_at"], instant),
        created_at=instant(row["created_at"]),
        updated_at=instant(row["updated_at"]),
        source=row["source"],
    )


def place_from(row: Row, instant: Instant) -> Place:
    return Place(
        id=row["id"],
        owner=row["owner"],
        shard=row["shard"],
        name=row["name"],
        latitude=row["latitude"],
        longitude=row["longitude"],
        radius_m=row["radius_m"],
        created_at=instant(row["created_at"]),
        updated_at=instant(row["updated_at"]),
        source=row["source"],
    )


def place_values(place: Place, instant: Callable[[datetime], Any]) -> dict[str, Any]:
    """The INSERT_PLACE parameters by name; `instant` is how the backend stores one."""
    return {
        "id": place.id,
        "owner": place.owner,
        "shard": place.shard,
        "name": place.name,
        "latitude": place.latitude,
        "longitude": place.longitude,
        "radius_m": place.radius_m,
        "source": place.source,
        "created_at": instant(place.created_at),
        "updated_at": instant(place.updated_at),
    }


def trigger_from(row: Row) -> PlaceTrigger:
    return PlaceTrigger(
        place_id=row["place_id"],
        event=PlaceEvent(row["event"]),
        after=_clock_of(row["after_minute"]),
        before=_clock_of(row["before_minute"]),
        once=None if row["once"] is None else Once(row["once"]),
    )


def armed_from(row: Row, instant: Instant) -> Armed:
    """A trigger read with its reminder (ARMED_AT_PLACE)."""
    return Armed(
        reminder_id=row["reminder_id"],
        version=row["version"],
        zone=row["zone"],
        freshness=row["freshness"],
        trigger=trigger_from(row),
        rang_at=_optional(row["rang_at"], instant),
        rang_day=row["rang_day"],
    )


def trigger_values(reminder_id: str, trigger: PlaceTrigger) -> dict[str, Any]:
    """The SAVE_PLACE_TRIGGER parameters by name."""
    return {
        "reminder_id": reminder_id,
        "place_id": trigger.place_id,
        "event": trigger.event.value,
        "after_minute": _minute_of(trigger.after),
        "before_minute": _minute_of(trigger.before),
        "once": None if trigger.once is None else trigger.once.value,
    }


def place_ring_values(
    ring: PlaceRing, instant: Callable[[datetime], Any], now: datetime
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The MARK_PLACE_RING and INSERT_PLACE_RING parameters by name."""
    mark = {
        "reminder_id": ring.reminder_id,
        "place_id": ring.place_id,
        "event": ring.event.value,
        "at": instant(ring.at),
        "day": ring.day,
        "flap_since": instant(ring.flap_since),
    }
    firing = {
        "id": firing_id(ring.reminder_id, ring.at),
        "reminder_id": ring.reminder_id,
        "due_at": instant(ring.at),
        "deadline": instant(ring.deadline),
        "now": instant(now),
    }
    return mark, firing


def _clock_of(minute: int | None) -> time | None:
    return None if minute is None else time(minute // 60, minute % 60)


def _minute_of(clock: time | None) -> int | None:
    return None if clock is None else clock.hour * 60 + clock.minute


def quiet_from(row: Row, instant: Instant) -> QuietHours:
    return QuietHours(
        owner=row["owner"],
        source=row["saver"] or None,
        start=time(row["start_minute"] // 60, row["start_minute"] % 60),
        end=time(row["end_minute"] // 60, row["end_minute"] % 60),
        zone=row["zone"],
        updated_at=instant(row["updated_at"]),
    )


def quiet_values(quiet: QuietHours, instant: Callable[[datetime], Any]) -> dict[str, Any]:
    """The SAVE_QUIET_HOURS parameters by name (`saver` '' for the owner himself)."""
    return {
        "owner": quiet.owner,
        "saver": quiet.source or "",
        "start_minute": quiet.start.hour * 60 + quiet.start.minute,
        "end_minute": quiet.end.hour * 60 + quiet.end.minute,
        "zone": quiet.zone,
        "updated_at": instant(quiet.updated_at),
    }


def by_owner(spans: Iterable[QuietHours]) -> dict[str, list[QuietHours]]:
    """Quiet hours grouped by owner, keeping their order."""
    return _grouped(spans, lambda span: span.owner)


def by_owner_and_kind(contacts: Iterable[Contact]) -> dict[tuple[str, Channel], list[Contact]]:
    """Contacts grouped by (owner, kind), keeping their order."""
    return _grouped(contacts, lambda contact: (contact.owner, contact.kind))


def _grouped(items: Iterable[T], key: Callable[[T], K]) -> dict[K, list[T]]:
    grouped: dict[K, list[T]] = {}
    for item in items:
        grouped.setdefault(key(item), []).append(item)
    return grouped


def contact_values(
    contact: Contact, instant: Callable[[datetime], Any], keyring: Keyring
) -> dict[str, Any]:
    """The INSERT_CONTACT parameters by name; `instant` is how the backend stores one."""
    return {
        "id": contact.id,
        "owner": contact.owner,
        "shard": contact.shard,
        "kind": contact.kind.value,
        "address": address_value(contact.kind, contact.address, keyring),
        "label": contact.label,
        "secret": _sealed(contact.secret, keyring),
        "disabled_reason": contact.disabled_reason,
        "disabled_at": None if contact.disabled_at is None else instant(contact.disabled_at),
        "created_at": instant(contact.created_at),
        "updated_at": instant(contact.updated_at),
        "source": contact.source,
    }


def app_values(app: App, instant: Callable[[datetime], Any], keyring: Keyring) -> dict[str, Any]:
    """The INSERT_APP parameters by name; `instant` is how the backend stores one."""
    return {
        "name": app.name,
        "key_hash": app.key_hash,
        "key_prefix": app.key_prefix,
        "webhook_url": app.webhook_url,
        "webhook_secret": _sealed(app.webhook_secret, keyring),
        "webhook_disabled": app.webhook_disabled,
        "created_at": instant(app.created_at),
        "admin": app.admin,
        "priority": codec.stored_priority(app.priority),
    }


def app_from(row: Row, instant: Instant, keyring: Keyring) -> App:
    return App(
        name=row["name"],
        key_hash=row["key_hash"],
        key_prefix=row["key_prefix"],
        created_at=instant(row["created_at"]),
        webhook_url=row["webhook_url"],
        webhook_secret=_opened(row["webhook_secret"], keyring),
        webhook_disabled=bool(row["webhook_disabled"]),
        admin=bool(row["admin"]),
        revoked_at=None if row["revoked_at"] is None else instant(row["revoked_at"]),
        priority=codec.priority_of(row["priority"]),
    )


def held_parts(
    rows: Iterable[Row],
    live: int,
    now: datetime,
    next_expiry: datetime | None,
    instant: Instant,
    *,
    taken_over: int = 0,
) -> HeldParts:
    """What `renew_leases` returns, from the (part, watermark, epoch, swept_at) rows of the
    parts held and the database's clock `now`."""
    watermarks: dict[int, int | None] = {}
    epochs: dict[int, int] = {}
    swept: dict[int, datetime | None] = {}
    for row in rows:
        watermarks[row["part"]] = row["watermark"]
        epochs[row["part"]] = row["epoch"]
        swept[row["part"]] = _optional(row["swept_at"], instant)
    return HeldParts(
        parts=frozenset(watermarks),
        watermarks=watermarks,
        live_workers=live,
        epochs=epochs,
        next_expiry=None if next_expiry is None else (next_expiry - now).total_seconds(),
        as_of=now,
        taken_over=taken_over,
        swept=swept,
    )


def breakers_value(breakers: Sequence[str]) -> str | None:
    """The `workers.breakers` column: the open breakers as a JSON array, NULL for none."""
    return orjson.dumps(sorted(breakers)).decode() if breakers else None


def workers_from(
    workers: Iterable[Row], leases: Iterable[Row], instant: Instant
) -> list[WorkerState]:
    """What `list_workers` returns, from the (worker, heartbeat_at, breakers) rows and the
    (holder, part) rows of the leases held now."""
    parts: dict[str, list[int]] = {}
    for row in leases:
        parts.setdefault(row["holder"], []).append(row["part"])
    return [
        WorkerState(
            worker=row["worker"],
            heartbeat_at=instant(row["heartbeat_at"]),
            parts=tuple(parts.get(row["worker"], ())),
            breakers=tuple(orjson.loads(row["breakers"])) if row["breakers"] else (),
        )
        for row in workers
    ]


def ring_minute_from(row: Row) -> RingMinute:
    """A minute of `sample_rings`, from a row of counts and lateness percentiles."""
    lateness = None
    if row["max"] is not None:
        lateness = Lateness(p50=row["p50"], p99=row["p99"], max=row["max"])
    return RingMinute(
        minute=row["minute"],
        sent=row["sent"],
        failed=row["failed"],
        expired=row["expired"],
        waiting=row["waiting"],
        lateness=lateness,
    )


def ring_minute(minute: int, sample: Iterable[tuple[str, float | None]]) -> RingMinute:
    """A minute of `sample_rings`, from its (state, lateness) rows: what the PostgreSQL
    query aggregates, done here (percentiles by nearest rank, as percentile_disc)."""
    counts: dict[str, int] = dict.fromkeys(FiringState, 0)
    late: list[float] = []
    for state, lateness in sample:
        counts[state] += 1
        if lateness is not None:
            late.append(lateness)
    late.sort()
    return RingMinute(
        minute=minute,
        sent=counts[FiringState.SENT],
        failed=counts[FiringState.FAILED],
        expired=counts[FiringState.EXPIRED],
        waiting=counts[FiringState.QUEUED] + counts[FiringState.SENDING],
        lateness=Lateness(p50=_rank(late, 0.5), p99=_rank(late, 0.99), max=late[-1])
        if late
        else None,
    )


def _rank(ordered: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of sorted values: the first whose share reaches it."""
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def lists_from(rows: Iterable[Row], instant: Instant) -> list[SharedList]:
    """Lists from rows of a list's columns and one member's each (GET_LIST, MEMBER_LISTS),
    in the rows' order; a list's rows follow one another, a NULL member is none."""
    found: dict[str, SharedList] = {}
    members: dict[str, list[Member]] = {}
    for row in rows:
        list_id = row["id"]
        if list_id not in found:
            found[list_id] = SharedList(
                id=list_id,
                name=row["name"],
                source=row["source"],
                created_at=instant(row["created_at"]),
                updated_at=instant(row["updated_at"]),
            )
            members[list_id] = []
        if row["member"] is not None:
            joined = row["joined_at"]
            members[list_id].append(
                Member(
                    list_id=list_id,
                    member=row["member"],
                    role=Role(row["role"]),
                    invited_at=instant(row["invited_at"]),
                    joined_at=None if joined is None else instant(joined),
                )
            )
    return [replace(shared, members=tuple(members[shared.id])) for shared in found.values()]


def list_values(shared: SharedList, instant: Callable[[datetime], Any]) -> dict[str, Any]:
    """The INSERT_LIST parameters by name."""
    return {
        "id": shared.id,
        "name": shared.name,
        "source": shared.source,
        "created_at": instant(shared.created_at),
        "updated_at": instant(shared.updated_at),
    }


def member_values(member: Member, instant: Callable[[datetime], Any]) -> dict[str, Any]:
    """The SAVE_MEMBER parameters by name."""
    joined = member.joined_at
    return {
        "list_id": member.list_id,
        "member": member.member,
        "role": member.role.value,
        "invited_at": instant(member.invited_at),
        "joined_at": None if joined is None else instant(joined),
    }


def ring_members(rows: Iterable[Row], lists: dict[str, str]) -> dict[tuple[str, str], list[str]]:
    """LIST_RINGS' rows (reminder id, member) by (list id, reminder id), `lists` giving each
    reminder's list."""
    found: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        key = (lists[row["reminder_id"]], row["reminder_id"])
        found.setdefault(key, []).append(row["member"])
    return found
