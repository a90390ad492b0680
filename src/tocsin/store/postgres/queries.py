"""The PostgreSQL backend's statements by name (`q.CLAIM`): those of `store/sql/postgres.sql`
and the shared ones rendered for asyncpg (`store/sql/`), and the few built from a template.

The scheduler's batches (claims, results, firings) travel as one JSON array of rows each,
read with `jsonb_array_elements` through a select list made here from the batch's declaration
in `store/batches.py` (`{claim_fields}`: each field by its place there, as its name and type);
the others as parallel arrays expanded with `unnest`. Either way a batch of thousands is one
statement and one round trip.
"""

from __future__ import annotations

from functools import cache

from tocsin.domain import PRIORITY_RANKS
from tocsin.ids import LANE_WIDTH, LANES
from tocsin.store import batches, sql
from tocsin.store.base import FEED_REPLAY_SLACK_SECONDS
from tocsin.store.codec import bucket_of
from tocsin.time import LATEST

_TEXT = sql.POSTGRES
# Module attributes, so that `q.CLAIM` is a plain lookup (`__getattr__` below only types it).
globals().update(_TEXT)

# The shared statements, each with the names of its parameters (`shared.X.bind(name=…)`).
shared = sql.Statements(sql.POSTGRES_SHARED)

# Serialises `migrate` across processes (an arbitrary constant: "tocsin" in ASCII).
MIGRATION_LOCK_KEY = 0x746F6373696E


def select_list(batch: batches.Batch, row: str) -> str:
    """The fields of `batch` as columns of the JSON array `row`, each by its place in the batch,
    cast to its type and named (`(c->>1)::timestamptz AS due_at`; a JSON field as it is)."""
    return ", ".join(_field(row, n, field) for n, field in enumerate(batch.fields))


def _field(row: str, n: int, field: batches.Field) -> str:
    if field.type == "text":
        return f"{row}->>{n} AS {field.name}"
    if field.type == "jsonb":
        return f"{row}->{n} AS {field.name}"
    return f"({row}->>{n})::{field.type} AS {field.name}"


# The columns of `firings` its readers take (`rows.firing_from`, `rows.firing_id_of`), named,
# never `*`: a statement prepared before a migration dropped one of its columns (0036 drops
# `id`, with the service running) answers the same columns after it, where with `*` its
# answer would change under it (asyncpg's "cached statement plan is invalid", which ends the
# transaction it runs in).
FIRING_COLUMNS = (
    "due_second", "reminder_id", "due_at", "deadline", "created_at", "next_attempt_at",
    "lease_until", "sent_at", "done_at", "prev_due", "attempts", "shard", "priority", "owner",
    "state", "channel", "text", "metadata", "source", "sender", "provider_id", "last_error",
    "snoozed_by", "sent_to",
)  # fmt: skip


def firing_columns(table: str) -> str:
    """`FIRING_COLUMNS` of `table` (a name or alias), for a select list."""
    return ", ".join(f"{table}.{column}" for column in FIRING_COLUMNS)


def ring_content(table: str) -> str:
    """What a ring of the reminder row `table` says, where it goes and when the reminder rings
    next, as an occurrence's `ring` holds it and CLAIM reads it (`DueRing.content`)."""
    return _TEXT["_RING_CONTENT"].format(table=table)


def _ring_state(table: str, now: str, starts: str, *, places: bool = True) -> str:
    place = _TEXT["_PLACE_RANG"].format(table=table) if places else "NULL"
    return _TEXT["_RING_STATE"].format(table=table, now=now, starts=starts, place=place)


# An API write's new version has not rung: its walk starts at the occurrence it scheduled.
_NOT_RUNG = "'{}'::timestamptz[]"


