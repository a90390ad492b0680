"""The places' port: an owner's geofences ("home", "the office")."""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

from tocsin.domain import Place


class PlaceStore(Protocol):
    """Owners' places: saved and edited through the API, read by owner for the geofences a
    device should watch."""

    @abstractmethod
    async def add_place(self, place: Place) -> None:
        """Save a new place."""

    @abstractmethod
    async def get_place(self, place_id: str) -> Place | None:
        """The place with this id, or None."""

    @abstractmethod
    async def list_places(
        self,
        owner: str,
        *,
        source: str | None = None,
        after_id: str | None = None,
        limit: int = 50,
    ) -> list[Place]:
        """The owner's places in id order, those with id > `after_id` only, at most `limit`,
        optionally only those one app (`source`) saved (keyset pages, an index range)."""

    @abstractmethod
    async def count_places(self, owner: str, source: str | None, *, up_to: int) -> int:
        """How many places of `owner` the app `source` saved (None: those the owner saved
        himself), counted no further than `up_to`."""

    @abstractmethod
    async def update_place(self, place: Place) -> Place | None:
        """Replace the place's name, centre, radius and `updated_at` (by id); return it as
        saved, or None when it no longer exists."""

    @abstractmethod
    async def delete_place(self, place_id: str) -> bool:
        """Delete the place; False when it did not exist."""
