"""`Store`, the one class a backend implements: every port of `tocsin.store.ports`, and the
database's lifecycle (migrations, the schema check, closing).

Callers depend on the ports they use; what opens a database, migrates it and closes it
holds a `Store`. The values the ports pass are importable from here too, for the backends.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from tocsin.keyring import Keyring
from tocsin.store.migrations import BATCH_PAGES, MigrationState
from tocsin.store.ports import (
    AppStore,
    ContactStore,
    DeliveryQueue,
    FeedStore,
    ListStore,
    Notifier,
    PlaceRingStore,
    PlaceStore,
    QuietHoursStore,
    ReminderStore,
    SchedulerStore,
    StatusReads,
    UpkeepStore,
)
from tocsin.store.ports.apps import Resealed
from tocsin.store.ports.feed import FEED_REPLAY_SLACK_SECONDS, FEED_WAITING
from tocsin.store.ports.notifier import WAKE_HORIZON, DueListener, FeedListener
from tocsin.store.ports.reminders import CAP_READS
from tocsin.store.ports.upkeep import Move, PendingTime, Pruned, ZonePage

__all__ = [
    "CAP_READS",
    "FEED_REPLAY_SLACK_SECONDS",
    "FEED_WAITING",
    "WAKE_HORIZON",
    "DueListener",
    "FeedListener",
    "Move",
    "PendingTime",
    "Pruned",
    "Resealed",
    "Store",
    "ZonePage",
]


class Store(
    SchedulerStore,
    DeliveryQueue,
    ReminderStore,
    ContactStore,
    PlaceRingStore,
    PlaceStore,
    QuietHoursStore,
    ListStore,
    AppStore,
    FeedStore,
    UpkeepStore,
    StatusReads,
    Notifier,
    ABC,
):
    """Durable home of reminders, firings, apps, idempotency keys and scheduler leases."""

    # -- lifecycle ---------------------------------------------------------------------------

    @abstractmethod
    async def migrate(
        self, *, before_upgrade: bool = False, batch_pages: int = BATCH_PAGES
    ) -> list[int]:
        """Apply every migration the database lacks, in order, recording each; return those
        applied (empty when up to date). Safe to run from several processes at once. With
        `before_upgrade`, leave those that would stop an earlier release's processes
        (`Migration.after_upgrade`) for a run after them. A step in batches changes
        `batch_pages` pages of its table a transaction (PostgreSQL)."""

    @abstractmethod
    async def migration_states(self) -> list[MigrationState]:
        """Each migration this code knows: applied, or how far it has gone."""

    @abstractmethod
    async def check_schema(self) -> None:
        """Raise `SchemaTooOld` unless every migration this code knows has been applied, and
        `DatabaseReadOnly` when the server answers but takes no writes (a standby)."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections and listeners. The store is unusable afterwards."""

    @property
    @abstractmethod
    def keyring(self) -> Keyring:
        """The key ring this store seals and opens its secrets with; it also signs what the
        service hands out to read back later (a ring's action links, `tocsin.actions`)."""