ADD_REMINDERS = _TEXT["ADD_REMINDERS"].format(ring=ring_content("saved"))
ADD_REMINDER = _TEXT["ADD_REMINDER"].format(waiting=_TEXT["_WAITING"], ring=ring_content("saved"))
PENDING_COUNTS = _TEXT["PENDING_COUNTS"].format(waiting=_TEXT["_WAITING"])
RING_CONTENTS = _TEXT["RING_CONTENTS"].format(content=ring_content("r"))
REMINDERS_NOW = _TEXT["REMINDERS_NOW"].format(
    ring_state=_ring_state("r", "$3", "wanted.starts::timestamptz[]")
)
UPDATE_REMINDER = _TEXT["UPDATE_REMINDER"].format(
    ring_state=_ring_state("saved", "$16", _NOT_RUNG),
    take_back=_TEXT["_TAKE_BACK"],
    ring=ring_content("saved"),
)
CANCEL_REMINDER = _TEXT["CANCEL_REMINDER"].format(
    ring_state=_ring_state("cancelled", "$2", _NOT_RUNG), take_back=_TEXT["_TAKE_BACK"]
)
RESCHEDULE = _TEXT["RESCHEDULE"].format(take_back=_TEXT["_TAKE_BACK"], ring=ring_content("moved"))
# The bucket of LATEST, where a reminder that rings at a place waits: no load reads it.
NEVER_BUCKET = bucket_of(LATEST)
OLDEST_PENDING = _TEXT["OLDEST_PENDING"].format(
    last_lane=LANES - 1,
    lane_width=LANE_WIDTH,
    last_rank=len(PRIORITY_RANKS) - 1,
    settled=_TEXT["_SETTLED"],
    never=NEVER_BUCKET,
)
COUNT_OVERDUE = _TEXT["COUNT_OVERDUE"].format(settled=_TEXT["_SETTLED"], never=NEVER_BUCKET)
COUNT_DUE = _TEXT["COUNT_DUE"].format(never=NEVER_BUCKET)
FEED_FIRINGS = _TEXT["FEED_FIRINGS"].format(
    slack_seconds=FEED_REPLAY_SLACK_SECONDS, firing=firing_columns("firings")
)
MARK_DONE = _TEXT["MARK_DONE"].format(firing=firing_columns("firings"))
LIST_FIRINGS = _TEXT["LIST_FIRINGS"].format(firing=firing_columns("f"))
TAKE_DELIVERIES = _TEXT["TAKE_DELIVERIES"].format(firing=firing_columns("f"))
FEED_RINGS = _TEXT["FEED_RINGS"].format(firing=firing_columns("f"))
CLAIM = _TEXT["CLAIM"].format(claim_fields=select_list(batches.POSTGRES_CLAIMS, "c"))
_EARLIER = _TEXT["_EARLIER_ATTEMPTS"].format(
    attempt_fields=select_list(batches.POSTGRES_EARLIER, "e")
)
_FIRING_FIELDS = select_list(batches.POSTGRES_UNWRITTEN, "r")
INSERT_FIRINGS = _TEXT["_INSERT_FIRINGS"].format(
    firing_fields=_FIRING_FIELDS, conflict="", earlier=_EARLIER
)
INSERT_FIRINGS_AFTER_RECOVERY = _TEXT["_INSERT_FIRINGS"].format(
    firing_fields=_FIRING_FIELDS, conflict=_TEXT["_AFTER_RECOVERY"], earlier=_EARLIER
)
INSERT_FIRINGS_UNLESS_WRITTEN = _TEXT["_INSERT_FIRINGS"].format(
    firing_fields=_FIRING_FIELDS, conflict=_TEXT["_UNLESS_WRITTEN"], earlier=_EARLIER
)
RECORD_ATTEMPTS = _TEXT["RECORD_ATTEMPTS"].format(
    result_fields=select_list(batches.POSTGRES_RESULTS, "r"), earlier=_EARLIER
)
PRUNE_FIRINGS = _TEXT["_PRUNE_FIRINGS"].format(
    owed=_TEXT["_OWED"],
    ring_state=_ring_state("r", "NULL", "ARRAY[gone.due_at]", places=False),
)
PRUNE_REMINDERS = _TEXT["_PRUNE_REMINDERS"].format(owed=_TEXT["_OWED"])
RELEASE_DELIVERIES = _TEXT["_RELEASE_DELIVERIES"].format(by_ids=_TEXT["_BY_IDS"])
MARK_FEED_SENT = _TEXT["_MARK_FEED_SENT"].format(by_ids=_TEXT["_BY_IDS"])


@cache
def load_due(lanes: int, ranks: tuple[int, ...] = (0, 1)) -> str:
    """Pending reminders of a part that spans `lanes` lanes from lane $9, at the priority
    `ranks`, in due order, $5 at most: one `_LOAD_LANE` scan per lane and rank, merged. A
    loader reads one priority, and with the default 16 parts a part is one lane: one range
    scan."""
    return _merged("_LOAD_LANE", lanes, ranks)


@cache
def load_saved(lanes: int, ranks: tuple[int, ...] = (0, 1)) -> str:
    """The sweep's read: what API writes saved lately in a part that spans `lanes` lanes from
    lane $1, at the priority `ranks` (`_LOAD_SAVED_LANE`), in due order, $5 at most."""
    return _merged("_LOAD_SAVED_LANE", lanes, ranks)


def _merged(name: str, lanes: int, ranks: tuple[int, ...]) -> str:
    lane = _TEXT[name]
    said = _TEXT["_SAID"].format(content=ring_content("r"))
    branches = [
        lane.format(offset=n, rank=rank, said=said, never=NEVER_BUCKET)
        for n in range(lanes)
        for rank in ranks
    ]
    joined = " UNION ALL ".join(f"({branch})" for branch in branches)
    return _TEXT["_LOAD_DUE"].format(branches=joined)


def make_month(month: str, first: int, after: int) -> str:
    """`_MAKE_MONTH` for the month table `month`, buckets [first, after)."""
    return _TEXT["_MAKE_MONTH"].format(month=month, first=first, after=after)


def month_undecided(month: str) -> str:
    """`_MONTH_UNDECIDED` of the month table `month`."""
    return _TEXT["_MONTH_UNDECIDED"].format(month=month)


def __getattr__(name: str) -> str:
    raise AttributeError(f"no PostgreSQL statement is named {name}")
