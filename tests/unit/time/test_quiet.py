"""Quiet hours on the local clock: inside or not, and when they end, across midnight and
daylight-saving changes (hypothesis over zones with odd offsets and history)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.time.odd_zones import ODD_ZONES
from tocsin.time.quiet import QuietHours, parse_clock, quiet_until


def span(
    start: str, end: str, zone: str = "Europe/Berlin", source: str | None = None
) -> QuietHours:
    return QuietHours(
        owner="ana",
        source=source,
        start=parse_clock(start),
        end=parse_clock(end),
        zone=zone,
        updated_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_a_span_across_midnight_holds_until_its_end_the_next_morning() -> None:
    night = span("22:00", "07:00")
    assert night.until(utc(2026, 12, 6, 20, 59)) is None  # 21:59 CET
    assert night.until(utc(2026, 12, 6, 21, 0)) == utc(2026, 12, 7, 6, 0)  # 22:00 → 07:00
    assert night.until(utc(2026, 12, 7, 5, 59)) == utc(2026, 12, 7, 6, 0)
    assert night.until(utc(2026, 12, 7, 6, 0)) is None  # the end is not inside


def test_a_span_within_a_day() -> None:
    lunch = span("12:00", "13:30", "Asia/Kolkata")
    assert lunch.until(utc(2026, 12, 6, 6, 30)) == utc(2026, 12, 6, 8, 0)
    assert lunch.until(utc(2026, 12, 6, 8, 0)) is None


def test_an_end_the_clocks_skip_lands_the_gap_later() -> None:
    # Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST. An end of 02:30 is read with the
    # offset before the gap: 01:30 UTC, 03:30 on the clock.
    night = span("01:00", "02:30")
    assert night.until(utc(2026, 3, 29, 0, 30)) == utc(2026, 3, 29, 1, 30)
    assert night.until(utc(2026, 3, 29, 1, 29)) == utc(2026, 3, 29, 1, 30)
    assert night.until(utc(2026, 3, 29, 1, 30)) is None


def test_an_end_the_clocks_pass_twice_is_its_first() -> None:
    # Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:30 happens at 00:30 and 01:30 UTC.
    night = span("22:00", "02:30")
    assert night.until(utc(2026, 10, 24, 23, 0)) == utc(2026, 10, 25, 0, 30)
    assert night.until(utc(2026, 10, 25, 1, 0)) is None  # 02:00 CET, the second time round


def test_spans_that_follow_one_another_hold_until_the_last_ends() -> None:
    owner, app = span("22:00", "06:00"), span("05:30", "08:00", source="x")
    assert quiet_until([owner, app], utc(2026, 12, 6, 22, 0)) == utc(2026, 12, 7, 7, 0)
    assert quiet_until([owner, app], utc(2026, 12, 7, 12, 0)) is None
    assert quiet_until([], utc(2026, 12, 7, 12, 0)) is None


@pytest.mark.parametrize(
    "text", ["24:00", "7:00", "07:0", "07-00", "ab:cd", "", "07:00:00", "٠٧:٠٠"]
)
def test_clock_times_are_hh_mm(text: str) -> None:
    with pytest.raises(ValueError, match=r"HH:MM|00:00 to 23:59"):
        parse_clock(text)


minutes = st.integers(0, 24 * 60 - 1)
instants = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2037, 12, 31), timezones=st.just(UTC)
)


@given(zone=st.sampled_from(ODD_ZONES), start=minutes, end=minutes, now=instants)
def test_the_end_is_later_within_a_day_and_every_instant_until_it_is_held(
    zone: str, start: int, end: int, now: datetime
) -> None:
    if start == end:
        return
    quiet = QuietHours(
        owner="ana",
        source=None,
        start=time(start // 60, start % 60),
        end=time(end // 60, end % 60),
        zone=zone,
        updated_at=now,
    )
    until = quiet.until(now)
    if until is None:
        return
    assert now < until <= now + timedelta(hours=26)
    # Held all the way: an instant just before the end is held until the same end.
    assert quiet.until(until - timedelta(seconds=1)) == until
    assert quiet.until(until) is None or quiet.until(until) != until
