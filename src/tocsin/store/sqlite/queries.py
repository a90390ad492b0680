"""The SQLite backend's statements by name (`q.CLAIM`): those of `store/sql/sqlite.sql` and
the shared ones (`store/sql/`), as written, and the few filled in from a template.

The scheduler's batches (claims, results) travel as one JSON array of rows each, read with
`json_each`; a statement reads a field by name (`{claim.due_at}`), filled in here with its
read by its place in the batch's declaration in `store/batches.py`.

Instants are INTEGER microseconds since the Unix epoch (UTC); see migrations/sqlite.
"""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace

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
    return SimpleNamespace(
        **{field.name: f"json_extract({row}, '$[{n}]')" for n, field in enumerate(batch.fields)}
    )


CLAIMABLE = _TEXT["CLAIMABLE"].format(claim=fields(batches.SQLITE_CLAIMS, "c.value"))
CLAIM_REMINDERS = _TEXT["CLAIM_REMINDERS"].format(claim=fields(batches.SQLITE_CLAIMS, "c.value"))
INSERT_ATTEMPTS = _TEXT["INSERT_ATTEMPTS"].format(result=fields(batches.SQLITE_RESULTS, "r.value"))
FINISH_ATTEMPTS = _TEXT["FINISH_ATTEMPTS"].format(result=fields(batches.SQLITE_RESULTS, "a.value"))


@cache
def load_due(ranks: tuple[int, ...]) -> str:
    """Pending reminders of a bucket range at the priority `ranks` (one, or urgent and
    bulk), in due order, :limit at most: one `_LOAD_RANK` scan per rank."""
    scans = [_TEXT["_LOAD_RANK"].format(rank=rank) for rank in ranks]
    if len(scans) == 1:
        return scans[0]
    urgent, bulk = scans
    return _TEXT["_LOAD_DUE"].format(urgent=urgent, bulk=bulk)


def __getattr__(name: str) -> str:
    raise AttributeError(f"no SQLite statement is named {name}")
