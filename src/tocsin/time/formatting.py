"""Writing instants for people and JSON: UTC with `Z`, or local with the zone's offset."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from tocsin.time.zones import load_zone


def _aware(instant: datetime) -> datetime:
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"an instant must be timezone-aware, got {instant!r}")
    return instant


def format_utc(instant: datetime) -> str:
    """`2026-10-26T13:00:00Z`: whole seconds, UTC."""
    return _aware(instant).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_local(instant: datetime, zone: str | ZoneInfo) -> str:
    """`2026-10-26T09:00:00-04:00`: the wall time in `zone` with that moment's offset."""
    tz = load_zone(zone) if isinstance(zone, str) else zone
    return _aware(instant).astimezone(tz).isoformat(timespec="seconds")
