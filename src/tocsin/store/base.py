"""The storage interface every backend implements, with each method's contract.

Both backends (`sqlite`, `postgres`) pass one shared test suite. Driver errors never leave a
backend: they are wrapped in `tocsin.errors.StoreError` (or `StoreUnavailable` when the
database cannot be reached). All instants given and returned are timezone-aware UTC.

Secrets (apps' and contacts' webhook signing secrets, the `secrets` table) are sealed with
the store's key ring (`tocsin.keyring`) on their way in and opened on their way out: the
database holds them encrypted, every caller sees them in clear. A store opened without a
ring refuses to write or read a sealed secret (`SecretKeyMissing`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from tocsin.domain import (
    App,
    AttemptResult,
    Channel,
    Claim,
    Contact,
    DueCounts,
    DueRing,
    Fence,
    Firing,
    FiringState,
    HeldParts,
    IdempotencyRecord,
    Outcome,
    QueueStats,
    Reminder,
    ReminderStatus,
    RingMinute,
    Schedule,
    WorkerState,
)

DueListener = Callable[[int, datetime], None]
"""Called with (shard, due_at) when a reminder became due soon; see `Store.listen_due`."""

FeedListener = Callable[[str, str], None]
"""Called with (owner, firing id) when an in-app ring waits for the owner's feed; see
`Store.listen_feed`."""

WAKE_HORIZON = timedelta(minutes=2)

# Why a ring for the in-app feed waits `queued`: the claim queues it for the owner's pages.
FEED_WAITING = "queued for the in-app feed: sent when an open page receives it"
# A page's replay takes the rings sent since this long before its last event was: the
# clock that marks them may step back by a little when it is corrected.
FEED_REPLAY_SLACK_SECONDS = 1
"""A write wakes `listen_due` listeners only for a pending reminder due this soon after its
`updated_at`: anything later is read by the scheduler's ordinary load-ahead."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Resealed:
    """What one `Store.reseal_secrets` pass did."""

    resealed: int  # values sealed again with the ring's first key
    raced: int  # values another process changed between the read and the write: pass again


@dataclass(frozen=True, kw_only=True, slots=True)
class Pruned:
    """What one `Store.prune` batch deleted."""

    firings: int
    attempts: int
    reminders: int
    idempotency_keys: int

    @property
    def rows(self) -> int:
        return self.firings + self.attempts + self.reminders + self.idempotency_keys


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingTime:
    """A pending reminder's schedule and next ring as `Store.pending_in_zones` reads it."""

    reminder_id: str
    shard: int
    schedule: Schedule
    due_at: datetime
    version: int


@dataclass(frozen=True, kw_only=True, slots=True)
class ZonePage:
    """One `Store.pending_in_zones` page: the rows found, and where the next page starts
    (the last id scanned; None when the table has no more)."""

    rows: list[PendingTime]
    last_id: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Move:
    """A new due time for a pending reminder, valid only on the row as it was read."""

    reminder_id: str
    shard: int
    version: int  # the row's version when read
    was: datetime  # its due time then
    due_at: datetime  # its new due time


# A cap's count of an owner's pending reminders reads at most this many times the cap of the
# owner's rows (`pending_counts`, `add_reminders` with `cap`): the rows finished and not yet
# pruned are read too, and without a bound one owner's history would make each create slow.
CAP_READS = 4


