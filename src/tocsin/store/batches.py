"""Batches as columns: claims, results and unwritten firings turned into one list per field,
and the one place that says in which order each batch's fields travel, for both backends.

Both backends take a batch's rows as one JSON array, each row an array of its fields (no keys:
as parallel arrays through asyncpg, a firing's 23 fields cost the worker ~12 µs to encode; as
JSON ~1 µs, and the database about the same: docs/benchmarks.md, "Batches as JSON"). Which
field is where is said here alone: each `Batch` at the end of this module lists its fields in
order, each with the PostgreSQL type its statements read it as, declared beside the column it
comes from (`Annotated[list[int], "bigint"]`). Rows are built by name (`Batch.json`,
`Batch.rows`: every field of the batch, or an error), and the statements read them by name:
each backend's `queries` fills in, once, at import, PostgreSQL's select list of a batch
(`{claim_fields}`) and SQLite's read of one field (`{claim.due_at}`) from these declarations
(tests/unit/test_batches.py checks both). A field is added to its columns class, to the
batches that carry it, and to the statements that read it, by its name.

Each column is one list comprehension over the batch; instants stay datetimes unless the
backend stores them otherwise (`instant`: SQLite's microseconds).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, NamedTuple, get_type_hints

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


class Field(NamedTuple):
    """One field of a batch's rows: the name its statements read it by, and the PostgreSQL type
    they read it as (`text`: the text `->>` gives, as it is). SQLite reads every field as the
    JSON value it is, instants already microseconds (`instant`)."""

    name: str
    type: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    """How one statement parameter's rows travel: one JSON array, each row the `fields` in
    their order, which is the only place that order is said."""

    fields: tuple[Field, ...]

    def __post_init__(self) -> None:
        names = self.names
        if len(set(names)) < len(names):
            raise ValueError(f"a batch names a field twice: {names}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(field.name for field in self.fields)

    def columns(self, columns: Mapping[str, list[Any]]) -> list[list[Any]]:
        """The batch's columns in its order, taken from `columns` by name: every field of the
        batch must be there (others are left out: a batch may carry some of a class's)."""
        missing = [field.name for field in self.fields if field.name not in columns]
        if missing:
            raise TypeError(f"the batch's rows have no column for {missing}")
        return [columns[field.name] for field in self.fields]

    def json(self, columns: Mapping[str, list[Any]]) -> str:
        """The rows as PostgreSQL takes them (`json_rows`)."""
        return json_rows(self.columns(columns))

    def rows(self, columns: Mapping[str, list[Any]]) -> list[tuple[Any, ...]]:
        """The rows, for SQLite to encode as JSON."""
        return list(zip(*self.columns(columns), strict=True))


def _declared(columns: type[tuple[Any, ...]]) -> dict[str, Field]:
    """The fields of a class of columns, in their order, each with the type declared beside it."""
    hints = get_type_hints(columns, include_extras=True)
    return {name: Field(name, hint.__metadata__[0]) for name, hint in hints.items()}


def _picked(declared: dict[str, Field], *names: str) -> tuple[Field, ...]:
    return tuple(declared[name] for name in names)


class ClaimColumns(NamedTuple):
    """A batch of claims (`SchedulerStore.claim`): the claims of `POSTGRES_CLAIMS` and
    `SQLITE_CLAIMS`."""

    reminder_id: Annotated[list[str], "text"]
    due_at: Annotated[list[Any], "timestamptz"]
    bucket: Annotated[list[int], "integer"]
    version: Annotated[list[int], "integer"]
    next_due_at: Annotated[list[Any], "timestamptz"]
    next_bucket: Annotated[list[int | None], "integer"]
    state: Annotated[list[str], "text"]
    part: Annotated[list[int], "integer"]
    epoch: Annotated[list[int], "bigint"]
    error: Annotated[list[str | None], "text"]
    # PostgreSQL's: what the ring says and where it goes, the JSON object its load read
    # (`DueRing.content`), passed on as it is (`orjson.Fragment`: not parsed in the worker).
    content: Annotated[list[Any], "jsonb"]
    # The reminder's ring before this one (`Claim.prev_due`), kept on the ring's row.
    prev_due: Annotated[list[Any], "timestamptz"]


def claim_columns(claims: Sequence[Claim], fence: Fence | None, instant: Instant) -> ClaimColumns:
    """The columns of `claims`; a claim without a fence has epoch -1 (no lease is checked)."""
    epoch = fence.epoch if fence is not None else lambda part: -1
    next_due = [claim.next_due_at for claim in claims]
    return ClaimColumns(
        reminder_id=[claim.reminder_id for claim in claims],
        due_at=_instants([claim.due_at for claim in claims], instant),
        bucket=[codec.bucket_of(claim.due_at) for claim in claims],
        version=[claim.version for claim in claims],
        next_due_at=_instants(next_due, instant),
        next_bucket=[None if due is None else codec.bucket_of(due) for due in next_due],
        state=[claim.state.value for claim in claims],
        part=[claim.part for claim in claims],
        epoch=[epoch(claim.part) for claim in claims],
        error=[claim.error for claim in claims],
        content=[
            None if claim.content is None else orjson.Fragment(claim.content) for claim in claims
        ],
        prev_due=_instants([claim.prev_due for claim in claims], instant),
    )


class ResultColumns(NamedTuple):
    """A batch of results (`DeliveryQueue.record_attempts`): each firing's result and one of
    its round's attempts (None fields when none was made). `result_columns` holds the round's
    last attempt with the result; `earlier_columns` the round's attempts at other destinations,
    one row each, with no result (None in `state`, `next_attempt_at`, `last_error`, `sent_to`).
    `last_error` is the firing's, `error` the attempt's."""

    firing_id: Annotated[list[str], "text"]
    sender: Annotated[list[str], "text"]
    state: Annotated[list[str | None], "text"]
    next_attempt_at: Annotated[list[Any], "timestamptz"]
    number: Annotated[list[int | None], "integer"]
    at: Annotated[list[Any], "timestamptz"]
    channel: Annotated[list[str | None], "text"]
    outcome: Annotated[list[str | None], "text"]
    last_error: Annotated[list[str | None], "text"]
    provider_id: Annotated[list[str | None], "text"]
    destination: Annotated[list[str | None], "text"]
    error: Annotated[list[str | None], "text"]
    sent_to: Annotated[list[str | None], "text"]


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
    """Firings a claim did not write (`AttemptResult.firing`): the firings of
    `POSTGRES_UNWRITTEN`. `route` is the firing's channel (`channel` is its try's)."""

    firing_id: Annotated[list[str], "text"]
    reminder_id: Annotated[list[str], "text"]
    owner: Annotated[list[str], "text"]
    shard: Annotated[list[int], "smallint"]
    due_at: Annotated[list[datetime], "timestamptz"]
    deadline: Annotated[list[datetime], "timestamptz"]
    route: Annotated[list[str], "text"]
    text: Annotated[list[str], "text"]
    metadata: Annotated[list[str | None], "text"]
    source: Annotated[list[str | None], "text"]
    created_at: Annotated[list[datetime], "timestamptz"]
    priority: Annotated[list[int | None], "smallint"]


def firing_columns(firings: Sequence[Firing]) -> FiringColumns:
    return FiringColumns(
        firing_id=[firing.id for firing in firings],
        reminder_id=[firing.reminder_id for firing in firings],
        owner=[firing.owner for firing in firings],
        shard=[firing.shard for firing in firings],
        due_at=[firing.due_at for firing in firings],
        deadline=[firing.deadline for firing in firings],
        route=[firing.channel.value for firing in firings],
        text=[firing.text for firing in firings],
        metadata=[codec.dump_json(firing.metadata) for firing in firings],
        source=[firing.source for firing in firings],
        created_at=[firing.created_at for firing in firings],
        priority=[codec.stored_priority(firing.priority) for firing in firings],
    )


# -- the batches: which fields each statement parameter carries, in their order -----------------

_CLAIM = _declared(ClaimColumns)
_RESULT = _declared(ResultColumns)
_FIRING = _declared(FiringColumns)
# What a round did to a firing: its result and its last attempt.
_OUTCOME = _picked(
    _RESULT,
    "state",
    "next_attempt_at",
    "number",
    "at",
    "channel",
    "outcome",
    "last_error",
    "provider_id",
    "destination",
    "error",
)

# CLAIM's $1: each claim.
POSTGRES_CLAIMS = Batch(fields=tuple(_CLAIM.values()))
# RECORD_ATTEMPTS' $1: each result, then the state its firing was handed out in (`sending`).
POSTGRES_RESULTS = Batch(fields=(*_RESULT.values(), Field("held_state", "text")))
# INSERT_FIRINGS' $1: each firing a claim did not write, with the outcome of its first try.
POSTGRES_UNWRITTEN = Batch(
    fields=(
        *(field for field in _FIRING.values() if field.name != "priority"),
        *_OUTCOME,
        _RESULT["sent_to"],
        _FIRING["priority"],
    )
)
# $2 of RECORD_ATTEMPTS and INSERT_FIRINGS: the rounds' attempts at other destinations
# (`earlier_columns`).
POSTGRES_EARLIER = Batch(
    fields=_picked(
        _RESULT,
        "firing_id",
        "number",
        "at",
        "channel",
        "outcome",
        "error",
        "provider_id",
        "destination",
    )
)
# `:claims` of CLAIMABLE: each claim's delivery identity, then the claim.
# (SQLite's claim reads the ring's content from the reminder's row, in the same transaction.)
SQLITE_CLAIMS = Batch(
    fields=(
        Field("firing_id", "text"),
        *(field for field in _CLAIM.values() if field.name != "content"),
    )
)
# `:results` of INSERT_ATTEMPTS and FINISH_ATTEMPTS: the results, or the earlier attempts.
SQLITE_RESULTS = Batch(fields=tuple(_RESULT.values()))
