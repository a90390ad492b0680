"""What a chaos run will do and when: its options, and the fault timetable scaled from the
10-minute reference run to the run's duration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REFERENCE_SECONDS = 600.0  # the 10-minute run every fault's timing is scaled from
KILL_EVERY = 30.0  # seconds between worker kills in the reference run (jittered)
KILL_JITTER = 0.5  # each wait is KILL_EVERY·scale·(1 ± KILL_JITTER)
MIN_KILL_EVERY = 5.0  # a shorter run still lets a restarted worker start before the next kill
POSTGRES_AT, POSTGRES_FOR = 0.25, 20.0  # starts at 25 % of the window, lasts 20 s (reference)
# 503s from 45 % of the window, for 2 minutes: over by 65 %, so that the retries it causes
# (backoff up to 64 s before the last attempt) end near the window's end, not long after.
RECEIVER_AT, RECEIVER_FOR = 0.45, 120.0
CREATE_AHEAD = 60.0  # seconds before its due a reminder is created (reference)
MIN_CREATE_AHEAD = 10.0
FAULTS = ("kills", "postgres", "receiver", "races")


@dataclass(frozen=True, kw_only=True)
class ChaosSpec:
    """The options of one run (`tocsin chaos --help` describes each)."""

    duration: float  # seconds of due instants
    rate: int  # reminders due per second
    workers: int
    freshness: int  # seconds
    snooze: int  # seconds a snooze asks for
    edit_by: int  # seconds an edit moves `at` later
    races_per_second: float
    pg_url: str | None = None
    skip: frozenset[str] = frozenset()
    seed: int = 1
    failover: bool = False  # on a pg_auto_failover cluster of its own: kill, then switch over

    @property
    def scale(self) -> float:
        return self.duration / REFERENCE_SECONDS

    def params(self) -> dict[str, Any]:
        return {
            "duration_s": self.duration,
            "rate_per_s": self.rate,
            "workers": self.workers,
            "freshness_s": self.freshness,
            "snooze_s": self.snooze,
            "edit_by_s": self.edit_by,
            "races_per_s": self.races_per_second,
            "skipped": sorted(self.skip),
            "seed": self.seed,
            "failover": self.failover,
        }


@dataclass(frozen=True)
class Window:
    """A span of wall-clock time (epoch seconds) a fault was planned for or held."""

    name: str
    start: float
    end: float

    def holds(self, instant: float) -> bool:
        return self.start <= instant < self.end

    def as_dict(self) -> dict[str, Any]:
        return {"fault": self.name, "start": self.start, "seconds": round(self.end - self.start, 1)}


@dataclass(frozen=True)
class Plan:
    """When the run's instants fall: the first due second, and each one-off fault window."""

    first_due: int  # epoch second
    duration: float
    kill_every: float
    create_ahead: float
    postgres: Window
    receiver: Window

    @property
    def last_due(self) -> int:
        return self.first_due + int(self.duration) - 1


def plan(spec: ChaosSpec, first_due: int) -> Plan:
    """The timetable of a run whose first reminder is due at `first_due`."""
    scale = spec.scale

    def window(name: str, at: float, lasting: float) -> Window:
        start = first_due + at * spec.duration
        return Window(name, start, start + lasting * scale)

    return Plan(
        first_due=first_due,
        duration=spec.duration,
        kill_every=max(MIN_KILL_EVERY, KILL_EVERY * scale),
        create_ahead=max(MIN_CREATE_AHEAD, CREATE_AHEAD * scale),
        postgres=window("postgres stopped", POSTGRES_AT, POSTGRES_FOR),
        receiver=window("receiver 503", RECEIVER_AT, RECEIVER_FOR),
    )
