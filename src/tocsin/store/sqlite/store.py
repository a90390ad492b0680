"""The SQLite backend: the embedded default, one file in WAL mode, writes through one thread."""

from __future__ import annotations

import logging
import math
import sqlite3
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import orjson

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
from tocsin.errors import CapReached, DuplicateIdempotencyKey, ListGone, StoreError
from tocsin.ids import SHARDS, firing_id, lanes_of
from tocsin.keyring import Keyring
from tocsin.store import batches, codec
from tocsin.store.base import (
    CAP_READS,
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
from tocsin.store.migrations import (
    MigrationState,
    check_applied,
    migrations_for,
    refuse_newer,
    sqlite_statements,
)
from tocsin.store.ports.reminders import KEEP, Keep
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
    held_parts,
    list_values,
    lists_from,
    member_values,
    place_from,
    place_ring_values,
    place_values,
    quiet_from,
    quiet_values,
    reminder_from,
    ring_members,
    ring_minute,
    trigger_from,
    trigger_values,
    workers_from,
)
from tocsin.store.sqlite import queries as q
from tocsin.store.sqlite.engine import Database, SqliteUrl
from tocsin.time.alerts import stored_alerts
from tocsin.time.quiet import QUIET_HELD, QuietHours

log = logging.getLogger(__name__)

Row = sqlite3.Row
T = TypeVar("T")
_MICROSECOND = timedelta(microseconds=1)
MINUTE_US = 60_000_000  # a bucket, in the microseconds instants are stored as
# Each sealed column's page read and conditional write (see `tocsin.store.resealing`).
_SEALED_QUERIES = {
    "apps.webhook_secret": (q.SEALED_APP_SECRETS, q.RESEAL_APP),
    "contacts.secret": (q.SEALED_CONTACT_SECRETS, q.RESEAL_CONTACT),
    "contacts.address": (q.SEALED_CONTACT_ADDRESSES, q.RESEAL_CONTACT_ADDRESS),
    "secrets.value": (q.SEALED_SHARED_VALUES, q.RESEAL_SHARED_VALUE),
}


def _us(instant: datetime) -> int:
    """An aware instant as integer microseconds since the epoch (how SQLite stores it)."""
    if instant.tzinfo is None:
        raise ValueError("instants given to the store must be timezone-aware")
    return (instant - codec.EPOCH) // _MICROSECOND


def _opt_us(instant: datetime | None) -> int | None:
    return None if instant is None else _us(instant)


def _utc(micros: int) -> datetime:
    return codec.EPOCH + timedelta(microseconds=micros)


def _trigger_params(reminders: Sequence[Reminder]) -> list[dict[str, Any]]:
    """SAVE_PLACE_TRIGGER's parameters for those of `reminders` that ring at a place."""
    return [trigger_values(r.id, r.on) for r in reminders if r.on is not None]


def _due_ring(row: Row) -> DueRing:
    """A load's row (`_LOAD_LANE`): SQLite's claim reads what the ring says itself (no
    content), and instants are microseconds."""
    return codec.due_ring(
        row["id"],
        _utc(row["due_at"]),
        row["freshness"],
        row["zone"],
        row["anchor"],
        row["rule"],
        row["alerts"],
        row["nag"],
        row["nags"],
        row["version"],
        row["priority"],
        prev_due=_opt_utc(row["prev_due"]),
    )


def _opt_utc(micros: int | None) -> datetime | None:
    return None if micros is None else _utc(micros)


def _reminders_now(connection: sqlite3.Connection, rows: Sequence[Row], now: datetime) -> list[Row]:
    """The reminders of `rows` (as their rows are) as they are now, judged at `now`: their
    rings looked for where `looking` says (REMINDERS_NOW)."""
    search = Looking(rows, now=now, instant=_utc)
    while not search.done:
        ids, starts = search.ask()
        asked = {
            "ids": orjson.dumps(ids).decode(),
            "starts": _starts_json(dict(zip(ids, starts, strict=True))),
            "now": _us(now),
        }
        search.take(connection.execute(q.REMINDERS_NOW, asked).fetchall())
    return search.found()


def _starts_json(starts: Mapping[str, Sequence[datetime]]) -> str:
    """REMINDERS_NOW's :starts: each reminder's instants to look at, by id."""
    return orjson.dumps({key: [_us(at) for at in each] for key, each in starts.items()}).decode()


def _reminder_now(connection: sqlite3.Connection, reminder_id: str, now: datetime) -> Row | None:
    row = connection.execute(q.GET_REMINDER, {"id": reminder_id}).fetchone()
    found = [] if row is None else _reminders_now(connection, [row], now)
    return found[0] if found else None


def _as_saved(connection: sqlite3.Connection, reminder_id: str, now: datetime) -> Row | None:
    """A reminder as an API write just saved it: a new version, which has not rung."""
    asked = {"ids": orjson.dumps([reminder_id]).decode(), "starts": "{}", "now": _us(now)}
    row: Row | None = connection.execute(q.REMINDERS_NOW, asked).fetchone()
    return row


def _last_ring(reminder: Reminder) -> int | None:
    """The due instant of the reminder's last ring as read, which an API write that starts a
    new version keeps for readers (`rang_due_at`)."""
    last = reminder.last_firing
    return None if last is None else _us(last.due_at)


