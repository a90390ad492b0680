"""How stored values look on the wire: reminders, firings, durations, ETags, cursors."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import orjson
from starlette.responses import Response

from tocsin.api.routing import shown
from tocsin.domain import (
    Attempt,
    Channel,
    Contact,
    Firing,
    Place,
    PlaceTrigger,
    Reminder,
    Route,
    SharedList,
    list_of,
)
from tocsin.ids import shard_of_id
from tocsin.time import format_duration, format_local, format_utc
from tocsin.time.alerts import format_alerts
from tocsin.time.expand import occurrence_from
from tocsin.time.quiet import QuietHours, clock_text


class JSON(Response):
    """A JSON answer rendered by orjson."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        if isinstance(content, bytes):
            return content
        return orjson.dumps(content)


def contact(item: Contact, *, secret: bool = False) -> dict[str, Any]:
    """A contact as the API shows it; its secret only when `secret` (once, at creation)."""
    body: dict[str, Any] = {
        "id": item.id,
        "owner": item.owner,
        "kind": item.kind.value,
        "label": item.label,
        "address": item.address,
        "source": item.source,
        "disabled_reason": item.disabled_reason,
        "disabled_at": _utc(item.disabled_at),
        "created_at": format_utc(item.created_at),
        "updated_at": format_utc(item.updated_at),
    }
    if secret:
        body["secret"] = item.secret
    return body


def quiet_hours(item: QuietHours, now: datetime) -> dict[str, Any]:
    """Quiet hours as the API shows them, with when the span that holds `now` ends."""
    until = item.until(now)
    return {
        "owner": item.owner,
        "source": item.source,
        "start": clock_text(item.start),
        "end": clock_text(item.end),
        "zone": item.zone,
        "quiet_until": None if until is None else format_utc(until),
        "updated_at": format_utc(item.updated_at),
    }


def place(item: Place, *, distance_m: float | None = None) -> dict[str, Any]:
    """A place as the API shows it; with its distance from the point a list was read near."""
    body: dict[str, Any] = {
        "id": item.id,
        "owner": item.owner,
        "name": item.name,
        "latitude": item.latitude,
        "longitude": item.longitude,
        "radius_m": item.radius_m,
        "source": item.source,
        "created_at": format_utc(item.created_at),
        "updated_at": format_utc(item.updated_at),
    }
    if distance_m is not None:
        body["distance_m"] = distance_m
    return body


def trigger(item: PlaceTrigger) -> dict[str, Any]:
    """A reminder's place trigger as the API shows it (`on`)."""
    return {
        "place": item.place_id,
        "event": item.event.value,
        "after": None if item.after is None else clock_text(item.after),
        "before": None if item.before is None else clock_text(item.before),
        "once": None if item.once is None else item.once.value,
    }


