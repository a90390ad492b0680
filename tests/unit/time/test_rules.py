"""RRULE reading: the accepted RFC 5545 subset, its canonical spelling, and clear refusals."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tocsin.errors import InvalidInput
from tocsin.time.rules import UntilKind, format_rule, parse_rrule

ANA = "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0"


def canonical(text: str) -> str:
    return format_rule(parse_rrule(text))


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("RRULE:FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0", ANA),
        ("FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0", ANA),
        ("rrule:byminute=0;byhour=9;byday=mo;freq=weekly", ANA),
        (" RRULE: FREQ = WEEKLY ; BYDAY = MO ; BYHOUR=9;BYMINUTE=0 ", ANA),
        ("FREQ=DAILY;INTERVAL=1", "FREQ=DAILY"),
        ("FREQ=DAILY;INTERVAL=3;", "FREQ=DAILY;INTERVAL=3"),
        ("FREQ=WEEKLY;BYDAY=FR,MO,WE,MO", "FREQ=WEEKLY;BYDAY=MO,WE,FR"),
        ("FREQ=MONTHLY;BYDAY=-1FR", "FREQ=MONTHLY;BYDAY=-1FR"),
        ("FREQ=MONTHLY;BYDAY=+2MO", "FREQ=MONTHLY;BYDAY=2MO"),
        ("FREQ=MONTHLY;BYMONTHDAY=15,-1,1", "FREQ=MONTHLY;BYMONTHDAY=-1,1,15"),
        ("FREQ=YEARLY;BYMONTH=3;BYMONTHDAY=3", "FREQ=YEARLY;BYMONTH=3;BYMONTHDAY=3"),
        ("FREQ=YEARLY;BYYEARDAY=1,-1", "FREQ=YEARLY;BYYEARDAY=-1,1"),
        ("FREQ=YEARLY;BYWEEKNO=20;BYDAY=MO;WKST=SU", "FREQ=YEARLY;BYWEEKNO=20;BYDAY=MO;WKST=SU"),
        ("FREQ=YEARLY;BYWEEKNO=1;WKST=MO", "FREQ=YEARLY;BYWEEKNO=1"),
        (
            "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
            "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
        ),
        ("FREQ=HOURLY;BYMINUTE=15;BYSECOND=30", "FREQ=HOURLY;BYMINUTE=15;BYSECOND=30"),
        ("FREQ=MINUTELY;INTERVAL=15;BYHOUR=9,10,11", "FREQ=MINUTELY;INTERVAL=15;BYHOUR=9,10,11"),
        ("FREQ=DAILY;COUNT=10", "FREQ=DAILY;COUNT=10"),
        ("FREQ=DAILY;UNTIL=20271231", "FREQ=DAILY;UNTIL=20271231"),
        ("FREQ=DAILY;UNTIL=20271231T090000", "FREQ=DAILY;UNTIL=20271231T090000"),
        ("FREQ=DAILY;UNTIL=20271231T140000Z", "FREQ=DAILY;UNTIL=20271231T140000Z"),
        (
            "BYSETPOS=1;WKST=SU;BYSECOND=0;BYMINUTE=0;BYHOUR=9;BYDAY=MO;BYMONTHDAY=1,2,3,4,5,6,7;"
            "BYMONTH=1;INTERVAL=2;FREQ=YEARLY",
            "FREQ=YEARLY;INTERVAL=2;BYMONTH=1;BYMONTHDAY=1,2,3,4,5,6,7;BYDAY=MO;BYHOUR=9;"
            "BYMINUTE=0;BYSECOND=0;BYSETPOS=1;WKST=SU",
        ),
    ],
)
def test_rules_are_stored_canonically(given: str, stored: str) -> None:
    assert canonical(given) == stored
    assert canonical(stored) == stored


def test_until_kinds() -> None:
    date_only = parse_rrule("FREQ=DAILY;UNTIL=20271231").until
    local = parse_rrule("FREQ=DAILY;UNTIL=20271231T090000").until
    utc = parse_rrule("FREQ=DAILY;UNTIL=20271231T140000Z").until
    assert date_only is not None
    assert date_only.kind is UntilKind.DATE
    assert local is not None
    assert local.kind is UntilKind.LOCAL
    assert local.value == datetime(2027, 12, 31, 9)
    assert utc is not None
    assert utc.kind is UntilKind.UTC
    assert utc.value == datetime(2027, 12, 31, 14, tzinfo=UTC)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("DTSTART:20261026T090000\nRRULE:FREQ=DAILY", "one RRULE on one line"),
        ("DTSTART=20261026T090000;FREQ=DAILY", "remove DTSTART"),
        ("FREQ=DAILY;RDATE=20261026", "RDATE is not supported"),
        ("FREQ=DAILY;EXDATE=20261026", "EXDATE is not supported"),
        ("FREQ=DAILY;BYEASTER=0", "unknown rule part 'BYEASTER'"),
        ("FREQ=DAILY;COLOR=red", "unknown rule part 'COLOR'"),
        ("FREQ=DAILY;FREQ=WEEKLY", "FREQ is given twice"),
        ("BYDAY=MO", "needs FREQ"),
        ("FREQ=FORTNIGHTLY", "FREQ=FORTNIGHTLY is not a frequency"),
        ("FREQ=DAILY;INTERVAL=0", "INTERVAL=0 must be a whole number from 1"),
        ("FREQ=DAILY;INTERVAL=x", "INTERVAL=X must be a whole number"),
        ("FREQ=DAILY;COUNT=0", "COUNT=0"),
        ("FREQ=DAILY;COUNT=10001", "COUNT=10001"),
        ("FREQ=DAILY;BYHOUR=24", "BYHOUR value '24' is out of range (0 to 23)"),
        ("FREQ=DAILY;BYMINUTE=60", "BYMINUTE value '60'"),
        ("FREQ=DAILY;BYSECOND=60", "BYSECOND value '60'"),
        ("FREQ=MONTHLY;BYMONTHDAY=0", "BYMONTHDAY value '0'"),
        ("FREQ=MONTHLY;BYMONTHDAY=32", "BYMONTHDAY value '32'"),
        ("FREQ=YEARLY;BYMONTH=13", "BYMONTH value '13'"),
        ("FREQ=YEARLY;BYMONTH=-1", "BYMONTH value '-1'"),
        ("FREQ=WEEKLY;BYDAY=XX", "BYDAY value 'XX'"),
        ("FREQ=MONTHLY;BYDAY=0MO", "the ordinal must be 1 to 53"),
        ("FREQ=WEEKLY;BYDAY=2MO", "BYDAY ordinals (2MO, -1FR) only go with FREQ=MONTHLY"),
        ("FREQ=YEARLY;BYWEEKNO=2;BYDAY=1MO", "YEARLY without BYWEEKNO"),
        ("FREQ=MONTHLY;BYDAY=6MO", "with FREQ=MONTHLY a BYDAY ordinal is 1 to 5"),
        ("FREQ=WEEKLY;BYMONTHDAY=1", "BYMONTHDAY does not go with FREQ=WEEKLY"),
        ("FREQ=MONTHLY;BYYEARDAY=1", "BYYEARDAY does not go with FREQ=MONTHLY"),
        ("FREQ=MONTHLY;BYWEEKNO=1", "BYWEEKNO only goes with FREQ=YEARLY"),
        ("FREQ=DAILY;BYSETPOS=1", "BYSETPOS needs another BYxxx part"),
        ("FREQ=DAILY;COUNT=3;UNTIL=20270101", "COUNT or UNTIL, not both"),
        ("FREQ=DAILY;UNTIL=2027", "UNTIL=2027 must be YYYYMMDD"),
        ("FREQ=DAILY;UNTIL=20270230", "is not a real date"),
        ("FREQ=DAILY;WKST=XX", "WKST=XX is not a weekday"),
        ("FREQ=DAILY;BYHOUR", "has no value"),
        ("FREQ=SECONDLY", "more often than once a minute"),
        ("FREQ=MINUTELY;BYSECOND=0,30", "more than once a minute"),
        ("FREQ=HOURLY;BYSECOND=0,1", "more than once a minute"),
    ],
)
def test_bad_rules_are_invalid_repeat(given: str, expected: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_rrule(given)
    assert caught.value.field == "repeat"
    assert expected in caught.value.message
