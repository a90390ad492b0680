"""The place rings' port: reminders that ring when their owner's device reports a crossing."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from tocsin.domain import Armed, PlaceEvent, PlaceRing, PlaceTrigger


class PlaceRingStore(Protocol):
    """Place triggers (written with their reminders by `add_reminders` and `update_reminder`,
    from `Reminder.on`), and the rings a crossing decides."""

    @abstractmethod
    async def place_triggers(self, reminder_ids: Sequence[str]) -> dict[str, PlaceTrigger]:
        """The place triggers of those of these reminders that have one, by reminder id."""

    @abstractmethod
    async def armed_at(self, place_id: str, event: PlaceEvent) -> list[Armed]:
        """The pending reminders whose trigger is `event` at the place, with when each rang
        last: what a crossing may ring, read before `ring_at_place` decides."""

    @abstractmethod
    async def pending_at_place(self, place_id: str, *, limit: int) -> list[str]:
        """Up to `limit` ids of the pending reminders that ring at the place, in id order."""

    @abstractmethod
    async def ring_at_place(self, rings: Sequence[PlaceRing], *, now: datetime) -> list[str]:
        """In one transaction, ring each of `rings` whose reminder is still pending at its
        version and whose trigger has not rung for this crossing (the flap window, `once`:
        `PlaceRing`), writing its firing `queued` for any sender at `now`; return the ids of
        the firings written. Of two callers deciding one crossing at once, one rings it; an
        edit or cancel of the reminder and the crossing are serialised, so a cancel that
        changed the reminder first leaves nothing to ring."""