class SqliteStore(Store):
    """`Store` on an SQLite file. Wake-ups (`listen_due`) reach this object's listeners only."""

    def __init__(self, database: Database, keyring: Keyring) -> None:
        self._db = database
        self._keyring = keyring
        self._listeners: list[DueListener] = []
        self._lease_listeners: list[Callable[[], None]] = []
        self._feed_listeners: list[FeedListener] = []
        self._revocation_listeners: list[Callable[[str], None]] = []

    @property
    def keyring(self) -> Keyring:
        return self._keyring

    @classmethod
    async def connect(cls, url: str, *, keyring: Keyring) -> SqliteStore:
        """Open (creating it when missing) the file named by `sqlite:///path/to/file.db`;
        stored secrets are sealed and opened with `keyring`."""
        database = Database(SqliteUrl.parse(url))
        try:
            await database.unlocked(lambda connection: None)  # fail now if it cannot open
        except BaseException:
            await database.close()
            raise
        return cls(database, keyring)

    # -- lifecycle -----------------------------------------------------------------------------

    async def migrate(self, *, before_upgrade: bool = False, batch_pages: int = 0) -> list[int]:
        # One process's file: no process of an earlier release runs beside the one migrating,
        # so what applies after the upgrade applies now; and no migration here is in batches.
        del before_upgrade, batch_pages
        return await self._db.unlocked(_migrate)

    async def migration_states(self) -> list[MigrationState]:
        applied = await self._db.read(_applied_versions)
        return [
            MigrationState(migration=migration, applied=migration.version in applied)
            for migration in migrations_for("sqlite")
        ]

    async def check_schema(self) -> None:
        applied = await self._db.read(_applied_versions)
        check_applied(migrations_for("sqlite"), applied)

    async def close(self) -> None:
        self._listeners.clear()
        self._lease_listeners.clear()
        self._feed_listeners.clear()
        self._revocation_listeners.clear()
        await self._db.close()

    # -- ReminderStore: reminders --------------------------------------------------------------

    async def add_reminders(
        self,
        reminders: Sequence[Reminder],
        *,
        idempotency: IdempotencyRecord | None = None,
        cap: int = 0,
        assignees: Mapping[str, str] | None = None,
    ) -> None:
        rows = [_reminder_params(reminder) for reminder in reminders]
        assigned = [{"reminder_id": r, "assignee": a} for r, a in (assignees or {}).items()]

        held = lists_of(r.owner for r in reminders)

        def work(connection: sqlite3.Connection) -> None:
            _hold_lists(connection, held)
            if cap and len(reminders) == 1:
                one = reminders[0]
                params = {"owner": one.owner, "source": one.source, "limit": CAP_READS * cap}
                if connection.execute(q.PENDING_COUNT, params).fetchone()[0] >= cap:
                    raise CapReached(one.owner, one.source)
            if idempotency is not None:
                _insert_idempotency(connection, idempotency)
            connection.executemany(q.INSERT_REMINDER, rows)
            connection.executemany(q.INSERT_DUE, rows)
            if assigned:
                connection.executemany(q.ASSIGN_REMINDER, assigned)
            if triggers:
                connection.executemany(q.SAVE_PLACE_TRIGGER, triggers)

        triggers = _trigger_params(reminders)
        await self._db.write(work)
        self._wake(codec.wake_ups(reminders))

    async def pending_counts(
        self, pairs: Sequence[tuple[str, str | None]], *, up_to: int
    ) -> dict[tuple[str, str | None], int]:
        def work(connection: sqlite3.Connection) -> dict[tuple[str, str | None], int]:
            counted = {}
            for owner, source in pairs:
                params = {"owner": owner, "source": source, "limit": up_to}
                counted[owner, source] = connection.execute(q.PENDING_COUNT, params).fetchone()[0]
            return counted

        return await self._db.read(work)

    async def find_idempotency(self, scope: str, key: str) -> IdempotencyRecord | None:
        row = await self._db.read(
            lambda connection: connection.execute(
                q.FIND_IDEMPOTENCY, {"scope": scope, "key": key}
            ).fetchone()
        )
        return None if row is None else _idempotency(row)

    async def get_reminder(
        self, reminder_id: str, *, now: datetime | None = None
    ) -> Reminder | None:
        judged = now or datetime.now(UTC)
        row = await self._db.read(lambda connection: _reminder_now(connection, reminder_id, judged))
        return None if row is None else reminder_from(row, _utc)

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
        judged = now or datetime.now(UTC)
        wanted = None if status is None else status.value
        params = {"owner": owner, "status": wanted, "source": source, "limit": limit}

        def work(connection: sqlite3.Connection) -> list[Row]:
            # A page of rows that may be of `status`, then as they are now: a page whose
            # pending rows rang their last is followed by the next one.
            listed: list[Row] = []
            after = after_id or ""
            while len(listed) < limit:
                rows = connection.execute(q.LIST_REMINDERS, params | {"after_id": after}).fetchall()
                listed += pick(_reminders_now(connection, rows, judged), wanted)
                if len(rows) < limit:
                    break
                after = rows[-1]["id"]
            return listed[:limit]

        rows = await self._db.read(work)
        return [reminder_from(row, _utc) for row in rows]

    async def update_reminder(
        self,
        reminder: Reminder,
        *,
        expected_version: int,
        waiting: datetime | None,
        assignee: str | Keep | None = KEEP,
    ) -> Reminder | None:
        params = _reminder_params(reminder) | {
            "expected_version": expected_version,
            "rang": _last_ring(reminder),
        }
        taken = None if waiting is None else _taken(reminder.id, expected_version, waiting)

        def work(connection: sqlite3.Connection) -> Row | None:
            # Taken back at the expected version, the row is at that version in this same
            # transaction, so the update saves it: all or nothing.
            if taken is not None and not _take_back(connection, taken):
                return None  # a claim took the occurrence first: it rang since the caller read it
            if connection.execute(q.UPDATE_REMINDER, params).rowcount == 0:
                return None
            connection.execute(q.INSERT_DUE, params)
            if assignee is not KEEP:
                assigned = {"reminder_id": reminder.id, "assignee": assignee}
                connection.execute(q.UNASSIGN_REMINDER, assigned)
                if assignee is not None:
                    connection.execute(q.ASSIGN_REMINDER, assigned)
            connection.executemany(q.SAVE_PLACE_TRIGGER, _trigger_params([reminder]))
            return _as_saved(connection, reminder.id, reminder.updated_at)

        row = await self._db.write(work)
        if row is None:
            return None
        saved = reminder_from(row, _utc)
        self._wake(codec.wake_ups([saved]))
        return saved

    async def cancel_reminder(self, reminder_id: str, *, now: datetime) -> Reminder | None:
        row = await self._db.write(lambda connection: _cancel(connection, reminder_id, now))
        return None if row is None else reminder_from(row, _utc)

    async def snooze_firing(
        self, firing_id: str, reminder: Reminder, *, assignee: str | None = None
    ) -> str | None:
        params = _reminder_params(reminder)
        assigned = {"reminder_id": reminder.id, "assignee": assignee}

        def work(connection: sqlite3.Connection) -> str | None:
            _hold_lists(connection, lists_of([reminder.owner]))
            row = connection.execute(q.MARK_SNOOZED, (reminder.id, firing_id)).fetchone()
            snoozed_by: str | None = None if row is None else row[0]
            if snoozed_by == reminder.id:
                connection.execute(q.INSERT_REMINDER, params)
                connection.execute(q.INSERT_DUE, params)
                if assignee is not None:
                    connection.execute(q.ASSIGN_REMINDER, assigned)
            return snoozed_by

        snoozed_by = await self._db.write(work)
        if snoozed_by == reminder.id:
            self._wake(codec.wake_ups([reminder]))
        return snoozed_by

    async def mark_done(self, firing_id: str, now: datetime) -> Firing | None:
        found = await self._firings(q.MARK_DONE, {"id": firing_id, "now": _us(now)}, write=True)
        return found[0] if found else None

    async def list_firings(self, reminder_id: str, *, limit: int = 50) -> list[Firing]:
        current = await self.get_reminder(reminder_id)
        if current is None or current.last_firing is None:
            return []
        last = _us(current.last_firing.due_at)
        return await self._firings(
            q.LIST_FIRINGS, {"rid": reminder_id, "last": last, "limit": limit}
        )

    async def _firings(
        self, statement: str, params: dict[str, Any], *, write: bool = False
    ) -> list[Firing]:
        """The firings `statement` answers, each with its attempts, in one transaction."""

        def work(connection: sqlite3.Connection) -> tuple[list[Row], list[Row]]:
            firings = connection.execute(statement, params).fetchall()
            ids = orjson.dumps([row["id"] for row in firings]).decode()
            return firings, connection.execute(q.LIST_ATTEMPTS, (ids,)).fetchall()

        run = self._db.write if write else self._db.read
        firing_rows, attempt_rows = await run(work)
        history: dict[str, list[Attempt]] = {}
        for row in attempt_rows:
            history.setdefault(row["firing_id"], []).append(attempt_from(row, _utc))
        return [firing_from(row, tuple(history.get(row["id"], ())), _utc) for row in firing_rows]

    # -- AppStore: apps, keys and secrets ------------------------------------------------------

    async def add_app(self, app: App) -> None:
        params = app_values(app, _us, self._keyring)

        def work(connection: sqlite3.Connection) -> None:
            try:
                connection.execute(q.INSERT_APP, params)
            except sqlite3.IntegrityError as error:
                raise StoreError(f"an app named {app.name!r} (or with this key) exists") from error

        await self._db.write(work)

    async def find_app(self, *, name: str | None = None, key_hash: str | None = None) -> App | None:
        if (name is None) == (key_hash is None):
            raise ValueError("give exactly one of name and key_hash")
        params: dict[str, str | None]
        if name is not None:
            sql, params = q.FIND_APP_BY_NAME, {"name": name}
        else:
            sql, params = q.FIND_APP_BY_KEY_HASH, {"key_hash": key_hash}
        row = await self._db.read(lambda connection: connection.execute(sql, params).fetchone())
        return None if row is None else app_from(row, _utc, self._keyring)

    async def list_apps(self) -> list[App]:
        rows = await self._db.read(lambda connection: connection.execute(q.LIST_APPS).fetchall())
        return [app_from(row, _utc, self._keyring) for row in rows]

    async def count_apps(self) -> int:
        row = await self._db.read(lambda connection: connection.execute(q.COUNT_APPS).fetchone())
        count: int = row[0]
        return count

    async def revoke_app(self, name: str, at: datetime) -> bool:
        return await self._changed(q.REVOKE_APP, {"at": _us(at), "name": name})

    async def replace_app_key(self, name: str, *, key_hash: str, key_prefix: str) -> bool:
        params = {"key_hash": key_hash, "key_prefix": key_prefix, "name": name}
        return await self._changed(q.REPLACE_APP_KEY, params)

    async def revoke_owner_tokens(self, owner: str, before: datetime) -> None:
        await self._changed(q.REVOKE_OWNER_TOKENS, (owner, _us(before)))
        # This process's listeners only: one made by another process (`tocsin keys`) is
        # heard by nobody (`listen_revocations` says so).
        for listener in list(self._revocation_listeners):
            try:
                listener(owner)
            except Exception:
                log.exception("a revocation listener failed", extra={"owner": owner})

    async def owner_tokens_revoked_before(self, owner: str) -> datetime | None:
        row = await self._db.read(
            lambda connection: connection.execute(
                q.OWNER_TOKENS_REVOKED_BEFORE, {"owner": owner}
            ).fetchone()
        )
        return None if row is None else _utc(row[0])

    async def _changed(self, sql: str, params: tuple[Any, ...] | dict[str, Any]) -> bool:
        """Run one write; whether it changed a row."""
        return await self._db.write(lambda connection: connection.execute(sql, params).rowcount > 0)

    async def ensure_secret(self, name: str, value: str) -> str:
        sealed = self._keyring.seal(value)

        def work(connection: sqlite3.Connection) -> str:
            connection.execute(q.KEEP_FIRST_SHARED_VALUE, {"name": name, "value": sealed})
            saved: str = connection.execute(q.READ_SHARED_VALUE, {"name": name}).fetchone()[0]
            return saved

        return self._keyring.open(await self._db.write(work))

    async def reseal_secrets(self) -> Resealed:
        return await reseal(self._keyring, self._sealed_page, self._reseal_page)

    async def _sealed_page(self, column: str, after: str, limit: int) -> list[tuple[str, str]]:
        sql = _SEALED_QUERIES[column][0]
        rows = await self._db.read(
            lambda connection: connection.execute(sql, {"after": after, "limit": limit}).fetchall()
        )
        return [(row[0], row[1]) for row in rows]

    async def _reseal_page(self, column: str, changes: Sequence[tuple[str, str, str]]) -> int:
        sql = _SEALED_QUERIES[column][1]
        params = [(new, key, old) for key, old, new in changes]

        def work(connection: sqlite3.Connection) -> int:
            return sum(connection.execute(sql, values).rowcount for values in params)

        return await self._db.write(work)

    async def disable_webhook(self, name: str) -> None:
        await self._db.write(lambda connection: connection.execute(q.DISABLE_WEBHOOK, (name,)))

    # -- PlaceStore: places --------------------------------------------------------------------

    async def add_place(self, place: Place) -> None:
        values = place_values(place, _us)
        await self._db.write(lambda connection: connection.execute(q.INSERT_PLACE, values))

    async def get_place(self, place_id: str) -> Place | None:
        row = await self._db.read(
            lambda connection: connection.execute(q.GET_PLACE, {"id": place_id}).fetchone()
        )
        return None if row is None else place_from(row, _utc)

    async def list_places(
        self,
        owner: str,
        *,
        source: str | None = None,
        after_id: str | None = None,
        limit: int = 50,
    ) -> list[Place]:
        params = {"owner": owner, "after": after_id or "", "source": source, "limit": limit}
        rows = await self._db.read(
            lambda connection: connection.execute(q.LIST_PLACES, params).fetchall()
        )
        return [place_from(row, _utc) for row in rows]

    async def count_places(self, owner: str, source: str | None, *, up_to: int) -> int:
        params = {"owner": owner, "source": source, "limit": up_to}
        row = await self._db.read(
            lambda connection: connection.execute(q.COUNT_PLACES, params).fetchone()
        )
        counted: int = row[0]
        return counted

    async def update_place(self, place: Place) -> Place | None:
        values = place_values(place, _us)
        del values["owner"], values["shard"], values["source"], values["created_at"]
        row = await self._db.write(
            lambda connection: connection.execute(q.UPDATE_PLACE, values).fetchone()
        )
        return None if row is None else place_from(row, _utc)

    async def delete_place(self, place_id: str) -> bool:
        row = await self._db.write(
            lambda connection: connection.execute(q.DELETE_PLACE, {"id": place_id}).fetchone()
        )
        return row is not None

    # -- PlaceRingStore: rings at places --------------------------------------------------------

    async def place_triggers(self, reminder_ids: Sequence[str]) -> dict[str, PlaceTrigger]:
        if not reminder_ids:
            return {}
        wanted = {"ids": orjson.dumps(list(reminder_ids)).decode()}
        rows = await self._db.read(
            lambda connection: connection.execute(q.PLACE_TRIGGERS_OF, wanted).fetchall()
        )
        return {row["reminder_id"]: trigger_from(row) for row in rows}

    async def armed_at(self, place_id: str, event: PlaceEvent) -> list[Armed]:
        wanted = {"place_id": place_id, "event": event.value}
        rows = await self._db.read(
            lambda connection: connection.execute(q.ARMED_AT_PLACE, wanted).fetchall()
        )
        return [armed_from(row, _utc) for row in rows]

    async def pending_at_place(self, place_id: str, *, limit: int) -> list[str]:
        wanted = {"place_id": place_id, "limit": limit}
        rows = await self._db.read(
            lambda connection: connection.execute(q.PENDING_AT_PLACE, wanted).fetchall()
        )
        return [row[0] for row in rows]

    async def ring_at_place(self, rings: Sequence[PlaceRing], *, now: datetime) -> list[str]:
        def work(connection: sqlite3.Connection) -> list[str]:
            written: list[str] = []
            for ring in rings:
                held = {"id": ring.reminder_id, "version": ring.version}
                pending = connection.execute(q.HOLD_PENDING, held).fetchone()
                if pending is None:
                    continue
                mark, firing = place_ring_values(ring, _us, now)
                firing["prev"] = pending["prev"]
                marked = connection.execute(q.MARK_PLACE_RING, mark).fetchone()
                if marked is None:
                    continue
                row = connection.execute(q.INSERT_PLACE_RING, firing).fetchone()
                if row is not None:
                    written.append(row[0])
                if marked["once"] == "ever":  # its one ring: it rang
                    fired = {"reminder_id": ring.reminder_id, "now": firing["now"]}
                    connection.execute(q.PLACE_DUE_GONE, fired)
                    connection.execute(q.FIRED_AT_PLACE, fired)
            return written

        return await self._db.write(work)

    # -- QuietHoursStore: quiet hours ------------------------------------------------------------

    async def save_quiet_hours(self, quiet: QuietHours) -> None:
        values = quiet_values(quiet, _us)
        await self._db.write(lambda connection: connection.execute(q.SAVE_QUIET_HOURS, values))

    async def list_quiet_hours(self, owner: str) -> list[QuietHours]:
        rows = await self._db.read(
            lambda connection: connection.execute(q.LIST_QUIET_HOURS, {"owner": owner}).fetchall()
        )
        return [quiet_from(row, _utc) for row in rows]

    async def delete_quiet_hours(self, owner: str, source: str | None) -> bool:
        key = {"owner": owner, "saver": source or ""}
        row = await self._db.write(
            lambda connection: connection.execute(q.DELETE_QUIET_HOURS, key).fetchone()
        )
        return row is not None

    async def quiet_hours_of(self, owners: Sequence[str]) -> dict[str, list[QuietHours]]:
        if not owners:
            return {}
        wanted = _json(list(owners))
        rows = await self._db.read(
            lambda connection: connection.execute(q.QUIET_HOURS_OF, (wanted,)).fetchall()
        )
        return by_owner(quiet_from(row, _utc) for row in rows)

    async def ignoring_quiet_hours(self, reminder_ids: Sequence[str]) -> set[str]:
        wanted = _json(list(reminder_ids))
        rows = await self._db.read(
            lambda connection: connection.execute(q.IGNORING_QUIET_HOURS, (wanted,)).fetchall()
        )
        return {row["id"] for row in rows}

    # -- ListStore: shared lists -----------------------------------------------------------------

    async def add_list(self, shared: SharedList) -> None:
        values = list_values(shared, _us)
        members = [member_values(member, _us) for member in shared.members]

        def work(connection: sqlite3.Connection) -> None:
            connection.execute(q.INSERT_LIST, values)
            connection.executemany(q.SAVE_MEMBER, members)

        await self._db.write(work)

    async def get_list(self, list_id: str) -> SharedList | None:
        found = await self._lists(q.GET_LIST, {"id": list_id})
        return found[0] if found else None

    async def member_lists(self, member: str) -> list[SharedList]:
        return await self._lists(q.MEMBER_LISTS, {"member": member})

    async def app_lists(self, source: str) -> list[SharedList]:
        return await self._lists(q.APP_LISTS, {"source": source})

    async def _lists(self, statement: str, params: dict[str, Any]) -> list[SharedList]:
        rows = await self._db.read(
            lambda connection: connection.execute(statement, params).fetchall()
        )
        return lists_from(rows, _utc)

    async def rename_list(self, list_id: str, name: str, now: datetime) -> bool:
        params = {"id": list_id, "name": name, "now": _us(now)}
        return await self._written(q.RENAME_LIST, params)

    async def save_member(self, member: Member) -> None:
        values = member_values(member, _us)
        await self._db.write(lambda connection: connection.execute(q.SAVE_MEMBER, values))

    async def join_list(self, list_id: str, member: str, now: datetime) -> bool:
        params = {"list_id": list_id, "member": member, "now": _us(now)}
        return await self._written(q.JOIN_LIST, params)

    async def remove_member(self, list_id: str, member: str) -> bool:
        return await self._written(q.REMOVE_MEMBER, {"list_id": list_id, "member": member})

    async def delete_list(self, list_id: str, *, now: datetime) -> int | None:
        def work(connection: sqlite3.Connection) -> int | None:
            # One write transaction: no claim, and no save in the list, comes in between.
            connection.execute(q.DELETE_MEMBERS, {"id": list_id})
            if connection.execute(q.DELETE_LIST, {"id": list_id}).fetchone() is None:
                return None
            owner = {"owner": LIST_OWNER + list_id}
            pending = [row[0] for row in connection.execute(q.PENDING_OF_OWNER, owner)]
            return sum(_cancel(connection, one, now) is not None for one in pending)

        return await self._db.write(work)

    async def _written(self, statement: str, params: dict[str, Any]) -> bool:
        """Whether `statement` (one with RETURNING) wrote a row."""
        row = await self._db.write(
            lambda connection: connection.execute(statement, params).fetchone()
        )
        return row is not None

    async def list_rings(
        self, rings: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[str]]:
        if not rings:
            return {}
        lists = {reminder_id: list_id for list_id, reminder_id in rings}
        wanted = _json([[reminder_id, list_id] for list_id, reminder_id in rings])
        rows = await self._db.read(
            lambda connection: connection.execute(q.LIST_RINGS, (wanted,)).fetchall()
        )
        return ring_members(rows, lists)

    async def assignees_of(self, reminder_ids: Sequence[str]) -> dict[str, str]:
        if not reminder_ids:
            return {}
        wanted = orjson.dumps(list(reminder_ids)).decode()
        rows = await self._db.read(
            lambda connection: connection.execute(q.ASSIGNEES_OF, (wanted,)).fetchall()
        )
        return {row["reminder_id"]: row["assignee"] for row in rows}

    # -- ContactStore: contacts ----------------------------------------------------------------

    async def add_contact(self, contact: Contact) -> None:
        values = contact_values(contact, _us, self._keyring)
        await self._db.write(lambda connection: connection.execute(q.INSERT_CONTACT, values))

    async def get_contact(self, contact_id: str) -> Contact | None:
        row = await self._db.read(
            lambda connection: connection.execute(q.GET_CONTACT, {"id": contact_id}).fetchone()
        )
        return None if row is None else contact_from(row, _utc, self._keyring)

    async def list_contacts(
        self,
        owner: str,
        *,
        kind: Channel | None = None,
        source: str | None = None,
        after_id: str | None = None,
        limit: int = 50,
    ) -> list[Contact]:
        params = {
            "owner": owner,
            "after": after_id or "",
            "kind": None if kind is None else kind.value,
            "source": source,
            "limit": limit,
        }
        rows = await self._db.read(
            lambda connection: connection.execute(q.LIST_CONTACTS, params).fetchall()
        )
        return [contact_from(row, _utc, self._keyring) for row in rows]

    async def count_contacts(self, owner: str, source: str | None, *, up_to: int) -> int:
        params = {"owner": owner, "source": source, "limit": up_to}
        row = await self._db.read(
            lambda connection: connection.execute(q.COUNT_CONTACTS, params).fetchone()
        )
        counted: int = row[0]
        return counted

    async def update_contact(self, contact: Contact) -> Contact | None:
        params = {
            "id": contact.id,
            "address": address_value(contact.kind, contact.address, self._keyring),
            "label": contact.label,
            "disabled_reason": contact.disabled_reason,
            "disabled_at": _opt_us(contact.disabled_at),
            "updated_at": _us(contact.updated_at),
        }
        row = await self._db.write(
            lambda connection: connection.execute(q.UPDATE_CONTACT, params).fetchone()
        )
        return None if row is None else contact_from(row, _utc, self._keyring)

    async def delete_contact(self, contact_id: str) -> bool:
        row = await self._db.write(
            lambda connection: connection.execute(q.DELETE_CONTACT, {"id": contact_id}).fetchone()
        )
        return row is not None

    async def disable_contact(self, contact_id: str, *, reason: str, now: datetime) -> bool:
        params = {"id": contact_id, "reason": reason, "now": _us(now)}
        row = await self._db.write(
            lambda connection: connection.execute(q.DISABLE_CONTACT, params).fetchone()
        )
        return row is not None

    async def destinations(
        self, wanted: Sequence[tuple[str, Channel]]
    ) -> dict[tuple[str, Channel], list[Contact]]:
        if not wanted:
            return {}
        pairs = _json([[owner, kind.value] for owner, kind in wanted])
        rows = await self._db.read(
            lambda connection: connection.execute(q.DESTINATIONS, (pairs,)).fetchall()
        )
        return by_owner_and_kind(contact_from(row, _utc, self._keyring) for row in rows)

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
        ranks = tuple(PRIORITY_RANKS.values()) if priority is None else (priority,)
        statement = q.load_due(ranks, lanes_of(shards))
        params = {
            "last_bucket": last_bucket,
            "first_shard": shards.start,
            "last_shard": shards[-1],
            "limit": limit,
            "after_due": _us(codec.BEFORE_ANY if after is None else after[0]),
            "after_id": "" if after is None else after[1],
            "after_bucket": first_bucket if after is None else codec.bucket_of(after[0]),
            "until": _us(codec.AFTER_ALL if until is None else until),
        }
        rows = await self._db.read(
            lambda connection: connection.execute(statement, params).fetchall()
        )
        # Each row ends with its bucket, which orders the merge of the lanes (`_LOAD_DUE`).
        return [_due_ring(row) for row in rows]

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
        now_us, until_us = _us(now), _us(now + lease)
        ordered = sorted(claims, key=lambda claim: claim.reminder_id)  # B-tree page locality
        rounds = [
            _json(
                batches.SQLITE_CLAIMS.rows(
                    batches.claim_columns(one, fence, _us)._asdict()
                    | {"firing_id": _firing_ids(one)}
                )
            )
            for one in _rounds(ordered, lambda claim: claim.reminder_id)
        ]
        held = {"now": now_us, "sender": sender, "lease_until": until_us}
        fenced = {"sender": sender, "parts": None if fence is None else fence.parts}

        def work(connection: sqlite3.Connection) -> list[str]:
            made: list[str] = []
            for batch in rounds:  # the statements' order: sqlite.sql, above CLAIMABLE
                claims = fenced | {"claims": batch}
                decided = claims | {"waiting": FEED_WAITING}
                rings, firings = connection.execute(q.CLAIMABLE, decided).fetchone()
                connection.execute(q.INSERT_RINGS, {"rings": rings})
                connection.execute(q.INSERT_NEXT_DUE, {"rings": rings})
                connection.execute(q.INSERT_FIRINGS, held | {"firings": firings})
                made.append(firings)
            return made

        made = await self._db.write(work)
        held_until, claimed_at = _utc(until_us), _utc(now_us)
        firings = [
            claimed_firing_from(row, _utc, sender=sender, lease_until=held_until, now=claimed_at)
            for text in made
            for row in orjson.loads(text)
        ]
        # The feed's rings, queued by the claim, for this process's pages (after the commit).
        await self.announce_feed(
            [(f.owner, f.id) for f in firings if f.state is FiringState.QUEUED]
        )
        return firings

    async def renew_leases(
        self, worker: str, *, parts: int, ttl: timedelta, breakers: Sequence[str] = ()
    ) -> HeldParts:
        beat = (worker, breakers_value(breakers))

        def work(connection: sqlite3.Connection) -> tuple[HeldParts, bool]:
            # The database's clock is the host's: every process sharing the file runs there.
            return _renew(connection, beat, parts, datetime.now(UTC), ttl)

        held, changed = await self._db.write(work)
        if changed:
            self._leases_changed()
        return held

    async def release_leases(self, worker: str, *, parts: Sequence[int] | None = None) -> None:
        def work(connection: sqlite3.Connection) -> None:
            if parts is None:
                connection.execute(q.RELEASE_ALL, {"worker": worker})
                connection.execute(q.FORGET_WORKER, {"worker": worker})
            else:
                connection.execute(q.RELEASE_SOME, (worker, orjson.dumps(list(parts)).decode()))

        await self._db.write(work)
        self._leases_changed()

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
        read_at = datetime.now(UTC)  # the host's clock, which `saved_at` is written by
        if not shards or limit <= 0:
            return [], read_at
        ranks = tuple(PRIORITY_RANKS.values()) if priority is None else (priority,)
        statement = q.load_saved(ranks, lanes_of(shards))
        params = {
            "since": -1 if since is None else _us(since),
            "last_bucket": last_bucket,
            "through": _us(codec.AFTER_ALL if through is None else through),
            "first_shard": shards.start,
            "last_shard": shards[-1],
            "limit": limit,
        }
        rows = await self._db.read(
            lambda connection: connection.execute(statement, params).fetchall()
        )
        return [_due_ring(row) for row in rows], read_at

    async def advance_watermark(
        self, worker: str, *, part: int, bucket: int, swept_at: datetime
    ) -> bool:
        params = {"worker": worker, "part": part, "bucket": bucket, "swept_at": _us(swept_at)}
        return await self._db.write(
            lambda connection: connection.execute(q.ADVANCE_WATERMARK, params).rowcount > 0
        )

    async def database_time(self) -> datetime:
        return datetime.now(UTC)  # an SQLite database lives on this host: its clock is ours

    # -- DeliveryQueue: the delivery queue -----------------------------------------------------

    async def take_deliveries(
        self, *, sender: str, shards: range | None, now: datetime, lease: timedelta, limit: int
    ) -> list[Firing]:
        if limit <= 0 or (shards is not None and not shards):
            return []
        first, last = (0, SHARDS - 1) if shards is None else (shards.start, shards[-1])
        window = {"now": _us(now), "first_shard": first, "last_shard": last}
        take = window | {"sender": sender, "lease_until": _us(now + lease), "limit": limit}

        def work(connection: sqlite3.Connection) -> list[Row]:
            connection.execute(q.EXPIRE_OVERDUE, window)
            return connection.execute(q.TAKE_DELIVERIES, take).fetchall()

        rows = await self._db.write(work)
        return [firing_from(row, (), _utc) for row in rows]

    async def record_attempts(self, results: Sequence[AttemptResult]) -> int:
        if not results:
            return 0
        ordered = sorted(results, key=lambda result: result.firing_id)  # B-tree page locality
        now = _us(datetime.now(UTC))
        rounds = [
            {
                "results": _json(
                    batches.SQLITE_RESULTS.rows(batches.result_columns(one, _us)._asdict())
                ),
                "earlier": _json(
                    batches.SQLITE_RESULTS.rows(batches.earlier_columns(one, _us)._asdict())
                ),
                "now": now,
            }
            for one in _rounds(ordered, lambda result: result.firing_id)
        ]

        def work(connection: sqlite3.Connection) -> int:
            applied = 0
            for batch in rounds:
                connection.execute(q.INSERT_ATTEMPTS, batch)
                if batch["earlier"] != "[]":  # a round that went to several destinations
                    connection.execute(q.INSERT_ATTEMPTS, {"results": batch["earlier"]})
                applied += connection.execute(q.FINISH_ATTEMPTS, batch).rowcount
            return applied

        return await self._db.write(work)

    async def release_deliveries(
        self, firings: Sequence[Firing], *, sender: str, now: datetime
    ) -> int:
        if not firings:
            return 0
        ids = [firing.id for firing in firings]  # every claim here writes its firing
        params = {"ids": orjson.dumps(ids).decode(), "sender": sender, "now": _us(now)}
        return await self._db.write(
            lambda connection: connection.execute(q.RELEASE_DELIVERIES, params).rowcount
        )

    async def settled_destinations(self, firing_id: str) -> dict[str, Outcome]:
        rows = await self._db.read(
            lambda connection: connection.execute(
                q.SETTLED_DESTINATIONS, {"id": firing_id}
            ).fetchall()
        )
        return {row["destination"]: Outcome(row["outcome"]) for row in rows}

    # -- StatusReads: the status board and metrics ---------------------------------------------

    async def list_workers(self) -> list[WorkerState]:
        now = {"now": _us(datetime.now(UTC))}  # the database's clock is the host's

        def work(connection: sqlite3.Connection) -> list[WorkerState]:
            workers = connection.execute(q.STATUS_WORKERS).fetchall()
            leases = connection.execute(q.STATUS_LEASES, now).fetchall()
            return workers_from(workers, leases, _utc)

        return await self._db.read(work)

    async def count_due(self, *, first_bucket: int, last_bucket: int, cap: int) -> DueCounts:
        params = {"first": first_bucket, "last": last_bucket, "cap": cap}

        def work(connection: sqlite3.Connection) -> DueCounts:
            rows = connection.execute(q.COUNT_DUE, params).fetchall()
            overdue = connection.execute(q.COUNT_OVERDUE, params).fetchone()[0]
            return DueCounts(overdue=overdue, buckets={bucket: due for bucket, due in rows if due})

        return await self._db.read(work)

    async def sample_rings(
        self, *, first_minute: int, last_minute: int, per_minute: int
    ) -> list[RingMinute]:
        def work(connection: sqlite3.Connection) -> list[RingMinute]:
            minutes = []
            for minute in range(first_minute, last_minute + 1):
                start = minute * MINUTE_US
                params = {"start": start, "end": start + MINUTE_US, "limit": per_minute}
                rows = connection.execute(q.SAMPLE_RINGS, params).fetchall()
                minutes.append(ring_minute(minute, rows))
            return minutes

        return await self._db.read(work)

    async def count_queue(self, *, cap: int) -> dict[FiringState, int]:
        row = await self._db.read(
            lambda connection: connection.execute(q.COUNT_QUEUE, {"cap": cap}).fetchone()
        )
        return {FiringState.QUEUED: row[0], FiringState.SENDING: row[1]}

    async def count_quiet_held(self, *, cap: int) -> int:
        wanted = {"cap": cap, "held": QUIET_HELD + "%"}
        row = await self._db.read(
            lambda connection: connection.execute(q.COUNT_QUIET, wanted).fetchone()
        )
        return int(row[0])

    async def queue_stats(self) -> QueueStats:
        def work(connection: sqlite3.Connection) -> QueueStats:
            depth = {state: n for state, n in connection.execute(q.QUEUE_DEPTH)}
            oldest = connection.execute(q.OLDEST_PENDING).fetchone()[0]
            return QueueStats(depth=depth, oldest_due=None if oldest is None else _utc(oldest))

        return await self._db.read(work)

    # -- Notifier: wake-ups and announcements --------------------------------------------------

    async def listen_due(self, listener: DueListener) -> Callable[[], None]:
        self._listeners.append(listener)

        def stop() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return stop

    async def listen_leases(self, listener: Callable[[], None]) -> Callable[[], None]:
        self._lease_listeners.append(listener)

        def stop() -> None:
            if listener in self._lease_listeners:
                self._lease_listeners.remove(listener)

        return stop

    async def listen_revocations(self, listener: Callable[[str], None]) -> Callable[[], None]:
        self._revocation_listeners.append(listener)

        def stop() -> None:
            if listener in self._revocation_listeners:
                self._revocation_listeners.remove(listener)

        return stop

    async def announce_feed(self, rings: Sequence[tuple[str, str]]) -> None:
        # One process holds the file's API and engine (`tocsin serve`): its listeners are
        # every page there is. Nothing is missed in-process, so `on_gap` is never called.
        for owner, ring in rings:
            for listener in list(self._feed_listeners):
                try:
                    listener(owner, ring)
                except Exception:
                    log.exception("a feed listener failed", extra={"owner": owner})

    async def listen_feed(
        self, listener: FeedListener, *, on_gap: Callable[[], None]
    ) -> Callable[[], None]:
        self._feed_listeners.append(listener)

        def stop() -> None:
            if listener in self._feed_listeners:
                self._feed_listeners.remove(listener)

        return stop

    # -- FeedStore: the in-app feed ------------------------------------------------------------

    async def feed_firings(
        self, owner: str, *, now: datetime, after: str | None = None, limit: int = 500
    ) -> list[Firing]:
        params = {"owner": owner, "now": _us(now), "after": after, "limit": limit}
        rows = await self._db.read(
            lambda connection: connection.execute(q.FEED_FIRINGS, params).fetchall()
        )
        return [firing_from(row, (), _utc) for row in rows]

    async def feed_rings(self, firing_ids: Sequence[str], *, now: datetime) -> list[Firing]:
        if not firing_ids:
            return []
        params = {"ids": orjson.dumps(list(firing_ids)).decode(), "now": _us(now)}
        rows = await self._db.read(
            lambda connection: connection.execute(q.FEED_RINGS, params).fetchall()
        )
        return [firing_from(row, (), _utc) for row in rows]

    async def mark_feed_sent(self, firing_ids: Sequence[str], *, at: datetime) -> int:
        if not firing_ids:
            return 0
        at_us = _us(at)
        params = {"ids": orjson.dumps(list(firing_ids)).decode(), "at": at_us}

        def work(connection: sqlite3.Connection) -> int:
            sent = connection.execute(q.MARK_FEED_SENT, params).fetchall()
            attempts = [(row[0], row[1], at_us) for row in sent if not row[2]]
            connection.executemany(q.RECORD_FEED_ATTEMPT, attempts)
            return len(sent)

        return await self._db.write(work)

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
        now = _us(datetime.now(UTC))  # the database's clock is the host's
        batch = {"before": _us(firings_before), "limit": limit, "now": now}
        tidy = None if due_before is None else codec.bucket_of(due_before)

        def rung(connection: sqlite3.Connection) -> Pruned:
            occurrences = 0
            if tidy is not None:
                tidied = {"before": tidy, "limit": limit}
                connection.execute(q.TIDY_DUE, tidied)  # its rowcount, after a WITH, is not
                occurrences = connection.execute("SELECT changes()").fetchone()[0]
            # The order of these: sqlite.sql, above OLD_FIRINGS.
            old = connection.execute(q.OLD_FIRINGS, batch).fetchall()
            firings = _ids(row["id"] for row in old)
            theirs = _ids({row["reminder_id"] for row in old})
            rang: dict[str, list[datetime]] = {}
            for row in old:  # where each one's walk starts: the rings of the batch
                rang.setdefault(row["reminder_id"], []).append(_utc(row["due_at"]))
            judged = batch | {
                "reminders": theirs,
                "firings": firings,
                "starts": _starts_json(rang),
            }
            finished = _ids(row["id"] for row in connection.execute(q.FINISHED_BY_RING, judged))
            gone = {"firings": firings, "reminders": finished}
            attempts = connection.execute(q.PRUNE_ATTEMPTS, gone).rowcount
            connection.execute(q.PRUNE_FIRINGS, gone)
            reminders = connection.execute(q.PRUNE_FINISHED_BY_RING, gone).rowcount
            rings = connection.execute(q.PRUNE_RINGS, batch).rowcount
            return Pruned(
                firings=len(old),
                attempts=attempts,
                reminders=reminders,
                idempotency_keys=0,
                rings=rings,
                occurrences=occurrences,
            )

        def deleted(sql: str, before: datetime) -> Callable[[sqlite3.Connection], int]:
            params = {"before": _us(before), "limit": limit}
            return lambda connection: connection.execute(sql, params).rowcount

        # Three writes, not one: the writer thread is free between them.
        pruned = await self._db.write(rung)
        reminders = await self._db.write(deleted(q.PRUNE_REMINDERS, reminders_before))
        keys = await self._db.write(deleted(q.PRUNE_IDEMPOTENCY_KEYS, keys_before))
        assignees = await self._db.write(
            lambda connection: connection.execute(q.PRUNE_ASSIGNEES, {"limit": limit}).rowcount
        )
        return replace(
            pruned,
            reminders=pruned.reminders + reminders,
            idempotency_keys=keys,
            assignees=assignees,
        )

    async def hold_chore(self, name: str, *, worker: str, ttl: timedelta) -> bool:
        now = datetime.now(UTC)  # the database's clock is the host's
        params = {"name": name, "worker": worker, "now": _us(now), "until": _us(now + ttl)}
        return await self._db.write(
            lambda connection: connection.execute(q.HOLD_CHORE, params).rowcount > 0
        )

    async def release_chore(self, name: str, *, worker: str) -> None:
        await self._db.write(
            lambda connection: (
                connection.execute(q.RELEASE_CHORE, {"name": name, "worker": worker}).rowcount
            )
        )

    async def note_zone_data(
        self, version: str, digests: Mapping[str, str]
    ) -> dict[str, dict[str, str]]:
        rows = [(version, zone, digest) for zone, digest in sorted(digests.items())]

        def work(connection: sqlite3.Connection) -> list[Row]:
            if connection.execute(q.ZONE_DATA_RECORDED, (version,)).fetchone() is None:
                connection.executemany(q.RECORD_ZONE_DATA, rows)
            return connection.execute(q.ZONE_DATA).fetchall()

        recorded: dict[str, dict[str, str]] = {}
        for row in await self._db.write(work):
            recorded.setdefault(row["version"], {})[row["zone"]] = row["digest"]
        return recorded

    async def forget_zone_data(self, *, keep: str) -> None:
        await self._db.write(
            lambda connection: connection.execute(q.FORGET_ZONE_DATA, {"keep": keep}).rowcount
        )

    async def pending_in_zones(
        self, zones: Collection[str], *, after_id: str, scan: int
    ) -> ZonePage:
        wanted = orjson.dumps(sorted(zones)).decode()
        now = datetime.now(UTC)  # the database's clock is the host's

        def work(connection: sqlite3.Connection) -> tuple[str | None, list[Row]]:
            page = {"after": after_id, "scan": scan}
            last: str | None = connection.execute(q.ZONE_PAGE_END, page).fetchone()[0]
            if last is None:
                return None, []
            params = {"after": after_id, "last": last, "zones": wanted}
            rows = connection.execute(q.PENDING_IN_ZONES, params).fetchall()
            return last, _reminders_now(connection, rows, now)

        last_id, rows = await self._db.read(work)
        pending = [row for row in rows if row["now_due"] is not None]
        return ZonePage(rows=[_pending_time(row) for row in pending], last_id=last_id)

    async def reschedule(self, moves: Sequence[Move], *, now: datetime) -> list[str]:
        now_us = _us(now)

        def params(move: Move) -> dict[str, Any]:
            return _taken(move.reminder_id, move.version, move.was) | {
                "due_at": _us(move.due_at),
                "bucket": codec.bucket_of(move.due_at),
                "now": now_us,
                "saved_at": _saved_at(),
                "rang": _opt_us(move.rang),
            }

        def work(connection: sqlite3.Connection) -> list[str]:
            moved = []
            for move in moves:
                one = params(move)
                # Taken back at its version, the row is pending at it: the move saves it.
                if _take_back(connection, one):
                    connection.execute(q.RESCHEDULE, one)
                    connection.execute(q.INSERT_DUE, one)
                    moved.append(move.reminder_id)
            return moved

        moved = set(await self._db.write(work))
        self._wake(codec.move_wake_ups([m for m in moves if m.reminder_id in moved], now))
        return [move.reminder_id for move in moves if move.reminder_id in moved]

    def _leases_changed(self) -> None:
        for listener in list(self._lease_listeners):
            try:
                listener()
            except Exception:
                log.exception("a lease listener failed")

    def _wake(self, wake_ups: list[tuple[int, datetime]]) -> None:
        for shard, due_at in wake_ups:
            for listener in list(self._listeners):
                try:
                    listener(shard, due_at)
                except Exception:
                    log.exception("a due listener failed", extra={"shard": shard})


