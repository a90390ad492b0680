"""The chaos run's checks and timetable, on records made by hand: each violation is found,
and a clean run has none."""

from __future__ import annotations

import pytest

from tocsin_bench.chaos_checks import HOLD_SECONDS, Firing, Records, judge
from tocsin_bench.chaos_plan import ChaosSpec, Window, plan
from tocsin_bench.chaos_report import NO_FAULT, SEVERAL, lateness_by_fault
from tocsin_bench.chaos_workload import Ledger, Race

DUE = 1_800_000_000
DEADLINE = DUE + 600.0


def firing(
    reminder: str,
    due: int = DUE,
    state: str = "sent",
    error: str | None = None,
    attempts: int = 1,
) -> Firing:
    return Firing(f"{reminder}.{due}", reminder, due, due + 600.0, state, error, attempts, due)


def records(
    status: dict[str, str],
    firings: list[Firing],
    arrivals: dict[str, list[tuple[float, int]]],
    invalid: int = 0,
) -> Records:
    return Records(
        status=status,
        due={k: DUE for k in status},
        firings={f.id: f for f in firings},
        arrivals=arrivals,
        invalid=invalid,
    )


def ledger(*reminders: str, races: list[Race] | None = None) -> Ledger:
    made = Ledger()
    for reminder in reminders:
        made.add(reminder, DUE, '"1"')
    made.races = races or []
    return made


def found(made: Ledger, seen: Records) -> dict[str, int]:
    verdict = judge(made, seen, now=DEADLINE + 60)
    return {kind: len(ids) for kind, ids in verdict.violations.items() if ids}


def test_a_clean_run_has_no_violation_and_counts_repeats() -> None:
    seen = records(
        {"a": "fired", "b": "fired"},
        [firing("a"), firing("b", state="expired", error="expired: its deadline passed")],
        # refused, accepted, and accepted again once the hold ran out (its result was lost)
        {f"a.{DUE}": [(DUE + 0.1, 503), (DUE + 1.0, 204), (DUE + HOLD_SECONDS + 2, 204)]},
    )
    verdict = judge(ledger("a", "b"), seen, now=DEADLINE + 60)
    assert verdict.total == 0
    assert verdict.counts["repeats"] == 1
    assert verdict.counts["repeats_after_hold"] == 1
    assert verdict.counts["refused_by_receiver"] == 1
    assert verdict.counts["firings"] == {"expired": 1, "sent": 1}


@pytest.mark.parametrize(
    ("firings", "arrivals", "status", "kind"),
    [
        ([], {}, "fired", "never_rang"),
        ([firing("a", state="failed")], {}, "fired", "never_rang"),  # no reason given
        ([], {}, "pending", "still_pending"),
        ([firing("a")], {}, "fired", "sent_not_received"),
        ([firing("a")], {f"a.{DUE}": [(DEADLINE + 0.001, 204)]}, "fired", "after_deadline"),
        (
            [firing("a")],
            {f"a.{DUE}": [(DUE, 204)], "x.1": [(DUE, 204)]},
            "fired",
            "unknown_identity",
        ),
    ],
)
def test_each_broken_promise_is_a_violation(
    firings: list[Firing], arrivals: dict[str, list[tuple[float, int]]], status: str, kind: str
) -> None:
    assert kind in found(ledger("a"), records({"a": status}, firings, arrivals))


def test_an_acknowledged_reminder_missing_from_the_database_is_lost() -> None:
    seen = records({"a": "fired"}, [firing("a")], {f"a.{DUE}": [(DUE, 204)]})
    assert found(ledger("a", "b"), seen) == {"lost": 1}


def test_an_identity_accepted_twice_within_the_hold_is_a_second_claim() -> None:
    twice = {f"a.{DUE}": [(DUE + 0.2, 204), (DUE + 0.9, 204)]}
    assert found(ledger("a"), records({"a": "fired"}, [firing("a")], twice)) == {
        "accepted_twice": 1
    }
    # Its sender's own retries, recorded (the first answer was lost to a timeout): a retry.
    retried = records({"a": "fired"}, [firing("a", attempts=2)], twice)
    assert found(ledger("a"), retried) == {}
    # Accepted again once the hold ran out: another sender sent the one firing again.
    later = {f"a.{DUE}": [(DUE + 0.2, 204), (DUE + HOLD_SECONDS, 204)]}
    assert found(ledger("a"), records({"a": "fired"}, [firing("a")], later)) == {}


