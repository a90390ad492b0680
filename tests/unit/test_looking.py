"""A reader's search for a reminder's newest ring (`tocsin.store.looking`): what it asks the
store about, and when it asks again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tocsin.store.looking import FIRST_LOOK, WIDER, Looking

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def _row(reminder_id: str = "r1", *, version: int = 1, **changes: Any) -> dict[str, Any]:
    """A daily series' row, first due 100 days before NOW."""
    return {
        "id": reminder_id,
        "version": version,
        "status": "pending",
        "due_at": NOW - 100 * DAY,
        "zone": "UTC",
        "anchor": "2025-11-22T09:00:00",
        "rule": "FREQ=DAILY",
        "alerts": None,
        "nag": None,
        "nags": None,
        "lost": False,
        **changes,
    }


def _looking(*rows: dict[str, Any]) -> Looking[Any]:
    return Looking(rows, now=NOW, instant=lambda value: value)


def test_it_asks_about_the_latest_instants_of_the_timeline_newest_first() -> None:
    search = _looking(_row())
    ids, [starts] = search.ask()
    assert ids == ["r1"]
    assert starts == [NOW - n * DAY for n in range(FIRST_LOOK)]


def test_a_reminder_found_as_asked_is_found_in_the_order_of_the_rows() -> None:
    search = _looking(_row("r2"), _row("r1"))
    search.ask()
    search.take([_row("r1"), _row("r2")])
    assert search.done
    assert [row["id"] for row in search.found()] == ["r2", "r1"]


def test_lost_asks_again_eight_times_wider_until_the_whole_timeline_was_asked() -> None:
    search = _looking(_row())
    search.ask()
    search.take([_row(lost=True)])
    assert not search.done
    _, [starts] = search.ask()
    assert len(starts) == FIRST_LOOK * WIDER
    search.take([_row(lost=True)])
    _, [starts] = search.ask()
    assert len(starts) == 101  # all of it, back to the version's first occurrence
    assert starts[-1] == NOW - 100 * DAY
    search.take([_row(lost=True)])  # nothing of the version rang: it waits
    assert search.done
    assert search.found() == [_row(lost=True)]


def test_a_row_changed_since_it_was_read_is_asked_about_as_it_is_now() -> None:
    search = _looking(_row())
    search.ask()
    weekly = _row(
        version=2, rule="FREQ=WEEKLY", anchor="2025-12-22T09:00:00", due_at=NOW - 70 * DAY
    )
    search.take([weekly])
    _, [starts] = search.ask()
    assert starts == [NOW - 7 * n * DAY for n in range(FIRST_LOOK)]
    search.take([weekly])
    assert search.found() == [weekly]


def test_a_reminder_gone_meanwhile_is_left_out_and_one_not_pending_has_no_instants() -> None:
    search = _looking(_row("r1"), _row("r2", status="cancelled"))
    _, starts = search.ask()
    assert starts[1] == []
    search.take([_row("r2", status="cancelled")])
    assert [row["id"] for row in search.found()] == ["r2"]


def test_a_schedule_that_can_no_longer_be_worked_out_is_looked_for_from_its_start() -> None:
    """Its zone gone from an upgraded tzdata: no instants, so the walk starts where the
    version did, and the read answers rather than failing."""
    search = _looking(_row(zone="Mars/Olympus_Mons"))
    _, [starts] = search.ask()
    assert starts == []
