"""One delivery round of a firing: deadline check, destinations, a send to each destination
not settled yet, and the policy's decision for the firing — for a firing on several channels,
step by step along its route (all at once, or a fallback chain)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from tocsin.channels import Channels, DeliveryResult, Destination, DestinationSender, enabled_by
from tocsin.clock import Clock
from tocsin.delivery.destinations import Destinations, Nowhere
from tocsin.delivery.isolation import Isolation, provider
from tocsin.delivery.quiet import MemberHold
from tocsin.delivery.retry import SENT, Decision, RetryPolicy
from tocsin.domain import (
    Attempt,
    AttemptResult,
    Channel,
    Firing,
    FiringState,
    Outcome,
    Priority,
    list_of,
)
from tocsin.errors import StoreError
from tocsin.metrics import instruments
from tocsin.metrics.instruments import ENGINE
from tocsin.outside import outside_text
from tocsin.time.quiet import QUIET_EXPIRED, QUIET_HELD

logger = logging.getLogger(__name__)

# A channel of a route's step with nowhere to ring is recorded as a failed attempt with no
# destination; `Store.settled_destinations` keys such attempts by this and the channel.
NOWHERE_PREFIX = "channel:"
Target = tuple[Channel, DestinationSender, Destination]
"""One send of a round: the channel, its sender, and the destination."""

EXPIRED_UNSENT = "expired: its deadline passed before it could be sent"
# An attempt needs this much time before the deadline, so that it arrives before it.
MIN_TIME_LEFT = timedelta(milliseconds=250)
# A send ends this long before the firing's hold does, so that its result is written while
# the hold is still this worker's: no other worker takes the firing over mid-send. (Less
# when the hold is short: half of what it adds to the send timeout.)
HOLD_MARGIN = timedelta(seconds=1)
NO_TIME_IN_HOLD = "not tried: the hold on it would end before a send could; handed back"
# A send held back for want of time in the firing's hold: no attempt, so none is recorded.
HELD_BACK = DeliveryResult.refused_here(NO_TIME_IN_HOLD, wait=0.0)
DEADLINE_IN_LINE = "not tried: its deadline came while it waited for a slot of its provider"


class Deliverer:
    """Makes one round of attempts at a firing held by `sender` and says what it came to.

    A firing goes to every destination of its channel (a person's phone and tablet), each
    sent, retried and recorded on its own under the firing's one identity. A round sends to
    the destinations not settled yet (accepted, or failed for good); the firing is `sent`
    once every destination is settled and one accepted it, `failed` when none did, and
    `queued` for another round while one asks to be retried and the deadline allows. At the
    deadline, a firing that reached a destination counts as sent.

    A firing on several channels (its `Route`) rings them by steps: every channel at once
    is one step whose destinations are all of theirs; a fallback chain has a step per
    channel (`_deliver_route`).
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
        send_timeout: float = 10.0,
        hold: timedelta = timedelta(seconds=20),
    ) -> None:
        self._channels = channels
        self._send_timeout = send_timeout
        spare = hold - timedelta(seconds=send_timeout)
        self._hold_margin = max(min(HOLD_MARGIN, spare / 2), timedelta(0))
        self._isolation = isolation or Isolation(concurrency=256)
        self._destinations = destinations
        self._policy = policy
        self._clock = clock
        self._sender = sender

    @property
    def reserve(self) -> timedelta:
        """How much of its hold a firing needs left for a send to be made: the send's time
        limit, and the margin to write its result before the hold ends."""
        return timedelta(seconds=self._send_timeout) + self._hold_margin

    async def deliver(self, firing: Firing, now: datetime | None = None) -> AttemptResult | None:
        """One round at `firing`; `now` when the caller has just read the clock. None when
        the firing's hold ran out before its turn: nothing is recorded, and whoever takes
        it over sends it."""
        if now is None:
            now = self._clock.now()
        if firing.deadline - now < MIN_TIME_LEFT:
            # Checked right before sending: nothing goes out after its deadline. No attempt
            # was made, so none is recorded.
            ENGINE.expired(instruments.EXPIRED_BEFORE_SEND)
            return self._unsent(firing, FiringState.EXPIRED, EXPIRED_UNSENT)
        if self._time_left(firing, now) is None:
            ENGINE.retried(firing.channel, instruments.RETRY_NO_TIME_IN_HOLD)
            return self.hand_back(firing)
        if (quiet := await self._quiet_hours(firing, now)) is not None:
            return quiet
        try:
            # A first try has nothing settled: no awaiting for it on the common path.
            settled = await self._destinations.settled(firing) if firing.attempts else {}
            if firing.channel.single is None:
                return await self._deliver_route(firing, settled)
            channel = firing.channel.single
            sender, destinations = await self._where(firing, channel)
            targets = [(channel, sender, d) for d in destinations if d.id not in settled]
            open_, hold = await self._held(firing, targets, now)
        except Nowhere as nowhere:
            return self._unsent(firing, FiringState.FAILED, str(nowhere))
        except StoreError as error:
            return self._lookup_failed(firing, now, error)
        results = await self._send_all(firing, open_, now)
        if results and all(result is HELD_BACK for result in results):
            return self.hand_back(firing)
        return self._round(firing, now, open_, results, settled, hold)

    async def _quiet_hours(self, firing: Firing, now: datetime) -> AttemptResult | None:
        """A bulk ring inside its owner's quiet hours: `queued` until they end, untried (no
        attempt is recorded), or `expired` now when they end after its last try; None for a
        ring they do not hold (an urgent one never; nor a ring for the in-app feed alone, which
        an open page takes: someone is looking). A list's ring is held member by member, in
        its round (`_held`): the list has no quiet hours of its own."""
        if (
            firing.priority is not Priority.BULK
            or firing.channel.single is Channel.INAPP
            or list_of(firing.owner) is not None
        ):
            return None
        try:
            until = await self._destinations.quiet_until(firing, now)
        except StoreError as error:
            return self._lookup_failed(firing, now, error)
        if until is None:
            return None
        if until > self._policy.last_try(due=firing.due_at, deadline=firing.deadline):
            ENGINE.expired(instruments.EXPIRED_QUIET_HOURS)
            late = f"{QUIET_EXPIRED} {until:%Y-%m-%dT%H:%M:%SZ}, after its deadline"
            return self._unsent(firing, FiringState.EXPIRED, late)
        ENGINE.retried(firing.channel, instruments.RETRY_QUIET_HOURS)
        held = f"{QUIET_HELD} {until:%Y-%m-%dT%H:%M:%SZ}"
        return self._unsent(firing, FiringState.QUEUED, held, until)

    async def _held(
        self, firing: Firing, targets: list[Target], now: datetime
    ) -> tuple[list[Target], MemberHold | None]:
        """A list's bulk ring's open `targets` less those of the members inside their quiet
        hours at `now` (neither tried nor recorded), and the hold on those members; None
        when none is held. An endpoint's destination is no one's, and is never held."""
        if firing.priority is not Priority.BULK or list_of(firing.owner) is None:
            return targets, None
        members = sorted({d.owner for _, _, d in targets if d.owner is not None})
        quiet = await self._destinations.quiet_members(firing, members, now)
        if not quiet:
            return targets, None
        last = self._policy.last_try(due=firing.due_at, deadline=firing.deadline)
        return [t for t in targets if t[2].owner not in quiet], MemberHold.of(quiet, last)

    def hand_back(self, firing: Firing) -> AttemptResult | None:
        """A firing whose hold has no send left in it, untried: `queued` again at once for
        any sender to take with a fresh hold, its attempts and last error as they were
        (nothing was tried, so no attempt is recorded). It is not taken back in a loop: a
        pool takes only what its senders start well within a hold (`DeliveryPool`). None
        when too little of the hold is left to write even that: the hold is left to run
        out, and whoever takes the firing over sends it."""
        now = self._clock.now()  # after the wait for a slot, when there was one
        hold = firing.lease_until
        if hold is not None and hold - now <= self._hold_margin:
            return None
        return self._unsent(firing, FiringState.QUEUED, firing.last_error, now)

    async def _where(
        self, firing: Firing, channel: Channel
    ) -> tuple[DestinationSender, list[Destination]]:
        """The sender of `channel` and the firing's destinations on it; `Nowhere` when the
        channel is not configured here or has no destination."""
        sender = self._channels.sender(channel)
        if sender is None:
            raise Nowhere(f"channel {channel} not configured: set {enabled_by(channel)}")
        return sender, await self._destinations.of(firing, channel)

    def _lookup_failed(self, firing: Firing, now: datetime, error: StoreError) -> AttemptResult:
        retry = DeliveryResult.retry(f"could not look the destinations up: {outside_text(error)}")
        ENGINE.retried(firing.channel, instruments.RETRY_LOOKUP)
        decision = self._decide(retry, firing, now)
        return self._unsent(firing, decision.state, retry.error, decision.next_attempt_at)

    async def _deliver_route(self, firing: Firing, settled: Mapping[str, Outcome]) -> AttemptResult:
        """A round of a firing on several channels: its route's steps in order (one step
        holding every channel, or one step per channel of a fallback chain). A step that
        failed for good — every destination failed, or there was none — passes the ring to
        the next step in the same round; a step that reached someone or is being retried
        ends the round, so a later step is never tried once an earlier one succeeded."""
        trail = Trail(firing)
        for number, step in enumerate(firing.channel.steps, 1):
            if number > 1 and firing.deadline - self._clock.now() < MIN_TIME_LEFT:
                expired = Decision(state=FiringState.EXPIRED, error=EXPIRED_UNSENT)
                return trail.result(self._sender, expired)
            decision = await self._ring_step(firing, step, settled, trail)
            if decision is not None:
                return trail.result(self._sender, decision)
        why = "; ".join(trail.errors()) or "every destination had failed for good"
        failed = Decision(state=FiringState.FAILED, error=f"every step failed for good: {why}")
        return trail.result(self._sender, failed)

    async def _ring_step(
        self,
        firing: Firing,
        step: tuple[Channel, ...],
        settled: Mapping[str, Outcome],
        trail: Trail,
    ) -> Decision | None:
        """Ring one step's open destinations and decide; None when the step failed for good."""
        now = self._clock.now()
        try:
            targets = await self._targets(firing, step, settled, trail, now)
            open_, hold = await self._held(
                firing, [target for target in targets if target[2].id not in settled], now
            )
        except StoreError as error:
            retry = DeliveryResult.retry(
                f"could not look the destinations up: {outside_text(error)}"
            )
            return self._decide(retry, firing, now)
        results = await self._send_all(firing, open_, now)
        for (channel, _, destination), result in zip(open_, results, strict=True):
            if result is not HELD_BACK:  # not tried: no attempt to record
                trail.add(now, channel, destination, result)
        accepted = any(r.outcome is Outcome.SENT for r in results) or any(
            settled.get(target[2].id) is Outcome.SENT for target in targets
        )
        decision = self._firing_decision(firing, now, results, accepted)
        if hold is not None:  # a step whose members wait is not failed: the chain waits too
            decision = hold.decide(decision, reached=accepted, route=firing.channel)
        retrying = any(r.outcome is Outcome.RETRY for r in results)
        if decision.state is FiringState.FAILED and not accepted and not retrying:
            return None
        return decision

    async def _targets(
        self,
        firing: Firing,
        step: tuple[Channel, ...],
        settled: Mapping[str, Outcome],
        trail: Trail,
        now: datetime,
    ) -> list[Target]:
        """Every destination of a step's channels. A channel with none is recorded once, as
        a failed attempt that went nowhere, so the history shows why the ring moved on."""
        targets: list[Target] = []
        for channel in step:
            try:
                sender, destinations = await self._where(firing, channel)
            except Nowhere as nowhere:
                if NOWHERE_PREFIX + channel not in settled:
                    trail.add(now, channel, None, DeliveryResult.failed(str(nowhere)))
                continue
            targets.extend((channel, sender, d) for d in destinations)
        return targets

    async def _send_all(
        self, firing: Firing, targets: Sequence[Target], now: datetime
    ) -> list[DeliveryResult]:
        time_limit = (firing.deadline - now).total_seconds()
        final = self._isolation.watching and now >= self._policy.last_try(
            due=firing.due_at, deadline=firing.deadline
        )
        if len(targets) == 1:  # the common case, without a gather
            results = [await self._send(firing, targets[0], time_limit, final)]
        else:
            results = list(
                await asyncio.gather(*(self._send(firing, t, time_limit, final) for t in targets))
            )
        for (_, _, destination), result in zip(targets, results, strict=True):
            if result.gone:
                await self._gone(destination, result)
        return results

    async def _send(
        self, firing: Firing, target: Target, limit: float, final: bool
    ) -> DeliveryResult:
        """One send, within the provider's limits. A send is only made while the firing's
        hold lasts for all of it: one that could outlive the hold (its wait for a slot ate
        the time) is not made (`HELD_BACK`, not an attempt), and the firing is handed back
        to be taken with a fresh hold, so no other worker ever takes over a firing whose
        send is still out."""
        channel, sender, destination = target
        key = provider(channel, destination)
        refused = self._isolation.refusal(key, limit, final=final)
        if refused is not None:
            ENGINE.retried(channel, instruments.RETRY_BREAKER_OPEN)
            return refused
        slots = self._isolation.slot(key)
        await slots.acquire(firing.priority.rank)  # an urgent ring waits ahead of bulk ones
        try:
            now = self._clock.now()  # after the wait for a slot
            if firing.deadline - now < MIN_TIME_LEFT:
                # The deadline came while the send waited for a slot: it is not made (pickup
                # records the firing expired at once).
                return DeliveryResult.refused_here(DEADLINE_IN_LINE, wait=0.0)
            left = self._time_left(firing, now)
            if left is None:
                ENGINE.retried(channel, instruments.RETRY_NO_TIME_IN_HOLD)
                return HELD_BACK
            try:
                result = await sender.send(firing, destination, time_limit=left)
            except Exception as error:
                # A bug in one channel must not stop the pool; the firing is retried.
                logger.exception("channel %s raised", channel, extra={"firing_id": firing.id})
                result = DeliveryResult.retry(
                    f"internal error: {type(error).__name__}: {outside_text(error)}"
                )
        finally:
            slots.release()
        self._isolation.record(key, result)
        if result.outcome is Outcome.RETRY and not result.held:
            reason = instruments.RETRY_ERROR
            if result.retry_after is not None:
                reason = instruments.RETRY_AFTER
            ENGINE.retried(channel, reason)
        return result

    def _time_left(self, firing: Firing, now: datetime) -> float | None:
        """Seconds a send may take at `now`: to the deadline, and to the end of the hold
        (less its margin); None when the hold ends before a send could time out."""
        to_deadline = (firing.deadline - now).total_seconds()
        if firing.lease_until is None:
            return to_deadline
        to_hold = (firing.lease_until - self._hold_margin - now).total_seconds()
        if to_hold < min(self._send_timeout, to_deadline):
            return None
        return min(to_hold, to_deadline)

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
        targets: Sequence[Target],
        results: Sequence[DeliveryResult],
        settled: Mapping[str, Outcome],
        hold: MemberHold | None = None,
    ) -> AttemptResult:
        first = firing.attempts + 1
        made = [
            (target, result)
            for target, result in zip(targets, results, strict=True)
            if result is not HELD_BACK  # not tried: no attempt to record
        ]
        attempts = [
            attempt_of(first + n, now, channel, destination, result)
            for n, ((channel, _, destination), result) in enumerate(made)
        ]
        accepted = any(r.outcome is Outcome.SENT for r in results) or any(
            outcome is Outcome.SENT for outcome in settled.values()
        )
        decision = self._firing_decision(firing, now, results, accepted)
        if len(attempts) == 1 and attempts[0].error != decision.error:
            attempts[0] = attempts[0]._replace(error=decision.error)  # what the policy made of it
        if hold is not None:
            decision = hold.decide(decision, reached=accepted, route=firing.channel)
        # By position, in the order of AttemptResult's fields: one is built per ring.
        return AttemptResult(
            firing.id,
            self._sender,
            decision.state,
            attempts[-1] if attempts else None,
            decision.next_attempt_at,
            decision.error,
            tuple(attempts[:-1]),
            None if firing.stored else firing,
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
            failed = [r.error for r in results if r.outcome is Outcome.FAILED and r.error]
            return Decision(state=FiringState.SENT, error="; ".join(failed)) if failed else SENT
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
            firing=None if firing.stored else firing,
        )


