"""Time zone data upgrades: which tzdata releases pending due times were worked out with, and
the rezone pass that moves the pending rings whose zone's rules changed.

Every process records its release's zone digests when it opens the store (`note_zone_data`,
a few hundred rows once per release), and warns when the database holds another release's:
due times may have been worked out with other rules. `rezone` then reads the pending
reminders of the zones whose digest differs in any recorded release, in id pages of bounded
work, works out each one's ring under the rules in use (`tocsin.time.rezoning`) and moves
those that changed with the conditional update an edit uses (`Store.reschedule`: only on the
version read, so a claim or an edit that lands first wins and the move is dropped). After a
complete pass that lost no race, only the running release stays recorded.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tocsin.errors import ExpansionBudgetExceeded, InvalidInput
from tocsin.store.ports import UpkeepStore
from tocsin.store.ports.upkeep import Move, PendingTime
from tocsin.time.rezoning import current_due
from tocsin.time.zonedata import tzdata_version, zone_digests

logger = logging.getLogger(__name__)

SCAN = 10_000  # reminders a page reads by id (a range of the primary key)


async def note_zone_data(store: UpkeepStore) -> list[str]:
    """Record this process's tzdata release; return the other releases recorded (due times
    may have been worked out with them), and warn when there are any."""
    version = tzdata_version()
    recorded = await store.note_zone_data(version, zone_digests())
    others = sorted(set(recorded) - {version})
    if others:
        changed = changed_zones(recorded, zone_digests())
        logger.warning(
            "pending reminders may have been scheduled with tzdata %s; this process uses %s, "
            "which changed the rules of %d zones: run `tocsin rezone` once every process "
            "runs %s",
            ", ".join(others),
            version,
            len(changed),
            version,
            extra={"recorded": others, "tzdata": version, "changed_zones": len(changed)},
        )
    return others


def changed_zones(recorded: dict[str, dict[str, str]], current: dict[str, str]) -> set[str]:
    """The zones whose rules differ between any recorded release and `current` (a zone the
    current release no longer has cannot be worked out again, and is left out)."""
    return {
        zone
        for digests in recorded.values()
        for zone, digest in digests.items()
        if zone in current and current[zone] != digest
    }


@dataclass
class RezoneReport:
    """What a rezone pass found and did."""

    tzdata: str
    recorded: list[str]  # the other releases due times may have been worked out with
    zones: int  # zones whose rules changed
    checked: int = 0  # pending reminders in those zones
    moved: int = 0  # moved (or, on a dry run, that would move)
    raced: int = 0  # a claim, edit or cancel landed first: left to it
    unreadable: int = 0  # no ring near the old one, or too costly to work out: left as is
    shifts: Counter[timedelta] = field(default_factory=Counter)  # new due - old due


async def rezone(
    store: UpkeepStore, *, now: datetime, dry_run: bool = False, scan: int = SCAN
) -> RezoneReport:
    """Move every pending ring whose zone's rules changed since its due time was worked
    out (see the module's docstring); with `dry_run`, only count what would move."""
    version = tzdata_version()
    recorded = await store.note_zone_data(version, zone_digests())
    zones = changed_zones(recorded, zone_digests())
    report = RezoneReport(
        tzdata=version, recorded=sorted(set(recorded) - {version}), zones=len(zones)
    )
    after: str | None = ""
    while zones and after is not None:
        page = await store.pending_in_zones(zones, after_id=after, scan=scan)
        report.checked += len(page.rows)
        moves = _moves(page.rows, report)
        if moves and not dry_run:
            moved = set(await store.reschedule(moves, now=now))
            report.raced += len(moves) - len(moved)
            moves = [move for move in moves if move.reminder_id in moved]
        report.moved += len(moves)
        report.shifts.update(move.due_at - move.was for move in moves)
        after = page.last_id
    if not dry_run and not report.raced:
        await store.forget_zone_data(keep=version)
    return report


def _moves(rows: list[PendingTime], report: RezoneReport) -> list[Move]:
    moves = []
    for row in rows:
        try:
            due = current_due(row.schedule, row.due_at)
        except (ExpansionBudgetExceeded, InvalidInput) as error:
            logger.warning("cannot work out %s again: %s", row.reminder_id, error)
            due = None
        if due is None:
            report.unreadable += 1
        elif due != row.due_at:
            moves.append(
                Move(
                    reminder_id=row.reminder_id,
                    shard=row.shard,
                    version=row.version,
                    was=row.due_at,
                    due_at=due,
                    rang=row.rang,
                )
            )
    return moves