def reminder(item: Reminder, assignees: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A reminder as the API shows it; a list's with its list and its assignee (from
    `assignees`, by reminder id: none there is every member)."""
    zone = item.schedule.zone
    due = item.due_at if item.on is None else None  # a place reminder has no time of its own
    body: dict[str, Any] = {
        "id": item.id,
        "owner": item.owner,
        "text": item.text,
        **shown(item.channel),
        "zone": zone,
        "at": item.at,
        "repeat": item.repeat,
        "rule": item.schedule.rule,
        "status": item.status.value,
        "next": format_utc(due) if due else None,
        "next_local": format_local(due, zone) if due else None,
        "freshness": format_duration(item.freshness),
        "priority": item.priority.value,
        "ignore_quiet_hours": item.ignore_quiet_hours,
        "alerts": format_alerts(item.schedule.alerts),
        "until_done": format_duration(item.schedule.nag) if item.schedule.nag else None,
        "until_done_max": item.schedule.nags or None,
        "next_occurrence": _next_occurrence(item),
        "metadata": item.metadata,
        "source": item.source,
        "created_at": format_utc(item.created_at),
        "updated_at": format_utc(item.updated_at),
    }
    if item.last_firing is not None:
        body["last_firing"] = {
            "id": item.last_firing.id,
            "due": format_utc(item.last_firing.due_at),
            "state": item.last_firing.state.value,
        }
    if item.snoozed_from is not None:
        body["snoozed_from"] = item.snoozed_from
    list_id = list_of(item.owner)
    if list_id is not None:
        body["list"] = list_id
        body["assignee"] = (assignees or {}).get(item.id)
    if item.on is not None:
        body["on"] = trigger(item.on)
    return body


def _next_occurrence(item: Reminder) -> str | None:
    """The occurrence the next ring is for: itself, or the one an alert comes before or a
    nag after (`occurrence_from`); a place reminder has none."""
    if item.due_at is None or item.on is not None:
        return None
    if item.schedule.plain:
        return format_utc(item.due_at)
    occurrence = occurrence_from(item.schedule, item.due_at)
    return format_utc(occurrence) if occurrence else None


def shared_list(item: SharedList) -> dict[str, Any]:
    """A list as the API shows it, with its members."""
    return {
        "id": item.id,
        "name": item.name,
        "owner": item.owner,
        "source": item.source,
        "members": [
            {
                "member": m.member,
                "role": m.role.value,
                "state": "invited" if m.joined_at is None else "joined",
                "invited_at": format_utc(m.invited_at),
                "joined_at": None if m.joined_at is None else format_utc(m.joined_at),
            }
            for m in item.members
        ],
        "created_at": format_utc(item.created_at),
        "updated_at": format_utc(item.updated_at),
    }


def batch_created(index: int, item: Reminder) -> dict[str, Any]:
    """A batch item that was saved: its id and first ring, not the whole reminder (a
    1,000-item answer stays small, and rendering it was a tenth of a batch's time)."""
    return {
        "index": index,
        "status": "created",
        "id": item.id,
        "next": format_utc(item.due_at) if item.due_at else None,
        "etag": etag_of(item),
    }


def firing(item: Firing) -> dict[str, Any]:
    route = item.channel
    history = [attempt(a) for a in item.history]
    if route.fallback:
        for shown_attempt, made in zip(history, item.history, strict=True):
            shown_attempt.update(_step(route, made.channel))
    return {
        "id": item.id,
        "state": item.state.value,
        "due": format_utc(item.due_at),
        "deadline": format_utc(item.deadline),
        **shown(route),
        "attempts": item.attempts,
        "next_attempt_at": _utc(item.next_attempt_at),
        "sent_at": _utc(item.sent_at),
        "provider_id": item.provider_id,
        "last_error": item.last_error,
        "snoozed_by": item.snoozed_by,
        "done_at": format_utc(item.done_at) if item.done_at else None,
        "created_at": format_utc(item.created_at),
        "history": history,
    }


def _step(route: Route, channel: Channel) -> dict[str, Any]:
    """Where an attempt of a fallback ring stands in the chain: a step after the first is
    only ever tried when the one before failed for good (`Deliverer._deliver_route`). The
    firing keeps the route it rang with, so each of its attempts is on one of its steps."""
    step = route.step_of(channel)
    if step == 1:
        return {"step": 1, "reason": None}
    before = route.channels[step - 2]
    return {"step": step, "reason": f"step {step - 1} ({before}) failed for good"}


def attempt(item: Attempt) -> dict[str, Any]:
    return {
        "number": item.number,
        "at": format_utc(item.at),
        "channel": item.channel.value,
        "outcome": item.outcome.value,
        "error": item.error,
        "provider_id": item.provider_id,
        "destination": item.destination,
    }


def _utc(instant: datetime | None) -> str | None:
    return format_utc(instant) if instant is not None else None


def etag(version: int, due_at: datetime | None = None, status: str = "", rang: bool = False) -> str:
    """A reminder's ETag: its version (API writes) and, once a ring of it was claimed since
    the last of them, where its rings are — the occurrence that waits (its epoch second),
    else its status — so a ring changes it as an edit does, and an edit made on what the
    reminder was before a ring is refused as stale. Until a ring, the version alone
    (`"1"` as saved), which an app may send back without reading the reminder first."""
    if not rang:
        return f'"{version}"'
    where = str(int(due_at.timestamp())) if due_at is not None else status
    return f'"{version}.{where}"'


def etag_of(item: Reminder) -> str:
    return etag(item.version, item.due_at, item.status.value, item.rang)


def etag_matches(if_match: str, item: Reminder) -> bool:
    """Whether an `If-Match` header names the reminder as it is (`*` names any)."""
    wanted = etag_of(item)
    for candidate in if_match.split(","):
        tag = candidate.strip().removeprefix("W/")
        if tag in ("*", wanted):
            return True
    return False


def reminder_headers(item: Reminder) -> dict[str, str]:
    return {"ETag": etag_of(item), "Location": f"/v1/reminders/{item.id}"}


def encode_cursor(last_id: str) -> str:
    return base64.urlsafe_b64encode(last_id.encode()).rstrip(b"=").decode()


def decode_cursor(cursor: str) -> str:
    """The id a cursor stands for; ValueError for anything we did not hand out."""
    try:
        last_id = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError) as error:
        raise ValueError("not a cursor") from error
    shard_of_id(last_id)
    return last_id
