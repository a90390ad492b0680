"""Crossings of places: an owner's device reports arriving at or leaving a place, and the
place's reminders of that event ring through the delivery queue.

Each reminder's window and local day are judged here, from one read of the place's armed
reminders; whether it rings is decided by its trigger row in the store, in one transaction
for the crossing (`PlaceRingStore.ring_at_place`): a repeat of the crossing, a second API
process taking it at once, or an edit or cancel that came first ring nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tocsin.api.models import CrossingIn
from tocsin.api.places import PlaceService
from tocsin.api.problems import FieldError, invalid
from tocsin.api.security import Principal
from tocsin.clock import Clock
from tocsin.domain import Armed, Once, PlaceEvent, PlaceRing
from tocsin.ids import firing_id
from tocsin.store.ports import PlaceRingStore
from tocsin.time import format_utc
from tocsin.time.places import window_day
from tocsin.time.quiet import clock_text

# A geofence flaps at its edge (GPS wanders by tens of metres): a crossing of the same event
# within this long after one that rang is the same arrival, and rings nothing.
FLAP_WINDOW = timedelta(minutes=5)
# A crossing reported later than this is too old to matter ("you got home" a quarter of an
# hour late is no reminder); one ahead of the server's clock by more is a device's bad clock.
MAX_AGE = timedelta(minutes=15)
MAX_AHEAD = timedelta(minutes=5)


class ArrivalService:
    """Take a device's report of a crossing, and ring what it rings."""

    def __init__(self, store: PlaceRingStore, places: PlaceService, clock: Clock) -> None:
        self.store = store
        self.places = places
        self.clock = clock

    async def crossing(
        self, principal: Principal, owner: str, place_id: str, body: CrossingIn
    ) -> dict[str, Any]:
        """Ring the place's reminders of `body.event` that it rings; the answer says which
        rang (their firings) and why each other one did not."""
        place = await self.places.get(principal, owner, place_id)
        now = self.clock.now()
        at = _checked_time(body.at, now)
        rings: list[PlaceRing] = []
        passed: list[dict[str, str]] = []
        for armed in await self.store.armed_at(place.id, body.event):
            ring, why = _decided(armed, place.id, body.event, at, now)
            if ring is None:
                passed.append({"reminder": armed.reminder_id, "reason": why})
            else:
                rings.append(ring)
        written = set(await self.store.ring_at_place(rings, now=now))
        rang = []
        for ring in rings:
            made = firing_id(ring.reminder_id, ring.at)
            if made in written:
                rang.append({"reminder": ring.reminder_id, "firing": made})
            else:
                why = "a repeat: another report of this crossing rang it, or it changed meanwhile"
                passed.append({"reminder": ring.reminder_id, "reason": why})
        return {
            "place": place.id,
            "event": body.event.value,
            "at": format_utc(at),
            "rang": rang,
            "passed": passed,
        }


def _checked_time(at: datetime, now: datetime) -> datetime:
    """The crossing's time to the second (its ring's identity), unless too old or ahead."""
    at = at.replace(microsecond=0)
    if at < now - MAX_AGE:
        detail = f"{format_utc(at)} is more than 15 minutes ago: too old to ring anything"
        raise invalid([FieldError("at", detail)])
    if at > now + MAX_AHEAD:
        detail = f"{format_utc(at)} is more than 5 minutes ahead of {format_utc(now)}"
        raise invalid([FieldError("at", detail + ": check the device's clock")])
    return at


def _decided(
    armed: Armed, place_id: str, event: PlaceEvent, at: datetime, now: datetime
) -> tuple[PlaceRing | None, str]:
    """The ring a crossing at `at` would make of `armed`, or None and why not. The store
    decides again, on the trigger's row, whatever changed since it was read."""
    trigger = armed.trigger
    day = window_day(at, armed.zone, after=trigger.after, before=trigger.before)
    if day is None:
        start = "00:00" if trigger.after is None else clock_text(trigger.after)
        end = "24:00" if trigger.before is None else clock_text(trigger.before)
        return None, f"outside its window {start}-{end} in {armed.zone}"
    deadline = at + timedelta(seconds=armed.freshness)
    if deadline <= now:
        return None, f"too late: its freshness ended at {format_utc(deadline)}"
    why = _rang_already(armed, at, day.isoformat())
    if why:
        return None, why
    ring = PlaceRing(
        reminder_id=armed.reminder_id,
        version=armed.version,
        place_id=place_id,
        event=event,
        at=at,
        deadline=deadline,
        day=day.isoformat(),
        flap_since=at - FLAP_WINDOW,
    )
    return ring, ""


def _rang_already(armed: Armed, at: datetime, day: str) -> str:
    """Why the trigger, as read, rings no more for this crossing ('' when it may ring)."""
    if armed.rang_at is None:
        return ""
    once = armed.trigger.once
    if once is Once.EVER:
        return "it rang once already (once: ever)"
    if once is Once.DAY and armed.rang_day is not None and armed.rang_day >= day:
        return f"it rang on {armed.rang_day} already (once: day)"
    if at - FLAP_WINDOW < armed.rang_at:
        return f"a repeat of the crossing that rang it at {format_utc(armed.rang_at)}"
    return ""
