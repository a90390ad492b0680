"""What the mobile push channels (`apns`, `fcm`) share: the alert, the deadline, the contact's
fields and the provider's JSON answer."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson

from tocsin.domain import Firing
from tocsin.errors import InvalidInput

DEFAULT_TITLE = "Reminder"
MAX_TITLE = 100  # a lock screen shows a line or two; longer titles are cut by the phone anyway
# What a ring that offers Done and Snooze names, for the app to show them: the notification
# category an iOS app registers (APNs `aps.category`) with two actions whose identifiers are
# `done` and `snooze`, and the click action an Android app's activity filters for (FCM).
CATEGORY = "TOCSIN_RING"


def alert_title(firing: Firing) -> str:
    """The notification's title: the reminder's `metadata.title` when the app set one (a
    string), else "Reminder". The reminder's text is the notification's body."""
    title = (firing.metadata or {}).get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()[:MAX_TITLE]
    return DEFAULT_TITLE


def deadline_epoch(firing: Firing) -> int:
    """The firing's deadline in epoch seconds (a provider must drop the message after it)."""
    return int(firing.deadline.timestamp())


def seconds_left(firing: Firing, now: datetime) -> int:
    """Whole seconds from `now` to the firing's deadline, rounded up, never negative."""
    return max(0, math.ceil((firing.deadline - now).total_seconds()))


def utc_text(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def contact_strings(
    fields: Mapping[str, Any], *, kind: str, allowed: frozenset[str]
) -> dict[str, str]:
    """The contact's fields, each a string, none unknown: a typo (`tokn`) is refused rather
    than stored and silently never used."""
    values: dict[str, str] = {}
    for name, value in fields.items():
        if name not in allowed:
            raise InvalidInput(name, f"unknown field for an {kind} contact")
        if value is None:
            continue
        if not isinstance(value, str):
            raise InvalidInput(name, "must be a string")
        values[name] = value
    return values


def json_object(body: bytes) -> dict[str, Any]:
    """A provider's JSON answer as a dict; {} when it is not a JSON object."""
    try:
        value = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
