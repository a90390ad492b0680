"""Realistic reminders, made fast and in bulk: owners as apps name them, texts of 20–60
characters, one-offs and weekly series, due at whole seconds."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

from tocsin.domain import Channel, Reminder, ReminderStatus, Schedule, one
from tocsin.ids import new_reminder_id, shard_of
from tocsin.time import first_due, parse_schedule

_ACTIONS = (
    "Take",
    "Call",
    "Pick up",
    "Pay",
    "Water",
    "Book",
    "Renew",
    "Send",
    "Check",
    "Prepare",
    "Review",
    "Buy",
)
_OBJECTS = (
    "blood pressure medication",
    "mom about Sunday lunch",
    "the kids from football practice",
    "the electricity bill before the 5th",
    "the plants on the balcony",
    "a dentist appointment for Léa",
    "the car insurance",
    "the quarterly report to finance",
    "the oven temperature",
    "slides for the Monday standup",
    "the pull request from Sam",
    "milk, eggs and bread",
)
_ZONES = ("Europe/Paris", "America/New_York", "Asia/Tokyo", "America/Sao_Paulo", "UTC")
_REPEATS = ("every Monday 09:00", "daily 18:00", "weekdays at 8:30", "every 2 weeks on Tue at 7:15")
_SERIES_SHARE = 0.45
_METADATA_SHARE = 0.2


class Population:
    """Makes reminders as the API would save them; `seed` makes runs repeatable."""

    def __init__(self, *, seed: int = 7, now: datetime | None = None) -> None:
        self._rng = random.Random(seed)
        self.now = now or datetime.now(UTC)
        # Saved a while ago, as a 09:00 rush is: nothing due soon after its save wakes the
        # scheduler, so the benchmark measures loading ahead, not wake-ups.
        self.saved_at = self.now - timedelta(hours=1)
        self._series: dict[tuple[str, str], tuple[Schedule, datetime]] = {}
        self._made = 0
        self._ids: set[str] = set()

    def owner(self) -> str:
        kind = self._rng.randrange(3)
        if kind == 0:
            return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
        if kind == 1:
            return f"{self._rng.randrange(10**9, 10**10)}"
        first = self._rng.choice(("ana", "li", "sam", "noor", "jo", "kai", "mia", "olu"))
        return f"{first}.{self._rng.randrange(10**5)}@example.com"

    def text(self) -> str:
        return f"{self._rng.choice(_ACTIONS)} {self._rng.choice(_OBJECTS)}"

    def due_one_offs(
        self,
        count: int,
        due: Iterator[datetime],
        *,
        channel: Channel = Channel.WEBHOOK,
        owners: Sequence[str] = (),
    ) -> Iterator[Reminder]:
        """`count` one-offs at the instants `due` yields (absolute `at`, as apps send), each
        for a new owner, or for `owners` in turn when given (owners with contacts)."""
        for n in range(count):
            at = next(due)
            schedule = Schedule(zone="UTC", anchor=at, rule=None)
            owner = owners[n % len(owners)] if owners else None
            yield self._reminder(
                schedule, at, at_text=_utc_text(at), repeat=None, channel=channel, owner=owner
            )

    def mixed(self, count: int) -> Iterator[Reminder]:
        """`count` reminders as people save them: one-offs in the coming weeks (local wall
        times), weekly and daily series, some with metadata."""
        for _ in range(count):
            zone = self._rng.choice(_ZONES)
            if self._rng.random() < _SERIES_SHARE:
                repeat = self._rng.choice(_REPEATS)
                schedule, due = self._series_of(zone, repeat)
                yield self._reminder(schedule, due, at_text=None, repeat=repeat)
            else:
                local = self.now.replace(tzinfo=None, second=0, microsecond=0) + timedelta(
                    minutes=self._rng.randrange(60 * 24 * 2, 60 * 24 * 30)
                )
                schedule = Schedule(zone=zone, anchor=local, rule=None)
                once = first_due(schedule, self.now)
                assert once is not None
                yield self._reminder(schedule, once, at_text=local.isoformat(), repeat=None)

    def _series_of(self, zone: str, repeat: str) -> tuple[Schedule, datetime]:
        known = self._series.get((zone, repeat))
        if known is None:
            schedule = parse_schedule(zone=zone, at=None, repeat=repeat, now=self.now)
            due = first_due(schedule, self.now)
            assert due is not None
            known = self._series[(zone, repeat)] = (schedule, due)
        return known

    def _reminder(
        self,
        schedule: Schedule,
        due: datetime,
        *,
        at_text: str | None,
        repeat: str | None,
        channel: Channel = Channel.WEBHOOK,
        owner: str | None = None,
    ) -> Reminder:
        owner = owner or self.owner()
        shard = shard_of(owner)
        metadata = None
        if self._rng.random() < _METADATA_SHARE:
            metadata = {"list": self._rng.choice(("home", "work", "health"))}
        return Reminder(
            id=self._new_id(shard),
            owner=owner,
            shard=shard,
            text=self.text(),
            channel=one(channel),
            schedule=schedule,
            at=at_text,
            repeat=repeat,
            status=ReminderStatus.PENDING,
            due_at=due,
            freshness=600,
            metadata=metadata,
            source=None,
            snoozed_from=None,
            version=1,
            created_at=self.saved_at,
            updated_at=self.saved_at,
        )

    def _new_id(self, shard: int) -> str:
        """A fresh id, minted as if saved over time (a few per millisecond, as a busy API
        does) and never one this population made already."""
        self._made += 1
        minted = self.saved_at + timedelta(milliseconds=self._made // 4)
        while True:
            reminder_id = new_reminder_id(shard, minted)
            if reminder_id not in self._ids:
                self._ids.add(reminder_id)
                return reminder_id


def _utc_text(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def spread_over(
    start: datetime, seconds: int, count: int, rng: random.Random
) -> Iterator[datetime]:
    """Instants at whole seconds in [start, start + seconds), uniformly at random."""
    width = max(1, seconds)
    for _ in range(count):
        yield start + timedelta(seconds=rng.randrange(width))


def at_rate(start: datetime, per_second: int) -> Iterator[datetime]:
    """`per_second` instants at each whole second from `start` on: a constant rate."""
    second = 0
    while True:
        instant = start + timedelta(seconds=second)
        for _ in range(per_second):
            yield instant
        second += 1
