"""The verdict of a chaos run: every reminder and every race checked against what the
database recorded and what the webhook receiver saw arrive, as counts and violations."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from tocsin.settings import Settings
from tocsin_bench.chaos_workload import Ledger, Race

FINAL = {"sent", "failed", "expired"}
EXAMPLES = 10  # ids shown per violation
# How long a claimed ring is held by its sender (engine.py's firing lease: the part lease and
# one webhook timeout, the workers' defaults here): no other sender may send it again sooner,
# so a second acceptance sooner after its due second is no retry of a lost result.
HOLD_SECONDS = (
    Settings.model_fields["lease_seconds"].default
    + Settings.model_fields["webhook_timeout_seconds"].default
)
CLOCK_SLACK = 1.0  # seconds: a claim is made at its due second by a clock on this machine

# A reminder is pending while an occurrence of it waits in `due`, undecided (no row of
# `rings` has its key; a claim leaves the reminder's row as its last API write made it, and
# the occurrence's row in `due` until tidying: `rung` here once nothing of it waits).
_REMINDERS = """
SELECT r.id,
    CASE WHEN r.status = 'pending' AND d.reminder_id IS NULL THEN 'rung' ELSE r.status END
        AS status,
    floor(extract(epoch FROM coalesce(d.due_at, r.due_at)))::bigint AS due, r.snoozed_from
FROM reminders AS r LEFT JOIN due AS d ON d.reminder_id = r.id AND NOT EXISTS (
    SELECT 1 FROM rings AS g
    WHERE (g.due_at, g.reminder_id, g.version) = (d.due_at, d.reminder_id, d.version)
)
"""
_FIRINGS = """
SELECT reminder_id || '.' || due_second AS id, reminder_id, due_second AS due,
       extract(epoch FROM deadline)::float8 AS deadline, state, last_error, attempts,
       extract(epoch FROM created_at)::float8 AS created_at
