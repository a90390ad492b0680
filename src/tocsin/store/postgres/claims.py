"""The claims a PostgreSQL store made whose rings' firings it has not all written yet, so
that the write of a claim's last firing deletes the claim in the same statement
(INSERT_FIRINGS' $3) and recovery reads only the claims no sender settled.

A claim row stands for its rings until their firings are written (docs/architecture.md,
"Row writes per ring"). Its sender knows when it wrote the last of them; nobody else needs
to look. A claim this process stops tracking — its hold ran out before every firing was
written (a result the database refused, a stall) — is recovery's, which deletes it after
writing what is missing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class _Open:
    hold_until: datetime
    unwritten: set[str] = field(default_factory=set)


class ClaimLedger:
    """Open claims by id, and the claim of each unwritten firing."""

    def __init__(self) -> None:
        self._open: dict[int, _Open] = {}
        self._claim_of: dict[str, int] = {}

    def opened(
        self, claim: int, firing_ids: Sequence[str], *, hold_until: datetime, now: datetime
    ) -> None:
        """Track claim `claim`, whose rings `firing_ids` its sender holds until `hold_until`;
        forget the claims whose hold ran out before `now` (recovery's from then on)."""
        self._forget_before(now)
        if not firing_ids:
            return
        entry = self._open[claim] = _Open(hold_until, set(firing_ids))
        for firing_id in entry.unwritten:
            self._claim_of[firing_id] = claim

    def settled_by(self, firing_ids: Iterable[str]) -> list[int]:
        """The claims whose every unwritten firing is among `firing_ids`."""
        counts = Counter(self._claim_of[i] for i in set(firing_ids) if i in self._claim_of)
        return [claim for claim, n in counts.items() if len(self._open[claim].unwritten) == n]

    def written(self, firing_ids: Iterable[str], settled: Sequence[int]) -> list[int]:
        """`firing_ids` are written, by a statement that deleted the claims `settled`: a
        claim with none left unwritten is done. Return the claims done but not deleted (two
        writes of one claim's last firings at once, each counting the other's as unwritten):
        their rows are the caller's to delete."""
        done: list[int] = []
        for firing_id in firing_ids:
            claim = self._claim_of.pop(firing_id, None)
            if claim is None:
                continue
            entry = self._open[claim]
            entry.unwritten.discard(firing_id)
            if not entry.unwritten:
                del self._open[claim]
                done.append(claim)
        return [claim for claim in done if claim not in settled]

    def _forget_before(self, now: datetime) -> None:
        stale = [claim for claim, entry in self._open.items() if entry.hold_until < now]
        for claim in stale:
            for firing_id in self._open.pop(claim).unwritten:
                self._claim_of.pop(firing_id, None)

    def __len__(self) -> int:
        return len(self._open)
