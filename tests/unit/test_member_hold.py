"""What a list's bulk ring comes to when its round held members by their quiet hours: it
waits for the first of them whose quiet hours end before its last try (or for a destination's
retry, when that comes first); those held past its last try are named, given up; it expires
only when it reached no one and has nothing left to wait for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tocsin.delivery.quiet import MemberHold
from tocsin.delivery.retry import SENT, Decision
from tocsin.domain import Channel, FiringState, one

AT = datetime(2026, 3, 2, 22, 0, tzinfo=UTC)
LAST_TRY = AT + timedelta(minutes=30)
EARLY, LATE, PAST = (AT + timedelta(minutes=m) for m in (10, 20, 45))
ROUTE = one(Channel.WEBHOOK)
FAILED = Decision(state=FiringState.FAILED)  # a round that sent to no one
GIVEN_UP = "not sent to dee, whose quiet hours end at 2026-03-02T22:45:00Z, after its deadline"


def retry(at: datetime) -> Decision:
    return Decision(state=FiringState.QUEUED, next_attempt_at=at, error="HTTP 503")


def test_it_waits_for_the_first_member_whose_quiet_hours_end_in_time() -> None:
    hold = MemberHold.of({"bo": LATE, "cy": EARLY, "dee": PAST}, LAST_TRY)

    assert hold.decide(SENT, reached=True, route=ROUTE) == Decision(
        state=FiringState.QUEUED,
        next_attempt_at=EARLY,
        error=f"held by quiet hours until 2026-03-02T22:10:00Z for 2 members; {GIVEN_UP}",
    )
    assert hold.decide(FAILED, reached=False, route=ROUTE).next_attempt_at == EARLY


def test_a_retry_that_comes_first_is_what_it_waits_for_and_its_error_stays_first() -> None:
    hold = MemberHold.of({"cy": LATE}, LAST_TRY)

    sooner = hold.decide(retry(EARLY), reached=False, route=ROUTE)
    later = hold.decide(retry(PAST), reached=False, route=ROUTE)

    held = "held by quiet hours until 2026-03-02T22:20:00Z for 1 member"
    assert sooner == Decision(
        state=FiringState.QUEUED, next_attempt_at=EARLY, error=f"HTTP 503; {held}"
    )
    assert later.next_attempt_at == LATE


def test_members_held_past_the_last_try_are_named_and_it_expires_only_reaching_no_one() -> None:
    hold = MemberHold.of({"dee": PAST}, LAST_TRY)

    assert hold.decide(SENT, reached=True, route=ROUTE) == Decision(
        state=FiringState.SENT, error=GIVEN_UP
    )
    assert hold.decide(retry(EARLY), reached=False, route=ROUTE) == Decision(
        state=FiringState.QUEUED, next_attempt_at=EARLY, error=f"HTTP 503; {GIVEN_UP}"
    )
    assert hold.decide(FAILED, reached=False, route=ROUTE) == Decision(
        state=FiringState.EXPIRED, error=f"expired: {GIVEN_UP}"
    )
