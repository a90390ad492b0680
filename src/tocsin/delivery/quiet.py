"""A shared list's bulk ring held for each member inside his quiet hours: the others get it at
once, he gets it when they end, or never when they end after its last try; all under the
ring's one identity.

Nothing of it is stored but what any ring keeps: a round works the hold out again from the
quiet hours as they are then, and leaves it in the firing's `next_attempt_at` and
`last_error`. A member it reached is settled (`settled_destinations`), so a later round
skips him and reads only the quiet hours of those it has not reached yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from tocsin.delivery.retry import Decision
from tocsin.domain import FiringState, Route
from tocsin.metrics import instruments
from tocsin.metrics.instruments import ENGINE
from tocsin.time.quiet import QUIET_HELD


@dataclass(frozen=True, kw_only=True, slots=True)
class MemberHold:
    """The members a round did not try because their quiet hours held them, each with when
    they end: `waiting`, who get the ring at a later round, and `given_up`, whose quiet hours
    end after its last try and who never get it."""

    waiting: Mapping[str, datetime]
    given_up: Mapping[str, datetime]

    @classmethod
    def of(cls, quiet: Mapping[str, datetime], last_try: datetime) -> MemberHold:
        """The hold of the members `quiet` (each with when his quiet hours end) on a ring
        whose last try is at `last_try`."""
        return cls(
            waiting={member: end for member, end in quiet.items() if end <= last_try},
            given_up={member: end for member, end in quiet.items() if end > last_try},
        )

    def decide(self, decision: Decision, *, reached: bool, route: Route) -> Decision:
        """The firing's decision, from the round's sends' (`decision`; `reached`: a
        destination accepted it, in this round or an earlier one) and this hold: `queued`
        until the first waiting member's quiet hours end (or the sends' retry, when that
        comes first) while one waits; else the sends' decision with the members given up
        named, and `expired` when it reached no one and has nothing left to retry."""
        gave_up = "; ".join(
            f"not sent to {member}, whose quiet hours end at {_stamp(end)}, after its deadline"
            for member, end in sorted(self.given_up.items())
        )
        if self.waiting:
            first = min(self.waiting.values())
            count = len(self.waiting)
            held = f"{QUIET_HELD} {_stamp(first)} for {count} member{'s' if count > 1 else ''}"
            if decision.state is FiringState.QUEUED and decision.next_attempt_at is not None:
                # A destination's retry is waited for as well: its error stays first.
                when = min(decision.next_attempt_at, first)
                error = _joined(decision.error, held, gave_up)
                return Decision(state=FiringState.QUEUED, next_attempt_at=when, error=error)
            ENGINE.retried(route, instruments.RETRY_QUIET_HOURS)
            error = _joined(held, gave_up)
            return Decision(state=FiringState.QUEUED, next_attempt_at=first, error=error)
        if reached or decision.state is FiringState.QUEUED:
            error = _joined(decision.error, gave_up)
            return Decision(
                state=decision.state, next_attempt_at=decision.next_attempt_at, error=error
            )
        ENGINE.expired(instruments.EXPIRED_QUIET_HOURS)
        error = _joined(f"expired: {gave_up}", decision.error)
        return Decision(state=FiringState.EXPIRED, error=error)


def _stamp(instant: datetime) -> str:
    return f"{instant:%Y-%m-%dT%H:%M:%SZ}"


def _joined(*parts: str | None) -> str | None:
    return "; ".join(part for part in parts if part) or None
