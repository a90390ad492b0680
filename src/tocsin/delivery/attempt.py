"""One delivery attempt: deadline check, target, send, and the policy's decision."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from tocsin.channels import Channels, DeliveryResult, NoTarget
from tocsin.clock import Clock
from tocsin.delivery.retry import Decision, RetryPolicy
from tocsin.domain import Attempt, AttemptResult, Firing, FiringState, Outcome
from tocsin.errors import StoreError

logger = logging.getLogger(__name__)

EXPIRED_UNSENT = "expired: its deadline passed before it could be sent"
# An attempt needs this much time before the deadline, so that it arrives before it.
MIN_TIME_LEFT = timedelta(milliseconds=250)


class Deliverer:
    """Makes one attempt at a firing held by `sender` and says what it came to."""

    def __init__(
        self, channels: Channels, policy: RetryPolicy, clock: Clock, *, sender: str
    ) -> None:
        self._channels = channels
        self._policy = policy
        self._clock = clock
        self._sender = sender

    async def deliver(self, firing: Firing) -> AttemptResult:
        number = firing.attempts + 1
        now = self._clock.now()
        if firing.deadline - now < MIN_TIME_LEFT:
            # Checked right before sending: nothing goes out after its deadline. No attempt
            # was made, so none is recorded.
            return AttemptResult(
                firing_id=firing.id,
                sender=self._sender,
                state=FiringState.EXPIRED,
                error=EXPIRED_UNSENT,
            )
        result = await self._send(firing, (firing.deadline - now).total_seconds())
        decision = self._policy.decide(
            result,
            attempt=number,
            now=self._clock.now(),
            due=firing.due_at,
            deadline=firing.deadline,
        )
        return self._result(firing, number, now, result.outcome, decision, result.provider_id)

    async def _send(self, firing: Firing, time_limit: float) -> DeliveryResult:
        sender = self._channels[firing.channel]
        try:
            target = await sender.target(firing)
        except NoTarget as error:
            return DeliveryResult.failed(error.reason)
        except StoreError as error:
            return DeliveryResult.retry(f"could not look the target up: {error}")
        try:
            return await sender.send(firing, target, time_limit=time_limit)
        except Exception as error:
            # A bug in one channel must not stop the pool; the firing is retried.
            logger.exception("channel %s raised", firing.channel, extra={"firing_id": firing.id})
            return DeliveryResult.retry(f"internal error: {type(error).__name__}: {error}")

    def _result(
        self,
        firing: Firing,
        number: int,
        at: datetime,
        outcome: Outcome,
        decision: Decision,
        provider_id: str | None = None,
    ) -> AttemptResult:
        attempt = Attempt(
            number=number,
            at=at,
            channel=firing.channel,
            outcome=outcome,
            error=decision.error,
            provider_id=provider_id,
        )
        return AttemptResult(
            firing_id=firing.id,
            sender=self._sender,
            attempt=attempt,
            state=decision.state,
            next_attempt_at=decision.next_attempt_at,
        )
