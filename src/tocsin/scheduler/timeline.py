"""The in-memory timeline: loaded rings of the held parts, by due second.

Buckets only say which rows to look at; the timeline keeps what was loaded from them until it
is claimed. It holds each ring once per version of its row: an edit since the load is held
beside the old entry, which then loses its claim. It counts, per part, priority and bucket,
what it holds (including entries taken out to be claimed, until `release`), so a loader can
ask the store for "what I have plus one page" and bound its memory. A part's urgent and bulk
entries are counted apart (a `Slot`): each has its own loader and its own room, so a full
part of bulk rings never keeps an urgent one from being read.
"""

from __future__ import annotations

import asyncio
import heapq
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import NamedTuple

from tocsin.domain import DueRing, Schedule
from tocsin.ids import firing_id

RELEASED_KEPT = 200_000  # keys of claims remembered, far more than land during one read

Slot = tuple[int, int]  # (part, priority rank): what one loader reads and counts


class Entry(NamedTuple):
    """One loaded ring: what claiming it needs, and nothing more (memory is the limit). Its
    firing id (`key`) and due second are worked out once, by `make`, not at every look."""

    reminder_id: str
    due_at: datetime
    part: int
    schedule: Schedule | None  # None for a one-off: the claim needs no next due time
    freshness: int
    version: int  # the row's version when loaded: the claim applies only to it
    key: str  # the firing id of this ring
    second: int  # the UTC epoch second of `due_at`
    priority: int = 0  # `Priority.rank`: urgent entries are claimed first
    content: str | None = None  # `DueRing.content`: what the claim writes of the ring
    prev_due: datetime | None = None  # `DueRing.prev_due`: the reminder's ring before it

    @classmethod
    def make(
        cls,
        reminder_id: str,
        due_at: datetime,
        part: int,
        schedule: Schedule | None,
        freshness: int,
        version: int,
        priority: int = 0,
        content: str | None = None,
        prev_due: datetime | None = None,
    ) -> Entry:
        key = firing_id(reminder_id, due_at)
        second = int(due_at.timestamp())
        return cls(
            reminder_id,
            due_at,
            part,
            schedule,
            freshness,
            version,
            key,
            second,
            priority,
            content,
            prev_due,
        )

    @classmethod
    def of(cls, due: DueRing, part: int) -> Entry:
        return cls.make(
            due.reminder_id,
            due.due_at,
            part,
            due.schedule,
            due.freshness,
            due.version,
            due.priority,
            due.content,
            due.prev_due,
        )

    def after_claim(self, due_at: datetime) -> Entry:
        """The same reminder's ring at another due time, once this entry's claim made it the
        occurrence that waits (at the same version: a claim leaves the version alone)."""
        return Entry.make(
            self.reminder_id,
            due_at,
            self.part,
            self.schedule,
            self.freshness,
            self.version,
            self.priority,
            self.content,
            self.due_at,  # this entry's ring comes before it
        )

    def order(self) -> tuple[datetime, str]:
        """Where the entry's row sorts among the part's pending rows, as the store reads
        them: by due time, then id."""
        return self.due_at, self.reminder_id

    @property
    def identity(self) -> tuple[str, int]:
        """What the timeline holds once: a ring at one version of its row. An edit that
        keeps the due time makes a new identity, so the edited row is loaded beside the old
        entry (whose claim then loses) instead of being skipped as held."""
        return self.key, self.version

    @property
    def bucket(self) -> int:
        return self.second // 60

    @property
    def slot(self) -> Slot:
        """The loader this entry belongs to: its part's, for its priority."""
        return self.part, self.priority


def bucket_of(instant: datetime) -> int:
    """The bucket of an instant: its UTC epoch minute."""
    return int(instant.timestamp()) // 60


