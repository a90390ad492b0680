"""The PostgreSQL store's ledger of its open claims: which write settles a claim (deletes it
with its last firings), which claims are done but were not deleted by the write that finished
them, and claims forgotten once their hold ran out (recovery's from then on)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from tocsin.store.postgres.claims import ClaimLedger

NOW = datetime(2026, 12, 6, 9, tzinfo=UTC)
HOLD = NOW + timedelta(seconds=20)


def test_the_write_of_a_claims_last_firings_settles_it() -> None:
    ledger = ClaimLedger()
    ledger.opened(1, ["a.1", "b.1", "c.1"], hold_until=HOLD, now=NOW)
    ledger.opened(2, ["d.1"], hold_until=HOLD, now=NOW)

    first = ledger.settled_by(["a.1", "b.1"])
    ledger.written(["a.1", "b.1"], first)
    last = ledger.settled_by(["c.1", "d.1", "x.1"])  # x.1: no claim of this process

    assert first == []
    assert sorted(last) == [1, 2]
    assert ledger.written(["c.1", "d.1", "x.1"], last) == []
    assert len(ledger) == 0


def test_two_writes_at_once_leave_the_claim_to_the_one_that_finishes_it() -> None:
    ledger = ClaimLedger()
    ledger.opened(1, ["a.1", "b.1"], hold_until=HOLD, now=NOW)

    one, two = ledger.settled_by(["a.1"]), ledger.settled_by(["b.1"])  # both before either
    assert (one, two) == ([], [])
    assert ledger.written(["a.1"], one) == []
    assert ledger.written(["b.1"], two) == [1]  # done, not deleted: the caller deletes it


def test_a_claim_whose_hold_ran_out_is_forgotten() -> None:
    ledger = ClaimLedger()
    ledger.opened(1, ["a.1"], hold_until=HOLD, now=NOW)
    ledger.opened(2, ["b.1"], hold_until=HOLD + timedelta(minutes=1), now=HOLD + timedelta(1))

    assert ledger.settled_by(["a.1", "b.1"]) == [2]
    assert ledger.written(["a.1"], []) == []  # recovery's: not this process's to delete
    assert len(ledger) == 1


@given(st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=40, unique=True))
def test_every_claim_is_settled_once_whatever_the_batches(rings: list[int]) -> None:
    """Rings of three claims written in batches of any size: each claim is deleted exactly
    once, by the write holding its last ring."""
    ledger = ClaimLedger()
    ids = [f"r{n}.1" for n in rings]
    for claim in range(3):
        ledger.opened(claim, ids[claim::3], hold_until=HOLD, now=NOW)
    deleted: list[int] = []
    for start in range(0, len(ids), 4):
        batch = ids[start : start + 4]
        settled = ledger.settled_by(batch)
        deleted += settled
        deleted += ledger.written(batch, settled)
    assert sorted(deleted) == [claim for claim in range(3) if ids[claim::3]]
    assert len(ledger) == 0