# -- transactions run on the writer thread -------------------------------------------------------


def _applied_versions(connection: sqlite3.Connection) -> set[int]:
    if connection.execute(q.HAS_SCHEMA_MIGRATIONS).fetchone() is None:
        return set()
    return {row[0] for row in connection.execute(q.APPLIED_VERSIONS)}


def _migrate(connection: sqlite3.Connection) -> list[int]:
    """Apply each missing migration in its own immediate transaction (which also keeps other
    processes out), re-checking inside the lock what is applied."""
    connection.execute(q.CREATE_SCHEMA_MIGRATIONS)
    refuse_newer(migrations_for("sqlite"), _applied_versions(connection))
    applied: list[int] = []
    for migration in migrations_for("sqlite"):
        connection.execute("BEGIN IMMEDIATE")
        try:
            if migration.version not in _applied_versions(connection):
                for statement in sqlite_statements(migration.sql):
                    connection.execute(statement)
                now = _us(datetime.now(UTC))
                connection.execute(q.RECORD_MIGRATION, (migration.version, migration.name, now))
                applied.append(migration.version)
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
    return applied


def _insert_idempotency(connection: sqlite3.Connection, record: IdempotencyRecord) -> None:
    params = (
        record.scope,
        record.key,
        record.request_hash,
        record.status_code,
        record.body,
        _us(record.created_at),
    )
    try:
        connection.execute(q.INSERT_IDEMPOTENCY, params)
    except sqlite3.IntegrityError as error:
        raise DuplicateIdempotencyKey(f"idempotency key {record.key!r} was used") from error


