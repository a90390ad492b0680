"""The PostgreSQL backend: asyncpg with a pool, set-based SQL, LISTEN/NOTIFY wake-ups."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeVar

import asyncpg
from asyncpg import Record

from tocsin.domain import (
    LIST_OWNER,
    PRIORITY_RANKS,
    App,
    Armed,
    Attempt,
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
    Member,
    Outcome,
    Place,
    PlaceEvent,
    PlaceRing,
    PlaceTrigger,
    QueueStats,
    Reminder,
    ReminderStatus,
    RingMinute,
    SharedList,
    WorkerState,
    lists_of,
)
from tocsin.errors import CapReached, ListGone, ListKeptRinging, StoreError
from tocsin.ids import SHARDS, firing_id, lanes_of
from tocsin.keyring import Keyring
from tocsin.store import batches, codec
from tocsin.store.base import (
    FEED_WAITING,
    DueListener,
    FeedListener,
    Move,
    PendingTime,
    Pruned,
    Resealed,
    Store,
    ZonePage,
)
from tocsin.store.looking import Looking, pick
from tocsin.store.migrations import BATCH_PAGES, MigrationState, check_applied, migrations_for
from tocsin.store.ports.reminders import KEEP, Keep
from tocsin.store.postgres import migrating, months
from tocsin.store.postgres import queries as q
from tocsin.store.postgres.claims import ClaimLedger
from tocsin.store.postgres.failures import boundary
from tocsin.store.postgres.pool import CONNECT_TIMEOUT, Pool
from tocsin.store.postgres.wakeups import Wakeups
from tocsin.store.resealing import reseal
from tocsin.store.rows import (
    address_value,
    app_from,
    app_values,
    armed_from,
    attempt_from,
    breakers_value,
    by_owner,
    by_owner_and_kind,
    claimed_firing_from,
    contact_from,
    contact_values,
    firing_from,
    firing_id_of,
    held_parts,
    list_values,
    lists_from,
    member_values,
    place_from,
    place_values,
    quiet_from,
    quiet_values,
    reminder_from,
    ring_members,
    ring_minute_from,
    trigger_from,
    trigger_values,
    workers_from,
)
from tocsin.time.alerts import stored_alerts
from tocsin.time.quiet import QUIET_HELD, QuietHours

T = TypeVar("T")


logger = logging.getLogger(__name__)

_RETRIES = 3  # a transaction that lost a deadlock or serialization race is run again
_RETRY_STATES = {"40P01", "40001"}  # deadlock detected, serialization failure
# A statement prepared before a migration changed its table's columns (0036 drops one from
# `firings` with the service running): asyncpg forgets the connection's prepared statements
# and, outside a transaction, prepares it again itself; inside one, the transaction runs again.
_STATEMENT_OUTDATED = asyncpg.exceptions.InvalidCachedStatementError
_UNIQUE_VIOLATION = "23505"
_CLAIM_RETRIES = 5  # a claim that met an occurrence decided since its snapshot runs again
# Each sealed column's page read and conditional write (see `tocsin.store.resealing`).
_SEALED_QUERIES = {
    "apps.webhook_secret": (q.shared.SEALED_APP_SECRETS, q.RESEAL_APPS),
    "contacts.secret": (q.shared.SEALED_CONTACT_SECRETS, q.RESEAL_CONTACTS),
    "contacts.address": (q.shared.SEALED_CONTACT_ADDRESSES, q.RESEAL_CONTACT_ADDRESSES),
    "secrets.value": (q.shared.SEALED_SHARED_VALUES, q.RESEAL_SHARED_VALUES),
}


class _NothingSaved(Exception):
    """Rolls back a statement's transaction that saved nothing (`_all_or_nothing`)."""


def _cancel_args(current: Reminder, now: datetime) -> tuple[object, ...]:
    """CANCEL_REMINDER's parameters: take back the occurrence that waits as `current` reads."""
    assert current.due_at is not None
    waiting = current.due_at
    return (
        current.id,
        now,
        current.version,
        waiting,
        codec.bucket_of(waiting),
        _last_ring(current),
    )


async def _cancel_in(connection: asyncpg.Connection, reminder_id: str, now: datetime) -> bool:
    """Cancel a pending reminder in the caller's transaction, as `cancel_reminder` does: each
    try read again (a claim may take the occurrence between the read and the cancel: then a
    series' next one waits instead) and rolled back to its savepoint when a claim decided the
    occurrence first. Whether it was cancelled (False: nothing waited to ring);
    `ListKeptRinging` after as many tries as a cancel makes."""
    for _ in range(_RETRIES):
        current = await _reminder_now(connection, reminder_id, now)
        if current is None or current.due_at is None:
            return False
        try:
            async with connection.transaction():  # a savepoint
                if await connection.fetchrow(q.CANCEL_REMINDER, *_cancel_args(current, now)):
                    return True
                raise _NothingSaved
        except _NothingSaved:
            continue
    raise ListKeptRinging(f"claims kept ringing reminder {reminder_id} while it was cancelled")


async def _hold_lists(connection: asyncpg.Connection, wanted: Sequence[str]) -> None:
    """Hold every list of `wanted` until the caller's transaction ends (HOLD_LISTS), or
    `ListGone` when one was deleted."""
    if not wanted:
        return
    there = {row["id"] for row in await connection.fetch(q.HOLD_LISTS, list(wanted))}
    for list_id in wanted:
        if list_id not in there:
            raise ListGone(list_id)


def _last_ring(reminder: Reminder) -> datetime | None:
    """The due instant of the reminder's last ring as read (its firing written, or on its
    way): an API write that starts a new version keeps it for readers (`rang_due_at`)."""
    last = reminder.last_firing
    return None if last is None else last.due_at


def _starts_text(instants: list[datetime]) -> str:
    """Instants as the text of a timestamptz[] (REMINDERS_NOW's)."""
    return "{" + ",".join(instant.isoformat() for instant in instants) + "}"


async def _reminders_now(
    connection: asyncpg.Connection, rows: Sequence[Record], now: datetime | None
) -> list[Record]:
    """The reminders of `rows` (as their rows are) as they are now, judged at `now` (else the
    database's clock): their rings looked for where `looking` says (REMINDERS_NOW)."""
    search = Looking(rows, now=now or datetime.now(UTC), instant=_as_is)
    while not search.done:
        ids, starts = search.ask()
        answers = await connection.fetch(
            q.REMINDERS_NOW, ids, [_starts_text(each) for each in starts], now
        )
        search.take(answers)
    return search.found()


async def _reminder_now(
    connection: asyncpg.Connection, reminder_id: str, now: datetime | None
) -> Reminder | None:
    row = await connection.fetchrow(q.GET_REMINDER, reminder_id)
    found = [] if row is None else await _reminders_now(connection, [row], now)
    return reminder_from(found[0], _as_is) if found else None


def _first_results(results: Sequence[AttemptResult]) -> list[AttemptResult]:
    """The first result of each firing. One statement changes a firing once, with whichever
    of the results naming it the plan meets first, so only the first is sent, the one that
    applies whatever the plan (as one by one: a later result would find the firing no
    longer `sending`)."""
    seen: set[str] = set()
    first = []
    for result in results:
        if result.firing_id not in seen:
            seen.add(result.firing_id)
            first.append(result)
    return first


