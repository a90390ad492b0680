"""Deciding each due ring's claim: send it, expire it, and where its series goes next.

Pure: no I/O, the instant `now` given. The rules (also in docs/architecture.md):

- A ring still inside its freshness (`due + freshness > now`) is claimed `sending` — late
  if it must be; an older one is claimed `expired`: recorded, never sent.
- A series moves on to `next_after(schedule, due)`, computed here for the whole batch, so
  the series never waits on delivery.
- A series that missed several occurrences (the next one is also past) rings at most once
  for them: only its newest occurrence still inside freshness rings. The loaded (oldest)
  occurrence is claimed `expired` and the row moved straight to that newest one, which is
  claimed like any other on the next tick; the occurrences in between get no firing at all.
  When none is fresh any more, the row moves straight to the next future occurrence.
- Every claim is made for the version of the row that was loaded, and the next occurrence is
  computed from the rule of that version: a claim never applies a schedule older than the
  row's (an edit since the load makes the claim lose; the edited row rings instead).
- A row whose next occurrence cannot be worked out (its rule raises, or exceeds the
  expansion budget of `PLAN_SECONDS` for the whole row) fails alone: it is claimed `failed`,
  with the reason as the firing's error, and the reminder ends; the rest of the batch rings.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from tocsin.domain import Claim, FiringState, Schedule
from tocsin.scheduler.timeline import Entry
from tocsin.time import next_after
from tocsin.time.budget import expansion_budget

logger = logging.getLogger(__name__)

MAX_STEPS = 1000  # occurrences walked to find a series' newest fresh one
# How far ahead of now a series' next occurrence is held by the timeline as its claim lands:
# past the loader's lead and the whole minute it reads ahead.
NEAR = timedelta(minutes=2)
# CPU time one row's plan may take, all its expansions together (a rule the API accepted takes
# microseconds; this bounds what a row saved before the API's budget, or a damaged one, can
# hold the event loop for, before it fails alone).
PLAN_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Plan:
    """The claims for one batch, and the rings to fire once their claim landed (keyed by
    the firing id of the claim that moves the row on to them)."""

    claims: list[Claim]
    follow_ups: dict[str, Entry]


def plan(entries: Sequence[Entry], now: datetime) -> Plan:
    claims: list[Claim] = []
    follow_ups: dict[str, Entry] = {}
    for entry in entries:
        try:
            if entry.schedule is None:  # a one-off: nothing to expand, nothing to bound
                claim, follow_up = plan_one(entry, now)
            else:
                with expansion_budget(PLAN_SECONDS, "working out the next ring"):
                    claim, follow_up = plan_one(entry, now)
        except Exception as error:  # one bad row must not hold up the batch
            logger.exception("reminder %s: its next ring cannot be worked out", entry.reminder_id)
            claim, follow_up = failed(entry, error), None
        claims.append(claim)
        if follow_up is not None:
            follow_ups[entry.key] = follow_up
    return Plan(claims, follow_ups)


def plan_one(entry: Entry, now: datetime) -> tuple[Claim, Entry | None]:
    """The claim for one ring, and the newer occurrence to ring after it when it missed
    several."""
    freshness = timedelta(seconds=entry.freshness)
    fresh = entry.due_at + freshness > now
    state = FiringState.SENDING if fresh else FiringState.EXPIRED
    schedule = entry.schedule
    if schedule is None:
        return _claim(entry, None, state), None
    following = next_after(schedule, entry.due_at)
    if following is None or following > now:
        # An occurrence the claim writes into a minute the loader already read ahead (an
        # alert's own occurrence a minute later, a nag, a series ringing every minute,
        # claimed in a minute's last seconds) would wait there unread: no wake-up names it
        # and the sweep reads only what API writes saved. So one that near rings from the
        # timeline too (which holds a ring once, whichever of the two brings it first).
        if following is not None and following - now < NEAR:
            return _claim(entry, following, state), entry.after_claim(following)
        return _claim(entry, following, state), None
    newest = newest_fresh(schedule, following, now - freshness, now)
    if newest is None:
        return _claim(entry, next_after(schedule, now), FiringState.EXPIRED), None
    return _claim(entry, newest, FiringState.EXPIRED), entry.after_claim(newest)


def newest_fresh(
    schedule: Schedule, first: datetime, stale_before: datetime, now: datetime
) -> datetime | None:
    """The newest occurrence in (stale_before, now], starting from occurrence `first`; None
    when there is none."""
    candidate: datetime | None = first
    if first <= stale_before:
        candidate = next_after(schedule, stale_before)
    if candidate is None or candidate > now:
        return None
    for _ in range(MAX_STEPS):
        following = next_after(schedule, candidate)
        if following is None or following > now:
            break
        candidate = following
    return candidate


def failed(entry: Entry, error: Exception) -> Claim:
    """The claim that records a ring whose row could not be planned: `failed`, with why."""
    reason = f"the next ring cannot be worked out: {type(error).__name__}: {error}"
    return Claim(
        reminder_id=entry.reminder_id,
        due_at=entry.due_at,
        version=entry.version,
        next_due_at=None,
        state=FiringState.FAILED,
        part=entry.part,
        error=reason[:500],
        content=entry.content,
        prev_due=entry.prev_due,
    )


def _claim(entry: Entry, next_due_at: datetime | None, state: FiringState) -> Claim:
    # By position, in the order of Claim's fields: one is built per ring.
    return Claim(
        entry.reminder_id,
        entry.due_at,
        entry.version,
        next_due_at,
        state,
        entry.part,
        None,
        entry.content,
        entry.prev_due,
    )
