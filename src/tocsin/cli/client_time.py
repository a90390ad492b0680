"""What the CLI client reads for time on the command line that the API does not: a bare
clock time (`18:00`, the next one in the zone), a delay (`+2h`), and this machine's zone."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tocsin.cli.client_http import usage_error
from tocsin.errors import InvalidInput
from tocsin.time import format_utc, load_zone, parse_duration, zone_names

_CLOCK = re.compile(r"(?P<hour>[0-9]{1,2}):(?P<minute>[0-9]{2})(?::(?P<second>[0-9]{2}))?")
_LOCALTIME = Path("/etc/localtime")


def default_zone() -> str:
    """`TOCSIN_ZONE`, else this machine's zone when it has an IANA name, else UTC."""
    for name in (os.environ.get("TOCSIN_ZONE"), os.environ.get("TZ"), _system_zone()):
        if name and name.lstrip(":") in zone_names():
            return name.lstrip(":")
    return "UTC"


def _system_zone() -> str | None:
    # /etc/localtime is a link into a zoneinfo folder on most Unix systems: its path names
    # the zone. A copied file carries no name, and a guess could be a wrong zone.
    try:
        target = str(_LOCALTIME.resolve())
    except OSError:
        return None
    _, found, name = target.partition("zoneinfo/")
    return name if found else None


def is_clock_time(text: str) -> bool:
    """`18:00`: a time of day without a date, which only a zone makes an instant."""
    return _CLOCK.fullmatch(text.strip()) is not None


def resolve_at(text: str, zone: str, now: datetime | None = None) -> str:
    """`at` as the API reads it. `18:00` is the next 18:00 on the zone's clock (today's,
    or tomorrow's once it has passed), sent as a local wall time so the server applies
    the zone's rules; `+2h` is that long from now, sent as an instant; anything else is
    passed on as given (the server says what is wrong with it)."""
    now = now or datetime.now(UTC)
    if text.startswith("+"):
        return _after(text[1:], now)
    clock = _CLOCK.fullmatch(text.strip())
    if clock is None:
        return text
    try:
        local_now = now.astimezone(load_zone(zone))
    except InvalidInput:
        return text  # the server names the bad zone
    hour, minute = int(clock["hour"]), int(clock["minute"])
    if hour > 23 or minute > 59:
        raise usage_error(f"--at {text}: not a time of day (00:00 to 23:59)")
    wanted = local_now.replace(
        hour=hour, minute=minute, second=int(clock["second"] or 0), microsecond=0, tzinfo=None
    )
    if wanted <= local_now.replace(tzinfo=None):
        wanted += timedelta(days=1)
    return wanted.strftime("%Y-%m-%dT%H:%M:%S")


def _after(delay: str, now: datetime) -> str:
    try:
        seconds = parse_duration(delay, field="at", minimum=1, maximum=366 * 86400)
    except InvalidInput as error:
        raise usage_error(f"--at +{delay}: {error.message}") from None
    return format_utc(now + timedelta(seconds=seconds))
