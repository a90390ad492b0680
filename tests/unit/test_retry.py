"""The retry policy: retries run until the firing's deadline, never past it, with full-jitter
backoff and Retry-After; the attempt count is only a safety cap. Pure: no I/O, no clock."""

from __future__ import annotations

import random
import statistics
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tocsin.channels import DeliveryResult
from tocsin.delivery.retry import RetryPolicy
from tocsin.domain import FiringState
from tocsin.settings import Settings

DUE = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
TEN_MINUTES = timedelta(minutes=10)
DEADLINE = DUE + TEN_MINUTES
DOWN = DeliveryResult.retry("HTTP 503")
CAP = Settings().max_attempts

# Freshness as the API allows it: 30 s to 7 days.
freshness = st.integers(min_value=30, max_value=7 * 86400).map(lambda s: timedelta(seconds=s))
seeds = st.integers(min_value=0, max_value=2**32)


def policy(seed: int = 1, max_attempts: int = CAP) -> RetryPolicy:
    return RetryPolicy(max_attempts=max_attempts, rng=random.Random(seed))


def tries_until_final(retry: RetryPolicy, window: timedelta) -> tuple[list[datetime], str]:
    """Every attempt of a firing whose peer never takes it, each made at its planned time,
    and the error it ends with."""
    now, deadline, times = DUE, DUE + window, [DUE]
    while True:
        decision = retry.decide(DOWN, attempt=len(times), now=now, due=DUE, deadline=deadline)
        if decision.state is not FiringState.QUEUED:
            assert decision.error is not None
            return times, decision.error
        assert decision.next_attempt_at is not None
        now = decision.next_attempt_at
        times.append(now)


def test_the_attempt_cap_is_high_by_default() -> None:
    assert CAP == 100


def test_backoff_is_full_jitter_under_a_doubling_ceiling() -> None:
    retry = RetryPolicy(max_attempts=5, base_seconds=1, cap_seconds=60, rng=random.Random(1))
    assert [retry.ceiling(n, TEN_MINUTES) for n in (1, 2, 3, 4, 8)] == [1, 2, 4, 8, 60]
    for attempt in (1, 2, 3, 4):
        waits = [retry.backoff(attempt, TEN_MINUTES) for _ in range(2000)]
        assert min(waits) >= 0
        assert max(waits) <= retry.ceiling(attempt, TEN_MINUTES)
        mean = statistics.mean(waits)
        assert mean == pytest.approx(retry.ceiling(attempt, TEN_MINUTES) / 2, rel=0.1)


def test_a_long_freshness_stretches_the_cap() -> None:
    retry = policy()
    assert retry.cap(TEN_MINUTES) == 300
    assert retry.cap(timedelta(days=1)) == 86400 / 20
    assert retry.ceiling(10_000, timedelta(days=1)) == 86400 / 20, "no overflow"


@given(
    attempt=st.integers(min_value=1, max_value=CAP - 1),
    window=freshness,
    elapsed=st.floats(min_value=0, max_value=1, exclude_max=True),
    seed=seeds,
)
def test_a_retry_is_never_planned_past_the_last_try(
    attempt: int, window: timedelta, elapsed: float, seed: int
) -> None:
    retry, deadline = policy(seed), DUE + window
    now = DUE + window * elapsed
    last = retry.last_try(due=DUE, deadline=deadline)
    decision = retry.decide(DOWN, attempt=attempt, now=now, due=DUE, deadline=deadline)

    assert decision.state is not FiringState.FAILED, "gave up by count before the cap"
    if now < last:
        assert decision.state is FiringState.QUEUED
        assert decision.next_attempt_at is not None
        assert now <= decision.next_attempt_at <= last < deadline
        wait = (decision.next_attempt_at - now).total_seconds()
        assert wait <= retry.ceiling(attempt, window) + 1e-6
    else:
        assert decision.state is FiringState.EXPIRED


@given(window=freshness, seed=seeds)
def test_a_peer_that_never_answers_is_tried_until_the_last_try(
    window: timedelta, seed: int
) -> None:
    retry = policy(seed)
    times, error = tries_until_final(retry, window)
    last = retry.last_try(due=DUE, deadline=DUE + window)

    assert times == sorted(times)
    assert times[-1] == last, "the final try is shortly before the deadline, not minutes early"
    assert DUE + window - last <= timedelta(seconds=5)
    assert len(times) < CAP, "the deadline, not the count, ended it"
    assert error.startswith("expired: the last try before its deadline failed")
    assert error.endswith("HTTP 503")


