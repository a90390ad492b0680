"""The channel interface: how one firing goes out to one destination, and what became of the
attempt."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass

from tocsin.domain import Channel, Firing, Outcome


@dataclass(frozen=True, kw_only=True, slots=True)
class DeliveryResult:
    """What one send came to, classified for the retry policy.

    `retry_after` is the peer's `Retry-After` in seconds (only with `Outcome.RETRY`);
    `provider_id` is the peer's id for the message when it gives one. `gone` (with
    `Outcome.FAILED`) says the provider called the destination itself gone for good (APNs
    410 / `Unregistered`, FCM `UNREGISTERED`, Web Push 404/410): delivery disables that
    contact, with `error` as the reason, and the next ring skips it. `held` (with
    `Outcome.RETRY`) says the destination took the ring in and keeps it until the firing's
    deadline, and whoever hands it on settles the firing (the in-app feed: a connected page
    marks it `sent`): the firing waits `queued` until its deadline, then expires.
    `not_tried` (with `Outcome.RETRY`) says no send was made: this worker held it back (a
    provider's breaker is open, or the firing's hold had no time left for a send), and
    `retry_after` is this worker's own wait, not the peer's word.
    """

    outcome: Outcome
    error: str | None = None
    retry_after: float | None = None
    provider_id: str | None = None
    gone: bool = False
    held: bool = False
    not_tried: bool = False

    @classmethod
    def sent(cls, provider_id: str | None = None) -> DeliveryResult:
        if provider_id is None:
            return _SENT  # the common answer, made once
        return cls(outcome=Outcome.SENT, provider_id=provider_id)

    @classmethod
    def retry(cls, error: str, retry_after: float | None = None) -> DeliveryResult:
        return cls(outcome=Outcome.RETRY, error=error, retry_after=retry_after)

    @classmethod
    def refused_here(cls, error: str, wait: float) -> DeliveryResult:
        """Not sent: held back by this worker, to be tried again after `wait` seconds."""
        return cls(outcome=Outcome.RETRY, error=error, retry_after=wait, not_tried=True)

    @classmethod
    def failed(cls, error: str) -> DeliveryResult:
        return cls(outcome=Outcome.FAILED, error=error)

    @classmethod
    def held_until_deadline(cls, note: str) -> DeliveryResult:
        """Taken in by a destination that settles the firing itself before its deadline."""
        return cls(outcome=Outcome.RETRY, error=note, held=True)

    @classmethod
    def destination_gone(cls, error: str) -> DeliveryResult:
        """Failed for good, and the destination (a device token, a subscription) is gone."""
        return cls(outcome=Outcome.FAILED, error=error, gone=True)


_SENT = DeliveryResult(outcome=Outcome.SENT)


@dataclass(frozen=True, kw_only=True, slots=True)
class Destination:
    """One place a ring goes on one channel: one of the owner's contacts.

    `address` holds the contact's fields as its channel's `validate_contact` returned them
    (`{"token": …, "environment": …}` for APNs, `{"address": …}` for email, …); `secret` is
    the contact's own secret where the kind has one (a webhook contact's signing secret).
    Delivery works out the destinations of a firing and hands each to the channel's sender;
    a sender never reads the store.
    """

    id: str  # the contact's id
    kind: Channel
    address: Mapping[str, str]
    secret: str | None = None
    # Whose contact it is (a list's ring goes to its members'); None for an app's webhook
    # endpoint or the deployment's, which are no person's.
    owner: str | None = None


class DestinationSender(ABC):
    """One channel that sends to the owner's contacts (push, email, SMS, Apprise…).

    `send` makes one attempt to deliver `firing` to one destination. It never raises for a
    peer's failure: it classifies it — sent, retryable (with the peer's `Retry-After`),
    failed for good, or failed with the destination gone — in the result, and it must not
    take longer than `time_limit` seconds (the time left to the firing's deadline, capped by
    the channel's own timeout), so nothing arrives after the deadline. The firing's `id` is
    the delivery identity: the idempotency key the peer is given. Secrets (keys, tokens,
    passwords) never appear in a result's error or in a log line.
    """

    @abstractmethod
    async def send(
        self, firing: Firing, destination: Destination, *, time_limit: float
    ) -> DeliveryResult:
        """Make one attempt to deliver `firing` to `destination`."""

    async def close(self) -> None:
        """Release connections. The default has none."""
        return None
