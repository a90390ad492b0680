"""Measures `next_after` on old series: `python -m tests.unit.time.bench_next_after`."""

from __future__ import annotations

import sys
import timeit
from datetime import UTC, datetime, timedelta

from tocsin.domain import Schedule
from tocsin.time.expand import _series, next_after

NOW = datetime(2031, 6, 2, 13, 0, tzinfo=UTC)
CASES = (
    ("weekly, anchored 5 years ago", "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0", 5 * 365),
    ("daily, anchored 5 years ago", "FREQ=DAILY;BYHOUR=18;BYMINUTE=0", 5 * 365),
    ("weekdays, anchored 5 years ago", "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8", 5 * 365),
    ("monthly last Friday, 5 years ago", "FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0", 5 * 365),
    ("hourly, anchored 1 year ago", "FREQ=HOURLY", 365),
    ("every 30 minutes, 1 year ago", "FREQ=MINUTELY;INTERVAL=30", 365),
    ("minutely, anchored 1 year ago", "FREQ=MINUTELY", 365),
    ("daily COUNT=5000, 5 years ago", "FREQ=DAILY;COUNT=5000;BYHOUR=7;BYMINUTE=0", 5 * 365),
)


def measure(rule: str, days_ago: int, *, cached: bool, calls: int = 2000) -> float:
    """Mean µs per `next_after` call; uncached clears the per-series cache before each call."""
    anchor = (NOW - timedelta(days=days_ago)).astimezone(UTC).replace(tzinfo=None)
    schedule = Schedule(zone="America/New_York", anchor=anchor, rule=rule)
    instants = [NOW + timedelta(minutes=7 * i) for i in range(calls)]

    def run() -> None:
        for instant in instants:
            if not cached:
                _series.cache_clear()
            next_after(schedule, instant)

    return min(timeit.repeat(run, number=1, repeat=3)) / calls * 1e6


def main() -> None:
    out = sys.stdout
    out.write(f"{'series':40} {'cached µs':>10} {'uncached µs':>12}\n")
    for name, rule, days in CASES:
        calls = 200 if "COUNT" in rule else 2000
        hot = measure(rule, days, cached=True, calls=calls)
        cold = measure(rule, days, cached=False, calls=calls)
        out.write(f"{name:40} {hot:10.1f} {cold:12.1f}\n")


if __name__ == "__main__":
    main()
