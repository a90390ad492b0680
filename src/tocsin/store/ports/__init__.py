"""The storage ports: small async interfaces by concern, each what one kind of caller uses.

A caller names the ports it uses; `tocsin.store.Store` inherits every one, and each backend
implements `Store`. Each port is a `Protocol` so that a part needing several can name them
together in a `Protocol` of its own; `Store` inherits them by name, so a backend that lacks
a method cannot be instantiated.

Driver errors never leave a backend: they are wrapped in `tocsin.errors.StoreError` (or
`StoreUnavailable` when the database cannot be reached). All instants given and returned are
timezone-aware UTC.

Secrets (apps' and contacts' webhook signing secrets, the `secrets` table) are sealed with
the store's key ring (`tocsin.keyring`) on their way in and opened on their way out: the
database holds them encrypted, every caller sees them in clear. A store opened without a
ring refuses to write or read a sealed secret (`SecretKeyMissing`).
"""

from __future__ import annotations

from tocsin.store.ports.apps import AppStore
from tocsin.store.ports.arrivals import PlaceRingStore
from tocsin.store.ports.contacts import ContactStore
from tocsin.store.ports.delivery import DeliveryQueue
from tocsin.store.ports.feed import FeedStore
from tocsin.store.ports.lists import ListStore
from tocsin.store.ports.notifier import Notifier
from tocsin.store.ports.places import PlaceStore
from tocsin.store.ports.quiet import QuietHoursStore
from tocsin.store.ports.reminders import ReminderStore
from tocsin.store.ports.scheduler import SchedulerStore
from tocsin.store.ports.status import StatusReads
from tocsin.store.ports.upkeep import UpkeepStore

__all__ = [
    "AppStore",
    "ContactStore",
    "DeliveryQueue",
    "FeedStore",
    "ListStore",
    "Notifier",
    "PlaceRingStore",
    "PlaceStore",
    "QuietHoursStore",
    "ReminderStore",
    "SchedulerStore",
    "StatusReads",
    "UpkeepStore",
]