def test_a_receiver_down_for_30_seconds_is_tried_again_before_the_deadline() -> None:
    """The issue's case: 8 attempts used within ~30 s of a 10-minute freshness."""
    for seed in range(200):
        times, _ = tries_until_final(policy(seed), TEN_MINUTES)
        after_outage = [t for t in times if t > DUE + timedelta(seconds=30)]
        assert after_outage, "no try after the receiver came back"
        assert after_outage[0] - (DUE + timedelta(seconds=30)) <= timedelta(seconds=300)


@given(
    attempt=st.integers(min_value=1, max_value=CAP - 1),
    wait=st.floats(min_value=0, max_value=3600),
)
def test_retry_after_is_honoured_or_ends_the_firing_at_once(attempt: int, wait: float) -> None:
    retry = policy()
    result = DeliveryResult.retry("HTTP 429", retry_after=wait)
    decision = retry.decide(result, attempt=attempt, now=DUE, due=DUE, deadline=DEADLINE)

    when = DUE + timedelta(seconds=wait)
    if when <= retry.last_try(due=DUE, deadline=DEADLINE):
        assert decision.state is FiringState.QUEUED
        assert decision.next_attempt_at == when
    else:
        assert decision.state is FiringState.EXPIRED
        assert decision.error is not None
        assert "Retry-After" in decision.error
        assert decision.error.endswith("HTTP 429")


@given(attempt=st.integers(min_value=CAP, max_value=10 * CAP))
def test_the_attempt_cap_fails_the_firing_and_says_why(attempt: int) -> None:
    decision = policy().decide(
        DeliveryResult.retry("timeout"), attempt=attempt, now=DUE, due=DUE, deadline=DEADLINE
    )
    assert decision.state is FiringState.FAILED
    assert decision.error == f"gave up after {attempt} attempts (the most allowed): timeout"


def test_a_permanent_error_fails_at_once() -> None:
    decision = policy().decide(
        DeliveryResult.failed("HTTP 400"), attempt=1, now=DUE, due=DUE, deadline=DEADLINE
    )
    assert (decision.state, decision.error) == (FiringState.FAILED, "HTTP 400")


def test_a_success_is_sent() -> None:
    decision = policy().decide(
        DeliveryResult.sent(), attempt=1, now=DUE, due=DUE, deadline=DEADLINE
    )
    assert decision.state is FiringState.SENT


@given(
    attempt=st.integers(min_value=1, max_value=CAP - 1),
    wait=st.floats(min_value=0, max_value=3600),
    offset_ms=st.integers(min_value=0, max_value=TEN_MINUTES // timedelta(milliseconds=1) - 1),
)
def test_a_send_held_back_here_waits_at_most_until_the_last_try(
    attempt: int, wait: float, offset_ms: int
) -> None:
    """A breaker's wait (or a hold with no time left) is this worker's guess, not the peer's
    word: it never expires a firing, and is cut to the last try, which the breaker lets
    through."""
    retry = policy()
    now = DUE + timedelta(milliseconds=offset_ms)  # any instant before the deadline
    refused = DeliveryResult.refused_here("circuit breaker open for p", wait=wait)
    decision = retry.decide(refused, attempt=attempt, now=now, due=DUE, deadline=DEADLINE)

    last = retry.last_try(due=DUE, deadline=DEADLINE)
    assert decision.state is FiringState.QUEUED
    assert decision.next_attempt_at == min(now + timedelta(seconds=wait), max(last, now))
    assert decision.next_attempt_at < DEADLINE
    assert decision.error == "circuit breaker open for p"


def test_the_peers_own_retry_after_past_the_last_try_still_expires_at_once() -> None:
    """Only the breaker's wait is cut: the same wait from the peer ends the firing."""
    wait = 2 * TEN_MINUTES.total_seconds()
    peer = DeliveryResult.retry("HTTP 503", retry_after=wait)
    here = DeliveryResult.refused_here("circuit breaker open for p", wait=wait)
    assert policy().decide(peer, attempt=1, now=DUE, due=DUE, deadline=DEADLINE).state is (
        FiringState.EXPIRED
    )
    assert policy().decide(here, attempt=1, now=DUE, due=DUE, deadline=DEADLINE).state is (
        FiringState.QUEUED
    )


def test_sends_held_back_here_do_not_count_toward_the_attempt_cap() -> None:
    """A long freshness behind an open breaker is tried again for as long as it is fresh: the
    cap is for sends that went out, and none did."""
    here = DeliveryResult.refused_here("circuit breaker open for p", wait=15)
    decision = policy().decide(here, attempt=CAP + 50, now=DUE, due=DUE, deadline=DEADLINE)
    assert decision.state is FiringState.QUEUED
