"""The upkeep port: retention (old rows deleted under a chore's lease) and rezoning (pending
reminders moved when a time zone's rules changed)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from tocsin.domain import Schedule


@dataclass(frozen=True, kw_only=True, slots=True)
class Pruned:
    """What one `UpkeepStore.prune` batch deleted."""

    firings: int
    attempts: int
    reminders: int
    idempotency_keys: int
    rings: int = 0  # rows of `rings` no reader needs any more
    occurrences: int = 0  # rows of `due` decided, in minutes gone by
    assignees: int = 0  # the assignees of list reminders deleted

    @property
    def rows(self) -> int:
        kinds = (self.firings, self.attempts, self.reminders, self.idempotency_keys, self.rings)
        return sum(kinds) + self.occurrences + self.assignees


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingTime:
    """A pending reminder's schedule and next ring as `UpkeepStore.pending_in_zones` reads it."""

    reminder_id: str
    shard: int
    schedule: Schedule
    due_at: datetime
    version: int
    rang: datetime | None = None  # its last ring, as readers show it


@dataclass(frozen=True, kw_only=True, slots=True)
class ZonePage:
    """One `UpkeepStore.pending_in_zones` page: the rows found, and where the next page starts
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
    rang: datetime | None = None  # its last ring then: readers of the new version show it


class UpkeepStore(Protocol):
    """What keeps the database in shape: retention batches (`prune`) under the lease of a
    chore (`hold_chore`), and the records and moves of a time zone data upgrade
    (`note_zone_data`, `pending_in_zones`, `reschedule`)."""

    @abstractmethod
    async def prune(
        self,
        *,
        firings_before: datetime,
        reminders_before: datetime,
        keys_before: datetime,
        limit: int,
        due_before: datetime | None = None,
    ) -> Pruned:
        """One retention batch, oldest first, each part its own short transaction: at most
        `limit` final firings (`sent`, `failed`, `expired`) due before `firings_before`, with
        their attempts and the reminders their rings finished (a fired one-off, a series its
        last ring ended: the claim kept that ring's instant as their `due_at`) that keep no
        other firing, once the ring that finished them is due before `firings_before` too; at
        most `limit` reminders finished otherwise (cancelled, or edited since: `due_at`
        NULL) whose last change was before `reminders_before` and whose firings are gone; at
        most `limit` idempotency keys created before `keys_before`. `reminders` counts both
        kinds of reminder. Each an index range scan from the old end (`firings_due`,
        `reminders_finished`, `idempotency_keys_age`) that stops at `limit`, so a batch costs
        the same however large the tables are. With `due_before`, also at most `limit`
        occurrences of `due` in minutes before it that a claim or an API write decided (or
        whose reminder is gone or at another version): the rows a claim leaves behind."""

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