def _renew(
    connection: sqlite3.Connection,
    beat: tuple[str, str | None],
    parts: int,
    now: datetime,
    ttl: timedelta,
) -> tuple[HeldParts, bool]:
    """Renew, and say whether others should renew at once (a worker joined, or parts were
    let go). `beat` is the worker and its open breakers (the column's value)."""
    worker, breakers = beat
    now_us, until_us = _us(now), _us(now + ttl)
    live_since = _us(now - ttl)
    joined = (
        connection.execute(q.WAS_LIVE, {"worker": worker, "since": live_since}).fetchone() is None
    )
    connection.execute(q.BEAT, {"worker": worker, "at": now_us, "breakers": breakers})
    connection.execute(q.FORGET_WORKERS, {"before": now_us - 10 * (until_us - now_us)})
    live = max(1, connection.execute(q.COUNT_LIVE, {"since": live_since}).fetchone()[0])
    share = math.ceil(parts / live)
    connection.execute(q.ENSURE_PARTS, {"parts": parts})
    held = [row[0] for row in connection.execute(q.HELD, (parts, worker))]
    for part in held[share:]:
        connection.execute(q.RELEASE_PART, (parts, part, worker))
    for part in held[:share]:
        connection.execute(q.EXTEND_PART, (until_us, parts, part, worker))
    wanted = share - min(share, len(held))
    taken_over = 0
    if wanted:
        free = connection.execute(q.FREE_PARTS, (parts, now_us, wanted)).fetchall()
        for part, holder in free:
            connection.execute(q.TAKE_PART, (worker, until_us, parts, part))
            taken_over += holder is not None
    mine = {"parts": parts, "worker": worker}
    rows = connection.execute(q.WATERMARKS, mine).fetchall()
    next_expiry = connection.execute(q.NEXT_EXPIRY, mine | {"now": now_us}).fetchone()[0]
    expiry = None if next_expiry is None else _utc(next_expiry)
    held_now = held_parts(rows, live, now, expiry, _utc, taken_over=taken_over)
    return held_now, joined or len(held) > share


