"""The SQLite backend's statements by name (`q.CLAIM`): those of `store/sql/sqlite.sql` and
the shared ones (`store/sql/`), as written.

Instants are INTEGER microseconds since the Unix epoch (UTC); see migrations/sqlite.
"""

from __future__ import annotations

from functools import cache

from tocsin.store import sql
from tocsin.store.base import FEED_REPLAY_SLACK_SECONDS

_TEXT = sql.SQLITE
# Module attributes, so that `q.CLAIM` is a plain lookup (`__getattr__` below only types it).
globals().update(_TEXT)

FEED_FIRINGS = _TEXT["FEED_FIRINGS"].format(slack_us=FEED_REPLAY_SLACK_SECONDS * 1_000_000)


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
