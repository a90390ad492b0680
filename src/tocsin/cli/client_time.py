"""The zone the CLI client says times in when none is given: this machine's.

Times themselves (`--at 18:00`, `+10m`, `tomorrow 9am`) go to the server as typed: it reads
them with its own clock in the reminder's zone, as it reads the page's and every app's."""

from __future__ import annotations

import os
from pathlib import Path

from tocsin.time import zone_names

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