# -- rows to values -------------------------------------------------------------------------------


def _reminder_params(reminder: Reminder) -> dict[str, Any]:
    return {
        "saved_at": _saved_at(),
        "id": reminder.id,
        "owner": reminder.owner,
        "shard": reminder.shard,
        "text": reminder.text,
        "channel": reminder.channel.value,
        "zone": reminder.schedule.zone,
        "anchor": codec.anchor_to_text(reminder.schedule.anchor),
        "rule": reminder.schedule.rule,
        "at": reminder.at,
        "repeat": reminder.repeat,
        "status": reminder.status.value,
        "due_at": _opt_us(reminder.due_at),
        "bucket": None if reminder.due_at is None else codec.bucket_of(reminder.due_at),
        "freshness": reminder.freshness,
        "metadata": codec.dump_json(reminder.metadata),
        "source": reminder.source,
        "snoozed_from": reminder.snoozed_from,
        "version": reminder.version,
        "created_at": _us(reminder.created_at),
        "updated_at": _us(reminder.updated_at),
        "priority": codec.stored_priority(reminder.priority),
        "ignore_quiet": codec.stored_flag(reminder.ignore_quiet_hours),
        "alerts": stored_alerts(reminder.schedule.alerts),
        "nag": reminder.schedule.nag or None,
        "nags": reminder.schedule.nags or None,
    }


