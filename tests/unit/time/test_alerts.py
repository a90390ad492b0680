"""Early alerts: leads read and refused by field, the day before on the local clock across
daylight-saving changes, and a schedule's rings as its occurrences and their alerts merged
(hypothesis against the plain way: every occurrence in a window, every alert, sorted)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.time.odd_zones import ODD_ZONES
from tocsin.domain import Schedule
from tocsin.errors import InvalidInput
from tocsin.time import first_due, next_after
from tocsin.time.alerts import (
    ALERT_MAX,
    ALERT_MIN,
    alert_instant,
    alerts_from_text,
    format_alerts,
    nags_of,
    parse_alerts,
    stored_alerts,
)
from tocsin.time.expand import after_done, occurrence_from, rings

BERLIN = ZoneInfo("Europe/Berlin")


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_leads_are_read_earliest_alert_first_and_written_back() -> None:
    leads = parse_alerts(["15m", "1d", "2 hours"])
    assert leads == (86400, 7200, 900)
    assert format_alerts(leads) == ["1d", "2h", "15m"]
    assert alerts_from_text(stored_alerts(leads)) == leads
    assert stored_alerts(()) is None
    assert alerts_from_text(None) == ()


@pytest.mark.parametrize(
    ("texts", "field"),
    [
        (["soon"], "alerts.0"),
        (["1d", "30s"], "alerts.1"),  # under a minute
        (["29d"], "alerts.0"),  # over four weeks
        (["15m", "900s"], "alerts.1"),  # the same lead twice
        (["1m", "2m", "3m", "4m", "5m", "6m"], "alerts"),  # too many
    ],
)
def test_a_bad_lead_is_refused_naming_its_place(texts: list[str], field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_alerts(texts)
    assert refused.value.field == field


def test_the_day_before_is_the_same_wall_time_23_hours_earlier_across_spring_forward() -> None:
    # Berlin, Sunday 2026-03-29 09:00 CEST (07:00 UTC); Saturday 09:00 was CET (08:00 UTC).
    occurrence = utc(2026, 3, 29, 7)
    assert alert_instant(occurrence, 86400, BERLIN) == utc(2026, 3, 28, 8)
    # Autumn: Sunday 2026-10-25 09:00 CET (08:00 UTC); Saturday 09:00 CEST (07:00 UTC): 25 h.
    assert alert_instant(utc(2026, 10, 25, 8), 86400, BERLIN) == utc(2026, 10, 24, 7)


def test_hours_and_minutes_count_in_elapsed_time() -> None:
    # "24h" is a day ("1d" written another way); "23h" and "15m" are elapsed time.
    occurrence = utc(2026, 3, 29, 7)  # 09:00 CEST, the day the clocks went forward
    assert alert_instant(occurrence, 23 * 3600, BERLIN) == utc(2026, 3, 28, 8)
    assert alert_instant(occurrence, 900, BERLIN) == utc(2026, 3, 29, 6, 45)
    # "1d2h": two hours before the day before's wall time.
    assert alert_instant(occurrence, 86400 + 7200, BERLIN) == utc(2026, 3, 28, 6)


def test_a_day_before_the_clocks_skip_lands_the_gap_later() -> None:
    # Monday 2026-03-30 02:30 CEST (00:30 UTC); Sunday 02:30 did not exist in Berlin: it is
    # read with the offset before the gap, 01:30 UTC (03:30 CEST on the clock).
    assert alert_instant(utc(2026, 3, 30, 0, 30), 86400, BERLIN) == utc(2026, 3, 29, 1, 30)


def test_a_day_the_zone_skipped_puts_the_alert_at_its_occurrence() -> None:
    # Apia skipped 2011-12-30: the day before 2011-12-31 10:00 (+14, 20:00 UTC on the 30th)
    # is a wall time in that gap, read with the offset before it (-10): the same instant.
    apia = ZoneInfo("Pacific/Apia")
    occurrence = datetime(2011, 12, 31, 10, tzinfo=apia).astimezone(UTC)
    assert alert_instant(occurrence, 86400, apia) == occurrence


def test_a_series_rings_each_occurrence_and_its_alerts_and_a_shared_instant_once() -> None:
    # Daily at 09:00 Berlin, alerts a day and 15 minutes before: each day's 09:00 is also the
    # next day's "1d" alert, one ring.
    daily = Schedule(
        zone="Europe/Berlin",
        anchor=datetime(2026, 12, 7, 9),
        rule="FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0",
        alerts=(86400, 900),
    )
    start = utc(2026, 12, 7)
    got = list(islice(rings(daily, start, strict=False), 5))
    assert got == [
        utc(2026, 12, 7, 7, 45),
        utc(2026, 12, 7, 8),
        utc(2026, 12, 8, 7, 45),
        utc(2026, 12, 8, 8),
        utc(2026, 12, 9, 7, 45),
    ]
    assert first_due(daily, start) == got[0]
    assert next_after(daily, got[0]) == got[1]
    assert occurrence_from(daily, got[0]) == got[1]  # the alert is for 09:00


def test_a_one_off_rings_its_alerts_then_itself_and_no_alert_that_passed() -> None:
    one_off = Schedule(zone="UTC", anchor=utc(2026, 12, 10, 9), alerts=(86400, 3600))
    assert first_due(one_off, utc(2026, 12, 1)) == utc(2026, 12, 9, 9)
    assert next_after(one_off, utc(2026, 12, 9, 9)) == utc(2026, 12, 10, 8)
    assert next_after(one_off, utc(2026, 12, 10, 8)) == utc(2026, 12, 10, 9)
    assert next_after(one_off, utc(2026, 12, 10, 9)) is None
    assert first_due(one_off, utc(2026, 12, 10, 8, 30)) == utc(2026, 12, 10, 9)


RULES = [
    "FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0",
    "FREQ=DAILY;BYHOUR=2;BYMINUTE=30;BYSECOND=0",  # inside Berlin's and New York's gap
    "FREQ=WEEKLY;BYDAY=MO,TH;BYHOUR=18;BYMINUTE=15;BYSECOND=0",
    "FREQ=HOURLY;INTERVAL=5;BYMINUTE=0;BYSECOND=0",
    "FREQ=MONTHLY;BYMONTHDAY=31;BYHOUR=8;BYMINUTE=0;BYSECOND=0",
    "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=7;BYMINUTE=0;BYSECOND=0",
    "FREQ=DAILY;COUNT=3;BYHOUR=12;BYMINUTE=0;BYSECOND=0",
]


@given(
    zone=st.sampled_from(ODD_ZONES),
    rule=st.sampled_from(RULES),
    anchor=st.datetimes(min_value=datetime(2010, 1, 1), max_value=datetime(2030, 1, 1)),
    offset=st.integers(min_value=0, max_value=400 * 86400),
    leads=st.lists(
        st.integers(min_value=ALERT_MIN // 60, max_value=ALERT_MAX // 60).map(lambda m: m * 60),
        min_size=1,
        max_size=3,
        unique=True,
    ),
    strict=st.booleans(),
)
def test_the_merged_rings_are_every_occurrence_and_alert_in_order(
    zone: str, rule: str, anchor: datetime, offset: int, leads: list[int], strict: bool
) -> None:
    tz = ZoneInfo(zone)
    anchor = anchor.replace(second=0, microsecond=0)
    alerts = tuple(sorted(leads, reverse=True))
    plain = Schedule(zone=zone, anchor=anchor, rule=rule)
    with_alerts = Schedule(zone=zone, anchor=anchor, rule=rule, alerts=alerts)
    lower = anchor.replace(tzinfo=UTC) + timedelta(seconds=offset)
    got = list(islice(rings(with_alerts, lower, strict=strict), 12))
    if not got:
        assert next(rings(plain, lower, strict=strict), None) is None
        return
    # The plain way: every occurrence from well before `lower` to past the last ring got,
    # each with its alerts, kept when after `lower`, sorted, each instant once.
    earliest = lower - timedelta(seconds=max(alerts)) - timedelta(days=3)
    everything: set[datetime] = set()
    for occurrence in rings(plain, earliest, strict=False):
        if occurrence - timedelta(seconds=max(alerts)) - timedelta(days=3) > got[-1]:
            break
        everything.add(occurrence)
        everything.update(alert_instant(occurrence, lead, tz) for lead in alerts)
    wanted = sorted(i for i in everything if i > lower or (i == lower and not strict))
    assert got == wanted[: len(got)]


def test_nags_follow_each_occurrence_until_the_next_and_done_takes_the_rest_back() -> None:
    daily = Schedule(
        zone="UTC",
        anchor=datetime(2026, 12, 7, 9),
        rule="FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0",
        nag=300,
        nags=3,
    )
    got = list(islice(rings(daily, utc(2026, 12, 7), strict=False), 5))
    assert got == [
        utc(2026, 12, 7, 9),
        utc(2026, 12, 7, 9, 5),
        utc(2026, 12, 7, 9, 10),
        utc(2026, 12, 7, 9, 15),
        utc(2026, 12, 8, 9),
    ]
    assert next_after(daily, utc(2026, 12, 7, 9, 5)) == utc(2026, 12, 7, 9, 10)
    assert occurrence_from(daily, utc(2026, 12, 7, 9, 10)) == utc(2026, 12, 7, 9)
    # Done at the 09:00 ring while the 09:05 nag waits: tomorrow's ring is next.
    assert after_done(daily, utc(2026, 12, 7, 9), utc(2026, 12, 7, 9, 5)) == (
        True,
        utc(2026, 12, 8, 9),
    )
    # A done of a nag stops the nags after it too; one that finds tomorrow waiting stops none.
    assert after_done(daily, utc(2026, 12, 7, 9, 5), utc(2026, 12, 7, 9, 10))[0]
    assert after_done(daily, utc(2026, 12, 7, 9), utc(2026, 12, 8, 9)) == (False, None)


def test_nags_stop_before_the_next_occurrence_and_a_one_offs_end_with_it() -> None:
    every_ten = Schedule(
        zone="UTC",
        anchor=datetime(2026, 12, 7, 9),
        rule="FREQ=MINUTELY;INTERVAL=10;BYSECOND=0",
        nag=240,
        nags=6,
    )
    got = list(islice(rings(every_ten, utc(2026, 12, 7, 9), strict=False), 5))
    minutes = [(ring - utc(2026, 12, 7, 9)).total_seconds() / 60 for ring in got]
    assert minutes == [0, 4, 8, 10, 14]
    one_off = Schedule(zone="UTC", anchor=utc(2026, 12, 10, 9), nag=600, nags=2)
    assert list(rings(one_off, utc(2026, 12, 10, 9), strict=True)) == [
        utc(2026, 12, 10, 9, 10),
        utc(2026, 12, 10, 9, 20),
    ]
    assert after_done(one_off, utc(2026, 12, 10, 9), utc(2026, 12, 10, 9, 10)) == (True, None)


@given(
    zone=st.sampled_from(ODD_ZONES),
    rule=st.sampled_from(RULES),
    anchor=st.datetimes(min_value=datetime(2010, 1, 1), max_value=datetime(2030, 1, 1)),
    offset=st.integers(min_value=0, max_value=400 * 86400),
    leads=st.lists(st.integers(min_value=1, max_value=2000).map(lambda m: m * 60), max_size=2),
    nag=st.integers(min_value=1, max_value=600).map(lambda m: m * 60),
    nags=st.integers(min_value=1, max_value=20),
    strict=st.booleans(),
)
def test_with_nags_the_rings_are_every_occurrence_its_alerts_and_its_nags_in_order(
    zone: str,
    rule: str,
    anchor: datetime,
    offset: int,
    leads: list[int],
    nag: int,
    nags: int,
    strict: bool,
) -> None:
    tz = ZoneInfo(zone)
    anchor = anchor.replace(second=0, microsecond=0)
    alerts = tuple(sorted(set(leads), reverse=True))
    plain = Schedule(zone=zone, anchor=anchor, rule=rule)
    nagging = Schedule(zone=zone, anchor=anchor, rule=rule, alerts=alerts, nag=nag, nags=nags)
    lower = anchor.replace(tzinfo=UTC) + timedelta(seconds=offset)
    got = list(islice(rings(nagging, lower, strict=strict), 12))
    reach = timedelta(seconds=max(alerts, default=0) + nag * nags) + timedelta(days=3)
    found = []
    for occurrence in rings(plain, lower - reach, strict=False):
        found.append(occurrence)
        if got and occurrence - reach > got[-1]:
            break
        if not got and occurrence > lower + reach:
            break
    everything: set[datetime] = set()
    for index, occurrence in enumerate(found):
        following = found[index + 1] if index + 1 < len(found) else None
        everything.add(occurrence)
        everything.update(alert_instant(occurrence, lead, tz) for lead in alerts)
        if following is not None or occurrence <= lower + reach:
            everything.update(nags_of(occurrence, nag, nags, following))
    wanted = sorted(i for i in everything if i > lower or (i == lower and not strict))
    assert got == wanted[: len(got)]
