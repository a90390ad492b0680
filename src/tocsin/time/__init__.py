"""Time done right: IANA zones, repeat rules and phrases, occurrences across DST, durations.

Everything here is pure: nothing reads a clock, the caller passes "now".
"""

from __future__ import annotations

from tocsin.time.bounds import EARLIEST, LATEST
from tocsin.time.durations import describe_duration, format_duration, parse_duration
from tocsin.time.expand import MAX_PREVIEW, Occurrence, first_due, next_after, occurrences
from tocsin.time.formatting import format_local, format_utc
from tocsin.time.schedule import (
    normalise_repeat,
    parse_at,
    parse_schedule,
    plan_schedule,
    read_at,
    read_when,
)
from tocsin.time.zones import load_zone, zone_names

__all__ = [
    "EARLIEST",
    "LATEST",
    "MAX_PREVIEW",
    "Occurrence",
    "describe_duration",
    "first_due",
    "format_duration",
    "format_local",
    "format_utc",
    "load_zone",
    "next_after",
    "normalise_repeat",
    "occurrences",
    "parse_at",
    "parse_duration",
    "parse_schedule",
    "plan_schedule",
    "read_at",
    "read_when",
    "zone_names",
]