def _saved_at() -> int:
    """When an API write saves an occurrence, by the host's real clock (never an injected
    one), which the sweep reads by (`load_saved`)."""
    return time.time_ns() // 1000


def _cancel(connection: sqlite3.Connection, reminder_id: str, now: datetime) -> Row | None:
    """Cancel a pending reminder in the caller's write transaction (read and cancelled in it:
    no claim comes between the two) by taking back the occurrence that waits; the reminder
    as it is then, None when nothing waited to ring."""
    current = _reminder_now(connection, reminder_id, now)
    if current is None or current["now_due"] is None:
        return None  # nothing waits to ring
    version, waiting = current["version"], _utc(current["now_due"])
    if not _take_back(connection, _taken(reminder_id, version, waiting)):
        return None
    cancel = {
        "id": reminder_id,
        "version": version,
        "now": _us(now),
        "rang": current["last_due_at"],
    }
    connection.execute(q.CANCEL_REMINDER, cancel)
    return _as_saved(connection, reminder_id, now)


def _hold_lists(connection: sqlite3.Connection, wanted: Sequence[str]) -> None:
    """`ListGone` unless every list of `wanted` is there, read in the caller's write
    transaction (one writer: no delete of the list comes before its save)."""
    if not wanted:
        return
    there = {row[0] for row in connection.execute(q.HOLD_LISTS, (_ids(wanted),))}
    for list_id in wanted:
        if list_id not in there:
            raise ListGone(list_id)


