"""The CLI client's output: tables and details for people, JSON for scripts, and problems
(the server's problem+json, or the client's own) written to stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from tocsin.cli.client_http import ClientError

# Longer texts are cut in tables (a table of long lines is unreadable); `show` has them whole.
TEXT_WIDTH = 40
# Down to seconds: a ring 20-60 s away is not "now" (one-offs `--at +20s` are that close).
_UNITS = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def emit_json(value: Any, out: TextIO | None = None) -> None:
    """One JSON document on a line: what `--json` promises scripts."""
    print(json.dumps(value, ensure_ascii=False), file=out or sys.stdout)


def print_found(
    found: Any,
    rows: Sequence[Mapping[str, Any]],
    render: Callable[[Iterable[Mapping[str, Any]]], str],
    *,
    empty: str,
    as_json: bool,
) -> None:
    """A list on stdout: `found` as JSON for scripts, else `rows` as `render` draws them
    (or the sentence `empty` says when there are none)."""
    if as_json:
        emit_json(found)
    else:
        print(render(rows) if rows else empty)


def print_problem(command: str, error: ClientError, *, as_json: bool) -> None:
    """The problem on stderr: as one JSON line with `--json`, else as plain sentences with
    one line per field at fault."""
    if as_json:
        emit_json({"exit_status": error.exit_status, **error.problem}, sys.stderr)
        return
    for line in problem_lines(command, error.problem):
        print(line, file=sys.stderr)


def problem_lines(command: str, problem: Mapping[str, Any]) -> list[str]:
    status = problem.get("status")
    title = problem.get("title") or "failed"
    head = f"tocsin {command}: {title}" + (f" ({status})" if status else "")
    detail = problem.get("detail")
    lines = [f"{head}: {detail}" if detail else head]
    for error in problem.get("errors") or ():
        lines.append(f"  {error.get('field', '?')}: {error.get('message', '')}")
    return lines


def parse_instant(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def relative(instant: datetime | None, now: datetime | None = None) -> str:
    """`in 3 hours`, `2 days ago`, `in 20 seconds`, `now` (under a second): the largest
    whole unit, as people say it."""
    if instant is None:
        return "-"
    seconds = (instant - (now or datetime.now(UTC))).total_seconds()
    for name, size in _UNITS:
        count = int(abs(seconds) // size)
        if count:
            words = f"{count} {name}{'s' if count != 1 else ''}"
            return f"in {words}" if seconds > 0 else f"{words} ago"
    return "now"


def wall_time(local: str | None) -> str:
    """A `next_local` (the reminder's zone, with offset) as `Mon 2026-10-26 09:00`."""
    moment = parse_instant(local)
    return moment.strftime("%a %Y-%m-%d %H:%M") if moment else "-"


def cut(text: str, width: int = TEXT_WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Columns padded to their widest cell; the last one left ragged (it is free text)."""
    rows = [list(headers), *(list(r) for r in rows)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(headers) - 1)]
    lines = []
    for row in rows:
        padded = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*padded, row[-1]]).rstrip())
    return "\n".join(lines)


def channels(item: Mapping[str, Any]) -> str:
    """A reminder's or firing's channels: `email`, `webhook,email` (all at once) or
    `apns>sms` (a fallback chain)."""
    if item.get("fallback"):
        return ">".join(item["fallback"])
    channel = item.get("channel")
    return ",".join(channel) if isinstance(channel, list) else str(channel)


def reminders_table(reminders: Iterable[Mapping[str, Any]]) -> str:
    return table(
        ("ID", "STATUS", "NEXT (LOCAL)", "", "ZONE", "CHANNEL", "REPEAT", "TEXT"),
        (
            (
                r["id"],
                r["status"],
                wall_time(r.get("next_local")),
                relative(parse_instant(r.get("next"))),
                r["zone"],
                channels(r),
                cut(r.get("repeat") or "once", 24),
                cut(r["text"]),
            )
            for r in reminders
        ),
    )


def reminder_details(r: Mapping[str, Any]) -> str:
    """Every field worth reading, one a line: what `show`, `add`, `edit` and `snooze` print."""
    next_ring = "-"
    if r.get("next"):
        next_ring = (
            f"{wall_time(r.get('next_local'))} {r['zone']} ({relative(parse_instant(r['next']))})"
        )
    fields = [
        ("id", r["id"]),
        ("owner", r["owner"]),
        ("text", r["text"]),
        ("status", r["status"]),
        ("next", next_ring),
        ("repeat", f"{r['repeat']} ({r['rule']})" if r.get("repeat") else "once"),
        ("at", r.get("at") or "-"),
        ("channel", channels(r)),
        ("freshness", r["freshness"]),
        ("priority", r.get("priority", "urgent")),
    ]
    fields += _optional_fields(r)
    width = max(len(name) for name, _ in fields) + 2  # a space after the longest's colon
    return "\n".join(f"{name + ':':<{width}}{value}" for name, value in fields)


def place_trigger(on: Mapping[str, Any]) -> str:
    """A place reminder's `on`: `arrive at 06h2t… from 17:00, once a day`."""
    said = f"{on['event']} at {on['place']}"
    if on.get("after") or on.get("before"):
        said += f" from {on.get('after') or '00:00'} to {on.get('before') or '24:00'}"
    once = {"day": ", once a day", "ever": ", once"}
    return said + once.get(on.get("once") or "", "")


def _optional_fields(r: Mapping[str, Any]) -> list[tuple[str, str]]:
    extra: list[tuple[str, str]] = []
    if r.get("on"):
        extra.append(("rings on", place_trigger(r["on"])))
    if r.get("last_firing"):
        last = r["last_firing"]
        extra.append(("last ring", f"{last['due']} {last['state']} ({last['id']})"))
    if r.get("list"):
        extra.append(("list", r["list"]))
        extra.append(("for", r.get("assignee") or "every member who joined"))
    if r.get("snoozed_from"):
        extra.append(("snoozed from", r["snoozed_from"]))
    if r.get("alerts"):
        extra.append(("alerts", ", ".join(r["alerts"]) + " before each ring"))
        if r.get("next_occurrence") and r["next_occurrence"] != r.get("next"):
            extra.append(("next alert for", r["next_occurrence"]))
    if r.get("until_done"):
        extra.append(("until done", f"again every {r['until_done']}, {r['until_done_max']} times"))
    if r.get("ignore_quiet_hours"):
        extra.append(("quiet hours", "ignored: its bulk rings go through them"))
    if r.get("metadata") is not None:
        extra.append(("metadata", json.dumps(r["metadata"], ensure_ascii=False)))
    extra.append(("source", r.get("source") or "-"))
    return extra


def warnings_lines(r: Mapping[str, Any]) -> list[str]:
    return [
        f"warning: {w.get('field', '')}: {w.get('message', '')}" for w in r.get("warnings") or ()
    ]


def occurrences_table(occurrences: Iterable[Mapping[str, Any]]) -> str:
    return table(
        ("LOCAL", "", "UTC"),
        ((wall_time(o["local"]), relative(parse_instant(o["at"])), o["at"]) for o in occurrences),
    )


def firings_table(firings: Iterable[Mapping[str, Any]]) -> str:
    return table(
        ("FIRING", "DUE", "STATE", "CHANNEL", "ATTEMPTS", "DONE", "LAST ERROR"),
        (
            (
                f["id"],
                f["due"],
                f["state"],
                channels(f),
                str(f["attempts"]),
                f.get("done_at") or "-",
                cut(f.get("last_error") or "-", 60),
            )
            for f in firings
        ),
    )


def places_table(places: Iterable[Mapping[str, Any]]) -> str:
    """Places, with their distance when the list was read near a point."""
    places = list(places)
    near = any("distance_m" in p for p in places)
    heads = ("ID", "NAME", "CENTRE", "RADIUS", "SAVED BY") + (("DISTANCE",) if near else ())
    return table(
        heads,
        (
            (
                p["id"],
                cut(p["name"], 40),
                f"{p['latitude']},{p['longitude']}",
                f"{p['radius_m']} m",
                p.get("source") or "owner",
                *((_metres(p["distance_m"]),) if near else ()),
            )
            for p in places
        ),
    )


def quiet_hours_table(spans: Iterable[Mapping[str, Any]]) -> str:
    """Quiet hours, each saver's, with when they end if they hold now."""
    return table(
        ("SPAN", "ZONE", "SAVED BY", "QUIET UNTIL"),
        (
            (
                f"{q['start']}-{q['end']}",
                q["zone"],
                q.get("source") or "owner",
                q.get("quiet_until") or "-",
            )
            for q in spans
        ),
    )


def lists_table(lists: Iterable[Mapping[str, Any]]) -> str:
    """Shared lists, each with its members (`ben (editor, invited)`)."""
    return table(
        ("ID", "NAME", "MADE BY", "MEMBERS"),
        ((s["id"], cut(s["name"], 32), s.get("source") or "owner", members_text(s)) for s in lists),
    )


def members_text(shared: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{m['member']} ({m['role']}{', invited' if m['state'] == 'invited' else ''})"
        for m in shared["members"]
    )


def _metres(distance: float) -> str:
    if distance == 0:
        return "inside"
    return f"{distance / 1000:,.1f} km" if distance >= 1000 else f"{distance:,.0f} m"


def contacts_table(contacts: Iterable[Mapping[str, Any]]) -> str:
    return table(
        ("ID", "KIND", "LABEL", "SAVED BY", "STATE", "ADDRESS"),
        (
            (
                c["id"],
                c["kind"],
                c.get("label") or "-",
                c.get("source") or "owner",
                f"disabled: {c['disabled_reason']}" if c.get("disabled_reason") else "on",
                cut(", ".join(f"{k}={v}" for k, v in c.get("address", {}).items()), 60),
            )
            for c in contacts
        ),
    )
