"""Shared lists in the store, on both backends: a list with its members, invitations and
their acceptance, roles changed and members removed, and whom a list's ring goes to — the
members who joined, or the assignee alone once he joined — looked up for many rings at once."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.integration.store.factories import NOW, claim, reminder
from tocsin.domain import Member, ReminderStatus, Role, SharedList
from tocsin.errors import CapReached, ListGone
from tocsin.ids import new_reminder_id, shard_of
from tocsin.store import Store


def shared_list(name: str = "Household", source: str | None = None) -> SharedList:
    list_id = new_reminder_id(shard_of("ana"), NOW)
    first = Member(list_id=list_id, member="ana", role=Role.OWNER, invited_at=NOW, joined_at=NOW)
    return SharedList(
        id=list_id, name=name, source=source, created_at=NOW, updated_at=NOW, members=(first,)
    )


async def two_lists(store: Store) -> tuple[SharedList, SharedList]:
    """Two lists saved, Ana the owner of each."""
    shared, other = shared_list(), shared_list("Team")
    await store.add_list(shared)
    await store.add_list(other)
    return shared, other


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
    shared, other = await two_lists(store)
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


async def test_a_lists_delete_takes_back_what_waits_and_no_save_in_it_comes_after(
    store: Store,
) -> None:
    shared, other = await two_lists(store)
    await store.save_member(invited(shared, "ben"))
    series = reminder(shared.owner, rule="FREQ=DAILY;BYHOUR=10;BYMINUTE=0")
    one_off, elsewhere = reminder(shared.owner), reminder(other.owner)
    await store.add_reminders([series, one_off, elsewhere])
    assert series.due_at is not None
    # The series' occurrence was claimed first: its next one waits, and is what goes.
    following = series.due_at + timedelta(days=1)
    [rung] = await store.claim(
        [claim(series, next_due_at=following)],
        sender="w",
        now=series.due_at,
        lease=timedelta(minutes=1),
    )

    assert await store.delete_list(shared.id, now=NOW) == 2
    assert await store.get_list(shared.id) is None
    assert await store.member_lists("ben") == []
    for gone in (series, one_off):
        found = await store.get_reminder(gone.id, now=NOW)
        assert found is not None
        assert (found.status, found.due_at) == (ReminderStatus.CANCELLED, None)
    found = await store.get_reminder(series.id, now=NOW)
    assert found is not None
    assert found.last_firing is not None
    assert found.last_firing.id == rung.id  # claimed before: it goes
    kept = await store.get_reminder(elsewhere.id, now=NOW)
    assert kept is not None
    assert kept.status is ReminderStatus.PENDING

    late = reminder(shared.owner)
    with pytest.raises(ListGone):
        await store.add_reminders([late])
    with pytest.raises(ListGone):
        await store.add_reminders([late, reminder(other.owner)], assignees={late.id: "ana"})
    with pytest.raises(ListGone):
        await store.snooze_firing(rung.id, late)
    assert await store.list_reminders(shared.owner, status=ReminderStatus.PENDING) == []
    assert len(await store.list_reminders(other.owner)) == 1  # the batch saved nothing
    assert await store.delete_list(shared.id, now=NOW) is None
