"""Pure decisions about reminders: what a new one, an edit or a snooze turns into.

Nothing here touches the store, so every rule about what is accepted is checked before
anything is written: a bad request never leaves half-written state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TypeVar

from tocsin.api.models import (
    NOT_NULL,
    SNOOZE_FIELDS,
    UNTIL_DONE_MAX,
    PlaceTriggerIn,
    ReminderIn,
    ReminderPatch,
    SnoozeIn,
)
from tocsin.api.problems import FieldError, Problem, invalid
from tocsin.domain import PlaceTrigger, Priority, Reminder, ReminderStatus, Schedule
from tocsin.errors import InvalidInput
from tocsin.ids import new_reminder_id, shard_of
from tocsin.time import LATEST, first_due, format_utc, parse_duration, plan_schedule, read_when
from tocsin.time.alerts import parse_alerts
from tocsin.time.expand import after_done as nags_after_done
from tocsin.time.expand import occurrence_from
from tocsin.time.quiet import parse_clock
from tocsin.time.zones import load_zone

FRESHNESS_MIN = 30
FRESHNESS_MAX = 7 * 86400
SNOOZE_MIN = 1
SNOOZE_MAX = 366 * 86400
SCHEDULE_FIELDS = frozenset(
    {"at", "repeat", "when", "zone", "alerts", "until_done", "until_done_max"}
)
NAG_MIN = 60
NAG_MAX = 86400

T = TypeVar("T")


class _Errors:
    """Collects every field error of one request, so the answer names them all at once."""

    def __init__(self) -> None:
        self.found: list[FieldError] = []

    def attempt(self, make: Callable[[], T]) -> T | None:
        try:
            return make()
        except InvalidInput as error:
            self.found.append(FieldError(error.field, error.message))
            return None

    def check(self) -> None:
        if self.found:
            raise invalid(self.found)


@lru_cache(maxsize=256)  # pure, and an import repeats a few values (errors are not cached)
def parse_freshness(text: str) -> int:
    return parse_duration(text, field="freshness", minimum=FRESHNESS_MIN, maximum=FRESHNESS_MAX)


def schedule_of(
    *, zone: str, at: str | None, repeat: str | None, now: datetime, when: str | None = None
) -> tuple[Schedule, datetime]:
    """The schedule and its first ring from now; InvalidInput when it never rings."""
    return planned(zone=zone, at=at, repeat=repeat, when=when, now=now)[:2]


def planned(
    *, zone: str, at: str | None, repeat: str | None, when: str | None, now: datetime
) -> tuple[Schedule, datetime, str | None, str | None]:
    """`schedule_of`, and the `at` and `repeat` to keep: as given, or what `when` stands for
    (a one-off's resolved ISO 8601 time, or the repeat). Errors of `when` name `when`."""
    if when is None:
        if at is None and repeat is None:
            raise InvalidInput("at", "give `at`, `repeat` or both, or `when`")
        return *plan_schedule(zone=zone, at=at, repeat=repeat, now=now), at, repeat
    if at is not None or repeat is not None:
        raise InvalidInput("when", "give `when` alone, or `at` and `repeat` instead of it")
    at, repeat = read_when(when, zone=zone, now=now)
    try:
        return *plan_schedule(zone=zone, at=at, repeat=repeat, now=now), at, repeat
    except InvalidInput as error:
        if error.field in ("at", "repeat"):
            raise InvalidInput("when", error.message) from None
        raise


def at_place(zone: str) -> tuple[Schedule, datetime, None, None]:
    """The plan of a reminder that rings at a place: no time of its own. Its row waits at
    LATEST, the end of the times Tocsin rings at, where no loader ever reads (so an edit or
    a cancel takes that occurrence back as for any pending reminder); the API shows no
    `next`."""
    load_zone(zone)  # a misspelt zone is refused as it is for a timed reminder
    return Schedule(zone=zone, anchor=LATEST), LATEST, None, None


def is_at_place(reminder: Reminder) -> bool:
    """Whether the reminder rings at a place (its row has no time of its own)."""
    return reminder.at is None and reminder.repeat is None and reminder.schedule.anchor == LATEST


def place_trigger(given: PlaceTriggerIn) -> PlaceTrigger:
    """The trigger of a validated `on`; InvalidInput naming `on.before` for an empty window."""
    after = None if given.after is None else parse_clock(given.after)
    before = None if given.before is None else parse_clock(given.before)
    if after is not None and after == before:
        raise InvalidInput("on.before", "must differ from `after`: the window would be empty")
    return PlaceTrigger(
        place_id=given.place, event=given.event, after=after, before=before, once=given.once
    )


def _place_plan(item: ReminderIn) -> tuple[Schedule, datetime, None, None]:
    timed = [f for f in ("at", "repeat", "when", "say") if getattr(item, f) is not None]
    if timed:
        raise InvalidInput("on", f"give `on` alone, not with `{timed[0]}`: it rings at a place")
    return at_place(item.zone)


def _late_plan(
    item: ReminderIn, now: datetime, late_by: timedelta | None
) -> tuple[Schedule, datetime, str | None, str | None]:
    """`planned`, and for a one-off `at` refused as past, the plan as of `late_by` ago: the
    first try of a retried create may have been lost in an outage while its `at` came, and
    refusing the retry would lose the reminder the client never stopped asking for (289 in a
    failover drill). Saved so, it is due already, and rings at once, late, within the
    freshness its deadline allows."""
    try:
        return planned(zone=item.zone, at=item.at, repeat=item.repeat, when=item.when, now=now)
    except InvalidInput as refused:
        one_off = item.at is not None and item.repeat is None and item.when is None
        if late_by is None or refused.field != "at" or not one_off:
            raise
        try:
            return planned(zone=item.zone, at=item.at, repeat=None, when=None, now=now - late_by)
        except InvalidInput:
            raise refused from None


def _timed_only(item: ReminderIn, field: str, parse: Callable[[], T]) -> T:
    """`parse()`, unless the reminder rings at a place (`on`) and the field is set: its rings
    come when its owner gets there, with nothing before them to alert or time to nag from."""
    if item.on is not None and getattr(item, field):
        raise InvalidInput(field, "rings at a time only: not with `on`")
    return parse()


def parse_nag(text: str | None) -> int:
    """`until_done` in seconds, 0 for none."""
    if text is None:
        return 0
    return parse_duration(text, field="until_done", minimum=NAG_MIN, maximum=NAG_MAX)


def _alerted(
    schedule: Schedule, due: datetime, alerts: tuple[int, ...], now: datetime
) -> tuple[Schedule, datetime]:
    """The schedule with its alerts, and its first ring: the first alert still to come
    before `due`, else `due` itself (a late one-off's, taken as late: `_late_plan`)."""
    if not alerts:
        return schedule, due
    alerted = replace(schedule, alerts=alerts)
    return alerted, first_due(alerted, min(now, due)) or due


def normalised_at(schedule: Schedule, given: str | None) -> str | None:
    """`at` as stored: an ISO 8601 local wall time, or a UTC instant if it was absolute."""
    if given is None:
        return None
    if schedule.rule is None and schedule.anchor.tzinfo is not None:
        return format_utc(schedule.anchor)
    if schedule.anchor.tzinfo is None:
        return schedule.anchor.isoformat(timespec="seconds")
    return given


def new_reminder(
    item: ReminderIn,
    *,
    owner: str,
    source: str | None,
    now: datetime,
    priority: Priority = Priority.URGENT,
    keyed: bool = False,
) -> Reminder:
    """A pending reminder from a validated request; 422 naming every field at fault. Without
    a priority of its own it has `priority` (its app's). `keyed`: the request carries an
    Idempotency-Key, so it may be a retry that met an outage, and a one-off `at` that has
    passed by less than the reminder's freshness is taken (`_late_plan`)."""
    errors = _Errors()
    freshness = errors.attempt(lambda: parse_freshness(item.freshness))
    late_by = timedelta(seconds=freshness) if keyed and freshness is not None else None
    if item.on is None:
        plan = errors.attempt(lambda: _late_plan(item, now, late_by))
        trigger = None
    else:
        plan = errors.attempt(lambda: _place_plan(item))
        on = item.on
        trigger = errors.attempt(lambda: place_trigger(on))
    alerts = errors.attempt(lambda: _timed_only(item, "alerts", lambda: parse_alerts(item.alerts)))
    nag = errors.attempt(
        lambda: _timed_only(item, "until_done", lambda: parse_nag(item.until_done))
    )
    errors.check()
    assert plan is not None
    assert freshness is not None
    assert alerts is not None
    assert item.text is not None  # a `say` is spelled out first (`saying.spelled_out`)
    schedule, due, at, repeat = plan
    nags = (item.until_done_max or UNTIL_DONE_MAX) if nag else 0
    schedule, due = _alerted(replace(schedule, nag=nag or 0, nags=nags), due, alerts, now)
    shard = shard_of(owner)
    return Reminder(
        id=new_reminder_id(shard, now),
        owner=owner,
        shard=shard,
        text=item.text,
        channel=item.route,
        schedule=schedule,
        at=normalised_at(schedule, at),
        repeat=repeat,
        status=ReminderStatus.PENDING,
        due_at=due,
        freshness=freshness,
        metadata=item.metadata,
        source=source,
        snoozed_from=None,
        version=1,
        created_at=now,
        updated_at=now,
        priority=item.priority or priority,
        ignore_quiet_hours=item.ignore_quiet_hours,
        on=trigger,
    )


def check_patch(patch: ReminderPatch) -> None:
    """422 unless the body is an edit of non-null fields, or exactly one snooze (the older
    form of `check_snooze`'s)."""
    fields = patch.model_fields_set
    if not fields:
        raise invalid([FieldError("body", "give a snooze or the fields to change")])
    snooze = fields & SNOOZE_FIELDS
    edits = fields - SNOOZE_FIELDS
    errors = [FieldError(f, "cannot be combined with a snooze") for f in sorted(edits) if snooze]
    errors += _snooze_errors(patch, snooze)
    errors += [
        FieldError(f, "may not be null")
        for f in sorted(edits & set(NOT_NULL))
        if getattr(patch, f) is None
    ]
    if errors:
        raise invalid(errors)


def check_snooze(body: SnoozeIn) -> None:
    """422 unless the body is exactly one of `snooze` and `snooze_until`, not null."""
    given = body.model_fields_set
    if not given:
        raise invalid([FieldError("body", "give `snooze` or `snooze_until`")])
    errors = _snooze_errors(body, given)
    if errors:
        raise invalid(errors)


def _snooze_errors(body: SnoozeIn | ReminderPatch, given: set[str]) -> list[FieldError]:
    errors = []
    if len(given) > 1:
        errors.append(FieldError("snooze_until", "give `snooze` or `snooze_until`, not both"))
    errors += [FieldError(f, "may not be null") for f in sorted(given) if getattr(body, f) is None]
    return errors


def edited(current: Reminder, patch: ReminderPatch, *, now: datetime) -> Reminder:
    """The reminder after an edit. A changed `at`, `repeat` or `zone` recomputes the
    schedule from now, and re-arms a reminder that rang or ended as pending again."""
    if current.status is ReminderStatus.CANCELLED:
        raise Problem(409, "cancelled", "a cancelled reminder cannot be edited; create another")
    fields = patch.model_fields_set
    errors = _Errors()
    freshness = current.freshness
    if "freshness" in fields and patch.freshness is not None:
        freshness = errors.attempt(lambda: parse_freshness(patch.freshness or "")) or 0
    changed = replace(
        current,
        text=patch.text if "text" in fields and patch.text else current.text,
        channel=patch.route or current.channel,
        metadata=patch.metadata if "metadata" in fields else current.metadata,
        freshness=freshness,
        updated_at=now,
        priority=patch.priority or current.priority,
        ignore_quiet_hours=(
            current.ignore_quiet_hours
            if patch.ignore_quiet_hours is None
            else patch.ignore_quiet_hours
        ),
    )
    if current.on is not None:
        changed = errors.attempt(lambda: _moved_place(changed, patch)) or changed
    elif "on" in fields:
        errors.found.append(
            FieldError("on", "a reminder saved with a time keeps it: save a new one")
        )
    elif fields & SCHEDULE_FIELDS:
        changed = errors.attempt(lambda: _rescheduled(changed, patch, now)) or changed
    errors.check()
    return changed


def _moved_place(current: Reminder, patch: ReminderPatch) -> Reminder:
    """A place reminder after an edit: a new `on` or `zone`, never a time."""
    fields = patch.model_fields_set
    timed = sorted(f for f in fields & (SCHEDULE_FIELDS - {"zone"}) if getattr(patch, f))
    if timed:
        raise InvalidInput(timed[0], "a reminder that rings at a place has no time: edit `on`")
    zone = patch.zone if "zone" in fields and patch.zone else current.schedule.zone
    schedule = at_place(zone)[0]
    trigger = place_trigger(patch.on) if patch.on is not None else current.on
    return replace(current, schedule=schedule, on=trigger)


def _rescheduled(current: Reminder, patch: ReminderPatch, now: datetime) -> Reminder:
    fields = patch.model_fields_set
    zone = patch.zone if "zone" in fields and patch.zone else current.schedule.zone
    when = patch.when if "when" in fields else None
    at = patch.at if "at" in fields else None if when else current.at
    repeat = patch.repeat if "repeat" in fields else None if when else current.repeat
    schedule, due, at, repeat = planned(zone=zone, at=at, repeat=repeat, when=when, now=now)
    alerts = current.schedule.alerts
    if "alerts" in fields and patch.alerts is not None:
        alerts = parse_alerts(patch.alerts)
    nag = parse_nag(patch.until_done) if "until_done" in fields else current.schedule.nag
    nags = patch.until_done_max or current.schedule.nags or UNTIL_DONE_MAX
    schedule = replace(schedule, nag=nag, nags=nags if nag else 0)
    schedule, due = _alerted(schedule, due, alerts, now)
    return replace(
        current,
        schedule=schedule,
        at=normalised_at(schedule, at),
        repeat=repeat,
        status=ReminderStatus.PENDING,
        due_at=due,
    )


def snooze_due(current: Reminder, asked: SnoozeIn, *, now: datetime) -> datetime:
    """When a snoozed reminder rings again. `snooze` counts from now, except for a pending
    one-off whose due time is still ahead: from then, so a snooze never brings it forward."""
    if asked.snooze_until is not None:
        try:
            return schedule_of(
                zone=current.schedule.zone, at=asked.snooze_until, repeat=None, now=now
            )[1]
        except InvalidInput as error:
            raise invalid([FieldError("snooze_until", error.message)]) from None
    try:
        seconds = parse_duration(
            asked.snooze or "", field="snooze", minimum=SNOOZE_MIN, maximum=SNOOZE_MAX
        )
    except InvalidInput as error:
        raise invalid([FieldError("snooze", error.message)]) from None
    start = now
    if is_pending_one_off(current) and current.due_at is not None:
        # From its time: the occurrence, not an early alert that comes before it.
        start = max(now, occurrence_from(current.schedule, current.due_at) or current.due_at)
    if timedelta(seconds=seconds) > LATEST - start:  # also keeps the sum from overflowing
        detail = f"{asked.snooze!r} from {format_utc(start)} is after {format_utc(LATEST)}"
        raise invalid([FieldError("snooze", f"{detail}, the latest time Tocsin rings at")])
    return start + timedelta(seconds=seconds)


def after_done(current: Reminder, rung: datetime, *, now: datetime) -> tuple[bool, Reminder]:
    """Whether marking the ring at `rung` done stops a nag that waits (`current.due_at`), and
    the reminder then: waiting for the first ring after its occurrence's nags, or, with none,
    `fired` (a one-off) or `ended` (a series)."""
    assert current.due_at is not None
    stop, following = nags_after_done(current.schedule, rung, current.due_at)
    if following is not None:
        return stop, replace(current, due_at=following, updated_at=now)
    over = ReminderStatus.FIRED if current.schedule.rule is None else ReminderStatus.ENDED
    return stop, replace(current, status=over, due_at=None, updated_at=now)


def is_pending_one_off(reminder: Reminder) -> bool:
    """A one-off that has not rung: a snooze moves it rather than making a new one."""
    return (
        reminder.status is ReminderStatus.PENDING
        and reminder.schedule.rule is None
        and reminder.on is None
    )


def moved_one_off(current: Reminder, due: datetime, *, now: datetime) -> Reminder:
    """A pending one-off moved to ring at `due` instead (its `at` becomes that instant)."""
    return replace(
        current,
        schedule=Schedule(zone=current.schedule.zone, anchor=due, rule=None),
        at=format_utc(due),
        due_at=due,
        updated_at=now,
    )


def snoozed_copy(current: Reminder, firing_id: str, due: datetime, *, now: datetime) -> Reminder:
    """The fresh one-off a snoozed ring becomes, linked to that ring. It keeps the source,
    so its ring goes where the original's went."""
    return replace(
        current,
        id=new_reminder_id(current.shard, now),
        schedule=Schedule(zone=current.schedule.zone, anchor=due, rule=None),
        at=format_utc(due),
        repeat=None,
        status=ReminderStatus.PENDING,
        due_at=due,
        snoozed_from=firing_id,
        version=1,
        created_at=now,
        updated_at=now,
        last_firing=None,
        on=None,
    )