def test_a_cancel_that_answered_204_must_never_ring() -> None:
    cancel = Race("cancel", "a", DUE, DUE - 0.5, status=204)
    rang = records({"a": "cancelled"}, [], {f"a.{DUE}": [(DUE, 204)]})
    assert found(ledger("a", races=[cancel]), rang) == {"cancelled_rang": 1, "unknown_identity": 1}
    quiet = records({"a": "cancelled"}, [], {})
    assert found(ledger("a", races=[cancel]), quiet) == {}


def test_a_cancel_that_lost_may_ring() -> None:
    cancel = Race("cancel", "a", DUE, DUE, status=409)
    seen = records({"a": "fired"}, [firing("a")], {f"a.{DUE}": [(DUE, 204)]})
    assert found(ledger("a", races=[cancel]), seen) == {}


@pytest.mark.parametrize("kind", ["edit", "snooze"])
def test_a_move_that_answered_200_rings_only_at_its_new_due(kind: str) -> None:
    moved = Race(kind, "a", DUE, DUE - 0.5, status=200, new_due=DUE + 30)
    new = firing("a", DUE + 30)
    right = records({"a": "fired"}, [new], {new.id: [(DUE + 30.1, 204)]})
    assert found(ledger("a", races=[moved]), right) == {}
    old = firing("a")
    wrong = records({"a": "fired"}, [old], {old.id: [(DUE + 0.1, 204)]})
    assert found(ledger("a", races=[moved]), wrong) == {"moved_rang_old": 1, "moved_not_at_new": 1}


def test_a_snooze_that_answered_201_has_a_follow_up_that_rang() -> None:
    snooze = Race("snooze", "a", DUE, DUE + 0.5, status=201, new_id="b", new_due=DUE + 30)
    first, follow_up = firing("a"), firing("b", DUE + 30)
    arrivals = {first.id: [(DUE + 0.1, 204)]}
    lost = records({"a": "fired", "b": "fired"}, [first], arrivals)
    assert found(ledger("a", races=[snooze]), lost) == {"snooze_no_follow_up": 1, "never_rang": 1}
    arrivals[follow_up.id] = [(DUE + 30.2, 204)]
    kept = records({"a": "fired", "b": "fired"}, [first, follow_up], arrivals)
    assert found(ledger("a", races=[snooze]), kept) == {}


def test_a_bad_signature_is_a_violation() -> None:
    seen = records({"a": "fired"}, [firing("a")], {f"a.{DUE}": [(DUE, 204)]}, invalid=2)
    assert found(ledger("a"), seen) == {"invalid_signature": 2}


def test_lateness_is_split_by_the_fault_windows_the_due_falls_in() -> None:
    early, late = firing("a"), firing("b", DUE + 100)
    seen = records(
        {"a": "fired", "b": "fired"},
        [early, late],
        {early.id: [(DUE + 5.0, 204)], late.id: [(DUE + 100.5, 204)]},
    )
    cost = lateness_by_fault(seen, [Window("receiver 503", DUE - 1, DUE + 10)])
    assert cost["receiver 503"]["late_s"]["max"] == 5.0
    assert cost["receiver 503"]["latest"] == [f"a.{DUE} +5.0 s"]
    assert cost[NO_FAULT]["late_s"]["max"] == 0.5
    both = [Window("receiver 503", DUE - 1, DUE + 10), Window("worker killed", DUE, DUE + 1)]
    cost = lateness_by_fault(seen, both)
    assert cost[SEVERAL]["rang"] == 1, "a ring due in two faults' windows counts once"
    assert cost["worker killed"]["rang"] == cost["receiver 503"]["rang"] == 0


def test_the_timetable_scales_from_the_ten_minute_run() -> None:
    def spec(duration: float) -> ChaosSpec:
        return ChaosSpec(
            duration=duration, rate=1, workers=1, freshness=600, snooze=30, edit_by=30,
            races_per_second=1,
        )  # fmt: skip

    full = plan(spec(600), DUE)
    assert full.kill_every == 30
    assert full.postgres.end - full.postgres.start == 20
    assert full.receiver.end - full.receiver.start == 120
    short = plan(spec(120), DUE)
    assert short.postgres.end - short.postgres.start == pytest.approx(4)
    assert short.receiver.end - short.receiver.start == pytest.approx(24)
    assert short.kill_every == 6
    assert short.receiver.start == DUE + 0.45 * 120
