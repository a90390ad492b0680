"""Time zones: IANA names checked against the tzdata we ship, never host files or offsets."""

from __future__ import annotations

import difflib
import re
from datetime import datetime, timedelta
from functools import cache
from importlib import resources
from zoneinfo import ZoneInfo

from tocsin.errors import InvalidInput

# Legacy names that look like zones but are fixed offsets or US-style abbreviations ("EST" has
# no daylight saving time, which is never what someone typing it means).
_MISLEADING = frozenset({"EST", "MST", "HST", "CET", "EET", "MET", "WET", "Factory"})
# Digits only appear in offset-like names: "EST5EDT", "Etc/GMT+2", "GMT0".
_OFFSET_LIKE = re.compile(r"\d")
# Zones whose tzdata entries are fixed offsets under the "Etc" area; only UTC itself is kept.
_ETC_KEPT = frozenset({"Etc/UTC"})


@cache
def zone_names() -> frozenset[str]:
    """Every zone name `load_zone` accepts: tzdata's names minus offsets and abbreviations."""
    listed = resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8").split()
    return frozenset(name for name in listed if _acceptable(name))


def _acceptable(name: str) -> bool:
    if name in _MISLEADING or _OFFSET_LIKE.search(name):
        return False
    return not name.startswith("Etc/") or name in _ETC_KEPT


def load_zone(name: str) -> ZoneInfo:
    """The zone called `name` (an IANA name such as `America/New_York`), from tzdata.

    Raises InvalidInput("zone", …) naming the bad zone, with a close valid name when there is one.
    """
    if name not in zone_names():
        raise InvalidInput("zone", _unknown_zone_message(name))
    return _load(name)


@cache
def _load(name: str) -> ZoneInfo:
    # ZoneInfo(name) would prefer the host's /usr/share/zoneinfo; reading tzdata's own file
    # keeps every machine on the database this release was tested with.
    path = resources.files("tzdata.zoneinfo").joinpath(*name.split("/"))
    with path.open("rb") as data:
        return ZoneInfo.from_file(data, key=name)


def _unknown_zone_message(name: str) -> str:
    shown = repr(name) if len(name) <= 80 else repr(name[:80] + "…")
    if not name.strip():
        return "give an IANA time zone name such as 'America/New_York'"
    if _OFFSET_LIKE.search(name) or name.upper() in _MISLEADING or "+" in name:
        # An offset cannot say when DST starts or stops: only a place name can.
        return (
            f"{shown} is an offset or abbreviation, not a time zone name; "
            "give the place's IANA name, e.g. 'America/New_York' or 'Europe/Berlin'"
        )
    hint = _suggestion(name)
    suffix = f"; did you mean {hint!r}?" if hint else " (e.g. 'America/New_York')"
    return f"{shown} is not a known IANA time zone name{suffix}"


def _suggestion(name: str) -> str | None:
    if len(name) > 80:
        return None
    by_lower = {zone.lower(): zone for zone in zone_names()}
    wanted = name.strip().lower().replace(" ", "_")
    if wanted in by_lower:
        return by_lower[wanted]
    close = difflib.get_close_matches(wanted, list(by_lower), n=1, cutoff=0.75)
    if close:
        return by_lower[close[0]]
    # "New_York" or "kolkata": match on the last part of the name alone.
    tails = {zone.rsplit("/", 1)[-1].lower(): zone for zone in sorted(zone_names())}
    close = difflib.get_close_matches(wanted.rsplit("/", 1)[-1], list(tails), n=1, cutoff=0.8)
    return tails[close[0]] if close else None


def gap_before(zone: ZoneInfo, instant: datetime) -> timedelta:
    """How far the zone's clocks jumped forward in the 25 hours up to `instant` (else zero).

    tzdata never changes a zone's offset twice within 25 hours (a unit test checks the shipped
    database), and no jump exceeds 24 hours, so comparing two offsets finds every jump that
    can matter.
    """
    now = instant.astimezone(zone).utcoffset()
    before = (instant - timedelta(hours=25)).astimezone(zone).utcoffset()
    assert now is not None
    assert before is not None
    return max(now - before, timedelta(0))
