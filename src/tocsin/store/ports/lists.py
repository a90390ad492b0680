"""The shared lists' port: lists, their members, and whom a list's ring goes to."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from tocsin.domain import Member, SharedList


class ListStore(Protocol):
    """Shared lists and their members: managed through the API, read by reminder when a
    list's ring is about to be sent (its members decide where it goes then)."""

    @abstractmethod
    async def add_list(self, shared: SharedList) -> None:
        """Save a new list with its members (its first owner), in one transaction."""

    @abstractmethod
    async def get_list(self, list_id: str) -> SharedList | None:
        """The list with its members (by name), or None."""

    @abstractmethod
    async def member_lists(self, member: str) -> list[SharedList]:
        """The lists `member` is on, invited or joined, each with all its members, by id."""

    @abstractmethod
    async def app_lists(self, source: str) -> list[SharedList]:
        """The lists app `source` made, each with all its members, by id."""

    @abstractmethod
    async def rename_list(self, list_id: str, name: str, now: datetime) -> bool:
        """Rename the list; False when there is none."""

    @abstractmethod
    async def delete_list(self, list_id: str, *, now: datetime) -> int | None:
        """Delete the list with its members and cancel its reminders, in one transaction: each
        pending one's occurrence that waits is taken back as `cancel_reminder` takes it back
        (a claim that decided it first rang it, and a series' next occurrence is taken back
        instead), so once this returns no occurrence of the list's waits to ring; a ring
        claimed before may still go. A list reminder saved at the same time either commits
        first (and is cancelled here) or finds the list gone (`ListGone`). How many reminders
        were cancelled; None when there is no such list. `ListKeptRinging` (nothing deleted)
        when claims kept deciding one reminder's occurrences first."""

    @abstractmethod
    async def save_member(self, member: Member) -> None:
        """Invite `member` (as given: invited, or joined), or change the role of one on the
        list already (whether he joined is kept)."""

    @abstractmethod
    async def join_list(self, list_id: str, member: str, now: datetime) -> bool:
        """Accept `member`'s invitation (once); False when he is not on the list."""

    @abstractmethod
    async def remove_member(self, list_id: str, member: str) -> bool:
        """Take `member` off the list: no ring sent after this goes to him. False when he
        was not on it."""

    @abstractmethod
    async def list_rings(
        self, rings: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], list[str]]:
        """For many (list id, reminder id) pairs at once, whom a ring of the reminder goes to
        now: the list's joined members, or the reminder's assignee alone when it has one and
        he joined (pairs that go to nobody are left out)."""

    @abstractmethod
    async def assignees_of(self, reminder_ids: Sequence[str]) -> dict[str, str]:
        """The assignees of these reminders, for those that have one."""
