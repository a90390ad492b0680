"""The contacts' port: the devices and addresses an owner's rings go to."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from tocsin.domain import Channel, Contact


class ContactStore(Protocol):
    """Owners' contacts: saved and edited through the API, looked up by (owner, kind) where
    rings go (`destinations`), disabled when their provider calls them gone."""

    @abstractmethod
    async def add_contact(self, contact: Contact) -> None:
        """Save a new contact."""

    @abstractmethod
    async def get_contact(self, contact_id: str) -> Contact | None:
        """The contact with this id, or None."""

    @abstractmethod
    async def list_contacts(
        self,
        owner: str,
        *,
        kind: Channel | None = None,
        source: str | None = None,
        after_id: str | None = None,
        limit: int = 50,
    ) -> list[Contact]:
        """The owner's contacts in id order, those with id > `after_id` only, at most
        `limit`, optionally of one kind and only those one app (`source`) saved (keyset
        pages, disabled ones included)."""

    @abstractmethod
    async def count_contacts(self, owner: str, source: str | None, *, up_to: int) -> int:
        """How many contacts of `owner` the app `source` saved (None: those the owner saved
        himself), counted no further than `up_to` (a cap's check costs at most that)."""

    @abstractmethod
    async def update_contact(self, contact: Contact) -> Contact | None:
        """Replace the contact's address, label, disabled state and `updated_at` (by id);
        return it as saved, or None when it no longer exists."""

    @abstractmethod
    async def delete_contact(self, contact_id: str) -> bool:
        """Delete the contact; False when it did not exist."""

    @abstractmethod
    async def disable_contact(self, contact_id: str, *, reason: str, now: datetime) -> bool:
        """Mark the contact disabled with `reason` (its provider called it gone), unless it
        is disabled already (the first reason stays); return whether it was changed."""

    @abstractmethod
    async def destinations(
        self, wanted: Sequence[tuple[str, Channel]]
    ) -> dict[tuple[str, Channel], list[Contact]]:
        """Where rings go, for many (owner, kind) pairs in one query: every enabled contact
        of that owner and kind, in id order (an index lookup by (owner, kind) each), saved by
        any app (which of them a ring may use is delivery's rule); a pair with none is left
        out."""
