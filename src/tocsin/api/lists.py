"""The shared list operations: lists, their members and who may do what with a list's
reminders. Checks and decisions here, storage in the store, whom a ring goes to in delivery
(`Destinations`).

Tenancy as with contacts: a list an app's key made is that app's (its key sees and manages
it, no other app's does); one an owner made (his token, the page) is seen by its members
alone; an admin key sees all; anything else is a 404, as if it did not exist. A member's
role decides what his token may do: a viewer reads the list's reminders, an editor also
saves and changes them, an owner also manages the members. An invited member sees the list
(to accept it) and nothing of its reminders until he joins.
"""

from __future__ import annotations

from dataclasses import replace

from tocsin.api.models import ListIn
from tocsin.api.owned import owner_for, saver
from tocsin.api.problems import FieldError, Problem, invalid
from tocsin.api.security import Principal
from tocsin.clock import Clock
from tocsin.domain import Member, Role, SharedList
from tocsin.errors import ListKeptRinging
from tocsin.ids import is_id, new_reminder_id, shard_of
from tocsin.store.ports import ListStore

MOST_MEMBERS = 100  # a list is a household or a team: a larger one is refused (409)


class ListService:
    """Make, read and rename lists; invite, accept, change and remove members; and say
    whether a caller may read or change a list's reminders."""

    def __init__(self, store: ListStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    async def create(self, principal: Principal, item: ListIn) -> SharedList:
        """A new list, its first member (an owner, joined) the token's owner, or `owner`
        with an API key; the list is the key's app's."""
        first = owner_for(principal, item.owner)
        now = self.clock.now()
        list_id = new_reminder_id(shard_of(first), now)
        member = Member(
            list_id=list_id, member=first, role=Role.OWNER, invited_at=now, joined_at=now
        )
        shared = SharedList(
            id=list_id,
            name=item.name,
            source=saver(principal),
            created_at=now,
            updated_at=now,
            members=(member,),
        )
        await self.store.add_list(shared)
        return shared

    async def get(self, principal: Principal, list_id: str) -> SharedList:
        """The list, or 404 when there is none the caller may see."""
        shared = await self.store.get_list(list_id) if is_id(list_id) else None
        if shared is None or not _sees(principal, shared):
            raise Problem(404, "not-found", f"no list {list_id} for this token")
        return shared

    async def lists(self, principal: Principal, member: str | None) -> list[SharedList]:
        """The lists the caller sees: an owner token those its owner is on, an app key its
        app's (those `member` is on, with one), an admin key those `member` is on."""
        if principal.owner is not None:
            if member is not None and member != principal.owner:
                raise Problem(404, "not-found", f"no owner {member} for this token")
            return await self.store.member_lists(principal.owner)
        tenant = principal.tenant
        if tenant is None:  # an admin key
            if member is None:
                raise invalid([FieldError("member", "required with an admin key")])
            return await self.store.member_lists(member)
        found = await self.store.app_lists(tenant)
        return [shared for shared in found if member is None or shared.member(member)]

    async def rename(self, principal: Principal, list_id: str, name: str) -> SharedList:
        shared = await self._managed(principal, list_id)
        now = self.clock.now()
        if not await self.store.rename_list(list_id, name, now):
            raise Problem(404, "not-found", f"no list {list_id} for this token")
        return replace(shared, name=name, updated_at=now)

    async def delete(self, principal: Principal, list_id: str) -> int:
        """Delete the list (an owner's token, a key of its app, an admin key) and cancel its
        reminders, in one transaction: once this answered, nothing of the list's rings but a
        ring claimed before. How many reminders it cancelled."""
        await self._managed(principal, list_id, doing="deletes it")
        try:
            cancelled = await self.store.delete_list(list_id, now=self.clock.now())
        except ListKeptRinging:
            detail = f"list {list_id}'s reminders kept ringing while deleting it; retry"
            raise Problem(409, "conflict", detail) from None
        if cancelled is None:  # deleted meanwhile
            raise Problem(404, "not-found", f"no list {list_id} for this token")
        return cancelled

    async def set_member(
        self, principal: Principal, list_id: str, member: str, role: Role
    ) -> SharedList:
        """Invite `member` with `role`, or change his role. An invitation rings him nothing
        until he accepts it."""
        shared = await self._managed(principal, list_id)
        current = shared.member(member)
        if current is None and len(shared.members) >= MOST_MEMBERS:
            detail = f"list {list_id} has {MOST_MEMBERS} members, the most allowed"
            raise Problem(409, "too-many-members", detail)
        if current is not None and current.role is Role.OWNER and role is not Role.OWNER:
            _keeps_an_owner(shared, member)
        if current is None:
            current = Member(list_id=list_id, member=member, role=role, invited_at=self.clock.now())
        await self.store.save_member(replace(current, role=role))
        return await self.get(principal, list_id)

    async def accept(self, principal: Principal, list_id: str, member: str) -> SharedList:
        """`member` accepts his invitation: his own token, or a key of the list's app (which
        acts for its users, as it saves their contacts)."""
        shared = await self.get(principal, list_id)
        if principal.owner is not None and principal.owner != member:
            raise Problem(403, "forbidden", "only the invited member accepts his invitation")
        if shared.member(member) is None or not await self.store.join_list(
            list_id, member, self.clock.now()
        ):
            raise Problem(404, "not-found", f"{member} is not invited to list {list_id}")
        return await self.get(principal, list_id)

    async def remove(self, principal: Principal, list_id: str, member: str) -> None:
        """Take `member` off the list: he leaves it (his own token), or one who manages it
        removes him. No ring sent from then on goes to him; one already being sent to his
        contacts may still arrive."""
        shared = await self.get(principal, list_id)
        if principal.owner != member:
            shared = await self._managed(principal, list_id)
        found = shared.member(member)
        if found is None:
            raise Problem(404, "not-found", f"{member} is not on list {list_id}")
        if found.role is Role.OWNER:
            _keeps_an_owner(shared, member)
        await self.store.remove_member(list_id, member)

    # -- a list's reminders -----------------------------------------------------------------

    async def for_reminders(self, principal: Principal, list_id: str, *, edits: bool) -> SharedList:
        """The list whose reminders the caller reads (`edits` False) or saves and changes:
        404 unless he sees it and (an owner token) joined it; 403 for a viewer's change."""
        shared = await self.get(principal, list_id)
        if principal.owner is None:
            return shared  # the list's app, or an admin: as with any reminder of theirs
        found = shared.member(principal.owner)
        if found is None or found.joined_at is None:
            raise Problem(404, "not-found", f"no list {list_id} {principal.owner} joined")
        if edits and not found.role.edits:
            detail = f"{principal.owner} is a viewer of list {list_id}: he reads its reminders"
            raise Problem(403, "viewer", detail)
        return shared

    async def _managed(
        self, principal: Principal, list_id: str, *, doing: str = "manages its members and name"
    ) -> SharedList:
        """The list, when the caller manages it: its app's key, an admin key, or the token
        of an owner who joined it; 404 when he does not see it, else 403."""
        shared = await self.get(principal, list_id)
        if principal.owner is not None:
            found = shared.member(principal.owner)
            if found is None or found.joined_at is None or found.role is not Role.OWNER:
                detail = f"only an owner of list {list_id} {doing}"
                raise Problem(403, "not-list-owner", detail)
        return shared


def _sees(principal: Principal, shared: SharedList) -> bool:
    if principal.owner is not None:
        return shared.member(principal.owner) is not None
    return principal.tenant in (None, shared.source)


def _keeps_an_owner(shared: SharedList, leaving: str) -> None:
    """409 when `leaving` is the list's last owner and others are on it: a list keeps
    someone who manages it."""
    owners = [m for m in shared.members if m.role is Role.OWNER and m.member != leaving]
    if not owners and len(shared.members) > 1:
        detail = f"{leaving} is the last owner of list {shared.id}: make another member owner first"
        raise Problem(409, "last-owner", detail)
