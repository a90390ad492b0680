"""A place reminder's local window and the day its ring counts against, across midnight and
daylight-saving changes (hypothesis over zones with odd offsets and history)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from hypothesis import given
from hypothesis import strategies as st

from tests.unit.time.odd_zones import ODD_ZONES
from tocsin.time.places import window_day
from tocsin.time.quiet import QuietHours
from tocsin.time.zones import load_zone

CLOCKS = st.builds(time, st.integers(0, 23), st.sampled_from([0, 15, 30, 45]))
INSTANTS = st.datetimes(
    min_value=datetime(2010, 1, 1), max_value=datetime(2035, 1, 1), timezones=st.just(UTC)
)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_home_after_five_in_berlin_summer_and_winter() -> None:
    after = time(17, 0)
    assert window_day(utc(2026, 7, 1, 14, 59), "Europe/Berlin", after=after, before=None) is None
    assert window_day(utc(2026, 7, 1, 15, 0), "Europe/Berlin", after=after, before=None) == date(
        2026, 7, 1
    )  # 17:00 CEST
    assert window_day(utc(2026, 12, 1, 15, 59), "Europe/Berlin", after=after, before=None) is None
    assert window_day(utc(2026, 12, 1, 16, 0), "Europe/Berlin", after=after, before=None) == date(
        2026, 12, 1
    )  # 17:00 CET
    assert window_day(utc(2026, 12, 1, 23, 0), "Europe/Berlin", after=after, before=None) is None


def test_a_night_window_counts_against_the_evening_it_began() -> None:
    night = {"after": time(22, 0), "before": time(2, 0)}
    assert window_day(utc(2026, 12, 6, 21, 30), "Europe/Berlin", **night) == date(2026, 12, 6)
    assert window_day(utc(2026, 12, 7, 0, 30), "Europe/Berlin", **night) == date(2026, 12, 6)
    assert window_day(utc(2026, 12, 7, 1, 0), "Europe/Berlin", **night) is None  # 02:00 CET


def test_a_window_over_the_hour_the_clocks_skip() -> None:
    # Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST; a window of 02:30-04:00 starts at
    # 03:30 on the clock (the gap later), an hour after 01:30.
    window = {"after": time(2, 30), "before": time(4, 0)}
    assert window_day(utc(2026, 3, 29, 1, 29), "Europe/Berlin", **window) is None
    assert window_day(utc(2026, 3, 29, 1, 30), "Europe/Berlin", **window) == date(2026, 3, 29)


def test_no_window_is_the_local_date() -> None:
    late = utc(2026, 12, 6, 23, 30)
    assert window_day(late, "Europe/Berlin", after=None, before=None) == date(2026, 12, 7)
    assert window_day(late, "America/New_York", after=None, before=None) == date(2026, 12, 6)


@given(st.sampled_from(ODD_ZONES), CLOCKS, CLOCKS, INSTANTS)
def test_a_window_holds_what_quiet_hours_of_the_same_span_hold(
    zone: str, after: time, before: time, instant: datetime
) -> None:
    if after == before:
        return
    span = QuietHours(
        owner="ana", source=None, start=after, end=before, zone=zone, updated_at=instant
    )
    assert (window_day(instant, zone, after=after, before=before) is not None) == (
        span.until(instant) is not None
    )


@given(st.sampled_from(ODD_ZONES), CLOCKS, CLOCKS, INSTANTS)
def test_the_day_is_the_local_date_the_window_began_on(
    zone: str, after: time, before: time, instant: datetime
) -> None:
    day = window_day(instant, zone, after=after, before=before)
    if day is None:
        return
    local = instant.astimezone(load_zone(zone))
    assert day in (local.date(), local.date() - timedelta(days=1))
    if day != local.date():  # only a window across midnight reaches into the next day
        assert before <= after


@given(st.sampled_from(ODD_ZONES), CLOCKS, INSTANTS)
def test_two_rings_of_one_day_lie_within_a_day_and_a_bit(
    zone: str, after: time, instant: datetime
) -> None:
    """Once a day: any two instants counted against the same day lie within 26 hours (a
    day's window, longer by a daylight-saving hour or a skipped date's slack at most)."""
    day = window_day(instant, zone, after=after, before=None)
    later = instant + timedelta(hours=26)
    if day is not None and window_day(later, zone, after=after, before=None) == day:
        raise AssertionError(f"{instant} and {later} both count against {day}")
