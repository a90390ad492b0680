"""Where a reader looks for a reminder's newest ring.

A ring is kept in due order (`rings`, keyed by due instant, reminder and version), beside the
other rings of its minute, and nothing indexes the rings by reminder: an index by reminder
takes an entry a ring on a leaf that no other ring of its minute shares, which a table of
long standing writes whole once a checkpoint. So a reader is told where to look. Each ring of
a version is at an instant of the version's timeline (its occurrences, their early alerts and
nags), so the latest instants of that timeline up to now (`tocsin.time.expand.latest_rings`)
hold the version's newest ring unless nothing rang at any of them, and the store's walk
(`_RING_STATE`, `_REMINDERS_NOW`) starts from the newest of them that rang, a probe of the
rings' key each.

When none rang, nor the occurrence the version's write scheduled (the statement's `lost`),
nothing of the version rang yet, if the instants asked about were all of its timeline up to
now; if they were not, its earlier rings may have been pruned and none rung since (an outage
as long as those instants span), and the reader asks again with eight times as many, a few
rounds at most. A row that changed between its read and the walk (an edit: another version,
another timeline) is asked about again as it is now.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Generic, TypeVar

from tocsin.errors import TocsinError
from tocsin.store import codec
from tocsin.store.rows import Row
from tocsin.time.expand import latest_rings

R = TypeVar("R", bound=Row)

FIRST_LOOK = 8  # instants asked about first: a series' newest ring is nearly always the last
WIDER = 8  # each round after asks about this many times more
ROUNDS = 4  # at most: 8, 64, 512, 4,096 instants


class Looking(Generic[R]):
    """One read's search for the newest rings of the reminders `rows` (as their rows are):
    `ask` what to look for, hand the statement's answers to `take`, until `done`; `found`
    then has each reminder still there, as it is now, in the order of `rows`."""

    def __init__(
        self, rows: Iterable[R], *, now: datetime, instant: Callable[[Any], datetime]
    ) -> None:
        rows = list(rows)
        self._now = now
        self._instant = instant
        self._order = [row["id"] for row in rows]
        self._asking: dict[str, tuple[R, int]] = {row["id"]: (row, FIRST_LOOK) for row in rows}
        self._asked: dict[str, int] = {}  # how many instants each was last asked about
        self._found: dict[str, R] = {}
        self._rounds = 0

    @property
    def done(self) -> bool:
        return not self._asking

    def ask(self) -> tuple[list[str], list[list[datetime]]]:
        """The reminders still looked for, and for each the instants to look at."""
        ids = list(self._asking)
        starts = [self._starts(*self._asking[reminder]) for reminder in ids]
        self._asked = {reminder: len(each) for reminder, each in zip(ids, starts, strict=True)}
        return ids, starts

    def take(self, answers: Iterable[R]) -> None:
        """The statement's rows for the last `ask`: a reminder it found as asked is found; one
        at another version, or `lost`, is asked about again (while rounds are left)."""
        self._rounds += 1
        last = self._rounds >= ROUNDS
        asked, self._asking = self._asking, {}
        for answer in answers:
            row, count = asked[answer["id"]]
            if not last and answer["version"] != row["version"]:
                self._asking[answer["id"]] = (answer, count)
            elif not last and answer["lost"] and self._asked[answer["id"]] == count:
                self._asking[answer["id"]] = (answer, count * WIDER)
            else:
                self._found[answer["id"]] = answer

    def found(self) -> list[R]:
        return [self._found[reminder] for reminder in self._order if reminder in self._found]

    def _starts(self, row: Row, count: int) -> list[datetime]:
        if row["status"] != "pending" or row["due_at"] is None:
            return []
        try:
            return latest_rings(
                codec.schedule_of_row(row), self._instant(row["due_at"]), self._now, count
            )
        except (TocsinError, ValueError):
            # A schedule that can no longer be worked out (its zone gone from an upgraded
            # tzdata; a rule past the expansion budget): the walk starts where the version
            # did, as for one with no ring yet.
            return []


def pick(rows: Sequence[R], status: str | None) -> list[R]:
    """The rows of `status` as they are now (all when None)."""
    return [row for row in rows if status is None or row["now_status"] == status]
