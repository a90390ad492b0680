"""Shared lists in the store, on both backends: a list with its members, invitations and
their acceptance, roles changed and members removed, and whom a list's ring goes to — the
members who joined, or the assignee alone once he joined — looked up for many rings at once."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.integration.store.factories import NOW, reminder
from tocsin.domain import Member, Role, SharedList
from tocsin.errors import CapReached
from tocsin.ids import new_reminder_id, shard_of
from tocsin.store import Store


def shared_list(name: str = "Household", source: str | None = None) -> SharedList:
    list_id = new_reminder_id(shard_of("ana"), NOW)
    first = Member(list_id=list_id, member="ana", role=Role.OWNER, invited_at=NOW, joined_at=NOW)
    return SharedList(
        id=list_id, name=name, source=source, created_at=NOW, updated_at=NOW, members=(first,)
    )


def invited(shared: SharedList, member: str, role: Role = Role.EDITOR) -> Member:
    return Member(list_id=shared.id, member=member, role=role, invited_at=NOW)


async def test_a_list_reads_back_with_its_members_as_they_change(store: Store) -> None:
    shared = shared_list(source="phone")
    await store.add_list(shared)
    assert await store.get_list(shared.id) == shared
    assert await store.get_list("06h46pkr2a7jv1nkr0gn") is None

    await store.save_member(invited(shared, "ben"))
    assert await store.join_list(shared.id, "ben", NOW + timedelta(minutes=1))
    assert await store.join_list(shared.id, "ben", NOW + timedelta(minutes=2))  # kept: the first
    assert not await store.join_list(shared.id, "zed", NOW)
    await store.save_member(invited(shared, "ben", Role.VIEWER))  # a role change keeps joining
    found = await store.get_list(shared.id)
    assert found is not None
    ben = found.member("ben")
    assert ben == Member(
        list_id=shared.id,
        member="ben",
        role=Role.VIEWER,
        invited_at=NOW,
        joined_at=NOW + timedelta(minutes=1),
    )

    assert await store.rename_list(shared.id, "Home", NOW + timedelta(hours=1))
    assert [s.name for s in await store.member_lists("ben")] == ["Home"]
    assert [s.id for s in await store.app_lists("phone")] == [shared.id]
    assert await store.app_lists("other") == []
    assert await store.remove_member(shared.id, "ben")
    assert not await store.remove_member(shared.id, "ben")
    assert await store.member_lists("ben") == []
    assert await store.remove_member(shared.id, "ana")
    emptied = await store.get_list(shared.id)
    assert emptied is not None
    assert emptied.members == ()  # a list no one is on still reads back


async def test_a_lists_rings_go_to_the_members_who_joined_or_the_assignee_alone(
    store: Store,
) -> None:
    shared, other = shared_list(), shared_list("Team")
    await store.add_list(shared)
    await store.add_list(other)
    for member in ("ben", "cy"):
        await store.save_member(invited(shared, member))
    await store.join_list(shared.id, "ben", NOW)  # cy stays invited
    everyone, for_cy, for_ben = (reminder(shared.owner) for _ in range(3))
    elsewhere = reminder(other.owner)
    await store.add_reminders([everyone])
    await store.add_reminders([for_cy], assignees={for_cy.id: "cy"})
    await store.add_reminders([for_ben], assignees={for_ben.id: "ben"})
    await store.add_reminders([elsewhere])

    rings = [(shared.id, r.id) for r in (everyone, for_cy, for_ben)] + [(other.id, elsewhere.id)]
    assert await store.list_rings(rings) == {
        (shared.id, everyone.id): ["ana", "ben"],
        (shared.id, for_ben.id): ["ben"],
        (other.id, elsewhere.id): ["ana"],
    }  # cy has not joined: nothing, not even what is assigned to him
    assert await store.assignees_of([everyone.id, for_cy.id, for_ben.id]) == {
        for_cy.id: "cy",
        for_ben.id: "ben",
    }
    await store.join_list(shared.id, "cy", NOW)
    await store.remove_member(shared.id, "ben")
    assert await store.list_rings(rings[:3]) == {
        (shared.id, everyone.id): ["ana", "cy"],
        (shared.id, for_cy.id): ["cy"],
    }
    assert await store.list_rings([]) == {}


async def test_an_assignee_is_not_saved_without_its_reminder(store: Store) -> None:
    shared = shared_list()
    await store.add_list(shared)
    first, second = reminder(shared.owner), reminder(shared.owner)
    await store.add_reminders([first], cap=1, assignees={first.id: "ana"})
    with pytest.raises(CapReached):
        await store.add_reminders([second], cap=1, assignees={second.id: "ana"})
    assert await store.assignees_of([first.id, second.id]) == {first.id: "ana"}
