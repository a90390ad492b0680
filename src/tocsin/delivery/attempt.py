"""One delivery round of a firing: deadline check, destinations, a send to each destination
not settled yet, and the policy's decision for the firing."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from tocsin.channels import Channels, DeliveryResult, Destination, DestinationSender, enabled_by
from tocsin.clock import Clock
from tocsin.delivery.destinations import Destinations, Nowhere
from tocsin.delivery.isolation import Isolation, provider
from tocsin.delivery.retry import Decision, RetryPolicy
from tocsin.domain import Attempt, AttemptResult, Firing, FiringState, Outcome
from tocsin.errors import StoreError
from tocsin.metrics import instruments
from tocsin.metrics.instruments import ENGINE

logger = logging.getLogger(__name__)

EXPIRED_UNSENT = "expired: its deadline passed before it could be sent"
# An attempt needs this much time before the deadline, so that it arrives before it.
MIN_TIME_LEFT = timedelta(milliseconds=250)


class Deliverer:
    """Makes one round of attempts at a firing held by `sender` and says what it came to.

    A firing goes to every destination of its channel (a person's phone and tablet), each
    sent, retried and recorded on its own under the firing's one identity. A round sends to
    the destinations not settled yet (accepted, or failed for good); the firing is `sent`
    once every destination is settled and one accepted it, `failed` when none did, and
    `queued` for another round while one asks to be retried and the deadline allows. At the
    deadline, a firing that reached a destination counts as sent.
    """

    def __init__(
        self,
        channels: Channels,
        destinations: Destinations,
        policy: RetryPolicy,
        clock: Clock,
        *,
        sender: str,
        isolation: Isolation | None = None,
    ) -> None:
        self._channels = channels
        self._isolation = isolation or Isolation(concurrency=256)
        self._destinations = destinations
        self._policy = policy
        self._clock = clock
        self._sender = sender

    async def deliver(self, firing: Firing) -> AttemptResult:
        now = self._clock.now()
        if firing.deadline - now < MIN_TIME_LEFT:
            # Checked right before sending: nothing goes out after its deadline. No attempt
            # was made, so none is recorded.
            ENGINE.expired(instruments.EXPIRED_BEFORE_SEND)
            return self._unsent(firing, FiringState.EXPIRED, EXPIRED_UNSENT)
        sender = self._channels.sender(firing.channel)
        if sender is None:
            why = f"channel {firing.channel} not configured: set {enabled_by(firing.channel)}"
            return self._unsent(firing, FiringState.FAILED, why)
        try:
            destinations = await self._destinations.of(firing)
            settled = await self._destinations.settled(firing)
        except Nowhere as nowhere:
            return self._unsent(firing, FiringState.FAILED, str(nowhere))
        except StoreError as error:
            retry = DeliveryResult.retry(f"could not look the destinations up: {error}")
            ENGINE.retried(firing.channel, instruments.RETRY_LOOKUP)
            decision = self._decide(retry, firing, now)
            return self._unsent(firing, decision.state, retry.error, decision.next_attempt_at)
        open_ = [d for d in destinations if d.id not in settled]
        results = await self._send_all(sender, firing, open_, now)
        return self._round(firing, now, open_, results, settled)

    async def _send_all(
        self,
        sender: DestinationSender,
        firing: Firing,
        destinations: Sequence[Destination],
        now: datetime,
    ) -> list[DeliveryResult]:
        time_limit = (firing.deadline - now).total_seconds()
        if len(destinations) == 1:  # the common case, without a gather
            results = [await self._send(sender, firing, destinations[0], time_limit)]
        else:
            results = list(
                await asyncio.gather(
                    *(self._send(sender, firing, d, time_limit) for d in destinations)
                )
            )
        for destination, result in zip(destinations, results, strict=True):
            if result.gone:
                await self._gone(destination, result)
        return results

    async def _send(
        self, sender: DestinationSender, firing: Firing, destination: Destination, limit: float
    ) -> DeliveryResult:
        key = provider(firing.channel, destination)
        refused = self._isolation.refusal(key, limit)
        if refused is not None:
            ENGINE.retried(firing.channel, instruments.RETRY_BREAKER_OPEN)
            return refused
        async with self._isolation.slot(key):
            try:
                result = await sender.send(firing, destination, time_limit=limit)
            except Exception as error:
                # A bug in one channel must not stop the pool; the firing is retried.
                logger.exception(
                    "channel %s raised", firing.channel, extra={"firing_id": firing.id}
                )
                result = DeliveryResult.retry(f"internal error: {type(error).__name__}: {error}")
        self._isolation.record(key, result)
        if result.outcome is Outcome.RETRY and not result.held:
            reason = instruments.RETRY_ERROR
            if result.retry_after is not None:
                reason = instruments.RETRY_AFTER
            ENGINE.retried(firing.channel, reason)
        return result

    async def _gone(self, destination: Destination, result: DeliveryResult) -> None:
        reason = result.error or "the provider called it gone"
        try:
            await self._destinations.gone(destination, reason, self._clock.now())
        except StoreError as error:
            logger.warning("could not disable destination %s: %s", destination.id, error)
        logger.warning(
            "destination %s disabled: %s", destination.id, reason, extra={"kind": result}
        )

    def _round(
        self,
        firing: Firing,
        now: datetime,
        destinations: Sequence[Destination],
        results: Sequence[DeliveryResult],
        settled: Mapping[str, Outcome],
    ) -> AttemptResult:
        first = firing.attempts + 1
        attempts = [
            Attempt(
                number=first + n,
                at=now,
                channel=firing.channel,
                outcome=result.outcome,
                error=result.error,
                provider_id=result.provider_id,
                destination=destination.id,
            )
            for n, (destination, result) in enumerate(zip(destinations, results, strict=True))
        ]
        accepted = any(r.outcome is Outcome.SENT for r in results) or any(
            outcome is Outcome.SENT for outcome in settled.values()
        )
        decision = self._firing_decision(firing, now, results, accepted)
        if len(attempts) == 1:  # the attempt says what the policy made of it
            attempts[0] = attempts[0]._replace(error=decision.error)
        return AttemptResult(
            firing_id=firing.id,
            sender=self._sender,
            state=decision.state,
            attempt=attempts[-1] if attempts else None,
            earlier=tuple(attempts[:-1]),
            next_attempt_at=decision.next_attempt_at,
            error=decision.error,
        )

    def _firing_decision(
        self, firing: Firing, now: datetime, results: Sequence[DeliveryResult], accepted: bool
    ) -> Decision:
        retrying = [r for r in results if r.outcome is Outcome.RETRY]
        if not results:
            return Decision(state=FiringState.SENT if accepted else FiringState.FAILED)
        if retrying:
            longest = max(retrying, key=lambda r: r.retry_after or 0.0)
            decision = self._decide(longest, firing, now)
            if decision.state is FiringState.QUEUED or not accepted:
                return decision
            return Decision(state=FiringState.SENT, error=decision.error)
        if accepted:
            failed = [r.error for r in results if r.outcome is Outcome.FAILED]
            return Decision(state=FiringState.SENT, error="; ".join(e for e in failed if e) or None)
        if len(results) == 1:
            return Decision(state=FiringState.FAILED, error=results[0].error)
        errors = "; ".join(r.error or "failed" for r in results)
        return Decision(
            state=FiringState.FAILED, error=f"every destination failed for good: {errors}"
        )

    def _decide(self, result: DeliveryResult, firing: Firing, now: datetime) -> Decision:
        decision = self._policy.decide(
            result,
            attempt=firing.attempts + 1,
            now=self._clock.now(),
            due=firing.due_at,
            deadline=firing.deadline,
        )
        if decision.state is FiringState.EXPIRED:
            late_peer = result.retry_after is not None
            ENGINE.expired(
                instruments.EXPIRED_RETRY_AFTER if late_peer else instruments.EXPIRED_LAST_TRY
            )
        return decision

    def _unsent(
        self,
        firing: Firing,
        state: FiringState,
        error: str | None,
        next_attempt_at: datetime | None = None,
    ) -> AttemptResult:
        """The result of a round in which nothing was sent (no attempt is recorded)."""
        return AttemptResult(
            firing_id=firing.id,
            sender=self._sender,
            state=state,
            error=error,
            next_attempt_at=next_attempt_at,
        )
