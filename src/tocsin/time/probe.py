"""Whether a rule can ever ring, decided with bounded work (dateutil alone may spin for seconds).

dateutil checks UNTIL only when a candidate matches, so a rule whose filters never match
(`FREQ=MINUTELY;BYMONTH=4;BYMONTHDAY=31`) walks every period up to year 9999. Two probes bound
that: the Gregorian calendar repeats exactly every 400 years (146,097 days, a whole number of
weeks), so a series moved by a multiple of 400 years is the same series, and one started after
year 9200 runs out of calendar within 800 years.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import Any

from dateutil import rrule as dr

from tocsin.errors import InvalidInput
from tocsin.time.budget import BudgetedRRule
from tocsin.time.expand import FREQUENCY, Frequency, rrule_options
from tocsin.time.rules import Rule

_LATE_START = 9200


def check_can_ring(rule: Rule, anchor: datetime) -> None:
    """Raise InvalidInput("repeat") when `rule` from `anchor` can never ring."""
    check_set_positions(rule)
    _check_late_series(rule, anchor.replace(year=_late_year(anchor.year)))


def _late_year(year: int) -> int:
    return year - (year - _LATE_START) // 400 * 400


@lru_cache(maxsize=8192)
def _check_late_series(rule: Rule, late: datetime) -> None:
    # Memoised: the answer depends on the anchor only through `late` — the same month, day,
    # time and weekday (what `rrule_options` reads) in the same year of the 400-year cycle —
    # so every reminder of a batch with the same rule and start shape shares one probe.
    # Only a rule that can ring is remembered; a refusal raises, and is worked out again.
    options = rrule_options(rule, late)
    try:
        days = BudgetedRRule(
            _day_frequency(rule), dtstart=late.replace(month=1, day=1), **_day_options(options)
        )
        series = BudgetedRRule(
            FREQUENCY[rule.freq], dtstart=late, interval=rule.interval, **options
        )
        # The day filters alone, a year or month at a time: cheap, and catches 30 April at once.
        if next(iter(days), None) is None or next(iter(series), None) is None:
            raise InvalidInput("repeat", f"the rule never rings: {_why(rule)}")
    except ValueError as exc:
        # dateutil: "Invalid rrule byxxx generates an empty set." when built, or "Invalid
        # combination of interval and byhour resulting in empty rule." when first iterated.
        raise InvalidInput("repeat", f"the rule never rings: {_why(rule)} ({exc})") from None


def _day_frequency(rule: Rule) -> Frequency:
    ordinals = any(n for n, _ in rule.byday)
    return dr.MONTHLY if rule.freq == "MONTHLY" and ordinals else dr.YEARLY


def _day_options(options: dict[str, Any]) -> dict[str, Any]:
    keep = ("wkst", "bymonth", "bymonthday", "byyearday", "byweekno", "byweekday")
    return {name: options[name] for name in keep} | {"byhour": 0, "byminute": 0, "bysecond": 0}


def check_set_positions(rule: Rule) -> None:
    """BYSETPOS beyond a fixed-size set never matches; with sub-daily rules that is never.

    Cheap (the rule alone), and to run before any search: dateutil would try every period
    (every minute for MINUTELY) and find nothing."""
    if not rule.bysetpos or rule.freq not in ("DAILY", "HOURLY", "MINUTELY"):
        return
    sizes = {
        "DAILY": len(rule.byhour or (0,)) * len(rule.byminute or (0,)),
        "HOURLY": len(rule.byminute or (0,)),
        "MINUTELY": 1,
    }
    size = sizes[rule.freq] * len(rule.bysecond or (0,))
    if all(abs(position) > size for position in rule.bysetpos):
        raise InvalidInput(
            "repeat",
            f"BYSETPOS={','.join(map(str, rule.bysetpos))} is past the {size} times "
            f"each {rule.freq.lower().removesuffix('ly')} period holds, so the rule never rings",
        )


def _why(rule: Rule) -> str:
    return "no date or time matches all its BYxxx parts at its INTERVAL"
