"""The senders' pace: how many firings leave the pool's line in a given time, as measured."""

from __future__ import annotations

import sys

# Each round moves the mean this much of the way: a change of pace (a peer that slows down,
# a starved CPU) shows within ten or so rounds, one slow round does not halve the pace.
WEIGHT = 0.125


class Pace:
    """A running mean of how long a round takes a sender — from taking a firing off the line
    to its result, a wait for the provider's slot included — over the rounds that sent.

    While every sender is busy, `senders / round` firings a second leave the line (Little's
    law), whatever holds them up: a slow peer, a provider's share of the senders, a starved
    CPU. A firing lined up behind n others therefore starts about n · round / senders
    later. Rounds that sent nothing (a firing handed back, expired, with nowhere to go) end
    at once and would make the senders look faster than they are: they are not counted.
    """

    __slots__ = ("_round", "_senders")

    def __init__(self, senders: int) -> None:
        self._senders = senders
        self._round: float | None = None  # seconds, once a round is measured

    @property
    def measured(self) -> bool:
        """Whether a round was measured yet."""
        return self._round is not None

    def sent(self, seconds: float) -> None:
        """A round that made a send took `seconds`."""
        seconds = max(seconds, 0.0)  # the clock corrected by the database's, backwards
        mean = self._round
        self._round = seconds if mean is None else mean + WEIGHT * (seconds - mean)

    def within(self, seconds: float) -> int:
        """How many firings the senders take off the line in `seconds` while all are busy:
        none until a round is measured."""
        mean = self._round
        if mean is None:
            return 0
        if mean <= 0:  # rounds quicker than the clock's tick: no bound but the pool's own
            return sys.maxsize
        return int(self._senders * seconds / mean)