FROM firings
"""

# What each violation means, for the report.
VIOLATIONS = {
    "lost": "the API answered that it saved it, yet the database does not have it",
    "never_rang": "neither arrived at the receiver nor recorded expired/failed with a reason",
    "still_pending": "still pending after its deadline",
    "sent_not_received": "recorded sent, but its identity never arrived",
    "after_deadline": "an attempt arrived after the firing's deadline",
    "unknown_identity": "an identity arrived that the database has no firing for",
    "invalid_signature": "a request arrived whose signature did not verify",
    "cancelled_rang": "a cancel answered 204, yet the reminder has a firing or an arrival",
    "moved_rang_old": "an edit or snooze answered 200, yet it rang at its old due second",
    "moved_not_at_new": "an edit or snooze answered 200, yet no firing at its new due second",
    "snooze_no_follow_up": "a snooze answered 201, yet its follow-up never rang nor is recorded",
    "accepted_twice": "an identity was accepted again before its sender's hold ran out, with "
    "no retry recorded: two claims of one occurrence, not a retry of one firing",
    # Failover runs (`chaos_failover`) only:
    "api_5xx": "a create was answered a 5xx other than 503",
    "api_503_unreadable": "a 503 was not a problem with Retry-After",
    "saved_twice": "two reminders were saved for one create (its key's retries)",
}


@dataclass(frozen=True)
class Firing:
    id: str
    reminder_id: str
    due: int
    deadline: float
    state: str
    last_error: str | None
    attempts: int = 0  # the tries its senders recorded
    created_at: float = 0.0  # epoch: when its claim (or RECOVER_CLAIMS) wrote it


@dataclass(frozen=True)
class Records:
    """What the database holds at the end, and every arrival at the receiver."""

    status: dict[str, str]  # reminder id → status
    due: dict[str, int | None]  # pending reminders' due second
    firings: dict[str, Firing]
    arrivals: dict[str, list[tuple[float, int]]]  # identity → (epoch, status answered)
    invalid: int

    def firings_of(self) -> dict[str, list[Firing]]:
        found: dict[str, list[Firing]] = defaultdict(list)
        for firing in self.firings.values():
            found[firing.reminder_id].append(firing)
        return found

    def accepted(self, identity: str) -> bool:
        return any(status < 300 for _, status in self.arrivals.get(identity, ()))


async def read_records(url: str, receiver_stats: dict[str, Any]) -> Records:
    connection = await asyncpg.connect(url)
    try:
        reminders = await connection.fetch(_REMINDERS)
        firings = await connection.fetch(_FIRINGS)
    finally:
        await connection.close()
    arrivals = {k: [(t, s) for t, s in v] for k, v in receiver_stats["arrivals"].items()}
    return Records(
        status={row["id"]: row["status"] for row in reminders},
        due={row["id"]: row["due"] for row in reminders},
        firings={row["id"]: Firing(**dict(row)) for row in firings},
        arrivals=arrivals,
        invalid=int(receiver_stats["invalid"]),
    )


@dataclass
class Verdict:
    counts: dict[str, Any] = field(default_factory=dict)
    violations: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def flag(self, kind: str, what: str) -> None:
        self.violations[kind].append(what)

    def summary(self) -> dict[str, Any]:
        return {
            kind: {"count": len(found), "meaning": VIOLATIONS[kind], "examples": found[:EXAMPLES]}
            for kind, found in sorted(self.violations.items())
            if found
        }

    @property
    def total(self) -> int:
        return sum(len(found) for found in self.violations.values())


def judge(ledger: Ledger, records: Records, now: float) -> Verdict:
    """Check that every reminder the API acknowledged is in the database, then every reminder
    there (the run's own, and snoozes' follow-ups), every arrival and every race."""
    verdict = Verdict()
    firings_of = records.firings_of()
    cancelled = {r.reminder_id for r in ledger.races if r.kind == "cancel" and r.status == 204}
    for reminder_id, due in ledger.due.items():
        if reminder_id not in records.status:
            verdict.flag("lost", f"{reminder_id} due {due}")
    _check_rings(verdict, records, firings_of, cancelled, now)
    _check_arrivals(verdict, records)
    _check_repeats(verdict, records)
    _check_races(verdict, ledger.races, records, firings_of)
    verdict.counts |= _counts(ledger, records)
    return verdict


def _check_rings(
    verdict: Verdict,
    records: Records,
    firings_of: dict[str, list[Firing]],
    cancelled: set[str],
    now: float,
) -> None:
    """(1) every reminder rang at least once, or is recorded expired/failed with a reason;
    a firing recorded sent arrived."""
    for reminder_id, status in records.status.items():
        if reminder_id in cancelled or status == "cancelled":
            continue  # (a cancel that got no answer may have landed: only ours cancel)
        if status == "pending":
            due = records.due[reminder_id]
            verdict.flag("still_pending", f"{reminder_id} due {due}")
            continue
        mine = firings_of.get(reminder_id, [])
        if not any(_rang_or_recorded(records, firing) for firing in mine):
            verdict.flag("never_rang", f"{reminder_id} ({status}, {len(mine)} firing(s))")
        for firing in mine:
            if firing.state == "sent" and not records.accepted(firing.id):
                verdict.flag("sent_not_received", firing.id)
            if firing.state not in FINAL and now > firing.deadline:
                verdict.flag("still_pending", f"{firing.id} {firing.state}")


def _rang_or_recorded(records: Records, firing: Firing) -> bool:
    if records.accepted(firing.id):
        return True
    return firing.state in ("expired", "failed") and bool(firing.last_error)


def _check_arrivals(verdict: Verdict, records: Records) -> None:
    """(2) nothing arrived after its deadline; (3) every identity has a firing."""
    for identity, seen in records.arrivals.items():
        firing = records.firings.get(identity)
        if firing is None:
            verdict.flag("unknown_identity", identity)
            continue
        for arrived, _ in seen:
            if arrived > firing.deadline:
                late = arrived - firing.deadline
                verdict.flag("after_deadline", f"{identity} +{late:.3f} s past its deadline")
    for n in range(records.invalid):
        verdict.flag("invalid_signature", f"request {n + 1}")


def _check_repeats(verdict: Verdict, records: Records) -> None:
    """(6) an identity accepted more than once is a retry of its one firing, not a second
    claim of its occurrence.

    The identity is the firing's id, `<reminder id>.<due second>`, and the firing's primary
    key: two claims of one occurrence would not make two firings but one, rung twice under
    one identity, just as a retry does. What tells them apart is when: a retry of a send
    whose result was lost (its sender died, or the database went away before the result
    was written) comes only once the sender's hold ran out (RECOVER_CLAIMS, TAKE_DELIVERIES),
    HOLD_SECONDS after the claim at the earliest, and a sender's own retry after a failed
    try is recorded as an attempt. Acceptances sooner than the hold after the due second,
    more of them than the attempts recorded, are a second claim. Not seen: a second claim
    whose send came after the hold (a claimer stalled that long), or one whose send never
    arrived, which look like a retry and like nothing."""
    for identity, seen in records.arrivals.items():
        firing = records.firings.get(identity)
        if firing is None:
            continue  # unknown_identity
        soon = firing.due + HOLD_SECONDS - CLOCK_SLACK
        quick = sum(1 for t, status in seen if status < 300 and t < soon)
        if quick > 1 and quick > firing.attempts:
            verdict.flag("accepted_twice", f"{identity} ×{quick} within {HOLD_SECONDS:.0f} s")


def _repeats_after_hold(records: Records) -> int:
    """Acceptances of an identity after its first that came once its sender's hold could
    have run out: sends again of one firing whose result was lost."""
    count = 0
    for identity, seen in records.arrivals.items():
        firing = records.firings.get(identity)
        accepted = sorted(t for t, status in seen if status < 300)
        if firing is not None:
            soon = firing.due + HOLD_SECONDS - CLOCK_SLACK
            count += sum(1 for t in accepted[1:] if t >= soon)
    return count


def _check_races(
    verdict: Verdict, races: list[Race], records: Records, firings_of: dict[str, list[Firing]]
) -> None:
    """(4) a 204 cancel never rang; (5) a 200 edit or snooze rang only at its new due; a 201
    snooze's follow-up rang or is recorded."""
    arrived = {identity.rpartition(".")[0] for identity in records.arrivals}
    for race in races:
        mine = firings_of.get(race.reminder_id, [])
        if race.kind == "cancel" and race.status == 204:
            if mine or race.reminder_id in arrived:
                verdict.flag("cancelled_rang", race.reminder_id)
        elif race.kind in ("edit", "snooze") and race.status == 200:
            dues = {firing.due for firing in mine}
            if race.due in dues:
                verdict.flag("moved_rang_old", f"{race.kind} {race.reminder_id}.{race.due}")
            if race.new_due not in dues:
                verdict.flag("moved_not_at_new", f"{race.kind} {race.reminder_id}→{race.new_due}")
        elif race.kind == "snooze" and race.status == 201 and race.new_id is not None:
            follow_up = firings_of.get(race.new_id, [])
            if not any(_rang_or_recorded(records, firing) for firing in follow_up):
                verdict.flag("snooze_no_follow_up", race.new_id)


