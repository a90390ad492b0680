"""The in-app feed's port: the rings that wait for an owner's open pages."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from tocsin.domain import Firing

# Why a ring for the in-app feed waits `queued`: the claim queues it for the owner's pages.
FEED_WAITING = "queued for the in-app feed: sent when an open page receives it"
# A page's replay takes the rings sent since this long before its last event was: the
# clock that marks them may step back by a little when it is corrected.
FEED_REPLAY_SLACK_SECONDS = 1


class FeedStore(Protocol):
    """In-app firings as the API process holding an owner's pages reads and marks them. The
    announcements that bring them to that process are the `Notifier`'s."""

    @abstractmethod
    async def feed_firings(
        self, owner: str, *, now: datetime, after: str | None = None, limit: int = 500
    ) -> list[Firing]:
        """The owner's `inapp` firings still fresh (`deadline > now`) that wait for a page
        (`queued` or `sending`) and, with `after` (the id of one of the owner's firings, a
        page's last event), those `sent` since it was (from `FEED_REPLAY_SLACK_SECONDS`
        before its `sent_at`; itself excluded) — in (`due_at`, `id`) order, at most `limit`,
        without history. "Since it was sent", not "after it in due order": events go out in
        the order rings are claimed and written, not by due time, so a ring due earlier may
        follow the last event, and is replayed. One index range scan of the owner's in-app
        firings by deadline (`firings_feed`)."""

    @abstractmethod
    async def feed_rings(self, firing_ids: Sequence[str], *, now: datetime) -> list[Firing]:
        """Those of these firings that are `inapp`, still fresh (`deadline > now`) and not
        `failed` or `expired`: what an announcement may put on a page (by primary key)."""

    @abstractmethod
    async def mark_feed_sent(self, firing_ids: Sequence[str], *, at: datetime) -> int:
        """A page received these in-app firings: each one still fresh at `at` and not final
        (`queued`, or `sending` whoever holds it) becomes `sent` at `at` with one more
        attempt (outcome `sent`, destination `feed`). A final one (sent to another page,
        expired) is left as it is; a worker's later result for one sent here no longer
        applies (it is not `sending` any more). Return how many changed."""
