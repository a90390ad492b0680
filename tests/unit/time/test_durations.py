"""Durations: short forms, ISO 8601, ranges stated in human terms."""

from __future__ import annotations

import pytest

from tocsin.errors import InvalidInput
from tocsin.time import describe_duration, format_duration, parse_duration

DAY = 86400


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90), ("10m", 600), ("2h", 7200), ("7d", 7 * DAY), ("1h30m", 5400),
        ("1h 30m", 5400), ("1w", 7 * DAY), ("10 min", 600), ("2 hours", 7200),
        ("1d2h3m4s", DAY + 7384), ("PT10M", 600), ("pt1h30m", 5400), ("P1D", DAY),
        ("P1DT2H", DAY + 7200), ("PT45S", 45), ("P2W", 14 * DAY),
    ],
)  # fmt: skip
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text, field="snooze", minimum=0, maximum=30 * DAY) == seconds


@pytest.mark.parametrize(
    "text", ["", "10", "ten minutes", "10x", "1.5h", "-5m", "P", "PT", "P1H", "PT1D", "1h1h", "m10"]
)
def test_unreadable_durations(text: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_duration(text, field="freshness", minimum=0, maximum=DAY)
    assert caught.value.field == "freshness"
    assert "is not a duration" in caught.value.message


def test_out_of_range_states_the_range_in_words() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_duration("30s", field="snooze", minimum=60, maximum=7 * DAY)
    assert caught.value.field == "snooze"
    assert caught.value.message == "'30s' is 30 seconds; it must be from 1 minute to 7 days"
    with pytest.raises(InvalidInput, match="from 1 minute to 1 day"):
        parse_duration("25h", field="snooze", minimum=60, maximum=DAY)


def test_format_and_describe() -> None:
    assert format_duration(5400) == "1h30m"
    assert format_duration(0) == "0s"
    assert parse_duration(format_duration(93784), field="x", minimum=0, maximum=DAY * 2) == 93784
    assert describe_duration(3660) == "1 hour 1 minute"
