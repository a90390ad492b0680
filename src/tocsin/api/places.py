"""The place operations: an owner's geofences, and the ones a device should watch from where
it is. Checks and decisions here, storage in the store."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Protocol

from tocsin.api.models import PlaceIn, PlacePatch
from tocsin.api.owned import after, may_manage, over_cap, page, saver, visible
from tocsin.api.problems import FieldError, Problem, invalid
from tocsin.api.security import Principal
from tocsin.clock import Clock
from tocsin.domain import Place
from tocsin.ids import is_id, new_reminder_id, shard_of
from tocsin.store.ports import PlaceRingStore, PlaceStore

EARTH_RADIUS_M = 6_371_008.8  # the mean radius (IUGG): distances within 0.5 % anywhere
NEAR_READ = 10_000  # the most places a `near` list reads of one owner before sorting them


# How many of the reminders that keep a place from being deleted its 409 names.
IN_USE_SHOWN = 5


class PlacesAndTriggers(PlaceStore, PlaceRingStore, Protocol):
    """The places, and the reminders that ring at them (a place in use is not deleted)."""


class PlaceService:
    """Add, list, read, change and delete an owner's places. Tenancy as with contacts: an app
    key sees and manages the places it saved, of any owner; an owner token every place of its
    owner; an admin key all; anything else is 404. Each app may save `max_per_owner` places
    for one owner, and the owner as many for himself."""

    def __init__(self, store: PlacesAndTriggers, clock: Clock, *, max_per_owner: int = 0) -> None:
        self.store = store
        self.clock = clock
        self.max_per_owner = max_per_owner

    async def add(self, principal: Principal, owner: str, item: PlaceIn) -> Place:
        may_manage(principal, owner)
        source = saver(principal)
        await self._check_room(owner, source)
        now = self.clock.now()
        shard = shard_of(owner)
        place = Place(
            id=new_reminder_id(shard, now),
            owner=owner,
            shard=shard,
            name=item.name,
            latitude=item.latitude,
            longitude=item.longitude,
            radius_m=item.radius_m,
            created_at=now,
            updated_at=now,
            source=source,
        )
        await self.store.add_place(place)
        return place

    async def _check_room(self, owner: str, source: str | None) -> None:
        """409 when `source` (an app, or None: the owner) has saved as many places for
        `owner` as it may. Two adds at once may both pass, one over the cap."""
        cap = self.max_per_owner
        if cap and await self.store.count_places(owner, source, up_to=cap) >= cap:
            raise over_cap(cap, owner, source, "places")

    async def list_page(
        self, principal: Principal, owner: str, *, limit: int, cursor: str | None
    ) -> tuple[list[Place], str | None]:
        """One page of the owner's places the caller may see, in the order they were saved."""
        may_manage(principal, owner)
        rows = await self.store.list_places(
            owner, source=principal.tenant, after_id=after(cursor), limit=limit + 1
        )
        return page(rows, limit)

    async def nearest(
        self, principal: Principal, owner: str, near: str, *, limit: int
    ) -> list[tuple[Place, float]]:
        """The `limit` places the caller may see nearest to `near` ("lat,lon"), each with its
        distance in metres from there to its edge (0 inside), nearest first: what a device
        that can watch `limit` regions should watch. An owner's places are few (capped a
        saver), so they are read by owner and sorted here."""
        may_manage(principal, owner)
        latitude, longitude = parse_near(near)
        places = await self.store.list_places(owner, source=principal.tenant, limit=NEAR_READ)
        measured = [(place, edge_distance_m(place, latitude, longitude)) for place in places]
        measured.sort(key=lambda pair: (pair[1], pair[0].id))
        return measured[:limit]

    async def get(self, principal: Principal, owner: str, place_id: str) -> Place:
        may_manage(principal, owner)
        found = await self.store.get_place(place_id) if is_id(place_id) else None
        if found is None or not visible(found, principal, owner):
            raise _not_found(place_id)
        return found

    async def change(
        self, principal: Principal, owner: str, place_id: str, patch: PlacePatch
    ) -> Place:
        nulls = [name for name in patch.model_fields_set if getattr(patch, name) is None]
        if nulls:
            raise invalid([FieldError(name, "must not be null") for name in sorted(nulls)])
        current = await self.get(principal, owner, place_id)
        given = {name: getattr(patch, name) for name in patch.model_fields_set}
        saved = await self.store.update_place(
            replace(current, **given, updated_at=self.clock.now())
        )
        if saved is None:
            raise _not_found(place_id)
        return saved

    async def delete(self, principal: Principal, owner: str, place_id: str) -> None:
        """Delete the place, unless a pending reminder rings at it (409 naming some): that
        reminder could never ring again, and would wait, pending, for nothing."""
        await self.get(principal, owner, place_id)
        using = await self.store.pending_at_place(place_id, limit=IN_USE_SHOWN)
        if using:
            detail = f"pending reminders ring at it ({', '.join(using)}): cancel them first"
            raise Problem(409, "place-in-use", detail, extra={"reminders": using})
        if not await self.store.delete_place(place_id):
            raise _not_found(place_id)


def parse_near(near: str) -> tuple[float, float]:
    """`near` = "lat,lon" in degrees; a 422 naming `near` for anything else."""
    parts = near.split(",")
    try:
        if len(parts) != 2:
            raise ValueError
        latitude, longitude = (float(part) for part in parts)
    except ValueError:
        raise invalid([FieldError("near", "must be latitude,longitude in degrees")]) from None
    if not (math.isfinite(latitude) and -90 <= latitude <= 90):
        raise invalid([FieldError("near", "its latitude must be from -90 to 90")])
    if not (math.isfinite(longitude) and -180 <= longitude <= 180):
        raise invalid([FieldError("near", "its longitude must be from -180 to 180")])
    return latitude, longitude


def edge_distance_m(place: Place, latitude: float, longitude: float) -> float:
    """Metres from (latitude, longitude) to the edge of `place`'s circle, 0 inside it: the
    great-circle distance to its centre (haversine) less its radius, to the decimetre."""
    phi1, phi2 = math.radians(latitude), math.radians(place.latitude)
    d_phi = phi2 - phi1
    d_lambda = math.radians(place.longitude - longitude)
    h = math.sin(d_phi / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(d_lambda / 2) ** 2
    centre = 2 * EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(h)))
    return round(max(0.0, centre - place.radius_m), 1)


def _not_found(place_id: str) -> Problem:
    return Problem(404, "not-found", f"no place {place_id}")
