"""The channel interface: how one firing goes out, and what became of the attempt."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Generic, TypeVar

from tocsin.domain import Firing, Outcome

T = TypeVar("T")

NOT_CONFIGURED = "channel not configured"


@dataclass(frozen=True, kw_only=True, slots=True)
class DeliveryResult:
    """What one send came to, classified for the retry policy.

    `retry_after` is the peer's `Retry-After` in seconds (only with `Outcome.RETRY`);
    `provider_id` is the peer's id for the message when it gives one.
    """

    outcome: Outcome
    error: str | None = None
    retry_after: float | None = None
    provider_id: str | None = None

    @classmethod
    def sent(cls, provider_id: str | None = None) -> DeliveryResult:
        if provider_id is None:
            return _SENT  # the common answer, made once
        return cls(outcome=Outcome.SENT, provider_id=provider_id)

    @classmethod
    def retry(cls, error: str, retry_after: float | None = None) -> DeliveryResult:
        return cls(outcome=Outcome.RETRY, error=error, retry_after=retry_after)

    @classmethod
    def failed(cls, error: str) -> DeliveryResult:
        return cls(outcome=Outcome.FAILED, error=error)


_SENT = DeliveryResult(outcome=Outcome.SENT)


class NoTarget(Exception):
    """The firing has nowhere to go on this channel (not configured, endpoint disabled…)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Sender(ABC, Generic[T]):
    """One channel. `target` finds where a firing goes; `send` makes one attempt there.

    `send` never raises for a peer's failure: it classifies it (retryable or permanent) in
    the result. It must not take longer than `time_limit` seconds, so that nothing arrives after
    a firing's deadline. The firing's `id` is the idempotency key to hand the peer.
    """

    @abstractmethod
    async def target(self, firing: Firing) -> T:
        """Where `firing` goes; raise `NoTarget` with the reason when it can go nowhere."""

    @abstractmethod
    async def send(self, firing: Firing, target: T, *, time_limit: float) -> DeliveryResult:
        """Make one attempt to deliver `firing` to `target`."""

    async def close(self) -> None:
        """Release connections. The default has none."""
        return None


class Unconfigured(Sender[None]):
    """A channel Tocsin cannot use yet here: every firing fails at once, and says why."""

    async def target(self, firing: Firing) -> None:
        raise NoTarget(NOT_CONFIGURED)

    async def send(self, firing: Firing, target: None, *, time_limit: float) -> DeliveryResult:
        return DeliveryResult.failed(NOT_CONFIGURED)
