"""Token buckets: a burst, then the average rate; the wait said; off at rate 0; bounded."""

from __future__ import annotations

from tocsin.api.limits import MAX_TRACKED, TokenBuckets


def test_a_burst_then_the_rate() -> None:
    buckets = TokenBuckets(2.0, 4.0, what="k")
    assert [buckets.take("a", now=0.0) for _ in range(4)] == [0.0] * 4
    assert buckets.take("a", now=0.0) == 0.5  # one token comes back every half second
    assert buckets.take("b", now=0.0) == 0.0  # each caller has its own bucket
    assert buckets.take("a", now=0.5) == 0.0
    assert buckets.peek("a", now=0.5) == 0.5
    assert buckets.take("a", now=10.0) == 0.0  # refilled, never beyond the burst
    assert [buckets.take("a", now=10.0) for _ in range(4)][-1] == 0.5


def test_rate_zero_is_no_limit() -> None:
    buckets = TokenBuckets(0.0, 0.0, what="k")
    assert all(buckets.take("a", now=0.0) == 0.0 for _ in range(10_000))


def test_the_callers_remembered_are_bounded() -> None:
    buckets = TokenBuckets(1.0, 1.0, what="k")
    for n in range(MAX_TRACKED + 10):
        buckets.take(str(n), now=0.0)
    assert buckets.peek("0", now=0.0) == 0.0  # forgotten: a fresh bucket
    assert buckets.peek(str(MAX_TRACKED + 9), now=0.0) == 1.0
