"""Loading one held part: catch-up from its watermark, the next minute ahead of time,
reloads on wake-ups, and the sweep that catches anything due and unclaimed.

A part has two loaders, one for its urgent rows and one for its bulk rows, each reading only
its own (the store's due index is keyed by priority after the lane) into room of its own in
the timeline. So however many bulk rows a minute holds, and however far behind they are,
an urgent row is read as early as it would be with no bulk at all; the claimer, the delivery
line and the senders then put it ahead of them (docs/api.md, "Urgent ahead of bulk"). The
two share the part's watermark (`PartWatermark`): a bucket is finished when neither has a
pending row in it.

How one loader's rows are held, in the order the store reads them (due time, then id):

- **Read.** Buckets before `_next` are read completely: every pending row of them was held
  when it was read, or came later and is reported by its wake-up or found by the sweep. The
  bucket `_next` may be read in part, up to `_cursor` (the last row read, keyset paging).
  A wake-up re-reads only what was read already; a row saved into a bucket not read yet is
  taken in its turn, so a part behind catches up oldest first.
- **Reading ahead.** The loader reads `_next …` the bucket `lead` ahead of now, page by page.
- **Full.** At `max_held` entries it stops reading ahead, and reads on when claims drain the
  part to `low_water` (the timeline calls it).
- **Admission** (`_admit`), the one way in for every read — reading ahead, a wake-up's
  reload, the sweep: rows are taken while there is room; when the part is full, a row that
  sorts before the part's latest waiting entry is still taken, and pushes that tail out
  (`Timeline.evict_latest`) instead of being refused. The read is then rewound to just
  before the first row pushed out, so those rows are read again in their turn. A ring saved
  or snoozed into a full minute therefore rings at its second, not after the minute's bulk.
- **Released.** A claimed entry leaves the timeline (`Timeline.release`).

The sweep reads what API writes saved since the part's last sweep (less `sweep_margin`, for
a write that commits late), in the buckets read already, whatever the watermark says: a row
saved below it (an API host whose clock is behind, a due time moved into the past while its
NOTIFY was lost) is rung late or recorded expired, never left pending. What a claim decided
stays in the store's `due` until its minute is tidied, so reading a part's minutes again
would read every ring of them; the saved read costs what API writes saved, not what rang.
A part taken over sweeps from its last holder's last sweep (`PartWatermark.swept_at`), and a
claim that failed gives its entries back to the timeline (`Timeline.give_back`), so nothing
the sweep no longer reads is left behind.

The watermark (the last bucket with nothing pending left) is where a new holder starts
reading: it stays before the earliest bucket held (waiting or being claimed), the first not
read completely, and anything found pending that memory could not take.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from tocsin.clock import Clock
from tocsin.delivery.waiting import sleep_until
from tocsin.domain import PRIORITY_RANKS, DueRing
from tocsin.errors import StoreError, level_for
from tocsin.scheduler.timeline import Entry, Timeline, bucket_of
from tocsin.store.ports import SchedulerStore

logger = logging.getLogger(__name__)

SWEEP_OVERDUE = 15  # sweep even while claims run once this many sweep intervals went by


@dataclass(frozen=True, kw_only=True)
class LoadTuning:
    """How much of a part to hold in memory, and when to read it."""

    page: int = 10_000  # rows asked for beyond those held, per read
    max_held: int = 20_000  # entries held per part before reading stops
    low_water: int = 5_000  # held entries that make the loader read on
    lead: timedelta = timedelta(seconds=10)  # read the next minute this long before it starts
    sweep: timedelta = timedelta(seconds=2)
    sweep_page: int = 1_000
    # How long after its saved time an API write may commit and still be swept: what the
    # sweep reads again of the round before.
    sweep_margin: timedelta = timedelta(seconds=30)
    retry: timedelta = timedelta(seconds=1)  # wait after a failed read


class Cursor(NamedTuple):
    """Where reading ahead stopped: it pages through buckets `first` … (the bucket ahead of
    now), and has read every row up to (due_at, id) = `after`, which lies in `first` or a
    later bucket of that range (`bucket`)."""

    first: int
    after: tuple[datetime, str]

    @property
    def bucket(self) -> int:
        """The bucket of the last row read."""
        return bucket_of(self.after[0])

    def passed(self, order: tuple[datetime, str]) -> bool:
        """Whether a row sorting at `order` in the range lies at or before the last row read."""
        return order <= self.after


class PartWatermark:
    """A part's watermark: the last bucket with nothing pending left in it, moved by the
    sweeps of the part's loaders, one for each priority. Each says up to where its own rows
    are finished, and when the sweep that found so read (`swept_at`: what API writes saved
    after it, less the margin, is what a new holder's first sweep reads); the watermark moves
    to the earliest of those once every loader has said."""

    def __init__(
        self,
        store: SchedulerStore,
        *,
        part: int,
        worker: str,
        watermark: int | None,
        swept_at: datetime | None = None,
    ) -> None:
        self._store = store
        self._part = part
        self._worker = worker
        self.value = watermark
        self.swept_at = swept_at
        self._finished: dict[int, tuple[int, datetime]] = {}

    async def finished(self, priority: int, bucket: int, *, swept_at: datetime) -> None:
        """The loader of `priority` has nothing pending up to `bucket`, as its sweep that
        read at `swept_at` found."""
        self._finished[priority] = (bucket, swept_at)
        if len(self._finished) < len(PRIORITY_RANKS):
            return
        bucket = min(finished for finished, _ in self._finished.values())
        swept = min(at for _, at in self._finished.values())
        if bucket < 0 or (self.value is not None and bucket <= self.value):
            return
        recorded = await self._store.advance_watermark(
            self._worker, part=self._part, bucket=bucket, swept_at=swept
        )
        if recorded:
            self.value = bucket


class PartLoader:
    """Keeps one part's coming rings of one priority in the timeline.

    `_next` is the first bucket not yet read completely: every pending row of an earlier
    bucket was in memory when it was read (what arrived since is reported by `wake` or found
    by the sweep). A part that never ran starts at bucket 0 — every pending row that is due,
    however old, is decided (rung late or recorded expired) rather than left pending forever.
    """

    def __init__(
        self,
        part: int,
        shards: range,
        store: SchedulerStore,
        timeline: Timeline,
        clock: Clock,
        *,
        priority: int,
        watermark: PartWatermark,
        tuning: LoadTuning,
    ) -> None:
        self.part = part
        self.priority = priority
        self._shards = shards
        self._store = store
        self._timeline = timeline
        self._clock = clock
        self._watermark = watermark
        self._tuning = tuning
        self._next = 0 if watermark.value is None else watermark.value + 1
        self._dirty: set[int] = set()
        # The read-ahead range being paged (its first bucket), to continue after its last row.
        self._cursor: Cursor | None = None
        self._wake = asyncio.Event()
        # Reading stopped with rows left to read because memory was full: the timeline
        # draining to `low_water` wakes the loader then, and only then (at the end of a
        # burst every claim drains the part, and waking for each would spin the loader).
        self._waiting_for_room = False
        self._next_sweep = clock.now()
        self._last_sweep = clock.now()
        # The database's clock at this loader's last complete sweep (the part's last holder's,
        # until it has one; None: never swept, so the first sweep reads all that was saved).
        self._swept = watermark.swept_at
        timeline.on_drained(part, tuning.low_water, self._drained, priority)

    def wake(self, due_at: datetime) -> None:
        """A reminder of this part became due at `due_at`: re-read its bucket if the read
        passed it already — a bucket before `_next`, or `_next` itself when the cursor in it
        lies at or after `due_at`. A bucket not read that far is read in its turn anyway: a
        part behind takes its backlog oldest first, and a wake-up for the current minute
        does not jump the rows due before it."""
        bucket = bucket_of(due_at)
        cursor = self._reading()
        if bucket < self._next or (cursor is not None and due_at <= cursor.after[0]):
            self._dirty.add(bucket)
            self._wake.set()

    def _drained(self) -> None:
        if self._waiting_for_room:
            self._wake.set()

    async def run(self) -> None:
        while True:
            self._wake.clear()
            try:
                await self.step()
            except StoreError as error:
                logger.log(level_for(error), "part %d: reading failed: %s", self.part, error)
            except Exception:
                logger.exception("part %d: reading failed", self.part)
            else:
                await sleep_until(self._clock, self._next_wake(), self._wake)
                continue
            await self._clock.sleep_until(self._clock.now() + self._tuning.retry)

    async def step(self) -> None:
        """Do whatever is due now: wake-up reloads, the sweep, reading ahead."""
        now = self._clock.now()
        while self._dirty:
            bucket = min(self._dirty)
            await self._read(bucket, bucket)
            self._dirty.discard(bucket)
        if now >= self._next_sweep:
            # A sweep put off (claims under way) is tried again an interval later, not at
            # once: the loader would otherwise spin until the claims end.
            self._next_sweep = now + self._tuning.sweep
            if self._quiet_or_overdue(now):
                await self._sweep(now)
                self._last_sweep = now
        await self._read_ahead(now)

    def _quiet_or_overdue(self, now: datetime) -> bool:
        """Sweep when no claim of the part is under way (rows being claimed are still
        pending: a sweep would read them all for nothing), or when sweeps fell far behind."""
        overdue = now - self._last_sweep >= self._tuning.sweep * SWEEP_OVERDUE
        return overdue or not self._timeline.taken(self.part, self.priority)

    def _next_wake(self) -> datetime:
        """The sweep, or when the next bucket comes within the lead (when memory has room;
        else the timeline wakes the loader as it drains)."""
        if self._timeline.held(self.part, self.priority) >= self._tuning.max_held:
            return self._next_sweep
        ahead = datetime.fromtimestamp(self._next * 60, UTC) - self._tuning.lead
        return min(self._next_sweep, max(ahead, self._clock.now() + timedelta(seconds=0.05)))

    async def _read_ahead(self, now: datetime) -> None:
        """Read buckets `_next … bucket(now + lead)` page by page, as far as memory allows.
        Pages continue from the last row read (keyset): rows held are not read again. A row
        saved meanwhile before that point is due within the wake-up horizon, so its wake-up
        (or the sweep) brings it in."""
        target = bucket_of(now + self._tuning.lead)
        while self._next <= target:
            room = self._tuning.max_held - self._timeline.held(self.part, self.priority)
            if room <= 0:
                break
            limit = min(self._tuning.page, room)
            cursor = self._reading()
            rows = await self._page(self._next, target, limit, cursor and cursor.after)
            if len(rows) == limit:
                last = rows[-1]
                self._cursor = Cursor(self._next, (last.due_at, last.reminder_id))
                continue  # more to read in this range, as far as memory allows
            self._cursor = None
            self._next = target + 1
        self._waiting_for_room = self._next <= target

    def _reading(self) -> Cursor | None:
        """Where reading ahead stopped within the range from `_next`, if it started it."""
        cursor = self._cursor
        return cursor if cursor is not None and cursor.first == self._next else None

    async def _page(
        self, first: int, last: int, limit: int, after: tuple[datetime, str] | None
    ) -> list[DueRing]:
        """Admit the next `limit` pending rows of buckets first..last after `after`."""
        mark = self._timeline.mark()
        rows = await self._store.load_due(
            shards=self._shards,
            first_bucket=first,
            last_bucket=last,
            limit=limit,
            after=after,
            priority=self.priority,
        )
        self._admit([Entry.of(row, self.part) for row in rows], since=mark)
        return rows

    async def _read(self, first: int, last: int) -> bool:
        """Admit every pending row of buckets first..last not held yet, one page more than
        held at most; return whether that was all of them."""
        limit = self._timeline.count(self.part, first, last, self.priority) + self._tuning.page
        return len(await self._page(first, last, limit, None)) < limit

    def _admit(self, entries: list[Entry], *, since: int) -> int:
        """Hold `entries` (in due order) as far as there is room and, beyond it, those that
        sort before the part's latest waiting entry, which are pushed out to make room for
        them; return how many were new."""
        timeline, part, priority = self._timeline, self.part, self.priority
        room = self._tuning.max_held - timeline.held(part, priority)
        if len(entries) <= room:
            return timeline.add(entries, since=since)
        entries = [entry for entry in entries if not timeline.holds(entry)]
        if len(entries) <= room:
            return timeline.add(entries, since=since)
        tail = timeline.latest_waiting(part, priority)
        take = max(room, 0)
        if tail is not None:
            bound = tail.order()
            while take < len(entries) and entries[take].order() < bound:
                take += 1
        added = 0
        out = entries[take : take + 1]  # the first row refused: read again in its turn
        if take:
            admitted = entries[:take]
            added = timeline.add(admitted, since=since)
            over = timeline.held(part, priority) - self._tuning.max_held
            if over > 0:
                out = timeline.evict_latest(part, over, after=admitted[-1])[:1] or out
        if out:
            self._rewind(out[0])
        return added

    def _rewind(self, first_out: Entry) -> None:
        """Mark the rows from `first_out` on as not read (they were pushed out), so reading
        ahead takes them in again once there is room."""
        due_at, reminder_id = first_out.order()
        if first_out.bucket >= self._next:
            cursor = self._reading()
            if cursor is None or not cursor.passed((due_at, reminder_id)):
                # Reading ahead has not reached it (the sweep let it in, due and missed):
                # it is read in its turn.
                return
        self._next = first_out.bucket
        self._cursor = Cursor(first_out.bucket, (due_at, just_before(reminder_id)))
        self._waiting_for_room = True

    async def _sweep(self, now: datetime) -> None:
        """Hold what API writes saved lately (since the last sweep, less the margin) where
        reading ahead passed already, not decided, and not held; move the watermark past
        buckets with nothing pending left. A read cut by its limit is read again from the
        same time."""
        tuning = self._tuning
        limit = self._timeline.held(self.part, self.priority) + tuning.sweep_page
        since = None if self._swept is None else self._swept - tuning.sweep_margin
        mark = self._timeline.mark()
        # Only what reading ahead passed: the buckets before `_next`, and `_next` up to its
        # cursor (the rest is read in its turn).
        cursor = self._reading()
        rows, read_at = await self._store.load_saved(
            shards=self._shards,
            since=since,
            last_bucket=self._next if cursor else self._next - 1,
            limit=limit,
            priority=self.priority,
            through=cursor.after[0] if cursor else None,
        )
        missed = self._missed(rows)
        if self._admit(missed, since=mark):
            logger.info("part %d: the sweep found rings not loaded", self.part)
        complete = len(rows) < limit
        if not complete and self._swept is None:
            return  # the next sweep reads them again, from the start
        swept = read_at if complete else self._swept
        assert swept is not None
        self._swept = swept
        finished = min(bucket_of(now), self._next) - 1
        held = self._timeline.oldest_bucket(self.part, self.priority)
        if held is not None:
            finished = min(finished, held - 1)
        left = [entry.bucket for entry in missed if not self._timeline.holds(entry)]
        if not complete and rows:
            left.append(bucket_of(rows[-1].due_at))
        if left:
            finished = min(finished, min(left) - 1)
        await self._watermark.finished(self.priority, finished, swept_at=swept)

    def _missed(self, rows: list[DueRing]) -> list[Entry]:
        """The rows read by the sweep that are not held. They are admitted like any read
        (`_admit`): a part far behind (an outage, a save that ended after its rows were due)
        takes in as much as memory allows, the earliest first, and the next sweep the rest."""
        entries = (Entry.of(row, self.part) for row in rows)
        return [entry for entry in entries if not self._timeline.holds(entry)]


def just_before(reminder_id: str) -> str:
    """A string that sorts just before `reminder_id` and after every shorter or equal-length
    id that sorts before it (ids are ASCII, compared bytewise): a keyset cursor that reads
    `reminder_id` itself again."""
    return reminder_id[:-1] + chr(ord(reminder_id[-1]) - 1) + "\x7f"
