"""Occurrences across DST and odd zones: the seed's cases, month ends, and the public functions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tocsin.domain import Schedule
from tocsin.errors import InvalidInput
from tocsin.time import first_due, format_local, format_utc, next_after, occurrences

NY = "America/New_York"


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, micro: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)


def rings(schedule: Schedule, start: datetime, count: int) -> list[str]:
    return [format_utc(o.at) for o in occurrences(schedule, start, count)]


def locals_(schedule: Schedule, start: datetime, count: int) -> list[str]:
    return [o.local.isoformat() for o in occurrences(schedule, start, count)]


ANA = Schedule(
    zone=NY, anchor=datetime(2026, 10, 26, 9), rule="FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0"
)


def test_ana_every_monday_across_both_changes() -> None:
    start = utc(2026, 10, 20)
    assert rings(ANA, start, 3) == [
        "2026-10-26T13:00:00Z",
        "2026-11-02T14:00:00Z",
        "2026-11-09T14:00:00Z",
    ]
    assert rings(ANA, utc(2027, 3, 1), 3) == [
        "2027-03-01T14:00:00Z",
        "2027-03-08T14:00:00Z",
        "2027-03-15T13:00:00Z",
    ]
    assert all(local.startswith(("2027-03", "2026-1")) for local in locals_(ANA, start, 3))
    assert {o.local.hour for o in occurrences(ANA, start, 30)} == {9}


def test_ana_next_after_walks_the_series() -> None:
    instant = first_due(ANA, utc(2026, 10, 20))
    seen: list[datetime] = []
    while instant is not None and len(seen) < 25:
        seen.append(instant)
        instant = next_after(ANA, instant)
    assert [format_utc(at) for at in seen] == rings(ANA, utc(2026, 10, 20), 25)
    assert format_utc(seen[20]) == "2027-03-15T13:00:00Z"


def test_ambiguous_local_time_rings_at_its_first_instant() -> None:
    one_off = Schedule(zone=NY, anchor=datetime(2026, 11, 1, 1, 30))
    due = first_due(one_off, utc(2026, 10, 1))
    assert due == utc(2026, 11, 1, 5, 30)
    assert format_local(due, NY) == "2026-11-01T01:30:00-04:00"


def test_missing_local_time_moves_forward_by_the_gap() -> None:
    one_off = Schedule(zone=NY, anchor=datetime(2027, 3, 14, 2, 30))
    due = first_due(one_off, utc(2027, 3, 1))
    assert due == utc(2027, 3, 14, 7, 30)
    assert format_local(due, NY) == "2027-03-14T03:30:00-04:00"


def test_daily_series_through_both_changes() -> None:
    daily = Schedule(zone=NY, anchor=datetime(2026, 10, 30, 1, 30), rule="FREQ=DAILY")
    assert locals_(daily, utc(2026, 10, 30), 3)[2] == "2026-11-01T01:30:00-04:00"
    spring = Schedule(zone=NY, anchor=datetime(2027, 3, 13, 2, 30), rule="FREQ=DAILY")
    assert locals_(spring, utc(2027, 3, 1), 3) == [
        "2027-03-13T02:30:00-05:00",
        "2027-03-14T03:30:00-04:00",
        "2027-03-15T02:30:00-04:00",
    ]


def test_every_30_minutes_across_fall_back_never_rings_twice() -> None:
    series = Schedule(
        zone=NY, anchor=datetime(2026, 10, 31, 23, 0), rule="FREQ=MINUTELY;INTERVAL=30"
    )
    assert rings(series, utc(2026, 11, 1, 4, 0), 7) == [
        "2026-11-01T04:00:00Z",  # 00:00 EDT
        "2026-11-01T04:30:00Z",
        "2026-11-01T05:00:00Z",  # 01:00 EDT, the first 01:00
        "2026-11-01T05:30:00Z",  # 01:30 EDT; the repeated hour (06:00-07:00Z) stays quiet
        "2026-11-01T07:00:00Z",  # 02:00 EST
        "2026-11-01T07:30:00Z",
        "2026-11-01T08:00:00Z",
    ]


def test_every_30_minutes_across_spring_forward_rings_each_instant_once() -> None:
    series = Schedule(
        zone=NY, anchor=datetime(2027, 3, 13, 23, 0), rule="FREQ=MINUTELY;INTERVAL=30"
    )
    assert rings(series, utc(2027, 3, 14, 6, 0), 5) == [
        "2027-03-14T06:00:00Z",  # 01:00 EST
        "2027-03-14T06:30:00Z",  # 01:30 EST
        "2027-03-14T07:00:00Z",  # 02:00 → 03:00 EDT, the same instant as 03:00: once
        "2027-03-14T07:30:00Z",
        "2027-03-14T08:00:00Z",
    ]


def test_shifted_gap_time_waits_for_its_place_in_order() -> None:
    # 02:45 is shifted to 03:45 EDT, after the 03:00 ring: order stays strictly increasing.
    series = Schedule(zone=NY, anchor=datetime(2027, 3, 14, 0, 0), rule="FREQ=HOURLY;BYMINUTE=0,45")
    assert locals_(series, utc(2027, 3, 14, 6, 30), 4) == [
        "2027-03-14T01:45:00-05:00",
        "2027-03-14T03:00:00-04:00",
        "2027-03-14T03:45:00-04:00",
        "2027-03-14T04:00:00-04:00",
    ]


def test_lord_howe_half_hour_dst() -> None:
    zone = "Australia/Lord_Howe"
    daily = Schedule(zone=zone, anchor=datetime(2026, 10, 3, 2, 15), rule="FREQ=DAILY")
    assert locals_(daily, utc(2026, 10, 1), 3) == [
        "2026-10-03T02:15:00+10:30",
        "2026-10-04T02:45:00+11:00",  # 02:00-02:30 does not exist: 30 minutes later
        "2026-10-05T02:15:00+11:00",
    ]
    fold = Schedule(zone=zone, anchor=datetime(2026, 4, 5, 1, 45))
    assert format_local(first_due(fold, utc(2026, 1, 1)) or utc(1970, 1, 1), zone) == (
        "2026-04-05T01:45:00+11:00"
    )


def test_kathmandu_quarter_hour_offset() -> None:
    daily = Schedule(zone="Asia/Kathmandu", anchor=datetime(2026, 1, 1, 9), rule="FREQ=DAILY")
    assert rings(daily, utc(2026, 1, 1), 2) == ["2026-01-01T03:15:00Z", "2026-01-02T03:15:00Z"]


def test_apia_skipped_day_rings_the_next_day_once() -> None:
    daily = Schedule(zone="Pacific/Apia", anchor=datetime(2011, 12, 28, 9), rule="FREQ=DAILY")
    assert locals_(daily, utc(2011, 12, 27), 4) == [
        "2011-12-28T09:00:00-10:00",
        "2011-12-29T09:00:00-10:00",
        "2011-12-31T09:00:00+14:00",  # 30 December never happened there
        "2012-01-01T09:00:00+14:00",
    ]
    assert next_after(daily, utc(2011, 12, 29, 19)) == utc(2011, 12, 30, 19)
    assert next_after(daily, utc(2011, 12, 30, 19)) == utc(2011, 12, 31, 19)


def test_sao_paulo_without_dst_since_2019() -> None:
    zone = "America/Sao_Paulo"
    old = Schedule(zone=zone, anchor=datetime(2018, 11, 4, 0, 30))  # a gap in 2018
    assert format_local(first_due(old, utc(2018, 1, 1)) or utc(1970, 1, 1), zone) == (
        "2018-11-04T01:30:00-02:00"
    )
    daily = Schedule(zone=zone, anchor=datetime(2026, 1, 1, 0, 30), rule="FREQ=DAILY")
    offsets = {o.local.utcoffset() for o in occurrences(daily, utc(2026, 10, 1), 100)}
    assert offsets == {timedelta(hours=-3)}


def test_dublin_negative_dst() -> None:
    zone = "Europe/Dublin"
    daily = Schedule(zone=zone, anchor=datetime(2026, 10, 24, 9), rule="FREQ=DAILY")
    assert rings(daily, utc(2026, 10, 24), 2) == ["2026-10-24T08:00:00Z", "2026-10-25T09:00:00Z"]
    gap = Schedule(zone=zone, anchor=datetime(2027, 3, 28, 1, 30))
    assert format_local(first_due(gap, utc(2027, 1, 1)) or utc(1970, 1, 1), zone) == (
        "2027-03-28T02:30:00+01:00"
    )
    fold = Schedule(zone=zone, anchor=datetime(2026, 10, 25, 1, 30))
    assert first_due(fold, utc(2026, 1, 1)) == utc(2026, 10, 25, 0, 30)


def test_monthday_31_skips_short_months() -> None:
    series = Schedule(
        zone="UTC", anchor=datetime(2027, 1, 31, 9), rule="FREQ=MONTHLY;BYMONTHDAY=31"
    )
    assert [o.local.strftime("%m-%d") for o in occurrences(series, utc(2027, 1, 1), 7)] == [
        "01-31", "03-31", "05-31", "07-31", "08-31", "10-31", "12-31",
    ]  # fmt: skip


def test_plain_monthly_from_the_31st_also_skips_short_months() -> None:
    series = Schedule(zone="UTC", anchor=datetime(2027, 1, 31, 9), rule="FREQ=MONTHLY")
    assert [o.local.month for o in occurrences(series, utc(2027, 1, 1), 3)] == [1, 3, 5]


def test_last_day_of_month() -> None:
    series = Schedule(zone="UTC", anchor=datetime(2028, 1, 1, 9), rule="FREQ=MONTHLY;BYMONTHDAY=-1")
    assert [o.local.day for o in occurrences(series, utc(2028, 1, 1), 4)] == [31, 29, 31, 30]


def test_february_29_yearly_rings_in_leap_years_only() -> None:
    series = Schedule(zone="UTC", anchor=datetime(2028, 2, 29, 9), rule="FREQ=YEARLY")
    assert [o.local.year for o in occurrences(series, utc(2028, 1, 1), 4)] == [
        2028, 2032, 2036, 2040,
    ]  # fmt: skip


def test_count_counts_from_the_anchor() -> None:
    series = Schedule(zone=NY, anchor=datetime(2026, 10, 26, 9), rule="FREQ=DAILY;COUNT=3")
    assert len(occurrences(series, utc(2026, 1, 1), 10)) == 3
    assert len(occurrences(series, utc(2026, 10, 27, 12), 10)) == 2
    assert next_after(series, utc(2026, 10, 28, 13)) is None


@pytest.mark.parametrize(
    ("until", "last"),
    [
        ("20261028", "2026-10-28T13:00:00Z"),  # a date: through that local day
        ("20261028T090000", "2026-10-28T13:00:00Z"),  # local wall time, inclusive
        ("20261028T085959", "2026-10-27T13:00:00Z"),
        ("20261028T130000Z", "2026-10-28T13:00:00Z"),  # an instant, inclusive
        ("20261028T125959Z", "2026-10-27T13:00:00Z"),
    ],
)
def test_until_forms(until: str, last: str) -> None:
    series = Schedule(zone=NY, anchor=datetime(2026, 10, 26, 9), rule=f"FREQ=DAILY;UNTIL={until}")
    found = rings(series, utc(2026, 1, 1), 10)
    assert found[-1] == last
    assert next_after(series, datetime.fromisoformat(last)) is None


def test_utc_until_inside_fall_back_compares_instants() -> None:
    # Until the second 01:30 (06:30Z): the first 01:45 (05:45Z) still rings, 02:00 EST does not.
    series = Schedule(
        zone=NY,
        anchor=datetime(2026, 11, 1, 1, 0),
        rule="FREQ=MINUTELY;INTERVAL=15;UNTIL=20261101T063000Z",
    )
    assert rings(series, utc(2026, 11, 1), 10)[-1] == "2026-11-01T05:45:00Z"


def test_one_off_functions() -> None:
    local = Schedule(zone=NY, anchor=datetime(2026, 10, 26, 9))
    absolute = Schedule(zone=NY, anchor=utc(2026, 10, 26, 13))
    for one_off in (local, absolute):
        assert first_due(one_off, utc(2026, 10, 26, 13)) == utc(2026, 10, 26, 13)
        assert first_due(one_off, utc(2026, 10, 26, 13, 0, 1)) is None
        assert next_after(one_off, utc(2026, 10, 26, 12)) == utc(2026, 10, 26, 13)
        assert next_after(one_off, utc(2026, 10, 26, 13)) is None
        [only] = occurrences(one_off, utc(2026, 1, 1), 5)
        assert only.local.isoformat() == "2026-10-26T09:00:00-04:00"


def test_first_due_is_at_or_after_both_anchor_and_now() -> None:
    assert first_due(ANA, utc(2020, 1, 1)) == utc(2026, 10, 26, 13)
    assert first_due(ANA, utc(2026, 10, 26, 13)) == utc(2026, 10, 26, 13)
    assert first_due(ANA, utc(2026, 10, 26, 13, 0, 0, 1)) == utc(2026, 11, 2, 14)


def test_next_after_accepts_any_aware_instant() -> None:
    paris = datetime.fromisoformat("2026-10-26T14:00:00+01:00")  # exactly 13:00Z
    assert next_after(ANA, paris) == utc(2026, 11, 2, 14)


@pytest.mark.parametrize("count", [0, -1, 101])
def test_count_out_of_range(count: int) -> None:
    with pytest.raises(InvalidInput) as caught:
        occurrences(ANA, utc(2026, 1, 1), count)
    assert caught.value.field == "count"


def test_occurrences_returns_at_most_100() -> None:
    assert len(occurrences(ANA, utc(2026, 1, 1), 100)) == 100


def test_naive_instants_are_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        next_after(ANA, datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="aware"):
        format_utc(datetime(2026, 1, 1))


def test_formatting() -> None:
    assert format_utc(utc(2026, 10, 26, 13)) == "2026-10-26T13:00:00Z"
    assert format_local(utc(2026, 10, 26, 13), NY) == "2026-10-26T09:00:00-04:00"
    assert format_local(utc(2026, 10, 26, 13, 0, 0, 999), "Asia/Kathmandu") == (
        "2026-10-26T18:45:00+05:45"
    )