class Store(ABC):
    """Durable home of reminders, firings, apps, idempotency keys and scheduler leases."""

    # -- lifecycle ---------------------------------------------------------------------------

    @abstractmethod
    async def migrate(self) -> list[int]:
        """Apply every migration the database lacks, in order, recording each; return those
        applied (empty when up to date). Safe to run from several processes at once."""

    @abstractmethod
    async def check_schema(self) -> None:
        """Raise `SchemaTooOld` unless every migration this code knows has been applied, and
        `DatabaseReadOnly` when the server answers but takes no writes (a standby)."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections and listeners. The store is unusable afterwards."""

    # -- reminders (the API's side) ------------------------------------------------------------

    @abstractmethod
    async def add_reminders(
        self,
        reminders: Sequence[Reminder],
        *,
        idempotency: IdempotencyRecord | None = None,
        cap: int = 0,
    ) -> None:
        """Save new reminders, and the idempotency record if given, in one transaction: all or
        nothing. Raise `DuplicateIdempotencyKey` (saving nothing) when the record's
        (scope, key) exists already. Wakes `listen_due` listeners for pending ones due soon.
        With a `cap`, one reminder (the API's single create) is saved only while its (owner,
        app) pair keeps fewer than `cap` pending, checked in the same statement, else
        `CapReached` (saving nothing); a batch's caller checks first (`pending_counts`)."""

    @abstractmethod
    async def pending_counts(
        self, pairs: Sequence[tuple[str, str | None]], *, up_to: int
    ) -> dict[tuple[str, str | None], int]:
        """How many pending reminders each (owner, app) pair keeps (app None: those the owner
        saved himself), among at most `up_to` of the owner's rows, in one query: a cap's
        check reads at most that many rows an owner (`CAP_READS` times the cap), and an
        owner with more rows than that, finished ones included, may count short."""

    @abstractmethod
    async def find_idempotency(self, scope: str, key: str) -> IdempotencyRecord | None:
        """The record saved under (scope, key), or None."""

    @abstractmethod
    async def get_reminder(
        self, reminder_id: str, *, now: datetime | None = None
    ) -> Reminder | None:
        """The reminder with this id, with its `last_firing`, or None. A ring on its way
        whose firing is not written yet (`Firing.stored`) is its last firing, `sending`,
        until its deadline passes by `now` (default: the database's clock)."""

    @abstractmethod
    async def list_reminders(
        self,
        owner: str,
        *,
        status: ReminderStatus | None = None,
        source: str | None = None,
        after_id: str | None = None,
        limit: int = 50,
        now: datetime | None = None,
    ) -> list[Reminder]:
        """The owner's reminders in id order (oldest first), those with id > `after_id` only,
        at most `limit`, optionally of one status and of one `source` (app) only. Keyset
        pagination: stable under inserts. Each with its `last_firing`, as `get_reminder`."""

    @abstractmethod
    async def update_reminder(
        self, reminder: Reminder, *, expected_version: int
    ) -> Reminder | None:
        """Replace the mutable fields (text, channel, schedule, at, repeat, status, due_at,
        freshness, metadata) of the row with `reminder.id`, only while its version is
        `expected_version`; the version becomes `expected_version + 1` and `updated_at` becomes
        `reminder.updated_at`. Return the row as saved (with its
        `last_firing`), or None when the version no longer matches (the caller lost a race:
        re-read to say why). Wakes `listen_due` listeners when pending and due soon."""

    @abstractmethod
    async def cancel_reminder(self, reminder_id: str, *, now: datetime) -> Reminder | None:
        """Set status `cancelled` (due_at None, version + 1) only while the row is `pending`.
        Return the cancelled row, or None when it was not pending (or does not exist)."""

    @abstractmethod
    async def snooze_firing(self, firing_id: str, reminder: Reminder) -> bool:
        """In one transaction: save `reminder` (a fresh one-off) and mark the firing
        `snoozed_by` it, only while the firing exists and was not snoozed already. Return
        False (saving nothing) otherwise."""

    @abstractmethod
    async def list_firings(self, reminder_id: str, *, limit: int = 50) -> list[Firing]:
        """The reminder's firings, newest due first, each with its attempt `history` (a
        first try kept on the firing row included: `record_attempts`)."""

    # -- apps and keys -------------------------------------------------------------------------

    @abstractmethod
    async def add_app(self, app: App) -> None:
        """Save an app and its key hash. An app's name is unique: `StoreError` if taken."""

    @abstractmethod
    async def find_app(self, *, name: str | None = None, key_hash: str | None = None) -> App | None:
        """The app with this name or key hash (exactly one of them given), or None."""

    @abstractmethod
    async def list_apps(self) -> list[App]:
        """Every app (API key), by name."""

    @abstractmethod
    async def database_time(self) -> datetime:
        """The database's clock now: what leases, claims and deadlines are judged by. Every
        process that decides by time keeps its clock in step with it (`DatabaseClock`)."""

    @abstractmethod
    async def queue_stats(self) -> QueueStats:
        """The delivery queue's depth by state (`queued`, `sending`) and the due time of the
        oldest pending reminder, for metrics. Each number is an index-only read of a partial
        index (firings_queued, firings_sending, the first entry of reminders_due), never a
        scan of the tables; cheap enough for every scrape, not for every ring."""

    @abstractmethod
    async def count_apps(self) -> int:
        """How many apps (API keys) exist, revoked ones too: 0 means the server runs without
        keys, and revoking every key must not reopen it."""

    @abstractmethod
    async def revoke_app(self, name: str, at: datetime) -> bool:
        """Refuse the app's key from `at` on (`App.revoked_at`); its reminders still ring.
        False when no such app exists or it is revoked already."""

    @abstractmethod
    async def replace_app_key(self, name: str, *, key_hash: str, key_prefix: str) -> bool:
        """Give the app a new key: the old one is refused from now on, and a revoked app is
        live again. False when no such app exists."""

    @abstractmethod
    async def revoke_owner_tokens(self, owner: str, before: datetime) -> None:
        """Refuse every owner token of `owner` signed at or before `before` (a later
        revocation moves the line forward; an earlier one never moves it back), and tell
        `listen_revocations` listeners after the commit."""

    @abstractmethod
    async def owner_tokens_revoked_before(self, owner: str) -> datetime | None:
        """The line `revoke_owner_tokens` drew for `owner`, or None if it never did."""

    @abstractmethod
    async def listen_revocations(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call `listener(owner)` after `revoke_owner_tokens` drew a line for `owner` — in
        this process, and on PostgreSQL in every process (NOTIFY `tocsin_revocations`, after
        commit). Hints, like `listen_due`: missed while a connection is re-made, and on
        SQLite whenever another process revoked (`tocsin keys`), so a listener must also
        read `owner_tokens_revoked_before` now and then. Return a function that stops
        listening. Listeners must not block."""

    @abstractmethod
    async def ensure_secret(self, name: str, value: str) -> str:
        """Save `value` (sealed) under `name` unless a value is saved already; return the
        saved one, opened. Every process sharing the database gets the same secret
        (owner-token signing). `SecretUnreadable` when the ring cannot open the saved one."""

    @abstractmethod
    async def reseal_secrets(self) -> Resealed:
        """One pass over every stored secret (apps' webhook secrets, contacts' secrets, the
        `secrets` table): each value not sealed with the ring's first key — plain text from
        before encryption, or sealed with another key of the ring — is opened and sealed
        with the first key. Pages in key order, each written in one short transaction by
        conditional updates that apply only while the stored value is still the one read,
        so it is safe beside running processes: a value changed meanwhile is left and
        counted `raced` (pass again). `SecretUnreadable`, naming the row, when a value is
        sealed with a key the ring does not hold; the pages before it stay done."""

    @abstractmethod
    async def disable_webhook(self, name: str) -> None:
        """Mark the app's webhook endpoint disabled (it answered 410 Gone)."""

    # -- contacts ------------------------------------------------------------------------------

    @abstractmethod
    async def add_contact(self, contact: Contact) -> None:
        """Save a new contact."""

    @abstractmethod
    async def get_contact(self, contact_id: str) -> Contact | None:
        """The contact with this id, or None."""

    @abstractmethod
    async def list_contacts(
        self,
        owner: str,
        *,
        kind: Channel | None = None,
        source: str | None = None,
        after_id: str | None = None,
        limit: int = 50,
    ) -> list[Contact]:
        """The owner's contacts in id order, those with id > `after_id` only, at most
        `limit`, optionally of one kind and only those one app (`source`) saved (keyset
        pages, disabled ones included)."""

    @abstractmethod
    async def count_contacts(self, owner: str, source: str | None, *, up_to: int) -> int:
        """How many contacts of `owner` the app `source` saved (None: those the owner saved
        himself), counted no further than `up_to` (a cap's check costs at most that)."""

    @abstractmethod
    async def update_contact(self, contact: Contact) -> Contact | None:
        """Replace the contact's address, label, disabled state and `updated_at` (by id);
        return it as saved, or None when it no longer exists."""

    @abstractmethod
    async def delete_contact(self, contact_id: str) -> bool:
        """Delete the contact; False when it did not exist."""

    @abstractmethod
    async def disable_contact(self, contact_id: str, *, reason: str, now: datetime) -> bool:
        """Mark the contact disabled with `reason` (its provider called it gone), unless it
        is disabled already (the first reason stays); return whether it was changed."""

    @abstractmethod
    async def destinations(
        self, wanted: Sequence[tuple[str, Channel]]
    ) -> dict[tuple[str, Channel], list[Contact]]:
        """Where rings go, for many (owner, kind) pairs in one query: every enabled contact
        of that owner and kind, in id order (an index lookup by (owner, kind) each), saved by
        any app (which of them a ring may use is delivery's rule); a pair with none is left
        out."""

    @abstractmethod
    async def settled_destinations(self, firing_id: str) -> dict[str, Outcome]:
        """The destinations a firing's attempts settled for good — sent, or failed — by
        destination id (with the outcome): a retry goes to the others only. An attempt
        recorded with no destination (a channel of the firing's route that had none) is
        keyed `channel:<name>`."""

    # -- the scheduler's side ----------------------------------------------------------------

    @abstractmethod
    async def load_due(
        self,
        *,
        shards: range,
        first_bucket: int,
        last_bucket: int,
        limit: int,
        after: tuple[datetime, str] | None = None,
    ) -> list[DueRing]:
        """The next rings of pending reminders whose bucket (UTC epoch minute of `due_at`) is in
        [first_bucket, last_bucket] and whose shard is in `shards`, ordered by (`due_at`,
        `id`), at most `limit`. With `after` = (due_at, id) of the last row of a previous
        page, only rows ordered after it (keyset paging: held rows are not read again).
        An index range scan, never a full scan."""

    @abstractmethod
    async def claim(
        self,
        claims: Sequence[Claim],
        *,
        sender: str,
        now: datetime,
        lease: timedelta,
        fence: Fence | None = None,
    ) -> list[Firing]:
        """Apply many claims in one transaction. For each claim whose row is still exactly
        what was loaded — `pending`, `due_at == claim.due_at`, `version == claim.version` —
        and, with a `fence`, whose part (`claim.part`) `sender` still holds at the fence's
        epoch for it: move the row on (`next_due_at` set: stays pending with
        the new due_at and bucket; else status `fired` for a one-off or `ended` for a
        series), bump its version, and ring it: one firing with id `firing_id(reminder,
        due_at)` built from the row (text, channel, owner, metadata, source, deadline =
        due_at + freshness) in state `claim.state` — for `sending`, held by `sender` until
        `now + lease`. A claim whose row moved on changes nothing; a firing id that was
        recorded already rings no more. Return the rings, in no particular order.

        A ring for `sending` may come back unwritten (`Firing.stored` False): the claim
        then keeps only a record of the rings it handed to `sender`, and the firing row is
        written once, by `record_attempts` with the outcome of its first try, or by
        `release_deliveries`. If neither comes before the hold runs out, `recover_claims`
        writes it `queued`, for any sender, under the same identity."""

    @abstractmethod
    async def take_deliveries(
        self, *, sender: str, shards: range | None, now: datetime, lease: timedelta, limit: int
    ) -> list[Firing]:
        """Firings that need a sender: `queued` with `next_attempt_at <= now`, or `sending`
        with `lease_until < now` (its sender vanished), in `shards` when given. Those past
        their deadline (`deadline <= now`) are set `expired` instead, `last_error` saying so
        (all of them, or at least `limit`, per call), and not returned. Of the rest, the
        `limit` with the earliest deadlines become `sending` held by `sender` until
        `now + lease` and are returned — each to one caller only, even with many callers at once."""

    @abstractmethod
    async def record_attempts(self, results: Sequence[AttemptResult]) -> int:
        """Record each attempt and move its firing to `result.state` (setting `sent_at`,
        `provider_id`, `last_error`, `attempts`, `next_attempt_at` as the result says), only
        while the firing is `sending` held by `result.sender`. A result without an attempt
        moves the firing and sets `last_error` only (no history entry, `attempts` unchanged).
        A first try accepted with nothing to say (`result.sent_to`) on the firing's own
        channel is kept on the firing row rather than as a history row, and `list_firings`
        and `settled_destinations` give it back as that row would: the common ring costs one
        row write here, not two. A result carrying its firing (`result.firing`, a ring
        whose row the claim did not write) writes that row, with the result in it; it
        applies while the row is not there yet, or is there only as `recover_claims` wrote
        it and no sender has taken it since. Return how many applied."""

    @abstractmethod
    async def release_deliveries(
        self, firings: Sequence[Firing], *, sender: str, now: datetime
    ) -> int:
        """Hand firings back unsent: those still `sending` held by `sender` become `queued`
        with `next_attempt_at = now` (any worker's `take_deliveries` takes them at once);
        their attempts are unchanged. A ring whose row the claim did not write
        (`Firing.stored` False) is written so. Return how many were released."""

    async def recover_claims(self, *, now: datetime, limit: int) -> int:
        """Write, `queued` for any sender at once, the rings that claims handed to a sender
        whose hold ran out before `now` without their firing written (the sender stopped,
        or could not reach the database in time), from up to `limit` such claims; forget
        those claims. Return how many rings were written. A store whose claim writes every
        firing (`Firing.stored` always True) has none."""
        return 0

    @abstractmethod
    async def renew_leases(
        self, worker: str, *, parts: int, ttl: timedelta, breakers: Sequence[str] = ()
    ) -> HeldParts:
        """Heartbeat for `worker` (with the providers whose circuit breaker it has open,
        `breakers`, kept on its heartbeat row for `list_workers`) and rebalance, by the
        database's clock `now` (never the worker's; on SQLite, the host's): count live
        workers (heartbeat within `ttl`), keep held parts (extending them to `now + ttl`) up
        to the fair share ceil(parts / live), release the excess, and take free or expired
        parts up to the share, each at a new epoch. Two workers never hold one part at once.
        Return the parts held with their watermarks and epochs, `now` (`as_of`), how long
        until the first lease another worker holds runs out, and how many of the parts taken
        another worker's expired lease held (`taken_over`). When a worker joined or parts
        were released, tell `listen_leases` listeners (every process on PostgreSQL) after
        commit."""

    @abstractmethod
    async def release_leases(self, worker: str, *, parts: Sequence[int] | None = None) -> None:
        """Give up the worker's leases on `parts` (all when None), and, for all, its
        heartbeat, so others may take them over at once; tell `listen_leases` listeners."""

    @abstractmethod
    async def advance_watermark(self, worker: str, *, part: int, bucket: int) -> bool:
        """Record that `part` finished every bucket up to `bucket`, only while `worker` holds
        the part and the watermark is lower. Return whether it was recorded."""

    # -- wake-ups ---------------------------------------------------------------------------

    @abstractmethod
    async def listen_leases(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` whenever a worker joined or leases were let go (in this process,
        and on PostgreSQL in every process), so that workers renew at once and no part waits
        a renewal period unheld. Hints, like `listen_due`: may be missed or repeat. Return a
        function that stops listening. Listeners must not block."""

    @abstractmethod
    async def listen_due(self, listener: DueListener) -> Callable[[], None]:
        """Call `listener(shard, due_at)` whenever a reminder is saved or moved to pending
        with a due time at most `WAKE_HORIZON` (2 minutes) after its `updated_at` (overdue
        included; later ones are the scheduler's ordinary load-ahead) — in this process, and
        on PostgreSQL in every process (NOTIFY, after commit). `due_at` is floored to the
        second; a batch announces each distinct (shard, second) once. Wake-ups may be missed
        while a connection is re-made and may repeat: they are hints, the sweep is the
        guarantee. Return a function that stops listening. Listeners must not block."""

    # -- the in-app feed -------------------------------------------------------------------

    @abstractmethod
    async def announce_feed(self, rings: Sequence[tuple[str, str]]) -> None:
        """Tell `listen_feed` listeners that these (owner, firing id) in-app rings wait for
        the owner's feed — in this process, and on PostgreSQL in every process (one NOTIFY
        `tocsin_feed` each, in one statement). Hints, like `listen_due`: a missed one stays
        `queued` and is read by `feed_firings` when a page (re)connects."""

    @abstractmethod
    async def listen_feed(
        self, listener: FeedListener, *, on_gap: Callable[[], None]
    ) -> Callable[[], None]:
        """Call `listener(owner, firing_id)` for every `announce_feed` ring, and `on_gap()`
        after announcements may have been missed (the LISTEN connection was made again), so
        the listener re-reads what its pages wait for. Return a function that stops
        listening. Listeners must not block."""

    @abstractmethod
    async def feed_firings(
        self, owner: str, *, now: datetime, after: str | None = None, limit: int = 500
    ) -> list[Firing]:
        """The owner's `inapp` firings still fresh (`deadline > now`) that wait for a page
        (`queued` or `sending`) and, with `after` (the id of one of the owner's firings, a
        page's last event), those `sent` since it was (from `FEED_REPLAY_SLACK_SECONDS`
        before its `sent_at`; itself excluded) — in (`due_at`, `id`) order, at most `limit`,
        without history. "Since it was sent", not "after it in due order": events go out in
        the order rings are claimed and written, not by due time, so a ring due earlier may
        follow the last event, and is replayed. One index range scan of the owner's in-app
        firings by deadline (`firings_feed`)."""

    @abstractmethod
    async def feed_rings(self, firing_ids: Sequence[str], *, now: datetime) -> list[Firing]:
        """Those of these firings that are `inapp`, still fresh (`deadline > now`) and not
        `failed` or `expired`: what an announcement may put on a page (by primary key)."""

    @abstractmethod
    async def mark_feed_sent(self, firing_ids: Sequence[str], *, at: datetime) -> int:
        """A page received these in-app firings: each one still fresh at `at` and not final
        (`queued`, or `sending` whoever holds it) becomes `sent` at `at` with one more
        attempt (outcome `sent`, destination `feed`). A final one (sent to another page,
        expired) is left as it is; a worker's later result for one sent here no longer
        applies (it is not `sending` any more). Return how many changed."""

    # -- upkeep: retention and time zone data upgrades -----------------------------------------

    @abstractmethod
    async def prune(
        self,
        *,
        firings_before: datetime,
        reminders_before: datetime,
        keys_before: datetime,
        limit: int,
    ) -> Pruned:
        """One retention batch, oldest first, each part its own short transaction: at most
        `limit` final firings (`sent`, `failed`, `expired`) due before `firings_before`, with
        their attempts; at most `limit` reminders no longer pending whose last change was
        before `reminders_before` (on SQLite their firings go with them); at most `limit`
        idempotency keys created before `keys_before`. Each an index range scan from the old
        end (`firings_due`, `reminders_finished`, `idempotency_keys_age`) that stops at
        `limit`, so a batch costs the same however large the tables are."""

    @abstractmethod
    async def hold_chore(self, name: str, *, worker: str, ttl: timedelta) -> bool:
        """Take or keep the lease on chore `name` (`retention`) for `worker`, until the
        database's now + `ttl`: when nobody holds it, its lease ran out, or `worker` holds it
        already. Return whether `worker` holds it now. Two workers never hold one chore at
        once."""

    @abstractmethod
    async def release_chore(self, name: str, *, worker: str) -> None:
        """Give up the lease on chore `name` if `worker` holds it."""

    @abstractmethod
    async def note_zone_data(
        self, version: str, digests: Mapping[str, str]
    ) -> dict[str, dict[str, str]]:
        """Record the zone digests of tzdata release `version` (zone name → digest of its
        rules) unless that release is recorded already; return every recorded release's
        digests, by release: the releases due times may have been worked out with since the
        last `forget_zone_data`."""

    @abstractmethod
    async def forget_zone_data(self, *, keep: str) -> None:
        """Forget every recorded tzdata release but `keep` (after a complete rezone)."""

    @abstractmethod
    async def pending_in_zones(
        self, zones: Collection[str], *, after_id: str, scan: int
    ) -> ZonePage:
        """Of the next `scan` reminders after `after_id` in id order, the pending ones whose
        zone is in `zones`, with the last id scanned. Bounded work a call (a range scan of
        the primary key), however rare the zones are."""

    @abstractmethod
    async def reschedule(self, moves: Sequence[Move], *, now: datetime) -> list[str]:
        """Move each reminder to its new due time (and bucket) in one transaction, only while
        the row is still exactly what was read: `pending`, due at `move.was`, at
        `move.version`; the version goes up by one and `updated_at` becomes `now`, as an
        edit does. A claim, edit or cancel that landed first wins: that move changes nothing.
        Return the ids moved; wakes `listen_due` listeners for those now due soon."""

    # -- the status board ------------------------------------------------------------------

    @abstractmethod
    async def list_workers(self) -> list[WorkerState]:
        """Every worker with a heartbeat row (live, or silent for less than 10 lease times:
        older rows are forgotten at renewals), by id, each with the parts it holds a lease
        on that has not run out (by the database's clock) and the breakers it reported at
        its last heartbeat. Reads the two small tables `workers` and `leases` whole."""

    @abstractmethod
    async def count_due(self, *, first_bucket: int, last_bucket: int, cap: int) -> DueCounts:
        """How many pending reminders are due in each bucket of [first_bucket, last_bucket],
        and overdue (in any earlier bucket), each counted up to `cap`. One range scan of
        `reminders_due` per bucket, at most `cap` index entries each: the cost is bounded
        however many reminders are stored or due in one minute."""

    @abstractmethod
    async def sample_rings(
        self, *, first_minute: int, last_minute: int, per_minute: int
    ) -> list[RingMinute]:
        """For each UTC epoch minute of [first_minute, last_minute], in order: the firings
        due in it — all of them, or the `per_minute` earliest due of a minute that has more —
        counted by outcome, with p50, p99 (nearest rank) and max of `sent_at - due_at` of
        the sent ones. One range scan of `firings_due` per minute, stopped at `per_minute`;
        on PostgreSQL aggregated there, so 60 minutes answer 60 rows."""

    @abstractmethod
    async def count_queue(self, *, cap: int) -> dict[FiringState, int]:
        """How many firings are `queued` and how many `sending`, each counted up to `cap`
        (range scans of the partial indexes `firings_queued` and `firings_sending`)."""
