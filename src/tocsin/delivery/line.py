"""The delivery pool's line: firings waiting for a sender, urgent first, then closest deadline
first."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Iterator
from datetime import datetime

from tocsin.domain import PRIORITY_RANKS, Firing

_Key = tuple[int, datetime]  # (`Priority.rank`, deadline)


class _Batch:
    """Firings lined up together (one claim, one take): how many are still in the line, and
    the earliest hold among them."""

    __slots__ = ("hold", "left")

    def __init__(self) -> None:
        self.left = 0
        self.hold: datetime | None = None


class Line:
    """Firings in (priority, deadline, arrival) order, and the oldest hold among them: an
    urgent firing goes before every bulk one lined up, whatever their deadlines.

    Many firings share a deadline (due at one second with the same freshness), so the line
    keeps one FIFO per (priority, deadline) and a heap of the distinct keys: lining a firing
    up and taking one out is a dict lookup and a deque operation, and the heap moves only
    when a key is new or used up (what that costs against a plain FIFO: docs/architecture.md,
    "Pool").

    Holds are handed out batch by batch in arrival order, so the oldest hold is that of the
    earliest batch with a firing still lined up.
    """

    def __init__(self) -> None:
        self._by_deadline: dict[_Key, deque[tuple[_Batch, Firing]]] = {}
        self._deadlines: list[_Key] = []  # a heap of the keys of `_by_deadline`
        self._batches: deque[_Batch] = deque()  # in arrival order, each with firings left
        self._size = 0
        self.bulk = 0  # of them bulk

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Firing]:
        """The firings lined up, in no particular order."""
        for same in self._by_deadline.values():
            for _, firing in same:
                yield firing

    def extend(self, firings: Iterable[Firing]) -> None:
        """Line up a batch of firings."""
        batch = _Batch()
        by_deadline = self._by_deadline
        bulk = 0
        for firing in firings:
            rank = PRIORITY_RANKS[firing.priority]
            bulk += rank
            key = (rank, firing.deadline)
            same = by_deadline.get(key)
            if same is None:
                same = by_deadline[key] = deque()
                heapq.heappush(self._deadlines, key)
            same.append((batch, firing))
            batch.left += 1
            hold = firing.lease_until
            if hold is not None and (batch.hold is None or hold < batch.hold):
                batch.hold = hold
        if batch.left:
            self._batches.append(batch)
            self._size += batch.left
            self.bulk += bulk

    def pop(self) -> Firing:
        """The most urgent firing with the closest deadline (the earliest lined up among
        equals)."""
        key = self._deadlines[0]
        same = self._by_deadline[key]
        batch, firing = same.popleft()
        if not same:
            heapq.heappop(self._deadlines)
            del self._by_deadline[key]
        self._size -= 1
        self.bulk -= key[0]
        batch.left -= 1
        batches = self._batches
        while batches and not batches[0].left:
            batches.popleft()
        return firing

    def oldest_hold(self) -> datetime | None:
        """When the earliest hold among the firings lined up runs out."""
        return self._batches[0].hold if self._batches else None

    def clear(self) -> None:
        self._by_deadline.clear()
        self._deadlines.clear()
        self._batches.clear()
        self._size = 0
        self.bulk = 0
