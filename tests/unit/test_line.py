"""The delivery line gives firings out closest deadline first (arrival order among equals)
and knows the oldest hold still lined up, whatever the order they come in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from tocsin.delivery.line import Line
from tocsin.domain import Channel, Firing, FiringState, one

NOW = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
LEASE = timedelta(seconds=30)


def firing(number: int, deadline_s: int, hold_s: int) -> Firing:
    return Firing(
        id=f"r{number}.1",
        reminder_id=f"r{number}",
        owner="ana",
        shard=0,
        due_at=NOW,
        deadline=NOW + timedelta(seconds=deadline_s),
        channel=one(Channel.LOG),
        text="Call mom",
        metadata=None,
        source=None,
        state=FiringState.SENDING,
        attempts=0,
        next_attempt_at=None,
        sender="w",
        lease_until=NOW + timedelta(seconds=hold_s) + LEASE,
        created_at=NOW,
    )


# Batches of deadlines (seconds after NOW), as claims and takes line them up; a few distinct
# values so that many firings share one. Each batch is held from its own (later) second.
batches = st.lists(
    st.lists(st.integers(min_value=30, max_value=40), min_size=0, max_size=12),
    min_size=1,
    max_size=8,
)


def lined_up(deadlines: list[list[int]]) -> tuple[Line, list[Firing]]:
    line = Line()
    everything: list[Firing] = []
    for held_at, batch in enumerate(deadlines):
        firings = [firing(len(everything) + n, d, held_at) for n, d in enumerate(batch)]
        line.extend(firings)
        everything += firings
    return line, everything


@given(deadlines=batches)
def test_firings_come_out_closest_deadline_first_then_in_arrival_order(
    deadlines: list[list[int]],
) -> None:
    line, everything = lined_up(deadlines)
    assert len(line) == len(everything)
    assert {f.id for f in line} == {f.id for f in everything}

    out = [line.pop() for _ in range(len(everything))]

    arrival = {f.id: n for n, f in enumerate(everything)}
    assert out == sorted(everything, key=lambda f: (f.deadline, arrival[f.id]))
    assert len(line) == 0
    assert line.oldest_hold() is None


@given(deadlines=batches, taken=st.integers(min_value=0, max_value=100))
def test_the_oldest_hold_is_the_earliest_among_those_still_lined_up(
    deadlines: list[list[int]], taken: int
) -> None:
    line, everything = lined_up(deadlines)
    gone = {line.pop().id for _ in range(min(taken, len(everything)))}

    left = [f.lease_until for f in everything if f.id not in gone]
    assert line.oldest_hold() == min((h for h in left if h is not None), default=None)


def test_clear_empties_the_line() -> None:
    line, _ = lined_up([[30, 31], [30]])
    line.clear()
    assert (len(line), list(line), line.oldest_hold()) == (0, [], None)
