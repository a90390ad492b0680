"""Durations such as snooze and freshness: `90s`, `10m`, `1h30m`, `7d` or ISO 8601 `PT10M`."""

from __future__ import annotations

import re

from tocsin.errors import InvalidInput

_UNIT_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_UNIT_WORDS = {
    "w": "w", "wk": "w", "wks": "w", "week": "w", "weeks": "w",
    "d": "d", "day": "d", "days": "d",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
    "m": "m", "min": "m", "mins": "m", "minute": "m", "minutes": "m",
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
}  # fmt: skip
# Digits are [0-9], never `\d`: that also matches '١٠' (Arabic-Indic), which int() reads.
_SHORT_PART = re.compile(r"\s*([0-9]{1,9})\s*([a-z]+)\s*")
_ISO = re.compile(
    r"P(?:(?P<w>[0-9]{1,9})W)?(?:(?P<d>[0-9]{1,9})D)?"
    r"(?:T(?=[0-9])(?:(?P<h>[0-9]{1,9})H)?(?:(?P<m>[0-9]{1,9})M)?(?:(?P<s>[0-9]{1,9})S)?)?",
)


def parse_duration(text: str, *, field: str, minimum: int, maximum: int) -> int:
    """Seconds in `text`; InvalidInput(field) when unreadable or outside [minimum, maximum]."""
    seconds = _read(text.strip())
    if seconds is None:
        raise InvalidInput(
            field, f"{text!r} is not a duration; give e.g. '90s', '10m', '1h30m', '7d' or 'PT10M'"
        )
    if not minimum <= seconds <= maximum:
        raise InvalidInput(
            field,
            f"{text!r} is {describe_duration(seconds)}; it must be from "
            f"{describe_duration(minimum)} to {describe_duration(maximum)}",
        )
    return seconds


def _read(text: str) -> int | None:
    if text[:1].upper() == "P":
        match = _ISO.fullmatch(text.upper())
        if not match or text.upper() in ("P", "PT"):
            return None
        return sum(
            int(value) * _UNIT_SECONDS[unit.lower()]
            for unit, value in match.groupdict().items()
            if value
        )
    total, position, seen = 0, 0, set()
    lowered = text.lower()
    while position < len(lowered):
        match = _SHORT_PART.match(lowered, position)
        unit = _UNIT_WORDS.get(match.group(2)) if match else None
        if match is None or unit is None or unit in seen:
            return None
        seen.add(unit)
        total += int(match.group(1)) * _UNIT_SECONDS[unit]
        position = match.end()
    return total if seen else None


def format_duration(seconds: int) -> str:
    """The compact form `parse_duration` reads back: `1h30m`, `7d`, `90s` → `1m30s`, `0s`."""
    if seconds == 0:
        return "0s"
    parts = []
    for unit in ("d", "h", "m", "s"):
        amount, seconds = divmod(seconds, _UNIT_SECONDS[unit])
        if amount:
            parts.append(f"{amount}{unit}")
    return "".join(parts)


def describe_duration(seconds: int) -> str:
    """A duration for messages: `1 minute`, `10 minutes`, `1 day 2 hours`."""
    if seconds == 0:
        return "0 seconds"
    names = {"d": "day", "h": "hour", "m": "minute", "s": "second"}
    words = []
    for unit in ("d", "h", "m", "s"):
        amount, seconds = divmod(seconds, _UNIT_SECONDS[unit])
        if amount:
            words.append(f"{amount} {names[unit]}{'' if amount == 1 else 's'}")
    return " ".join(words)
