"""The SQLite backend's statements by name (`q.CLAIM`): those of `store/sql/sqlite.sql` and
the shared ones (`store/sql/`), as written, and the few filled in from a template.

The scheduler's batches (claims, results, and the rings a claim decides) travel as one JSON
array of rows each, read with `json_each`; a statement reads a field by name
(`{claim.due_at}`), filled in here with its read by its place in the batch's declaration in
`store/batches.py` (`DECIDED` below, for the rings).

Instants are INTEGER microseconds since the Unix epoch (UTC); see migrations/sqlite.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from types import SimpleNamespace

from tocsin.domain import PRIORITY_RANKS
from tocsin.ids import LANES
from tocsin.store import batches, sql
from tocsin.store.base import FEED_REPLAY_SLACK_SECONDS

_TEXT = sql.SQLITE
# Module attributes, so that `q.CLAIM` is a plain lookup (`__getattr__` below only types it).
globals().update(_TEXT)

FEED_FIRINGS = _TEXT["FEED_FIRINGS"].format(slack_us=FEED_REPLAY_SLACK_SECONDS * 1_000_000)


def fields(batch: batches.Batch, row: str) -> SimpleNamespace:
    """The reads of `batch`'s fields from the JSON array `row`, by name, each by its place in
    the batch (`{claim.due_at}`: `json_extract(c.value, '$[2]')`); a name the batch does not
    declare is an AttributeError, at import."""
    return _reads(batch.names, row)


def _reads(names: Sequence[str], row: str) -> SimpleNamespace:
    return SimpleNamespace(
        **{name: f"json_extract({row}, '$[{n}]')" for n, name in enumerate(names)}
    )


# The rings CLAIMABLE decides (`:rings`, `:firings`), one JSON array each, in this order,
# which is said here alone: CLAIMABLE writes them by these names and the statements after it
# read them by name (`{ring.due_at}`). The firing's columns come first, in the order
# `rows.claimed_firing_from` reads the claim's answer in; then what `rings` and `due` take.
DECIDED = (
    "firing_id",
    "reminder_id",
    "owner",
    "shard",
    "due_at",
    "deadline",
    "channel",
    "text",
    "metadata",
    "source",
    "state",
    "error",
    "priority",
    "feed",
    "version",
    "repeat",
    "next_due_at",
    "next_bucket",
    "lane",
    "rank",
    "prev_due",
)

_CLAIM = fields(batches.SQLITE_CLAIMS, "c.value")
_RING = _reads(DECIDED, "g.value")

CLAIMABLE = _TEXT["CLAIMABLE"].format(claim=_CLAIM, ring_columns=", ".join(DECIDED))
INSERT_RINGS = _TEXT["INSERT_RINGS"].format(ring=_RING)
INSERT_NEXT_DUE = _TEXT["INSERT_NEXT_DUE"].format(ring=_RING)
INSERT_FIRINGS = _TEXT["INSERT_FIRINGS"].format(ring=_RING)
INSERT_ATTEMPTS = _TEXT["INSERT_ATTEMPTS"].format(result=fields(batches.SQLITE_RESULTS, "r.value"))
FINISH_ATTEMPTS = _TEXT["FINISH_ATTEMPTS"].format(result=fields(batches.SQLITE_RESULTS, "a.value"))

_REMINDERS_NOW = _TEXT["_REMINDERS_NOW"]
REMINDERS_NOW = _TEXT["REMINDERS_NOW"].format(reminders_now=_REMINDERS_NOW)
LIST_FIRINGS = _TEXT["LIST_FIRINGS"].format(before=_TEXT["_RING_BEFORE"])
FINISHED_BY_RING = _TEXT["FINISHED_BY_RING"].format(reminders_now=_REMINDERS_NOW)

_LANES_AND_RANKS = _TEXT["_LANES_AND_RANKS"].format(
    last_lane=LANES - 1, last_rank=len(PRIORITY_RANKS) - 1
)
OLDEST_PENDING = _TEXT["OLDEST_PENDING"].format(
    lanes_and_ranks=_LANES_AND_RANKS, settled=_TEXT["_SETTLED"]
)
COUNT_DUE = _TEXT["COUNT_DUE"].format(lanes_and_ranks=_LANES_AND_RANKS)
COUNT_OVERDUE = _TEXT["COUNT_OVERDUE"].format(
    lanes_and_ranks=_LANES_AND_RANKS, settled=_TEXT["_SETTLED"]
)
TIDY_DUE = _TEXT["TIDY_DUE"].format(lanes_and_ranks=_LANES_AND_RANKS)


@cache
def load_due(ranks: tuple[int, ...], lanes: range = range(LANES)) -> str:
    """The occurrences waiting in `lanes` at the priority `ranks` (one, or urgent and bulk),
    of a bucket range and a shard range, in due order, :limit at most: one `_LOAD_LANE` scan
    per lane and rank, merged (`_LOAD_DUE`). SQLite's one process holds every part: its
    loads read every lane."""
    return _merged("_LOAD_LANE", ranks, lanes)


@cache
def load_saved(ranks: tuple[int, ...], lanes: range = range(LANES)) -> str:
    """The sweep's read: what API writes saved lately in `lanes` at the priority `ranks`
    (`_LOAD_SAVED_LANE`), in due order, :limit at most."""
    return _merged("_LOAD_SAVED_LANE", ranks, lanes)


def _merged(name: str, ranks: tuple[int, ...], lanes: range) -> str:
    lane = _TEXT[name]
    branches = [lane.format(lane=n, rank=rank) for n in lanes for rank in ranks]
    return _TEXT["_LOAD_DUE"].format(branches="\nUNION ALL\n".join(branches))


def __getattr__(name: str) -> str:
    raise AttributeError(f"no SQLite statement is named {name}")