def _take_back(connection: sqlite3.Connection, taken: dict[str, Any]) -> bool:
    """Take back the occurrence `taken` names (TAKE_BACK, then its row of `due`: TAKEN_BACK);
    whether it was still undecided (a claim that decided it first rang it)."""
    if connection.execute(q.TAKE_BACK, taken).rowcount == 0:
        return False
    connection.execute(q.TAKEN_BACK, taken)
    return True


def _taken(reminder_id: str, version: int, waiting: datetime) -> dict[str, Any]:
    """TAKE_BACK's parameters: the occurrence of `reminder_id` at `version` that waits at
    `waiting`."""
    return {
        "id": reminder_id,
        "version": version,
        "waiting": _us(waiting),
        "waiting_bucket": codec.bucket_of(waiting),
    }


def _rounds(items: Sequence[T], key: Callable[[T], str]) -> list[list[T]]:
    """`items` split into lists without a repeated key, each key's items in their order (the
    n-th item of a key goes to the n-th list). Applied one list after the other, set-based
    statements have exactly the effect of applying the items one by one; a batch without
    repeats (every batch, in practice) is one list."""
    rounds: list[list[T]] = []
    seen: dict[str, int] = {}
    for item in items:
        name = key(item)
        n = seen.get(name, 0)
        seen[name] = n + 1
        if n == len(rounds):
            rounds.append([])
        rounds[n].append(item)
    return rounds


def _json(items: Sequence[Sequence[Any]]) -> str:
    return orjson.dumps(items).decode()


def _ids(ids: Iterable[str]) -> str:
    """Ids as one JSON array, for a statement's `json_each`."""
    return orjson.dumps(sorted(ids)).decode()


def _firing_ids(claims: Sequence[Claim]) -> list[str]:
    """Each claim's delivery identity, the `firing_id` of `:claims` (`batches.SQLITE_CLAIMS`)."""
    return [firing_id(claim.reminder_id, claim.due_at) for claim in claims]


def _idempotency(row: Row) -> IdempotencyRecord:
    return IdempotencyRecord(
        scope=row["scope"],
        key=row["key"],
        request_hash=row["request_hash"],
        status_code=row["status_code"],
        body=bytes(row["body"]),
        created_at=_utc(row["created_at"]),
    )


def _pending_time(row: Row) -> PendingTime:
    return PendingTime(
        reminder_id=row["id"],
        shard=row["shard"],
        schedule=codec.schedule_of_row(row),
        due_at=_utc(row["now_due"]),
        version=row["version"],
        rang=_opt_utc(row["last_due_at"]),
    )
