"""Batches as columns: claims, results and unwritten firings turned into one list per statement
parameter, in one declared order, for both backends.

Both backends take a batch's rows (`rows`: the columns zipped) as one JSON array, each row an
array of its fields by position: PostgreSQL's statements read it with `jsonb_array_elements`,
SQLite's with `json_each`. (As parallel arrays through asyncpg, a firing's 23 fields cost the
worker ~12 µs to encode; as JSON ~1 µs, and the database about the same: docs/benchmarks.md,
"Batches as JSON".) A field added to a batch is added here, and in the
statements that read it. Each column is one list comprehension over the batch; instants stay
datetimes unless the backend stores them otherwise (`instant`: SQLite's microseconds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import orjson

from tocsin.domain import Attempt, AttemptResult, Claim, Fence, Firing
from tocsin.store import codec

Instant = Callable[[datetime], Any] | None  # how the backend stores an instant; None: as is


def _instants(values: list[datetime | None], instant: Instant) -> list[Any]:
    if instant is None:
        return values
    return [None if value is None else instant(value) for value in values]


def rows(columns: Sequence[list[Any]]) -> list[tuple[Any, ...]]:
    """The batch's rows, each with its fields in the columns' order."""
    return list(zip(*columns, strict=True))


def json_rows(columns: Sequence[list[Any]]) -> str:
    """The batch's rows as one JSON array (PostgreSQL's): instants as RFC 3339 text with their
    offset, which `::timestamptz` reads back to the microsecond."""
    return orjson.dumps(rows(columns), option=orjson.OPT_NAIVE_UTC).decode()


class ClaimColumns(NamedTuple):
    """A batch of claims (`SchedulerStore.claim`): on PostgreSQL the fields [0]…[8] of each row
    of CLAIM's $1; on SQLite, after the firing id, the fields [1]…[9] of each claim in
    `:claims` (CLAIMABLE)."""

    reminder_id: list[str]
    due_at: list[Any]
    version: list[int]
    next_due_at: list[Any]
    next_bucket: list[int | None]
    state: list[str]
    part: list[int]
    epoch: list[int]
    error: list[str | None]


def claim_columns(claims: Sequence[Claim], fence: Fence | None, instant: Instant) -> ClaimColumns:
    """The columns of `claims`; a claim without a fence has epoch -1 (no lease is checked)."""
    epoch = fence.epoch if fence is not None else lambda part: -1
    next_due = [claim.next_due_at for claim in claims]
    return ClaimColumns(
        reminder_id=[claim.reminder_id for claim in claims],
        due_at=_instants([claim.due_at for claim in claims], instant),
        version=[claim.version for claim in claims],
        next_due_at=_instants(next_due, instant),
        next_bucket=[None if due is None else codec.bucket_of(due) for due in next_due],
        state=[claim.state.value for claim in claims],
        part=[claim.part for claim in claims],
        epoch=[epoch(claim.part) for claim in claims],
        error=[claim.error for claim in claims],
    )


class ResultColumns(NamedTuple):
    """A batch of results (`DeliveryQueue.record_attempts`): each firing's result and one of
    its round's attempts (None fields when none was made). `result_columns` holds the round's
    last attempt with the result; `earlier_columns` the round's attempts at other destinations,
    one row each, with no result (None in `state`, `next_attempt_at`, `last_error`, `sent_to`).

    PostgreSQL: the fields [0]…[12] of each row of RECORD_ATTEMPTS' $1, and `outcomes` and
    `sent_to` in INSERT_FIRINGS' (after the firing's `rings`); the `attempts` of the earlier ones
    are the rows of either's $2. SQLite: the fields [0]…[12] of each row of `:results`."""

    firing_id: list[str]
    sender: list[str]
    state: list[str | None]
    next_attempt_at: list[Any]
    number: list[int | None]
    at: list[Any]
    channel: list[str | None]
    outcome: list[str | None]
    last_error: list[str | None]
    provider_id: list[str | None]
    destination: list[str | None]
    error: list[str | None]
    sent_to: list[str | None]

    @property
    def outcomes(self) -> tuple[list[Any], ...]:
        """The columns from `state` to `error`: what the round did to each firing."""
        return self[2:12]

    @property
    def attempts(self) -> tuple[list[Any], ...]:
        """The columns of an attempts row: firing, number, at, channel, outcome, error,
        provider id, destination."""
        return (
            self.firing_id,
            self.number,
            self.at,
            self.channel,
            self.outcome,
            self.error,
            self.provider_id,
            self.destination,
        )


def result_columns(results: Sequence[AttemptResult], instant: Instant) -> ResultColumns:
    return _columns(results, [result.attempt for result in results], instant, last=True)


def earlier_columns(results: Sequence[AttemptResult], instant: Instant) -> ResultColumns:
    earlier = [(result, a) for result in results for a in result.earlier]  # one pass: few
    attempts: list[Attempt | None] = [a for _, a in earlier]
    return _columns([result for result, _ in earlier], attempts, instant, last=False)


def _columns(
    results: Sequence[AttemptResult],
    attempts: list[Attempt | None],
    instant: Instant,
    *,
    last: bool,
) -> ResultColumns:
    """The n-th row: `attempts[n]` of `results[n]`, with the result itself when `last`."""
    none: list[Any] = [] if last else [None] * len(results)
    return ResultColumns(
        firing_id=[result.firing_id for result in results],
        sender=[result.sender for result in results],
        state=[result.state.value for result in results] if last else none,
        next_attempt_at=(
            _instants([result.next_attempt_at for result in results], instant) if last else none
        ),
        number=[a.number if a else None for a in attempts],
        at=_instants([a.at if a else None for a in attempts], instant),
        channel=[a.channel.value if a else None for a in attempts],
        outcome=[a.outcome.value if a else None for a in attempts],
        last_error=[result.last_error for result in results] if last else none,
        provider_id=[a.provider_id if a else None for a in attempts],
        destination=[a.destination if a else None for a in attempts],
        error=[a.error if a else None for a in attempts],
        sent_to=[result.sent_to for result in results] if last else none,
    )


class FiringColumns(NamedTuple):
    """Firings a claim did not write (`AttemptResult.firing`), as PostgreSQL's INSERT_FIRINGS
    takes them: `rings`, the fields [0]…[10] of each row of its $1, and `priority`, the last."""

    id: list[str]
    reminder_id: list[str]
    owner: list[str]
    shard: list[int]
    due_at: list[datetime]
    deadline: list[datetime]
    channel: list[str]
    text: list[str]
    metadata: list[str | None]
    source: list[str | None]
    created_at: list[datetime]
    priority: list[int | None]

    @property
    def rings(self) -> tuple[list[Any], ...]:
        """The columns from `id` to `created_at`."""
        return self[:11]


def firing_columns(firings: Sequence[Firing]) -> FiringColumns:
    return FiringColumns(
        id=[firing.id for firing in firings],
        reminder_id=[firing.reminder_id for firing in firings],
        owner=[firing.owner for firing in firings],
        shard=[firing.shard for firing in firings],
        due_at=[firing.due_at for firing in firings],
        deadline=[firing.deadline for firing in firings],
        channel=[firing.channel.value for firing in firings],
        text=[firing.text for firing in firings],
        metadata=[codec.dump_json(firing.metadata) for firing in firings],
        source=[firing.source for firing in firings],
        created_at=[firing.created_at for firing in firings],
        priority=[codec.stored_priority(firing.priority) for firing in firings],
    )