def _counts(ledger: Ledger, records: Records) -> dict[str, Any]:
    states = Counter(firing.state for firing in records.firings.values())
    attempts = [status for seen in records.arrivals.values() for _, status in seen]
    accepted = sum(1 for status in attempts if status < 300)
    reasons = Counter(
        _reason(firing.last_error)
        for firing in records.firings.values()
        if firing.state in ("expired", "failed")
    )
    return {
        "created": len(ledger.due),
        "not_created": ledger.not_created,
        "batch_retries": ledger.batch_retries,
        "reminders_checked": len(records.status),
        "firings": dict(sorted(states.items())),
        "not_sent_reasons": dict(reasons.most_common(5)),
        "arrivals": len(attempts),
        "accepted": accepted,
        "identities_accepted": sum(1 for i in records.arrivals if records.accepted(i)),
        "repeats": accepted - sum(1 for i in records.arrivals if records.accepted(i)),
        "repeats_after_hold": _repeats_after_hold(records),
        "refused_by_receiver": len(attempts) - accepted,
        "races": _race_counts(ledger.races),
    }


def _reason(error: str | None) -> str:
    """The kind of an error, without its ids and numbers."""
    if not error:
        return "(no reason)"
    return "".join("#" if ch.isdigit() else ch for ch in error)[:120]


def _race_counts(races: list[Race]) -> dict[str, dict[str, int]]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for race in races:
        counts[race.kind][str(race.status) if race.status else "no answer"] += 1
    return {kind: dict(sorted(found.items())) for kind, found in sorted(counts.items())}
