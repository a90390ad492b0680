"""The contact operations: where an owner's rings go. Checks and decisions here, storage in
the store; every field is validated before anything is written."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from tocsin.api.models import ContactIn, ContactPatch
from tocsin.api.owned import after, may_manage, over_cap, page, saver, visible
from tocsin.api.problems import FieldError, Problem, invalid
from tocsin.api.security import Principal
from tocsin.auth import new_webhook_secret
from tocsin.channels.contacts import check_outbound, validate_contact
from tocsin.clock import Clock
from tocsin.domain import Channel, Contact
from tocsin.errors import InvalidInput
from tocsin.ids import is_id, new_reminder_id, shard_of
from tocsin.store.ports import ContactStore


class ContactService:
    """Add, list, read, change and delete an owner's contacts. Apps are tenants: an app key
    sees and manages only the contacts it saved, of any owner; an owner token every contact
    of its owner, whichever app saved it; an admin key all. Anything else is 404 (ids leak
    nothing). Each app may save `max_per_owner` contacts for one owner, and the owner as
    many for himself."""

    def __init__(
        self,
        store: ContactStore,
        clock: Clock,
        *,
        allow_private_urls: bool = False,
        max_per_owner: int = 0,
    ) -> None:
        self.store = store
        self.clock = clock
        self.allow_private_urls = allow_private_urls
        self.max_per_owner = max_per_owner

    async def add(self, principal: Principal, owner: str, item: ContactIn) -> Contact:
        may_manage(principal, owner)
        address = self._address(item.kind, item.model_extra or {})
        source = saver(principal)
        await self._check_room(owner, source)
        now = self.clock.now()
        shard = shard_of(owner)
        contact = Contact(
            id=new_reminder_id(shard, now),
            owner=owner,
            shard=shard,
            kind=item.kind,
            address=address,
            label=item.label,
            secret=new_webhook_secret() if item.kind is Channel.WEBHOOK else None,
            disabled_reason=None,
            disabled_at=None,
            created_at=now,
            updated_at=now,
            source=source,
        )
        await self.store.add_contact(contact)
        return contact

    async def _check_room(self, owner: str, source: str | None) -> None:
        """409 when `source` (an app, or None: the owner) has saved as many contacts for
        `owner` as it may. Two adds at once may both pass: the cap bounds a ring's fan-out,
        and one over it bounds it as well."""
        cap = self.max_per_owner
        if cap and await self.store.count_contacts(owner, source, up_to=cap) >= cap:
            raise over_cap(cap, owner, source, "contacts")

    async def list_page(
        self,
        principal: Principal,
        owner: str,
        *,
        kind: Channel | None,
        limit: int,
        cursor: str | None,
    ) -> tuple[list[Contact], str | None]:
        may_manage(principal, owner)
        rows = await self.store.list_contacts(
            owner, kind=kind, source=principal.tenant, after_id=after(cursor), limit=limit + 1
        )
        return page(rows, limit)

    async def get(self, principal: Principal, owner: str, contact_id: str) -> Contact:
        may_manage(principal, owner)
        found = await self.store.get_contact(contact_id) if is_id(contact_id) else None
        if found is None or not visible(found, principal, owner):
            raise _not_found(contact_id)
        return found

    async def change(
        self, principal: Principal, owner: str, contact_id: str, patch: ContactPatch
    ) -> Contact:
        current = await self.get(principal, owner, contact_id)
        fields = patch.model_extra or {}
        changed = replace(current, updated_at=self.clock.now())
        if "label" in patch.model_fields_set:
            changed = replace(changed, label=patch.label)
        if fields:
            address = self._address(current.kind, fields)
            changed = replace(changed, address=address, disabled_reason=None, disabled_at=None)
        saved = await self.store.update_contact(changed)
        if saved is None:
            raise _not_found(contact_id)
        return saved

    async def delete(self, principal: Principal, owner: str, contact_id: str) -> None:
        await self.get(principal, owner, contact_id)
        if not await self.store.delete_contact(contact_id):
            raise _not_found(contact_id)

    def _address(self, kind: Channel, fields: Mapping[str, Any]) -> dict[str, str]:
        """The kind's fields, validated, with what the server would call (a webhook's `url`,
        a Web Push `endpoint`, where an Apprise URL connects) held to the outbound URL policy."""
        try:
            _refuse_nul(fields)
            address = validate_contact(kind, fields)
            check_outbound(kind, address, allow_private=self.allow_private_urls)
        except InvalidInput as error:
            raise invalid([FieldError(error.field, error.message)]) from None
        return address


def _refuse_nul(value: object, field: str = "") -> None:
    """`InvalidInput` naming the first field (`subscription.endpoint`) whose text holds a
    NUL, which PostgreSQL cannot keep; each kind's validator need not look for one."""
    if isinstance(value, str) and "\x00" in value:
        raise InvalidInput(field, "must not contain NUL characters")
    if isinstance(value, Mapping):
        for key, item in value.items():
            name = f"{field}.{key}" if field else str(key)
            _refuse_nul(key, name)
            _refuse_nul(item, name)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _refuse_nul(item, f"{field}[{index}]")


def _not_found(contact_id: str) -> Problem:
    return Problem(404, "not-found", f"no contact {contact_id}")
