"""The engine's plain-number counters and histograms read as Prometheus would read them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from tocsin.metrics.tallies import Spread, Tally


class _Both(Collector):
    def __init__(self, tally: Tally, spread: Spread) -> None:
        self.tally, self.spread = tally, spread

    def collect(self) -> list[Metric]:
        return [self.tally.family(), self.spread.family()]


def _samples(tally: Tally, spread: Spread) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(_Both(tally, spread))
    text = generate_latest(registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_a_histogram_counts_each_value_in_every_bucket_at_or_above_it() -> None:
    spread = Spread("x_seconds", "x", [0.1, 1, 10])
    for value in (0.05, 0.1, 0.5, 20):  # 0.1 is on a bound: `le` includes it
        spread.observe(value)

    samples = _samples(Tally("y_total", "y", ["k"]), spread)

    assert samples[("x_seconds_bucket", (("le", "0.1"),))] == 2
    assert samples[("x_seconds_bucket", (("le", "1.0"),))] == 3
    assert samples[("x_seconds_bucket", (("le", "10.0"),))] == 3
    assert samples[("x_seconds_bucket", (("le", "+Inf"),))] == 4
    assert samples[("x_seconds_count", ())] == 4
    assert abs(samples[("x_seconds_sum", ())] - 20.65) < 1e-9


def test_a_counter_adds_up_by_label_values() -> None:
    tally = Tally("rings_total", "rings", ["channel", "outcome"])
    tally.add(("webhook", "sent"))
    tally.add(("webhook", "sent"), 41)
    tally.add(("email", "failed"))

    samples = _samples(tally, Spread("z", "z", [1]))

    assert samples[("rings_total", (("channel", "webhook"), ("outcome", "sent")))] == 42
    assert samples[("rings_total", (("channel", "email"), ("outcome", "failed")))] == 1
