"""The reminders' port: what the API saves, reads, edits, cancels and snoozes."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import Enum
from typing import Protocol

from tocsin.domain import Firing, IdempotencyRecord, Reminder, ReminderStatus

# A cap's count of an owner's pending reminders reads at most this many times the cap of the
# owner's rows (`pending_counts`, `add_reminders` with `cap`): the rows finished and not yet
# pruned are read too, and without a bound one owner's history would make each create slow.
CAP_READS = 4


class Keep(Enum):
    """`update_reminder`'s assignee when the edit leaves it as it is."""

    KEEP = "keep"


KEEP = Keep.KEEP


class ReminderStore(Protocol):
    """Reminders as the API keeps them, with their idempotency records and the history of
    their firings."""

    @abstractmethod
    async def add_reminders(
        self,
        reminders: Sequence[Reminder],
        *,
        idempotency: IdempotencyRecord | None = None,
        cap: int = 0,
        assignees: Mapping[str, str] | None = None,
    ) -> None:
        """Save new reminders, and the idempotency record if given, in one transaction: all or
        nothing; with `assignees` (by reminder id: the one member a list's reminder rings),
        those too, in the same transaction (only a list's reminder has one). Raise
        `DuplicateIdempotencyKey` (saving nothing) when the record's (scope, key) exists
        already. Wakes `listen_due` listeners for pending ones due soon. With a `cap`, one
        reminder (the API's single create) is saved only while its (owner, app) pair keeps
        fewer than `cap` pending, checked in the same statement, else `CapReached` (saving
        nothing); a batch's caller checks first (`pending_counts`). A list's reminder is
        saved only while its list is there, held in the same transaction until it commits
        (`delete_list` waits for it, or it for the delete), else `ListGone` (saving
        nothing)."""

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
        self,
        reminder: Reminder,
        *,
        expected_version: int,
        waiting: datetime | None,
        assignee: str | Keep | None = KEEP,
    ) -> Reminder | None:
        """Replace the mutable fields (text, channel, schedule, at, repeat, status, due_at,
        freshness, metadata) of the row with `reminder.id` — and, unless `assignee` is
        `KEEP`, a list reminder's assignee (None: every member), in the same transaction —
        only while its version is `expected_version` and, when `waiting` is the occurrence
        that waited to ring as the caller read the reminder (its `due_at`), only by taking
        that occurrence back before a claim takes it (whichever takes it first wins: an edit
        that lost to a claim changes nothing). The version becomes `expected_version + 1`
        and `updated_at` becomes `reminder.updated_at`. Return the row as saved (with its
        `last_firing`), or None when the caller lost a race (re-read to say why). Wakes
        `listen_due` listeners when pending and due soon."""

    @abstractmethod
    async def cancel_reminder(self, reminder_id: str, *, now: datetime) -> Reminder | None:
        """Set status `cancelled` (due_at None, version + 1) by taking back the occurrence
        that waits to ring, if one does. Return the cancelled row, or None when none waited
        (or the reminder does not exist)."""

    @abstractmethod
    async def snooze_firing(
        self, firing_id: str, reminder: Reminder, *, assignee: str | None = None
    ) -> str | None:
        """In one transaction: save `reminder` (a fresh one-off, its id new; a list's with the
        `assignee` of the ring snoozed, when it had one) and mark the firing `snoozed_by` it,
        only while the firing exists and was not snoozed already. Return
        the id the firing is snoozed by once this is done, decided with the mark itself:
        `reminder.id` when this call marked it; the earlier one's when it was snoozed
        already, and None when no such firing is written (a ring on its way on PostgreSQL,
        before its first try is recorded) — both saving nothing. A list's one-off is saved
        only while its list is there, as `add_reminders` saves one, else `ListGone`."""

    @abstractmethod
    async def mark_done(self, firing_id: str, now: datetime) -> Firing | None:
        """Mark a firing done at `now` (a second mark keeps the first's instant); the firing
        as it is then, None when there is none of that id."""

    @abstractmethod
    async def list_firings(self, reminder_id: str, *, limit: int = 50) -> list[Firing]:
        """The reminder's firings, newest due first, each with its attempt `history` (a
        first try kept on the firing row included: `record_attempts`)."""
