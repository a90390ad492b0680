"""The cap on pending reminders: how many one app may keep waiting for one owner (and the
owner for himself), so that no caller fills the store through one person.

Counted per (owner, app) rather than per owner, because apps are tenants: one app filling a
person's cap must not stop another app's reminders for that person. A count reads at most
`CAP_READS` times `most` of the owner's rows (so an owner with a long history not pruned yet
may count short: the cap is a bound against abuse, not an exact quota). A single create is
checked by the statement that saves it (`Store.add_reminders` with `cap`: a query of its own
was a round trip more per create); a batch by one query before its save (`over`), so that
the items that fit are saved. Two creates at the same moment may both pass too.
"""

from __future__ import annotations

from collections.abc import Sequence

from tocsin.api.problems import Problem
from tocsin.domain import Reminder, ReminderStatus
from tocsin.store.ports import ReminderStore
from tocsin.store.ports.reminders import CAP_READS

SETTING = "TOCSIN_MAX_REMINDERS_PER_OWNER"


class ReminderCap:
    """At most `most` pending reminders an (owner, app) pair; 0 turns the cap off."""

    def __init__(self, store: ReminderStore, most: int) -> None:
        self._store = store
        self.most = most

    async def over(self, reminders: Sequence[Reminder]) -> dict[str, Problem]:
        """By reminder id, those of `reminders` that would take their (owner, app) pair past
        the cap, in order (the first ones of a batch fill the room left), with the 409 each
        is answered with."""
        waiting = [r for r in reminders if r.status is ReminderStatus.PENDING]
        if not self.most or not waiting:
            return {}
        pairs = sorted({(r.owner, r.source) for r in waiting}, key=lambda p: (p[0], p[1] or ""))
        counts = await self._store.pending_counts(pairs, up_to=CAP_READS * self.most)
        refused: dict[str, Problem] = {}
        for reminder in waiting:
            pair = (reminder.owner, reminder.source)
            if counts.get(pair, 0) >= self.most:
                refused[reminder.id] = self.problem(*pair)
            else:
                counts[pair] = counts.get(pair, 0) + 1
        return refused

    def problem(self, owner: str, source: str | None) -> Problem:
        """The 409 a reminder past the cap is answered with."""
        saver = "the owner himself" if source is None else f"app {source}"
        detail = (
            f"{owner} has {self.most} pending reminders saved by {saver}, the most allowed "
            f"({SETTING}): cancel one, or let one ring, first"
        )
        return Problem(409, "too-many-reminders", detail)
