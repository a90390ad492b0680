"""Tocsin's domain values: reminders, firings and their states. No I/O lives here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, time
from enum import StrEnum
from typing import Any, NamedTuple

JSON = dict[str, Any]


class Channel(StrEnum):
    """How a reminder reaches its owner."""

    WEBHOOK = "webhook"
    EMAIL = "email"
    SMS = "sms"
    APNS = "apns"
    FCM = "fcm"
    WEBPUSH = "webpush"
    INAPP = "inapp"
    APPRISE = "apprise"
    LOG = "log"


ROUTE_MAX = 4  # channels in one route: a set or a chain longer than this is not a reminder's
ALL_AT_ONCE = ","  # `apns,email`: every channel rings
THEN = ">"  # `apns>sms`: a fallback chain


@dataclass(frozen=True, slots=True)
class Route:
    """Where a reminder's rings go: one channel, several at once, or a fallback chain.

    `channels` in the order given. Without `fallback`, every channel rings at once (one
    step); with it, each channel is a step of its own, tried only when every destination of
    the step before failed for good. Stored as text in the `channel` column (`value`):
    `apns` for one channel (as before routes existed), `apns,email` for all at once,
    `apns>sms` for a chain — a few bytes, no column of its own.
    """

    channels: tuple[Channel, ...]
    fallback: bool = False

    @property
    def single(self) -> Channel | None:
        """The one channel of a one-channel route, else None."""
        return self.channels[0] if len(self.channels) == 1 else None

    @property
    def steps(self) -> tuple[tuple[Channel, ...], ...]:
        """The groups tried in turn: all channels at once, or one step per channel."""
        if self.fallback:
            return tuple((channel,) for channel in self.channels)
        return (self.channels,)

    @property
    def value(self) -> str:
        """The route as stored."""
        return (THEN if self.fallback else ALL_AT_ONCE).join(c.value for c in self.channels)

    def step_of(self, channel: Channel) -> int:
        """The 1-based step `channel` belongs to (1 for every channel of a route without
        fallback)."""
        return self.channels.index(channel) + 1 if self.fallback else 1

    def __str__(self) -> str:
        return self.value


def one(channel: Channel) -> Route:
    """The route of a single channel (shared: there are only a few)."""
    return SINGLE_ROUTES[channel]


def parse_route(value: str) -> Route:
    """A route from its stored text; ValueError when it is not one."""
    fallback = THEN in value
    names = value.split(THEN if fallback else ALL_AT_ONCE)
    return Route(tuple(Channel(name) for name in names), fallback)


class ReminderStatus(StrEnum):
    """Where a reminder is in its life."""

    PENDING = "pending"  # waits for `due_at`
    FIRED = "fired"  # a one-off that rang; its firing says how delivery went
    ENDED = "ended"  # a series with no occurrence left
    CANCELLED = "cancelled"  # cancelled by its owner or app before it rang


SINGLE_ROUTES: dict[Channel, Route] = {channel: Route((channel,)) for channel in Channel}


class FiringState(StrEnum):
    """Where one ring is in delivery: queued → sending → sent | failed | expired."""

    QUEUED = "queued"
    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"
    EXPIRED = "expired"

    @property
    def is_final(self) -> bool:
        return self in (FiringState.SENT, FiringState.FAILED, FiringState.EXPIRED)


class Priority(StrEnum):
    """Which rings go first when not every ring can go at once (a busy minute, a channel
    back from an outage): `urgent` ones are claimed and sent before `bulk` ones (digests,
    newsletters), whatever their deadlines. Stored as its `rank`."""

    URGENT = "urgent"
    BULK = "bulk"

    @property
    def rank(self) -> int:
        """0 for urgent, 1 for bulk: the stored value, and the order rings go in."""
        return PRIORITY_RANKS[self]


PRIORITY_RANKS: dict[Priority, int] = {Priority.URGENT: 0, Priority.BULK: 1}


class Outcome(StrEnum):
    """What one delivery attempt came to."""

    SENT = "sent"
    RETRY = "retry"  # a retryable error: try again later
    FAILED = "failed"  # a permanent error: never try again


@dataclass(frozen=True, kw_only=True, slots=True)
class Schedule:
    """When a reminder rings: a zone, an anchor and an optional repeat rule.

    `anchor` is a naive local wall time in `zone` (RFC 5545's DTSTART for a series, or the
    one-off's local time), or an aware UTC instant when the app gave an absolute `at` for a
    one-off. `rule` is a normalised RRULE body without the `RRULE:` prefix
    (`FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0`), or None for a one-off.
    """

    zone: str
    anchor: datetime
    rule: str | None = None
    # Early alerts: each a lead (seconds) before every occurrence at which it rings as well,
    # earliest first (`tocsin.time.alerts`); whole days of a lead count on the local clock.
    alerts: tuple[int, ...] = ()
    # Ringing until done: after each occurrence, again every `nag` seconds, at most `nags`
    # times and never at or past the next occurrence, until a ring of it is marked done.
    nag: int = 0
    nags: int = 0

    @property
    def plain(self) -> bool:
        """Only its occurrences ring: no early alerts, no nags."""
        return not self.alerts and not self.nags


@dataclass(frozen=True, kw_only=True, slots=True)
class Reminder:
    """One saved reminder, as stored."""

    id: str
    owner: str
    shard: int
    text: str
    channel: Route
    schedule: Schedule
    at: str | None  # `at` as the app gave it (normalised ISO 8601), or None
    repeat: str | None  # `repeat` as the app gave it, or None
    status: ReminderStatus
    due_at: datetime | None  # next ring, aware UTC; None unless pending
    freshness: int  # seconds after `due_at` a ring may still go out
    metadata: JSON | None
    source: str | None  # the app (API key) that saved it
    snoozed_from: str | None  # the firing this one-off was snoozed from
    version: int  # counts API writes: a ring leaves the stored row alone
    created_at: datetime
    updated_at: datetime
    last_firing: FiringSummary | None = None
    priority: Priority = Priority.URGENT
    rang: bool = False  # a ring of it was claimed since its last API write
    ignore_quiet_hours: bool = False  # its bulk rings go through its owner's quiet hours
    on: PlaceTrigger | None = None  # what rings it at a place, instead of a time


class PlaceEvent(StrEnum):
    """A crossing of a place's geofence, as the owner's device reports it."""

    ARRIVE = "arrive"
    LEAVE = "leave"


class Once(StrEnum):
    """How often a place reminder may ring: once a local day, or once ever."""

    DAY = "day"
    EVER = "ever"


@dataclass(frozen=True, kw_only=True, slots=True)
class PlaceTrigger:
    """What rings a reminder at a place: its owner's device reporting `event` there,
    only inside the local window [`after`, `before`) of the reminder's zone when one is given
    (across midnight when `before` comes first; either alone runs to or from midnight), and
    at most `once` a local day or ever (None: at every crossing that is not a repeat)."""

    place_id: str
    event: PlaceEvent
    after: time | None = None
    before: time | None = None
    once: Once | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Armed:
    """A pending reminder that a crossing of its place may ring, as read before the crossing's
    transaction decides: its trigger, when it rang last, and what its ring needs."""

    reminder_id: str
    version: int
    zone: str
    freshness: int
    trigger: PlaceTrigger
    rang_at: datetime | None
    rang_day: str | None  # the local day (YYYY-MM-DD) of its last ring


@dataclass(frozen=True, kw_only=True, slots=True)
class PlaceRing:
    """A crossing's ring of one reminder, to be decided by the reminder's trigger row: it
    rings unless that row says it rang for this crossing already (`flap_since`: the crossing's
    time less the flap window), today (`day`, for once a day) or ever."""

    reminder_id: str
    version: int
    place_id: str
    event: PlaceEvent
    at: datetime  # the device's time of the crossing: the ring's due instant
    deadline: datetime
    day: str
    flap_since: datetime


class DueRing(NamedTuple):
    """A pending reminder's next ring as `Store.load_due` reads it: what claiming it needs,
    and nothing more (the scheduler holds many thousands of these)."""

    reminder_id: str
    due_at: datetime
    freshness: int
    schedule: Schedule | None  # None for a one-off: its claim needs no next due time
    version: int  # the row's version when read: the claim applies only to this version
    priority: int = 0  # `Priority.rank`: urgent rings are claimed first
    # What the ring says and where it goes, as the version read holds it (PostgreSQL: one
    # JSON object, `_LOAD_LANE`'s `content`, passed on to the claim as it is; SQLite: None,
    # its claim reads the reminder's row)
    content: str | None = None
    # The reminder's ring before this occurrence (its occurrence's `prev_due`): a reader of
    # its firings goes from each ring to the one before (`Store.list_firings`)
    prev_due: datetime | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class FiringSummary:
    """The last ring of a reminder, shown on the reminder itself."""

    id: str
    due_at: datetime
    state: FiringState


class Attempt(NamedTuple):
    """One try at delivering a firing. (A named tuple, like `Firing`: built once per ring.)"""

    number: int
    at: datetime
    channel: Channel
    outcome: Outcome
    error: str | None = None
    provider_id: str | None = None
    destination: str | None = None  # the contact (or endpoint) it went to


class Firing(NamedTuple):
    """One ring of a reminder: the durable delivery record and queue entry.

    `id` is the delivery identity (`tocsin.ids.firing_id`): every attempt reuses it and every
    channel gets it as its idempotency key. A named tuple rather than a frozen dataclass:
    one is built per ring on the hot path, and a 21-field frozen dataclass costs ~10 µs to
    build, a tuple well under 2 (immutable and typed all the same; build it with keywords).
    """

    id: str
    reminder_id: str
    owner: str
    shard: int
    due_at: datetime
    deadline: datetime  # due_at + freshness: never sent after this
    channel: Route
    text: str
    metadata: JSON | None
    source: str | None
    state: FiringState
    attempts: int
    next_attempt_at: datetime | None  # when `queued`: when it may be tried (again)
    sender: str | None  # when `sending`: the worker that holds it
    lease_until: datetime | None  # when `sending`: after this another worker may take it
    created_at: datetime
    sent_at: datetime | None = None
    provider_id: str | None = None
    last_error: str | None = None
    snoozed_by: str | None = None  # the one-off reminder a snooze of this ring created
    history: tuple[Attempt, ...] = ()
    # False for a ring a claim handed to its sender without writing its firing row: the row
    # is written once, with the outcome of its first try (`AttemptResult.firing`), and until
    # then the claim's record of what is in flight stands for it (`Store.claim`).
    stored: bool = True
    priority: Priority = Priority.URGENT  # the reminder's when the ring was claimed
    done_at: datetime | None = None  # when its owner marked it done


@dataclass(frozen=True, kw_only=True, slots=True)
class Place:
    """A place of an owner's ("home", "the office"): a circle on the earth, its centre in
    degrees (WGS 84, as phones report them) and its radius in metres. The owner's device
    watches it as a geofence and reports when it arrives or leaves.

    `source` is the app whose key saved it, None when the owner saved it himself: apps are
    tenants, as with contacts.
    """

    id: str
    owner: str
    shard: int
    name: str
    latitude: float
    longitude: float
    radius_m: int
    created_at: datetime
    updated_at: datetime
    source: str | None = None


LIST_OWNER = "list#"  # a list's reminders' owner: `list#<list id>` ('#' is in no owner's name)


class Role(StrEnum):
    """A list member's role: a viewer reads the list's reminders, an editor also saves,
    edits, snoozes and cancels them, an owner also manages the members."""

    OWNER = "owner"
    EDITOR = "editor"
    VIEWER = "viewer"

    @property
    def edits(self) -> bool:
        return self is not Role.VIEWER


@dataclass(frozen=True, kw_only=True, slots=True)
class Member:
    """Someone on a list (an owner's name, as reminders and contacts use it) with a role.
    Invited until he accepts (`joined_at` None): an invitation rings nobody."""

    list_id: str
    member: str
    role: Role
    invited_at: datetime
    joined_at: datetime | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class SharedList:
    """A list several people share: its reminders ring every member who joined, or the
    reminder's assignee alone, each on his own contacts. `source` is the app whose key made
    it, None when an owner made it himself: apps are tenants, as with contacts."""

    id: str
    name: str
    source: str | None
    created_at: datetime
    updated_at: datetime
    members: tuple[Member, ...] = ()

    @property
    def owner(self) -> str:
        """The owner its reminders are saved under."""
        return LIST_OWNER + self.id

    def member(self, name: str) -> Member | None:
        return next((m for m in self.members if m.member == name), None)


def list_of(owner: str) -> str | None:
    """The list a reminder of `owner` belongs to (its id), None for an owner's own."""
    return owner[len(LIST_OWNER) :] if owner.startswith(LIST_OWNER) else None


def lists_of(owners: Iterable[str]) -> list[str]:
    """The lists whose reminders these owners' are (their ids, each once, in order)."""
    return sorted({found for owner in owners if (found := list_of(owner)) is not None})


@dataclass(frozen=True, kw_only=True, slots=True)
class Contact:
    """One place an owner's rings may go: a device (APNs, FCM), a browser's Web Push
    subscription, an email address, a phone number, an Apprise URL or a webhook URL.

    `kind` is the channel it belongs to: a reminder on that channel rings every enabled
    contact of that kind its owner has. `address` holds the kind's fields as its channel
    validated them; `secret` is a webhook contact's signing secret. A contact the provider
    called gone (an unregistered token) is `disabled_reason`d and skipped from then on.

    `source` is the app whose key saved it, None when the owner saved it himself (an owner
    token, the page): apps are tenants, so an app's rings go to its own contacts and the
    owner's, never to another app's (`delivery.destinations`).
    """

    id: str
    owner: str
    shard: int
    kind: Channel
    address: dict[str, str]
    label: str | None
    secret: str | None
    disabled_reason: str | None
    disabled_at: datetime | None
    created_at: datetime
    updated_at: datetime
    source: str | None = None

    def takes_rings_of(self, source: str | None) -> bool:
        """Whether a ring of a reminder saved by app `source` (None: by its owner) may go
        here: the owner's own contacts take every ring, an app's only that app's."""
        return self.source is None or source is None or self.source == source


@dataclass(frozen=True, kw_only=True, slots=True)
class App:
    """An app allowed to call the API: its key (hashed) and where its webhooks go."""

    name: str
    key_hash: str
    key_prefix: str  # the first characters of the key, to tell keys apart in listings
    created_at: datetime
    webhook_url: str | None = None
    webhook_secret: str | None = None  # `whsec_…`, Standard Webhooks format
    webhook_disabled: bool = False
    admin: bool = False  # an admin key sees and changes every app's reminders
    revoked_at: datetime | None = None  # since when its key is refused (its reminders ring)
    priority: Priority = Priority.URGENT  # of the reminders it saves without one of their own


@dataclass(frozen=True, kw_only=True, slots=True)
class IdempotencyRecord:
    """The answer given to a request with an `Idempotency-Key`, kept to replay on retry."""

    scope: str  # who asked (app name or owner), so two apps' keys never collide
    key: str
    request_hash: str
    status_code: int
    body: bytes
    created_at: datetime


class Claim(NamedTuple):
    """The scheduler's decision about one due reminder, applied by `Store.claim` (a named
    tuple, like `Firing`: one is built per ring claimed).

    The claim applies only while its occurrence (`due_at` at `version`) still waits in `due`
    (the row decides: an edit, snooze or cancel since the load took it back, and the claim
    loses); on PostgreSQL the ring is written with `content`, as the load read it at that
    version. `next_due_at` is the series' next ring, computed from the rule loaded with that
    version (None: the reminder has no more occurrences, or is a one-off). `state` is the new
    firing's state: `sending` for a ring handed straight to delivery, `expired` for one too
    stale to send, `failed` (with `error`) for one whose row could not be planned.
    """

    reminder_id: str
    due_at: datetime
    version: int
    next_due_at: datetime | None
    state: FiringState
    part: int = 0  # the scheduler part the ring was loaded for (see `Fence`)
    error: str | None = None  # why, for a ring claimed `failed` (its row could not be planned)
    content: str | None = None  # `DueRing.content` of the ring loaded
    prev_due: datetime | None = None  # `DueRing.prev_due`: the ring before this one


@dataclass(frozen=True, kw_only=True, slots=True)
class Fence:
    """The leases a batch of claims is made under: for each part held, its lease's epoch.

    A part's epoch rises each time another worker takes the part. A claim made under a
    fence applies only while its part is still held by the claiming worker at that epoch,
    so a worker whose lease ran out (paused, cut off, its clock wrong) and was taken over
    changes nothing: the epoch is the fencing token.
    """

    parts: int
    epochs: Mapping[int, int]

    def epoch(self, part: int) -> int:
        """The epoch held for `part`; -1 (never a lease's) when the part is not held."""
        return self.epochs.get(part, -1)


class AttemptResult(NamedTuple):
    """What became of a firing a sender held, recorded by `Store.record_attempts` (a named
    tuple: one per ring on the hot path).

    `state` is the firing's new state: `sent`, `failed`, `expired`, or `queued` with
    `next_attempt_at` set for a retry. `attempt` is the try that was made, or None when
    none was (the deadline came before the firing's turn: recorded `expired`, with `error`
    saying so, and no attempt in its history). A firing that went to several destinations
    in one round has one attempt each: the last is `attempt`, the others `earlier` (their
    numbers come first); all are recorded, and the firing's `attempts` is `attempt.number`.
    """

    firing_id: str
    sender: str
    state: FiringState
    attempt: Attempt | None = None
    next_attempt_at: datetime | None = None
    error: str | None = None  # why no attempt was made, or what the round came to
    earlier: tuple[Attempt, ...] = ()  # the same round's attempts at other destinations
    firing: Firing | None = None  # the firing itself when its row is not written yet (`stored`)

    @property
    def last_error(self) -> str | None:
        """The firing's `last_error`: `error` (what the round came to), else the attempt's."""
        return self.error if self.error is not None or self.attempt is None else self.attempt.error

    @property
    def sent_to(self) -> str | None:
        """The destination of the attempt when it is the firing's first and only one and it
        was accepted with nothing to say; else None. The firing row can then hold that try
        whole (state `sent`, `sent_at` its time, `provider_id`, and this as `sent_to`), so
        `Store.record_attempts` writes no attempts row for the common ring."""
        attempt = self.attempt
        if (
            attempt is None
            or attempt.number != 1
            or attempt.outcome is not Outcome.SENT
            or attempt.error is not None
            or self.state is not FiringState.SENT
            or self.error is not None
        ):
            return None
        return attempt.destination


@dataclass(frozen=True, kw_only=True, slots=True)
class HeldParts:
    """The scheduler parts a worker holds after renewing its leases, with each part's watermark.

    `watermarks[p]` is the last bucket (UTC epoch minute) part p finished, or None for a
    part that never ran.
    """

    parts: frozenset[int]
    watermarks: dict[int, int | None]
    live_workers: int
    epochs: dict[int, int] = field(default_factory=dict)  # part -> its lease's epoch
    next_expiry: float | None = None  # seconds until another worker's lease runs out
    as_of: datetime | None = None  # the database's clock when the leases were renewed
    taken_over: int = 0  # parts taken in this renewal from a worker whose lease ran out
    # part -> when the sweep that last moved its watermark read (None: never swept)
    swept: dict[int, datetime | None] = field(default_factory=dict)

    def fence(self, parts: int) -> Fence:
        """The fence claims made under these leases carry."""
        return Fence(parts=parts, epochs=self.epochs)


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkerState:
    """A worker as the status board sees it: its last heartbeat, the parts it holds a lease
    on now, and the providers whose circuit breaker it reported open at that heartbeat."""

    worker: str
    heartbeat_at: datetime
    parts: tuple[int, ...]
    breakers: tuple[str, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class DueCounts:
    """Pending reminders by bucket (UTC epoch minute), each count capped: a count equal to
    the cap means at least that many."""

    overdue: int  # due before the first bucket asked for, and not rung yet
    buckets: dict[int, int]  # bucket -> how many are due in it (buckets with none left out)


@dataclass(frozen=True, kw_only=True, slots=True)
class Lateness:
    """Seconds from due to sent of a set of sent rings, by nearest rank."""

    p50: float
    p99: float
    max: float


@dataclass(frozen=True, kw_only=True, slots=True)
class RingMinute:
    """The firings due in one UTC minute, as read for the status board: how many ended in
    each way, how many wait, and how late the sent ones went out."""

    minute: int  # UTC epoch minute of their `due_at`
    sent: int
    failed: int
    expired: int
    waiting: int  # queued or sending
    lateness: Lateness | None  # None when none was sent

    @property
    def read(self) -> int:
        return self.sent + self.failed + self.expired + self.waiting


@dataclass(frozen=True, kw_only=True, slots=True)
class QueueStats:
    """What an operator watches of the queue: firings waiting by state (`queued`, `sending`)
    and the due time of the oldest reminder due and not yet claimed (None: none pending)."""

    depth: Mapping[str, int]
    oldest_due: datetime | None