def _as_is(value: datetime) -> datetime:
    """asyncpg already hands `timestamptz` back as an aware datetime."""
    return value


class PostgresStore(Store):
    """`Store` on PostgreSQL. Wake-ups reach listeners in every process (LISTEN/NOTIFY)."""

    def __init__(self, pool: Pool, keyring: Keyring) -> None:
        self._pool = pool
        self._keyring = keyring
        self._wakeups = Wakeups(lambda: pool.hosts.connect(timeout=CONNECT_TIMEOUT))
        self._claims = ClaimLedger()  # this process's claims not settled yet

    @property
    def keyring(self) -> Keyring:
        return self._keyring

    @classmethod
    async def connect(
        cls, url: str, *, keyring: Keyring, acquire_timeout: float | None = None
    ) -> PostgresStore:
        """Open a connection pool to `postgresql://user@host:port/database`; stored secrets
        are sealed and opened with `keyring`. A call that waits longer than `acquire_timeout`
        seconds for a pooled connection fails with `StoreUnavailable` (None: it waits)."""
        return cls(await Pool.open(url, acquire_timeout=acquire_timeout), keyring)

    # -- plumbing ------------------------------------------------------------------------------

    async def _fetch(self, sql: str, *args: Any) -> list[Record]:
        with boundary():
            return await self._pool.fetch(sql, *args)

    async def _fetchrow(self, sql: str, *args: Any) -> Record | None:
        with boundary():
            return await self._pool.fetchrow(sql, *args)

    async def _retried(self, run: Callable[[], Awaitable[T]]) -> T:
        """`run`, again when it lost a deadlock or a serialization race or met a statement a
        migration outdated (each run all or nothing); driver errors come out as Tocsin
        errors."""
        for attempt in range(_RETRIES):
            try:
                with boundary():
                    return await run()
            except StoreError as error:
                cause = error.__cause__
                state = getattr(cause, "sqlstate", None)
                retried = state in _RETRY_STATES or isinstance(cause, _STATEMENT_OUTDATED)
                if not retried or attempt == _RETRIES - 1:
                    raise
                await asyncio.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")

    async def _transaction(self, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """Run `work` in one transaction, again when it lost a deadlock (all or nothing)."""

        async def run() -> T:
            async with self._pool.acquire() as connection, connection.transaction():
                return await work(connection)

        return await self._retried(run)

    async def _statement(self, sql: str, *args: Any) -> list[Record]:
        """One statement, a transaction of its own: one round trip, run again when it lost a
        deadlock. The scheduler's writes (CLAIM, RECORD_ATTEMPTS) run so: no planner setting
        (`store/sql/postgres.sql` says why none is needed), so no BEGIN, SET and COMMIT around
        them."""

        async def run() -> list[Record]:
            rows: list[Record] = await self._pool.fetch(sql, *args)
            return rows

        return await self._retried(run)

    async def _planned_fetch(self, sql: str, *args: Any, planning: str) -> list[Record]:
        """A statement in its own transaction, planned by `planning` (run first:
        `queries.LOAD_PLANNING`, which says why)."""

        async def work(connection: asyncpg.Connection) -> list[Record]:
            await connection.execute(planning)
            rows: list[Record] = await connection.fetch(sql, *args)
            return rows

        return await self._transaction(work)

    # -- lifecycle -----------------------------------------------------------------------------

    async def migrate(
        self, *, before_upgrade: bool = False, batch_pages: int = BATCH_PAGES
    ) -> list[int]:
        with boundary():
            async with self._pool.acquire() as connection:
                await migrating.take_turn(connection)
                try:
                    return await migrating.migrate(
                        connection, before_upgrade=before_upgrade, batch_pages=batch_pages
                    )
                finally:
                    await connection.execute(q.UNLOCK_MIGRATIONS, q.MIGRATION_LOCK_KEY)

    async def migration_states(self) -> list[MigrationState]:
        with boundary():
            async with self._pool.acquire() as connection:
                return await migrating.states(connection)

    async def check_schema(self) -> None:
        with boundary():
            async with self._pool.acquire() as connection:
                applied = await migrating.applied_versions(connection)
                if await connection.fetchval(q.READ_ONLY):
                    raise asyncpg.ReadOnlySQLTransactionError(
                        "the server is in recovery or read-only: not the primary"
                    )
        check_applied(migrations_for("postgres"), applied)

    async def close(self) -> None:
        await self._wakeups.close()
        with boundary():
            await self._pool.close()

    # -- ReminderStore: reminders --------------------------------------------------------------

    async def add_reminders(
        self,
        reminders: Sequence[Reminder],
        *,
        idempotency: IdempotencyRecord | None = None,
        cap: int = 0,
        assignees: Mapping[str, str] | None = None,
    ) -> None:
        args = _add_args(reminders, idempotency)
        triggers = [trigger_values(r.id, r.on) for r in reminders if r.on is not None]
        held = lists_of(r.owner for r in reminders)
        if assignees or held or triggers:  # a list held, its assignee, a place's trigger
            await self._transaction(
                lambda c: self._add_with(c, reminders, args, cap, assignees or {}, triggers)
            )
            return
        if len(reminders) != 1:
            with boundary():
                await self._pool.execute(q.ADD_REMINDERS, *args)
            return
        with boundary():
            saved = await self._pool.fetchval(q.ADD_REMINDER, *_one(args), cap)
        if not saved:
            raise CapReached(reminders[0].owner, reminders[0].source)

    @staticmethod
    async def _add_with(
        connection: asyncpg.Connection,
        reminders: Sequence[Reminder],
        args: list[object],
        cap: int,
        assignees: Mapping[str, str],
        triggers: list[dict[str, Any]],
    ) -> None:
        """`add_reminders` for reminders with more than their row: a list reminder's list
        held and its assignee, a place reminder's trigger, in the transaction of their save
        (a plain reminder's create stays one statement)."""
        await _hold_lists(connection, lists_of(r.owner for r in reminders))
        if len(reminders) != 1:
            await connection.execute(q.ADD_REMINDERS, *args)
        elif not await connection.fetchval(q.ADD_REMINDER, *_one(args), cap):
            raise CapReached(reminders[0].owner, reminders[0].source)
        for reminder_id, assignee in assignees.items():
            bound = q.shared.ASSIGN_REMINDER.bind(reminder_id=reminder_id, assignee=assignee)
            await connection.execute(*bound)
        saving = q.shared.SAVE_PLACE_TRIGGER
        if triggers:
            await connection.executemany(
                saving.sql, [saving.bind(**values)[1:] for values in triggers]
            )

    async def pending_counts(
        self, pairs: Sequence[tuple[str, str | None]], *, up_to: int
    ) -> dict[tuple[str, str | None], int]:
        owners, sources = [owner for owner, _ in pairs], [source for _, source in pairs]
        rows = await self._fetch(q.PENDING_COUNTS, owners, sources, up_to)
        return {(row["owner"], row["source"]): row["pending"] for row in rows}

    async def find_idempotency(self, scope: str, key: str) -> IdempotencyRecord | None:
        row = await self._fetchrow(*q.shared.FIND_IDEMPOTENCY.bind(scope=scope, key=key))
        if row is None:
            return None
        return IdempotencyRecord(
            scope=row["scope"],
            key=row["key"],
            request_hash=row["request_hash"],
            status_code=row["status_code"],
            body=bytes(row["body"]),
            created_at=row["created_at"],
        )

    async def get_reminder(
        self, reminder_id: str, *, now: datetime | None = None
    ) -> Reminder | None:
        with boundary():
            async with self._pool.acquire() as connection:
                return await _reminder_now(connection, reminder_id, now)

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
        status_value = None if status is None else status.value
        listed: list[Reminder] = []
        after = after_id or ""
        with boundary():
            async with self._pool.acquire() as connection:
                while len(listed) < limit:
                    # A page of rows that may be of `status`, then as they are now: a page
                    # whose pending rows rang their last is followed by the next one.
                    rows = await connection.fetch(
                        q.LIST_REMINDERS, owner, after, status_value, limit, source
                    )
                    found = pick(await _reminders_now(connection, rows, now), status_value)
                    listed += [reminder_from(row, _as_is) for row in found]
                    if len(rows) < limit:
                        break
                    after = rows[-1]["id"]
        return listed[:limit]

    async def update_reminder(
        self,
        reminder: Reminder,
        *,
        expected_version: int,
        waiting: datetime | None,
        assignee: str | Keep | None = KEEP,
    ) -> Reminder | None:
        wake = [codec.wake_payload(*pair) for pair in codec.wake_ups([reminder])]
        args = (
            reminder.id,
            expected_version,
            reminder.text,
            reminder.channel.value,
            reminder.schedule.zone,
            codec.anchor_to_text(reminder.schedule.anchor),
            reminder.schedule.rule,
            reminder.at,
            reminder.repeat,
            reminder.status.value,
            reminder.due_at,
            None if reminder.due_at is None else codec.bucket_of(reminder.due_at),
            reminder.freshness,
            codec.dump_json(reminder.metadata),
            wake,
            reminder.updated_at,
            codec.stored_priority(reminder.priority),
            waiting,
            None if waiting is None else codec.bucket_of(waiting),
            _last_ring(reminder),
            codec.stored_flag(reminder.ignore_quiet_hours),
            stored_alerts(reminder.schedule.alerts),
            reminder.schedule.nag or None,
            reminder.schedule.nags or None,
        )
        reassign = None if assignee is KEEP else partial(_reassign, reminder.id, assignee)
        trigger = None
        if reminder.on is not None:
            trigger = q.shared.SAVE_PLACE_TRIGGER.bind(**trigger_values(reminder.id, reminder.on))

        async def then(connection: asyncpg.Connection) -> None:
            if reassign is not None:
                await reassign(connection)
            if trigger is not None:
                await connection.execute(*trigger)

        row = await self._all_or_nothing(q.UPDATE_REMINDER, *args, then=then)
        return None if row is None else reminder_from(row, _as_is)

    async def cancel_reminder(self, reminder_id: str, *, now: datetime) -> Reminder | None:
        # A claim may take the occurrence between the read and the cancel: then a series'
        # next one waits instead, read again (a one-off's ring went: nothing waits).
        for _ in range(_RETRIES):
            current = await self.get_reminder(reminder_id, now=now)
            if current is None or current.due_at is None:
                return None
            row = await self._all_or_nothing(q.CANCEL_REMINDER, *_cancel_args(current, now))
            if row is not None:
                return reminder_from(row, _as_is)
        return None

    async def _all_or_nothing(
        self,
        sql: str,
        *args: Any,
        then: Callable[[asyncpg.Connection], Awaitable[None]] | None = None,
    ) -> Record | None:
        """The one row `sql` answers, in a transaction rolled back when it answers none: a
        statement that took an occurrence back but saved nothing leaves it waiting. `then`
        runs in the same transaction once it answered one."""

        async def work(connection: asyncpg.Connection) -> Record | None:
            row: Record | None = await connection.fetchrow(sql, *args)
            if row is None:
                raise _NothingSaved
            if then is not None:
                await then(connection)
            return row

        try:
            return await self._transaction(work)
        except _NothingSaved:
            return None

    async def snooze_firing(
        self, firing_id: str, reminder: Reminder, *, assignee: str | None = None
    ) -> str | None:
        async def work(connection: asyncpg.Connection) -> str | None:
            await _hold_lists(connection, lists_of([reminder.owner]))
            snoozed_by: str | None = await connection.fetchval(
                q.MARK_SNOOZED, reminder.id, firing_id
            )
            if snoozed_by == reminder.id:
                await connection.execute(q.ADD_REMINDERS, *_add_args([reminder], None))
                if assignee is not None:
                    assigned = q.shared.ASSIGN_REMINDER.bind(
                        reminder_id=reminder.id, assignee=assignee
                    )
                    await connection.execute(*assigned)
            return snoozed_by

        return await self._transaction(work)

    async def mark_done(self, firing_id: str, now: datetime) -> Firing | None:
        found = await self._firings(q.MARK_DONE, firing_id, now)
        return found[0] if found else None

    async def list_firings(self, reminder_id: str, *, limit: int = 50) -> list[Firing]:
        with boundary():
            async with self._pool.acquire() as connection:
                current = await _reminder_now(connection, reminder_id, None)
        if current is None or current.last_firing is None:
            return []
        last = current.last_firing.due_at
        return await self._firings(q.LIST_FIRINGS, reminder_id, last, limit)

    async def _firings(self, statement: str, *args: object) -> list[Firing]:
        """The firings `statement` answers, each with its attempts, read in its transaction."""
        with boundary():
            async with self._pool.acquire() as connection, connection.transaction():
                firings = await connection.fetch(statement, *args)
                ids = [firing_id_of(row) for row in firings]
                attempts = await connection.fetch(q.LIST_ATTEMPTS, ids) if ids else []
        history: dict[str, list[Attempt]] = {}
        for row in attempts:
            history.setdefault(row["firing_id"], []).append(attempt_from(row, _as_is))
        return [
            firing_from(row, tuple(history.get(identity, ())), _as_is)
            for row, identity in zip(firings, ids, strict=True)
        ]

    # -- AppStore: apps, keys and secrets ------------------------------------------------------

    async def add_app(self, app: App) -> None:
        try:
            with boundary():
                values = app_values(app, _as_is, self._keyring)
                await self._pool.execute(*q.shared.INSERT_APP.bind(**values))
        except StoreError as error:
            if isinstance(error.__cause__, asyncpg.UniqueViolationError):
                raise StoreError(f"an app named {app.name!r} (or with this key) exists") from error
            raise

    async def find_app(self, *, name: str | None = None, key_hash: str | None = None) -> App | None:
        if (name is None) == (key_hash is None):
            raise ValueError("give exactly one of name and key_hash")
        if name is not None:
            row = await self._fetchrow(*q.shared.FIND_APP_BY_NAME.bind(name=name))
        else:
            row = await self._fetchrow(*q.shared.FIND_APP_BY_KEY_HASH.bind(key_hash=key_hash))
        return None if row is None else app_from(row, _as_is, self._keyring)

    async def list_apps(self) -> list[App]:
        return [app_from(row, _as_is, self._keyring) for row in await self._fetch(q.LIST_APPS)]

    async def count_apps(self) -> int:
        with boundary():
            count: int = await self._pool.fetchval(q.COUNT_APPS)
            return count

    async def revoke_app(self, name: str, at: datetime) -> bool:
        return await self._changed(*q.shared.REVOKE_APP.bind(at=at, name=name))

    async def replace_app_key(self, name: str, *, key_hash: str, key_prefix: str) -> bool:
        statement = q.shared.REPLACE_APP_KEY
        return await self._changed(
            *statement.bind(key_hash=key_hash, key_prefix=key_prefix, name=name)
        )

    async def revoke_owner_tokens(self, owner: str, before: datetime) -> None:
        await self._fetch(q.REVOKE_OWNER_TOKENS, owner, before)

    async def owner_tokens_revoked_before(self, owner: str) -> datetime | None:
        with boundary():
            before: datetime | None = await self._pool.fetchval(
                *q.shared.OWNER_TOKENS_REVOKED_BEFORE.bind(owner=owner)
            )
            return before

    async def _changed(self, sql: str, *args: Any) -> bool:
        """Run one write; whether it changed a row (from the command tag, `UPDATE 1`)."""
        with boundary():
            status: str = await self._pool.execute(sql, *args)
        return int(status.rsplit(" ", 1)[-1]) > 0

    async def ensure_secret(self, name: str, value: str) -> str:
        sealed = self._keyring.seal(value)
        with boundary():
            async with self._pool.acquire() as connection:
                await connection.execute(
                    *q.shared.KEEP_FIRST_SHARED_VALUE.bind(name=name, value=sealed)
                )
                saved: str = await connection.fetchval(*q.shared.READ_SHARED_VALUE.bind(name=name))
        return self._keyring.open(saved)

    async def reseal_secrets(self) -> Resealed:
        return await reseal(self._keyring, self._sealed_page, self._reseal_page)

    async def _sealed_page(self, column: str, after: str, limit: int) -> list[tuple[str, str]]:
        rows = await self._fetch(*_SEALED_QUERIES[column][0].bind(after=after, limit=limit))
        return [(row[0], row[1]) for row in rows]

    async def _reseal_page(self, column: str, changes: Sequence[tuple[str, str, str]]) -> int:
        keys, old, new = (list(values) for values in zip(*changes, strict=True))
        return len(await self._fetch(_SEALED_QUERIES[column][1], keys, old, new))

    async def disable_webhook(self, name: str) -> None:
        with boundary():
            await self._pool.execute(q.DISABLE_WEBHOOK, name)

    # -- PlaceStore: places --------------------------------------------------------------------

    async def add_place(self, place: Place) -> None:
        with boundary():
            await self._pool.execute(*q.shared.INSERT_PLACE.bind(**place_values(place, _as_is)))

    async def get_place(self, place_id: str) -> Place | None:
        row = await self._fetchrow(*q.shared.GET_PLACE.bind(id=place_id))
        return None if row is None else place_from(row, _as_is)

    async def list_places(
        self,
        owner: str,
        *,
        source: str | None = None,
        after_id: str | None = None,
        limit: int = 50,
    ) -> list[Place]:
        rows = await self._fetch(q.LIST_PLACES, owner, after_id or "", limit, source)
        return [place_from(row, _as_is) for row in rows]

    async def count_places(self, owner: str, source: str | None, *, up_to: int) -> int:
        with boundary():
            counted: int = await self._pool.fetchval(q.COUNT_PLACES, owner, source, up_to)
        return counted

    async def update_place(self, place: Place) -> Place | None:
        values = place_values(place, _as_is)
        del values["owner"], values["shard"], values["source"], values["created_at"]
        row = await self._fetchrow(*q.shared.UPDATE_PLACE.bind(**values))
        return None if row is None else place_from(row, _as_is)

    async def delete_place(self, place_id: str) -> bool:
        return await self._fetchrow(*q.shared.DELETE_PLACE.bind(id=place_id)) is not None

    # -- PlaceRingStore: rings at places --------------------------------------------------------

    async def place_triggers(self, reminder_ids: Sequence[str]) -> dict[str, PlaceTrigger]:
        if not reminder_ids:
            return {}
        rows = await self._fetch(q.PLACE_TRIGGERS_OF, list(reminder_ids))
        return {row["reminder_id"]: trigger_from(row) for row in rows}

    async def armed_at(self, place_id: str, event: PlaceEvent) -> list[Armed]:
        armed = q.shared.ARMED_AT_PLACE.bind(place_id=place_id, event=event.value)
        return [armed_from(row, _as_is) for row in await self._fetch(*armed)]

    async def pending_at_place(self, place_id: str, *, limit: int) -> list[str]:
        pending = q.shared.PENDING_AT_PLACE.bind(place_id=place_id, limit=limit)
        return [row[0] for row in await self._fetch(*pending)]

    async def ring_at_place(self, rings: Sequence[PlaceRing], *, now: datetime) -> list[str]:
        if not rings:
            return []
        columns = (
            [ring.reminder_id for ring in rings],
            [ring.version for ring in rings],
            [ring.place_id for ring in rings],
            [ring.event.value for ring in rings],
            [ring.at for ring in rings],
            [ring.deadline for ring in rings],
            [ring.day for ring in rings],
            [ring.flap_since for ring in rings],
            [firing_id(ring.reminder_id, ring.at) for ring in rings],
        )
        return [row[0] for row in await self._statement(q.RING_AT_PLACE, *columns, now)]

    # -- QuietHoursStore: quiet hours ------------------------------------------------------------

    async def save_quiet_hours(self, quiet: QuietHours) -> None:
        with boundary():
            values = quiet_values(quiet, _as_is)
            await self._pool.execute(*q.shared.SAVE_QUIET_HOURS.bind(**values))

    async def list_quiet_hours(self, owner: str) -> list[QuietHours]:
        rows = await self._fetch(*q.shared.LIST_QUIET_HOURS.bind(owner=owner))
        return [quiet_from(row, _as_is) for row in rows]

    async def delete_quiet_hours(self, owner: str, source: str | None) -> bool:
        deleted = q.shared.DELETE_QUIET_HOURS.bind(owner=owner, saver=source or "")
        return await self._fetchrow(*deleted) is not None

    async def quiet_hours_of(self, owners: Sequence[str]) -> dict[str, list[QuietHours]]:
        if not owners:
            return {}
        return by_owner(
            quiet_from(row, _as_is) for row in await self._fetch(q.QUIET_HOURS_OF, list(owners))
        )

    async def ignoring_quiet_hours(self, reminder_ids: Sequence[str]) -> set[str]:
        rows = await self._fetch(q.IGNORING_QUIET_HOURS, list(reminder_ids))
        return {row["id"] for row in rows}

    # -- ListStore: shared lists -----------------------------------------------------------------

    async def add_list(self, shared: SharedList) -> None:
        async def work(connection: asyncpg.Connection) -> None:
            await connection.execute(*q.shared.INSERT_LIST.bind(**list_values(shared, _as_is)))
            for member in shared.members:
                await connection.execute(
                    *q.shared.SAVE_MEMBER.bind(**member_values(member, _as_is))
                )

        await self._transaction(work)

    async def get_list(self, list_id: str) -> SharedList | None:
        found = lists_from(await self._fetch(*q.shared.GET_LIST.bind(id=list_id)), _as_is)
        return found[0] if found else None

    async def member_lists(self, member: str) -> list[SharedList]:
        return lists_from(await self._fetch(*q.shared.MEMBER_LISTS.bind(member=member)), _as_is)

    async def app_lists(self, source: str) -> list[SharedList]:
        return lists_from(await self._fetch(*q.shared.APP_LISTS.bind(source=source)), _as_is)

    async def rename_list(self, list_id: str, name: str, now: datetime) -> bool:
        renamed = q.shared.RENAME_LIST.bind(id=list_id, name=name, now=now)
        return await self._fetchrow(*renamed) is not None

    async def save_member(self, member: Member) -> None:
        with boundary():
            await self._pool.execute(*q.shared.SAVE_MEMBER.bind(**member_values(member, _as_is)))

    async def join_list(self, list_id: str, member: str, now: datetime) -> bool:
        joined = q.shared.JOIN_LIST.bind(list_id=list_id, member=member, now=now)
        return await self._fetchrow(*joined) is not None

    async def remove_member(self, list_id: str, member: str) -> bool:
        removed = q.shared.REMOVE_MEMBER.bind(list_id=list_id, member=member)
        return await self._fetchrow(*removed) is not None

    async def delete_list(self, list_id: str, *, now: datetime) -> int | None:
        async def work(connection: asyncpg.Connection) -> int | None:
            await connection.execute(*q.shared.DELETE_MEMBERS.bind(id=list_id))
            # The list's row locked by its delete: a save in the list waits for it (HOLD_LISTS)
            # or is waited for here; its reminder is then among those read next.
            if await connection.fetchrow(*q.shared.DELETE_LIST.bind(id=list_id)) is None:
                return None
            owner = q.shared.PENDING_OF_OWNER.bind(owner=LIST_OWNER + list_id)
            pending = [row["id"] for row in await connection.fetch(*owner)]
            return sum([await _cancel_in(connection, one, now) for one in pending])

        return await self._transaction(work)

    async def list_rings(
        self, rings: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[str]]:
        if not rings:
            return {}
        lists = {reminder_id: list_id for list_id, reminder_id in rings}
        rows = await self._fetch(q.LIST_RINGS, list(lists), list(lists.values()))
        return ring_members(rows, lists)

    async def assignees_of(self, reminder_ids: Sequence[str]) -> dict[str, str]:
        if not reminder_ids:
            return {}
        rows = await self._fetch(q.ASSIGNEES_OF, list(reminder_ids))
        return {row["reminder_id"]: row["assignee"] for row in rows}

    # -- ContactStore: contacts ----------------------------------------------------------------

    async def add_contact(self, contact: Contact) -> None:
        with boundary():
            values = contact_values(contact, _as_is, self._keyring)
            await self._pool.execute(*q.shared.INSERT_CONTACT.bind(**values))

    async def get_contact(self, contact_id: str) -> Contact | None:
        row = await self._fetchrow(*q.shared.GET_CONTACT.bind(id=contact_id))
        return None if row is None else contact_from(row, _as_is, self._keyring)

    async def list_contacts(
        self,
        owner: str,
        *,
        kind: Channel | None = None,
        source: str | None = None,
        after_id: str | None = None,
        limit: int = 50,
    ) -> list[Contact]:
        kind_value = None if kind is None else kind.value
        rows = await self._fetch(q.LIST_CONTACTS, owner, after_id or "", kind_value, limit, source)
        return [contact_from(row, _as_is, self._keyring) for row in rows]

    async def count_contacts(self, owner: str, source: str | None, *, up_to: int) -> int:
        with boundary():
            counted: int = await self._pool.fetchval(q.COUNT_CONTACTS, owner, source, up_to)
        return counted

    async def update_contact(self, contact: Contact) -> Contact | None:
        row = await self._fetchrow(
            *q.shared.UPDATE_CONTACT.bind(
                id=contact.id,
                address=address_value(contact.kind, contact.address, self._keyring),
                label=contact.label,
                disabled_reason=contact.disabled_reason,
                disabled_at=contact.disabled_at,
                updated_at=contact.updated_at,
            )
        )
        return None if row is None else contact_from(row, _as_is, self._keyring)

    async def delete_contact(self, contact_id: str) -> bool:
        return await self._fetchrow(*q.shared.DELETE_CONTACT.bind(id=contact_id)) is not None

    async def disable_contact(self, contact_id: str, *, reason: str, now: datetime) -> bool:
        disable = q.shared.DISABLE_CONTACT.bind(id=contact_id, reason=reason, now=now)
        return await self._fetchrow(*disable) is not None

    async def destinations(
        self, wanted: Sequence[tuple[str, Channel]]
    ) -> dict[tuple[str, Channel], list[Contact]]:
        if not wanted:
            return {}
        owners, kinds = [owner for owner, _ in wanted], [kind.value for _, kind in wanted]
        rows = await self._fetch(q.DESTINATIONS, owners, kinds)
        return by_owner_and_kind(contact_from(row, _as_is, self._keyring) for row in rows)

    # -- SchedulerStore: the scheduler's side --------------------------------------------------

    async def load_due(
        self,
        *,
        shards: range,
        first_bucket: int,
        last_bucket: int,
        limit: int,
        after: tuple[datetime, str] | None = None,
        priority: int | None = None,
        until: datetime | None = None,
    ) -> list[DueRing]:
        if not shards or limit <= 0:
            return []
        after_due, after_id = after or (codec.BEFORE_ANY, "")
        after_bucket = first_bucket if after is None else codec.bucket_of(after_due)
        bounds = (first_bucket, last_bucket, shards.start, shards[-1], limit)
        lanes = lanes_of(shards)
        ranks = tuple(PRIORITY_RANKS.values()) if priority is None else (priority,)
        rows = await self._planned_fetch(
            q.load_due(len(lanes), ranks),
            *bounds,
            after_due,
            after_id,
            after_bucket,
            lanes.start,
            codec.AFTER_ALL if until is None else until,
            planning=q.LOAD_PLANNING,
        )
        return [codec.due_ring_of(*row) for row in rows]

    async def claim(
        self,
        claims: Sequence[Claim],
        *,
        sender: str,
        now: datetime,
        lease: timedelta,
        fence: Fence | None = None,
    ) -> list[Firing]:
        if not claims:
            return []
        if any(claim.content is None for claim in claims):
            raise ValueError("a claim carries what its ring says (`Claim.content`, from its load)")
        # The same order in every batch keeps two overlapping batches from deadlocking often.
        ordered = sorted(claims, key=lambda claim: claim.reminder_id)
        lease_until = now + lease
        columns = batches.claim_columns(ordered, fence, None)._asdict()
        args = (
            batches.POSTGRES_CLAIMS.json(columns),
            now,
            sender,
            lease_until,
            None if fence is None else fence.parts,
            FEED_WAITING,
        )
        rows = await self._claimed(args)
        firings = [
            claimed_firing_from(
                row, _as_is, sender=sender, lease_until=lease_until, now=now, stored=row["stored"]
            )
            for row in rows
        ]
        if rows and rows[0]["claim"] is not None:
            unwritten = [firing.id for firing in firings if not firing.stored]
            self._claims.opened(rows[0]["claim"], unwritten, hold_until=lease_until, now=now)
        return firings

    async def _claimed(self, args: tuple[Any, ...]) -> list[Record]:
        """CLAIM, run again when its ring met a key of `rings` inserted since its snapshot (an
        API write took the occurrence back, or another claim decided it, and committed while
        this one ran): the statement fails whole, and run again, it passes that occurrence by."""
        for attempt in range(_CLAIM_RETRIES):
            try:
                return await self._statement(q.CLAIM, *args)
            except StoreError as error:
                cause = error.__cause__
                decided = isinstance(cause, asyncpg.UniqueViolationError) and (
                    cause.constraint_name == "rings_pkey"
                )
                if not decided or attempt == _CLAIM_RETRIES - 1:
                    raise
        raise AssertionError("unreachable")

    async def load_saved(
        self,
        *,
        shards: range,
        since: datetime | None,
        last_bucket: int,
        limit: int,
        priority: int | None = None,
        through: datetime | None = None,
    ) -> tuple[list[DueRing], datetime]:
        lanes = lanes_of(shards)
        ranks = tuple(PRIORITY_RANKS.values()) if priority is None else (priority,)
        read_at = await self.database_time()
        rows = await self._fetch(
            q.load_saved(len(lanes), ranks),
            lanes.start,
            last_bucket,
            shards.start,
            shards[-1],
            limit,
            codec.BEFORE_ANY if since is None else since,
            codec.AFTER_ALL if through is None else through,
        )
        return [codec.due_ring_of(*row) for row in rows], read_at

    async def renew_leases(
        self, worker: str, *, parts: int, ttl: timedelta, breakers: Sequence[str] = ()
    ) -> HeldParts:
        async def work(connection: asyncpg.Connection) -> HeldParts:
            return await _renew(connection, worker, parts, ttl, breakers)

        return await self._transaction(work)

    async def release_leases(self, worker: str, *, parts: Sequence[int] | None = None) -> None:
        async def work(connection: asyncpg.Connection) -> None:
            if parts is None:
                await connection.execute(*q.shared.RELEASE_ALL.bind(worker=worker))
                await connection.execute(*q.shared.FORGET_WORKER.bind(worker=worker))
            else:
                await connection.execute(q.RELEASE_SOME, worker, list(parts))
            await connection.execute(q.LEASES_CHANGED, worker)

        await self._transaction(work)

    async def advance_watermark(
        self, worker: str, *, part: int, bucket: int, swept_at: datetime
    ) -> bool:
        row = await self._fetchrow(q.ADVANCE_WATERMARK, worker, part, bucket, swept_at)
        return row is not None

    async def database_time(self) -> datetime:
        row = await self._fetchrow("SELECT clock_timestamp() AS now")
        assert row is not None
        now: datetime = row["now"]
        return now

    # -- DeliveryQueue: the delivery queue -----------------------------------------------------

    async def take_deliveries(
        self, *, sender: str, shards: range | None, now: datetime, lease: timedelta, limit: int
    ) -> list[Firing]:
        if limit <= 0 or (shards is not None and not shards):
            return []
        first, last = (0, SHARDS - 1) if shards is None else (shards.start, shards[-1])

        # One statement, in a transaction of its own for its planner setting.
        until = now + lease
        rows = await self._planned_fetch(
            q.TAKE_DELIVERIES, now, first, last, limit, sender, until, planning=q.TAKE_PLANNING
        )
        return [firing_from(row, (), _as_is) for row in rows]

    async def record_attempts(self, results: Sequence[AttemptResult]) -> int:
        if not results:
            return 0
        results = _first_results(results)
        # A ring whose firing is not written is its claim's sender's to write; any other
        # result goes by the firing row, which holds whose it is.
        unwritten = [r for r in results if r.firing is not None and r.firing.sender == r.sender]
        applied = await self._write_firings(unwritten) if unwritten else 0
        if len(unwritten) < len(results):
            held = [r for r in results if r.firing is None or r.firing.sender != r.sender]
            applied += await self._update_firings(held)
        return applied

    async def _update_firings(self, results: Sequence[AttemptResult]) -> int:
        columns = batches.result_columns(results, None)._asdict()
        held = [FiringState.SENDING.value] * len(results)  # the state each was handed out in
        args = (
            batches.POSTGRES_RESULTS.json(columns | {"held_state": held}),
            batches.POSTGRES_EARLIER.json(batches.earlier_columns(results, None)._asdict()),
        )
        rows = await self._statement(q.RECORD_ATTEMPTS, *args)
        applied: int = rows[0][0]
        return applied

    async def _write_firings(
        self,
        results: Sequence[AttemptResult],
        *,
        after_recovery: str = q.INSERT_FIRINGS_AFTER_RECOVERY,
    ) -> int:
        """Write the firings that claims did not (`AttemptResult.firing`), each with its
        result: one plain INSERT, or, when one of them is written already, the INSERT that
        meets it (`after_recovery`)."""
        firings = batches.firing_columns(
            [result.firing for result in results if result.firing is not None]
        )
        columns = batches.result_columns(results, None)._asdict()
        settled = self._claims.settled_by(firings.firing_id)  # deleted with their last firings
        args = (
            # Both name `firing_id`, the same id: the firing's, on the right, is the one sent.
            batches.POSTGRES_UNWRITTEN.json(columns | firings._asdict()),
            batches.POSTGRES_EARLIER.json(batches.earlier_columns(results, None)._asdict()),
            settled,
        )
        try:
            rows = await self._statement(q.INSERT_FIRINGS, *args)
        except StoreError as error:
            if getattr(error.__cause__, "sqlstate", None) != _UNIQUE_VIOLATION:
                raise
            rows = await self._statement(after_recovery, *args)
        # Each firing is written now: by this statement, or by recovery (its claim is gone).
        if done := self._claims.written(firings.firing_id, settled):
            await self._statement(q.FORGET_CLAIMS, done)
        applied: int = rows[0][0]
        return applied

    async def release_deliveries(
        self, firings: Sequence[Firing], *, sender: str, now: datetime
    ) -> int:
        if not firings:
            return 0
        unwritten = [
            AttemptResult(
                firing_id=firing.id,
                sender=sender,
                state=FiringState.QUEUED,
                next_attempt_at=now,
                firing=firing,
            )
            for firing in firings
            if not firing.stored and firing.sender == sender
        ]
        released = 0
        if unwritten:
            released = await self._write_firings(
                _first_results(unwritten), after_recovery=q.INSERT_FIRINGS_UNLESS_WRITTEN
            )
        held = [firing.id for firing in firings if firing.stored]
        if held:
            with boundary():
                status: str = await self._pool.execute(q.RELEASE_DELIVERIES, held, sender, now)
            released += int(status.rsplit(" ", 1)[-1])
        return released

    async def recover_claims(self, *, now: datetime, limit: int) -> int:
        rows = await self._statement(q.RECOVER_CLAIMS, now, limit)
        written: int = rows[0][0]
        return written

    async def settled_destinations(self, firing_id: str) -> dict[str, Outcome]:
        rows = await self._fetch(q.SETTLED_DESTINATIONS, firing_id)
        return {row["destination"]: Outcome(row["outcome"]) for row in rows}

    # -- Notifier: wake-ups and announcements --------------------------------------------------

    async def listen_due(self, listener: DueListener) -> Callable[[], None]:
        with boundary():
            return await self._wakeups.add(listener)

    async def listen_leases(self, listener: Callable[[], None]) -> Callable[[], None]:
        with boundary():
            return await self._wakeups.add_leases(listener)

    async def listen_revocations(self, listener: Callable[[str], None]) -> Callable[[], None]:
        with boundary():
            return await self._wakeups.add_revocations(listener)

    async def announce_feed(self, rings: Sequence[tuple[str, str]]) -> None:
        if rings:
            await self._fetch(q.ANNOUNCE_FEED, codec.feed_payloads(rings))

    async def listen_feed(
        self, listener: FeedListener, *, on_gap: Callable[[], None]
    ) -> Callable[[], None]:
        with boundary():
            return await self._wakeups.add_feed(listener, on_gap)

    # -- FeedStore: the in-app feed ------------------------------------------------------------

    async def feed_firings(
        self, owner: str, *, now: datetime, after: str | None = None, limit: int = 500
    ) -> list[Firing]:
        rows = await self._fetch(q.FEED_FIRINGS, owner, now, after, limit)
        return [firing_from(row, (), _as_is) for row in rows]

    async def feed_rings(self, firing_ids: Sequence[str], *, now: datetime) -> list[Firing]:
        if not firing_ids:
            return []
        rows = await self._fetch(q.FEED_RINGS, list(firing_ids), now)
        return [firing_from(row, (), _as_is) for row in rows]

    async def mark_feed_sent(self, firing_ids: Sequence[str], *, at: datetime) -> int:
        if not firing_ids:
            return 0
        row = await self._fetchrow(q.MARK_FEED_SENT, list(firing_ids), at)
        return 0 if row is None else int(row[0])

    # -- UpkeepStore: retention and rezoning ---------------------------------------------------

    async def prune(
        self,
        *,
        firings_before: datetime,
        reminders_before: datetime,
        keys_before: datetime,
        limit: int,
        due_before: datetime | None = None,
    ) -> Pruned:
        with boundary():
            occurrences = 0
            if due_before is not None:
                occurrences = await self._tidy(due_before, limit)
            firings = await self._pool.fetchrow(q.PRUNE_FIRINGS, firings_before, limit)
            reminders = await self._pool.fetchval(q.PRUNE_REMINDERS, reminders_before, limit)
            keys = await self._pool.fetchval(q.PRUNE_IDEMPOTENCY_KEYS, keys_before, limit)
            assignees = await self._pool.execute(*q.shared.PRUNE_ASSIGNEES.bind(limit=limit))
        assert firings is not None
        return Pruned(
            firings=firings["firings"],
            attempts=firings["attempts"],
            reminders=firings["reminders"] + reminders,
            idempotency_keys=keys,
            rings=firings["rings"],
            occurrences=occurrences,
            assignees=int(assignees.rpartition(" ")[2]),  # the command tag: "DELETE n"
        )

    async def _tidy(self, before: datetime, limit: int) -> int:
        """The occurrences of `due` decided before `before`: a batch of the default
        partition's, and the months gone by, whole (`months`); the months ahead made."""
        async with self._pool.acquire() as connection:
            tidied: int = await connection.fetchval(q.TIDY_DUE, codec.bucket_of(before), limit)
            await months.make_months(connection, before)
            return tidied + await months.drop_months(connection)

    async def hold_chore(self, name: str, *, worker: str, ttl: timedelta) -> bool:
        return await self._fetchrow(q.HOLD_CHORE, name, worker, ttl) is not None

    async def release_chore(self, name: str, *, worker: str) -> None:
        with boundary():
            await self._pool.execute(*q.shared.RELEASE_CHORE.bind(name=name, worker=worker))

    async def note_zone_data(
        self, version: str, digests: Mapping[str, str]
    ) -> dict[str, dict[str, str]]:
        zones = sorted(digests)
        with boundary():
            async with self._pool.acquire() as connection:
                if not await connection.fetchval(q.ZONE_DATA_RECORDED, version):
                    values = [digests[zone] for zone in zones]
                    await connection.execute(q.RECORD_ZONE_DATA, version, zones, values)
                rows = await connection.fetch(q.ZONE_DATA)
        recorded: dict[str, dict[str, str]] = {}
        for row in rows:
            recorded.setdefault(row["version"], {})[row["zone"]] = row["digest"]
        return recorded

    async def forget_zone_data(self, *, keep: str) -> None:
        with boundary():
            await self._pool.execute(*q.shared.FORGET_ZONE_DATA.bind(keep=keep))

    async def pending_in_zones(
        self, zones: Collection[str], *, after_id: str, scan: int
    ) -> ZonePage:
        with boundary():
            async with self._pool.acquire() as connection:
                page_end = q.shared.ZONE_PAGE_END.bind(after=after_id, scan=scan)
                last_id: str | None = await connection.fetchval(*page_end)
                rows = []
                if last_id is not None:
                    rows = await connection.fetch(
                        q.PENDING_IN_ZONES, after_id, last_id, list(zones)
                    )
                    rows = await _reminders_now(connection, rows, None)
        pending = [row for row in rows if row["now_due"] is not None]
        return ZonePage(rows=[_pending_time(row) for row in pending], last_id=last_id)

    async def reschedule(self, moves: Sequence[Move], *, now: datetime) -> list[str]:
        if not moves:
            return []
        ordered = sorted(moves, key=lambda move: move.reminder_id)  # lock in one order
        wake = [codec.wake_payload(*pair) for pair in codec.move_wake_ups(ordered, now)]
        args = (
            [move.reminder_id for move in ordered],
            [move.version for move in ordered],
            [move.was for move in ordered],
            [move.due_at for move in ordered],
            [codec.bucket_of(move.due_at) for move in ordered],
            now,
            wake,
            [codec.bucket_of(move.was) for move in ordered],
            [move.rang for move in ordered],
        )

        async def work(connection: asyncpg.Connection) -> list[Record]:
            rows: list[Record] = await connection.fetch(q.RESCHEDULE, *args)
            if rows and rows[0]["taken"] != len(rows):
                raise _NothingSaved  # an occurrence taken back but not moved: keep it
            return rows

        try:
            rows = await self._transaction(work)
        except _NothingSaved:
            return []
        return [row["id"] for row in rows]

    # -- StatusReads: the status board and metrics ---------------------------------------------

    async def list_workers(self) -> list[WorkerState]:
        async def work(connection: asyncpg.Connection) -> list[WorkerState]:
            workers = await connection.fetch(q.STATUS_WORKERS)
            leases = await connection.fetch(q.STATUS_LEASES)
            return workers_from(workers, leases, _as_is)

        return await self._transaction(work)

    async def count_due(self, *, first_bucket: int, last_bucket: int, cap: int) -> DueCounts:
        async def work(connection: asyncpg.Connection) -> DueCounts:
            await connection.execute(q.STATUS_PLANNING)
            rows = await connection.fetch(q.COUNT_DUE, first_bucket, last_bucket, cap)
            overdue: int = await connection.fetchval(q.COUNT_OVERDUE, first_bucket, cap)
            buckets = {row["bucket"]: row["due"] for row in rows if row["due"]}
            return DueCounts(overdue=overdue, buckets=buckets)

        return await self._transaction(work)

    async def sample_rings(
        self, *, first_minute: int, last_minute: int, per_minute: int
    ) -> list[RingMinute]:
        async def work(connection: asyncpg.Connection) -> list[RingMinute]:
            await connection.execute(q.STATUS_PLANNING)
            rows = await connection.fetch(q.SAMPLE_RINGS, first_minute, last_minute, per_minute)
            return sorted((ring_minute_from(row) for row in rows), key=lambda m: m.minute)

        return await self._transaction(work)

    async def count_queue(self, *, cap: int) -> dict[FiringState, int]:
        async def work(connection: asyncpg.Connection) -> dict[FiringState, int]:
            await connection.execute(q.STATUS_PLANNING)
            row = await connection.fetchrow(*q.shared.COUNT_QUEUE.bind(cap=cap))
            return {FiringState.QUEUED: row[0], FiringState.SENDING: row[1]}

        return await self._transaction(work)

    async def count_quiet_held(self, *, cap: int) -> int:
        async def work(connection: asyncpg.Connection) -> int:
            await connection.execute(q.STATUS_PLANNING)
            counted = q.shared.COUNT_QUIET.bind(cap=cap, held=QUIET_HELD + "%")
            held: int = await connection.fetchval(*counted)
            return held

        return await self._transaction(work)

    async def queue_stats(self) -> QueueStats:
        async def work(connection: asyncpg.Connection) -> QueueStats:
            depth = {row["state"]: row["n"] for row in await connection.fetch(q.QUEUE_DEPTH)}
            oldest: datetime | None = await connection.fetchval(q.OLDEST_PENDING)
            return QueueStats(depth=depth, oldest_due=oldest)

        return await self._transaction(work)


# -- transactions -------------------------------------------------------------------------------


RENEWAL_TIMEOUT_FLOOR = timedelta(seconds=1)  # never shorter, however short the lease


async def _renew(
    connection: asyncpg.Connection,
    worker: str,
    parts: int,
    ttl: timedelta,
    breakers: Sequence[str],
) -> HeldParts:
    s = q.shared
    stalled = max(RENEWAL_TIMEOUT_FLOOR, ttl / 2)  # a renewal ended after this long idle
    await connection.execute(q.RENEWAL_TIMEOUT, _ms(stalled), _ms(2 * stalled))
    await _take_turn(connection, stalled)
    now: datetime = await connection.fetchval(q.DATABASE_NOW)
    joined = await connection.fetchval(*s.WAS_LIVE.bind(worker=worker, since=now - ttl)) is None
    await connection.execute(*s.BEAT.bind(worker=worker, at=now, breakers=breakers_value(breakers)))
    await connection.execute(*s.FORGET_WORKERS.bind(before=now - 10 * ttl))
    live = max(1, await connection.fetchval(*s.COUNT_LIVE.bind(since=now - ttl)))
    share = math.ceil(parts / live)
    await connection.execute(q.ENSURE_PARTS, parts)
    held = [row["part"] for row in await connection.fetch(q.HELD, parts, worker)]
    kept = held[:share]
    await connection.execute(q.KEEP_PARTS, parts, worker, kept, now + ttl)
    wanted = share - len(kept)
    taken_over = 0
    if wanted:
        taken = await connection.fetch(q.TAKE_PARTS, parts, worker, now + ttl, now, wanted)
        taken_over = sum(1 for row in taken if row["takeover"])
    if joined or len(held) > share:
        await connection.execute(q.LEASES_CHANGED, worker)
    next_expiry: datetime | None = await connection.fetchval(
        *s.NEXT_EXPIRY.bind(parts=parts, worker=worker, now=now)
    )
    rows = await connection.fetch(*s.WATERMARKS.bind(parts=parts, worker=worker))
    return held_parts(rows, live, now, next_expiry, _as_is, taken_over=taken_over)


async def _take_turn(connection: asyncpg.Connection, stalled: timedelta) -> None:
    """The renewals' turn: at once when it is free; else after ending a holder stopped inside
    its renewal for `stalled` (`END_STALLED_TURN` says how the server's own timeout misses
    one), once the holder is done (a lock timeout when it is not within twice `stalled`)."""
    if await connection.fetchval(q.TRY_TURN):
        return
    ended = await connection.fetchval(q.END_STALLED_TURN, _ms(stalled))
    if ended:
        logger.warning(
            "ended a renewal stopped inside its turn for over %g s", stalled.total_seconds()
        )
    await connection.execute(q.LOCK_RENEWALS)


def _ms(duration: timedelta) -> str:
    """A duration as a setting's milliseconds."""
    return str(int(duration.total_seconds() * 1000))


# -- rows to values ------------------------------------------------------------------------------


def _opt_bucket(instant: datetime | None) -> int | None:
    return None if instant is None else codec.bucket_of(instant)


async def _reassign(reminder_id: str, assignee: str | None, connection: asyncpg.Connection) -> None:
    """A list reminder's assignee replaced (None: none, every member) in `connection`'s
    transaction."""
    await connection.execute(*q.shared.UNASSIGN_REMINDER.bind(reminder_id=reminder_id))
    if assignee is not None:
        bound = q.shared.ASSIGN_REMINDER.bind(reminder_id=reminder_id, assignee=assignee)
        await connection.execute(*bound)


def _one(args: list[object]) -> list[object]:
    """`_add_args` for `ADD_REMINDER`, which takes each array's one value instead."""
    return [*args[:6], *(a[0] if isinstance(a, list) and a else None for a in args[6:])]


def _add_args(reminders: Sequence[Reminder], idempotency: IdempotencyRecord | None) -> list[object]:
    key: list[object] = [None] * 6
    if idempotency is not None:
        key = [
            idempotency.scope,
            idempotency.key,
            idempotency.request_hash,
            idempotency.status_code,
            idempotency.body,
            idempotency.created_at,
        ]
    columns: list[object] = [
        [r.id for r in reminders],
        [r.owner for r in reminders],
        [r.shard for r in reminders],
        [r.text for r in reminders],
        [r.channel.value for r in reminders],
        [r.schedule.zone for r in reminders],
        [codec.anchor_to_text(r.schedule.anchor) for r in reminders],
        [r.schedule.rule for r in reminders],
        [r.at for r in reminders],
        [r.repeat for r in reminders],
        [r.status.value for r in reminders],
        [r.due_at for r in reminders],
        [_opt_bucket(r.due_at) for r in reminders],
        [r.freshness for r in reminders],
        [codec.dump_json(r.metadata) for r in reminders],
        [r.source for r in reminders],
        [r.snoozed_from for r in reminders],
        [r.version for r in reminders],
        [r.created_at for r in reminders],
        [r.updated_at for r in reminders],
    ]
    wakes = [codec.wake_payload(*pair) for pair in codec.wake_ups(reminders)]
    return [
        *key,
        *columns,
        wakes,
        [codec.stored_priority(r.priority) for r in reminders],
        [codec.stored_flag(r.ignore_quiet_hours) for r in reminders],
        [stored_alerts(r.schedule.alerts) for r in reminders],
        [r.schedule.nag or None for r in reminders],
        [r.schedule.nags or None for r in reminders],
    ]


def _pending_time(row: Record) -> PendingTime:
    return PendingTime(
        reminder_id=row["id"],
        shard=row["shard"],
        schedule=codec.schedule_of_row(row),
        due_at=row["now_due"],
        version=row["version"],
        rang=row["last_due_at"],
    )