def attempt_of(
    number: int,
    now: datetime,
    channel: Channel,
    destination: Destination | None,
    result: DeliveryResult,
) -> Attempt:
    """The record of one send (or, with no destination, of a channel that had none)."""
    destination_id = None if destination is None else destination.id
    # By position, in the order of Attempt's fields: one is built per send.
    return Attempt(
        number, now, channel, result.outcome, result.error, result.provider_id, destination_id
    )


class Trail:
    """The attempts of one round at a firing on several channels, numbered as they come."""

    def __init__(self, firing: Firing) -> None:
        self.firing = firing
        self.attempts: list[Attempt] = []

    def add(
        self,
        at: datetime,
        channel: Channel,
        destination: Destination | None,
        result: DeliveryResult,
    ) -> None:
        number = self.firing.attempts + len(self.attempts) + 1
        self.attempts.append(attempt_of(number, at, channel, destination, result))

    def errors(self) -> list[str]:
        """What each send that failed for good in this round said, by channel."""
        return [
            f"{a.channel}: {a.error}"
            for a in self.attempts
            if a.outcome is Outcome.FAILED and a.error
        ]

    def result(self, sender: str, decision: Decision) -> AttemptResult:
        return AttemptResult(
            firing_id=self.firing.id,
            sender=sender,
            state=decision.state,
            attempt=self.attempts[-1] if self.attempts else None,
            earlier=tuple(self.attempts[:-1]),
            next_attempt_at=decision.next_attempt_at,
            error=decision.error,
            firing=None if self.firing.stored else self.firing,
        )