class Timeline:
    """Entries by due second, with a timer for the earliest second (not one per reminder)."""

    def __init__(self) -> None:
        self._seconds: dict[int, list[Entry]] = {}
        self._heap: list[int] = []  # the seconds in `_seconds`, earliest first
        self._keys: set[tuple[str, int]] = set()  # identities held
        self._buckets: Counter[tuple[Slot, int]] = Counter()  # (slot, bucket) -> held
        self._slots: Counter[Slot] = Counter()  # slot -> held
        self._taken: Counter[Slot] = Counter()  # slot -> taken out, not yet released
        self._drained: dict[Slot, tuple[int, Callable[[], None]]] = {}
        # Identities released lately, with the release's number: a read that began before a
        # claim landed may return the claimed row, and must not load it again.
        self._released: OrderedDict[tuple[str, int], int] = OrderedDict()
        self._releases = 0
        self.earlier = asyncio.Event()  # set when an entry lands before the earliest second

    def mark(self) -> int:
        """A mark to take before reading from the store, for `add(…, since=mark)`."""
        return self._releases

    def add(self, entries: Iterable[Entry], *, since: int | None = None) -> int:
        """Hold new entries, skipping those held already and, with `since`, those released
        (claimed) after that mark; return how many were new."""
        first = self._heap[0] if self._heap else None
        added = 0
        released = self._released
        for entry in entries:
            key = entry.identity
            if key in self._keys:
                continue
            if since is not None and released.get(key, -1) > since:
                continue
            self._keys.add(key)
            second = entry.second
            bucket = self._seconds.get(second)
            if bucket is None:
                self._seconds[second] = [entry]
                heapq.heappush(self._heap, second)
            else:
                bucket.append(entry)
            self._buckets[entry.slot, entry.bucket] += 1
            self._slots[entry.slot] += 1
            added += 1
            if first is None or second < first:
                first = second
                self.earlier.set()
        return added

    def next_second(self) -> int | None:
        """The earliest second with an entry, or None when empty."""
        return self._heap[0] if self._heap else None

    def take_due(self, now: datetime) -> list[Entry]:
        """Take out every entry due at or before `now` (they stay counted until `release`)."""
        limit = now.timestamp()
        due: list[Entry] = []
        while self._heap and self._heap[0] <= limit:
            due.extend(self._seconds.pop(heapq.heappop(self._heap)))
        for entry in due:
            self._taken[entry.slot] += 1
        return due

    def release(self, entries: Iterable[Entry]) -> None:
        """Forget entries taken out with `take_due`, once their claim is over."""
        self._releases += 1
        for entry in entries:
            self._taken[entry.slot] -= 1
            self._forget(entry)
            self._released[entry.identity] = self._releases
        while len(self._released) > RELEASED_KEPT:
            self._released.popitem(last=False)

    def give_back(self, entries: Iterable[Entry]) -> None:
        """Put entries taken out with `take_due` back to wait, as they were (a claim of them
        failed on the database: they are claimed again at the next tick). They stayed held
        meanwhile, so the part's watermark never passed them."""
        first = self._heap[0] if self._heap else None
        for entry in entries:
            self._taken[entry.slot] -= 1
            second = entry.second
            waiting = self._seconds.get(second)
            if waiting is None:
                self._seconds[second] = [entry]
                heapq.heappush(self._heap, second)
            else:
                waiting.append(entry)
            if first is None or second < first:
                first = second
                self.earlier.set()

    def oldest_bucket(self, part: int, priority: int = 0) -> int | None:
        """The earliest bucket with an entry of the slot held (waiting or taken out), if any."""
        slot = (part, priority)
        held = [bucket for (s, bucket) in self._buckets if s == slot]
        return min(held) if held else None

    def drop_part(self, part: int) -> None:
        """Forget the part's entries still waiting (its lease went to another worker)."""
        for second in list(self._seconds):
            kept = []
            for entry in self._seconds[second]:
                if entry.part == part:
                    self._forget(entry)
                else:
                    kept.append(entry)
            if kept:
                self._seconds[second] = kept
            else:
                del self._seconds[second]
        self._heap = list(self._seconds)
        heapq.heapify(self._heap)

    def latest_waiting(self, part: int, priority: int = 0) -> Entry | None:
        """The slot's waiting entry (not taken out) latest in due order, or None."""
        slot = (part, priority)
        for second in sorted(self._seconds, reverse=True):
            entries = [entry for entry in self._seconds[second] if entry.slot == slot]
            if entries:
                return max(entries, key=Entry.order)
        return None

    def evict_latest(self, part: int, count: int, *, after: Entry) -> list[Entry]:
        """Forget up to `count` of the waiting entries of `after`'s slot (`part` and its
        priority), latest in due order first, none earlier than or equal to `after`; return
        them, earliest first. Entries taken out to be claimed are never evicted."""
        evicted: list[Entry] = []
        floor = after.order()
        slot = (part, after.priority)
        for second in sorted(self._seconds, reverse=True):
            if len(evicted) >= count or second < after.second:
                break
            entries = self._seconds[second]
            mine = sorted(
                (entry for entry in entries if entry.slot == slot and entry.order() > floor),
                key=Entry.order,
                reverse=True,
            )[: count - len(evicted)]
            if not mine:
                continue
            gone = {entry.identity for entry in mine}
            kept = [entry for entry in entries if entry.identity not in gone]
            if kept:
                self._seconds[second] = kept
            else:
                del self._seconds[second]
            for entry in mine:
                self._forget(entry)
            evicted.extend(mine)
        if evicted:
            self._heap = list(self._seconds)
            heapq.heapify(self._heap)
        evicted.reverse()
        return evicted

    def holds(self, entry: Entry) -> bool:
        """Whether this entry (this ring at this version) is held, waiting or being claimed."""
        return entry.identity in self._keys

    def held(self, part: int, priority: int = 0) -> int:
        """Entries of the slot held, including those taken out and not yet released."""
        return self._slots[part, priority]

    def taken(self, part: int, priority: int = 0) -> int:
        """Entries of the slot taken out to be claimed and not yet released."""
        return self._taken[part, priority]

    def count(self, part: int, first_bucket: int, last_bucket: int, priority: int = 0) -> int:
        """Entries of the slot held in buckets first..last."""
        slot = (part, priority)
        if last_bucket - first_bucket > 120:
            return sum(
                held
                for (s, bucket), held in self._buckets.items()
                if s == slot and first_bucket <= bucket <= last_bucket
            )
        return sum(self._buckets[slot, b] for b in range(first_bucket, last_bucket + 1))

    def on_drained(
        self, part: int, low_water: int, listener: Callable[[], None], priority: int = 0
    ) -> None:
        """Call `listener` whenever the slot's held entries fall to `low_water` or below."""
        self._drained[part, priority] = (low_water, listener)

    def _forget(self, entry: Entry) -> None:
        self._keys.discard(entry.identity)
        slot = entry.slot
        key = (slot, entry.bucket)
        self._buckets[key] -= 1
        if not self._buckets[key]:
            del self._buckets[key]
        self._slots[slot] -= 1
        watch = self._drained.get(slot)
        if watch is not None and self._slots[slot] <= watch[0]:
            watch[1]()
